#!/usr/bin/env bash
# Make sure a Docker engine answers. On a fresh Debian machine, as root, install docker.io and
# start dockerd in the background (no systemd is assumed); anywhere else, say what is missing.
set -euo pipefail

if docker info >/dev/null 2>&1; then
  exit 0
fi

if [[ $(id -u) -ne 0 || ! -f /etc/debian_version ]]; then
  cat >&2 <<'MSG'
No Docker engine answers `docker info`.
Install and start one (Debian/Ubuntu: `apt-get install docker.io && systemctl start docker`,
other systems: your distribution's docker or moby package), make sure this user may use
/var/run/docker.sock, then run make again.
MSG
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "installing docker.io from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  log=/var/log/gpufabric-dockerd.log
  echo "starting dockerd (log: $log)"
  nohup dockerd >"$log" 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi

if ! docker info >/dev/null 2>&1; then
  echo "dockerd did not come up within 60 s; last lines of its log:" >&2
  tail -n 20 /var/log/gpufabric-dockerd.log >&2 || true
  exit 1
fi
echo "docker engine ready: $(docker version --format '{{.Server.Version}}')"
