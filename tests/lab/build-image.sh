#!/usr/bin/env bash
# Build the lab/Molecule image: Debian (bookworm, or GPUFABRIC_DEBIAN_SUITE) with python3 and systemd as PID 1.
# There is no image registry here, so the root filesystem is made with debootstrap and
# turned into an image with `docker import`. Does nothing when the image already exists.
#
# Environment:
#   GPUFABRIC_DEBIAN_SUITE   bullseye, bookworm (default) or trixie
#   GPUFABRIC_LAB_IMAGE   image name (default gpufabric/<suite>-systemd:2)
#   GPUFABRIC_DEBIAN_MIRROR  Debian mirror URL (default: the first Debian URI this host's apt uses)
#   GPUFABRIC_FORCE_BUILD=1  rebuild even when the image exists
set -euo pipefail

suite="${GPUFABRIC_DEBIAN_SUITE:-bookworm}"
case $suite in bullseye|bookworm|trixie) ;; *) echo "GPUFABRIC_DEBIAN_SUITE must be bullseye, bookworm or trixie, got '$suite'" >&2; exit 2 ;; esac
image="${GPUFABRIC_LAB_IMAGE:-gpufabric/$suite-systemd:2}"
# Packages the roles and tests expect in every lab node; python3-apt lets ansible's apt module
# work without installing it on first use, iproute2/procps for testinfra checks.
include="python3,python3-apt,sudo,systemd,systemd-sysv,dbus,iproute2,procps,ca-certificates,kmod,pciutils"

if [[ "${GPUFABRIC_FORCE_BUILD:-0}" != 1 ]] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "lab image $image present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "building $image needs root (debootstrap); run as root or build it once with sudo" >&2
  exit 1
fi
if ! command -v debootstrap >/dev/null; then
  if command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  else
    echo "debootstrap is required to build $image: install it with your package manager" >&2
    exit 1
  fi
fi

mirror="${GPUFABRIC_DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
  # Reuse the mirror this host already reaches (deb822 .sources or one-line sources.list).
  mirror=$(grep -hE '^\s*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
             | awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
  if [[ -z "$mirror" ]]; then
    mirror=$(grep -hE '^\s*deb\s' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
               | awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
  fi
fi
if [[ -z "$mirror" ]]; then
  echo "no Debian mirror found in /etc/apt; set GPUFABRIC_DEBIAN_MIRROR" >&2
  exit 1
fi

root=$(mktemp -d /var/tmp/gpufabric-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "debootstrap $suite from $mirror into $root (a few minutes)"
debootstrap --variant=minbase --include="$include" "$suite" "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -n 30 "$root.log" >&2; exit 1; }
rm -f "$root.log"

# Units that only make sense on real hardware or consoles would fail or spin in a container.
for unit in getty.target console-getty.service systemd-udevd.service systemd-udev-trigger.service \
            systemd-modules-load.service sys-kernel-config.mount systemd-remount-fs.service \
            systemd-firstboot.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
: >"$root/etc/machine-id"
echo 'APT::Install-Recommends "false";' >"$root/etc/apt/apt.conf.d/90gpufabric-norecommends"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

tar -C "$root" -c . | docker import \
  --change 'CMD ["/lib/systemd/systemd"]' \
  --change 'ENV container=docker' \
  - "$image" >/dev/null
echo "built lab image $image"
