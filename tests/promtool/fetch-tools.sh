#!/usr/bin/env bash
# promtool, amtool, prometheus and alertmanager from Debian's own packages, unpacked under build/tools (nothing
# installed, no service started): the rule tests (promtool test rules), the Alertmanager configuration check
# (amtool check-config) and the alert scale test run them. Called by `make prometheus-tools`.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dest="$top/build/tools"
if [[ -x "$dest/bin/promtool" && -x "$dest/bin/amtool" && -x "$dest/bin/alertmanager" && -f "$dest/share/prometheus/alertmanager/default.tmpl" ]]; then
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get download prometheus prometheus-alertmanager >/dev/null 2>&1; then
  if [[ "$(id -u)" = 0 ]]; then
    apt-get update -qq
    apt-get download prometheus prometheus-alertmanager >/dev/null
  else
    echo "cannot download Debian's prometheus packages (apt-get download prometheus prometheus-alertmanager): run as root once, or put promtool and amtool in $dest/bin" >&2
    exit 1
  fi
fi
mkdir -p "$dest/bin" root
for deb in ./*.deb; do dpkg-deb -x "$deb" root; done
install -m 0755 root/usr/bin/promtool root/usr/bin/amtool "$dest/bin/"
install -m 0755 root/usr/bin/prometheus-alertmanager "$dest/bin/alertmanager"
# Debian's alertmanager reads its notification templates from /usr/share/prometheus/alertmanager (a patch of the
# package); tests/bench/bench_alert_scale.py mounts this copy there for the alertmanager process alone.
mkdir -p "$dest/share/prometheus/alertmanager"
install -m 0644 root/usr/share/prometheus/alertmanager/*.tmpl "$dest/share/prometheus/alertmanager/"
"$dest/bin/promtool" --version | head -n1
