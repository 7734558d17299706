#!/usr/bin/env bash
# Build the prepared Molecule image of one Debian release: the bare image of build-image.sh plus the packages the
# scenarios install, with apt's package lists kept, so ~20 containers neither fetch the lists nor unpack Slurm,
# Prometheus or OpenMPI again. Every service those packages enable is disabled again in the image: a container
# boots as a bare one does, and a scenario starts what it uses (as its prepare.yml does on the bare image).
# The roles' own package tasks still run and report ok; configure_rdma_drivers and the lab keep the bare image,
# so installing from nothing stays tested.
#
# The image is tagged by a hash of its recipe (this script and build-image.sh): a machine builds it once and
# again only when the recipe changes, or when it is over a week old (the mirror moves on, and old package lists
# would name versions it no longer has). It is also tagged :current, the tag .config/molecule/config.yml names.
#
# Environment: GPUFABRIC_DEBIAN_SUITE (bullseye, bookworm or trixie; default bookworm), GPUFABRIC_FORCE_BUILD=1.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
suite="${GPUFABRIC_DEBIAN_SUITE:-bookworm}"
# What the scenarios install on each release (their prepare.yml and the roles they converge), and nothing a
# scenario must see absent: no network manager (configure_rdma_network finds eth0 unmanaged), no RDMA stack
# (configure_rdma_drivers installs it), no development package (nothing is built), no node_exporter (node_metrics
# installs it in operate_fleet_monitoring).
case $suite in
  bullseye) packages=() ;;
  bookworm) packages=(munge slurmctld slurmd slurm-client openmpi-bin openssh-server openssh-client faketime perftest
                      prometheus prometheus-alertmanager) ;;
  trixie) packages=(munge slurmctld slurm-client) ;;
  *) echo "GPUFABRIC_DEBIAN_SUITE must be bullseye, bookworm or trixie, got '$suite'" >&2; exit 2 ;;
esac
base="gpufabric/$suite-systemd:2"
repo="gpufabric/$suite-prepared"
tag=$(cat "$here/build-image.sh" "$here/prepare-image.sh" | sha256sum | cut -c1-12)

GPUFABRIC_DEBIAN_SUITE=$suite "$here/build-image.sh"
created=$(docker image inspect --format '{{.Created}}' "$repo:$tag" 2>/dev/null || true)
if [[ "${GPUFABRIC_FORCE_BUILD:-0}" != 1 && -n "$created" ]] \
   && (( $(date +%s) - $(date -d "$created" +%s) < 7 * 86400 )); then
  docker tag "$repo:$tag" "$repo:current"
  echo "prepared image $repo:$tag present"
  exit 0
fi

name="gpufabric-prepare-$suite-$$"
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
echo "preparing $repo:$tag from $base: apt lists${packages[*]:+ and ${packages[*]}}"
# Links an install adds under *.wants/ are what enables a unit; removing them leaves the unit installed, not enabled.
script='set -e
export DEBIAN_FRONTEND=noninteractive
find /etc/systemd/system -type l -path "*.wants/*" | sort >/tmp/wants-before
apt-get update -qq
if [ $# -gt 0 ]; then apt-get install -y -qq --no-install-recommends "$@" >/dev/null; fi
find /etc/systemd/system -type l -path "*.wants/*" | sort | comm -13 /tmp/wants-before - | xargs -r rm -f
rm -f /tmp/wants-before /var/cache/apt/archives/*.deb'
if ! docker run --name "$name" "$base" bash -c "$script" prepare "${packages[@]}" >"/tmp/$name.log" 2>&1; then
  tail -n 30 "/tmp/$name.log" >&2; rm -f "/tmp/$name.log"; exit 1
fi
rm -f "/tmp/$name.log"
docker commit --change 'CMD ["/lib/systemd/systemd"]' --change 'ENV container=docker' "$name" "$repo:$tag" >/dev/null
docker tag "$repo:$tag" "$repo:current"
# Earlier recipes' images of this release are dropped (the bare image stays).
docker images "$repo" --format '{{.Tag}}' | grep -vxE "$tag|current" | sed "s|^|$repo:|" | xargs -r docker rmi >/dev/null 2>&1 || true
echo "built prepared image $repo:$tag"
