#!/usr/bin/env bash
# Captures the inputs of the grey-failure checks on a GPU machine into $1 (default $OUT):
# the PCIe links of GPUs and NICs (tests/unit/fixtures/pcie/*.tsv), nvidia-smi -q -x (clock event
# reasons), ethtool -S of every netdev and the RDMA port counters when there are any.
set -u
out=${1:-$OUT}
mkdir -p "$out"
nvidia-smi -q -x > "$out/nvidia_smi_q.xml" 2>&1
{
  printf '# address\tclass\tvendor\tdevice\tcurrent_link_width\tmax_link_width\tcurrent_link_speed\tmax_link_speed\n'
  for d in /sys/bus/pci/devices/*; do
    case $(cat "$d/class") in 0x0302*|0x0300*|0x0200*|0x0207*) ;; *) continue ;; esac
    row=$(basename "$d")
    for a in class vendor device current_link_width max_link_width current_link_speed max_link_speed; do
      row+=$'\t'$(cat "$d/$a" 2>/dev/null || echo -)
    done
    printf '%s\n' "$row"
  done
} > "$out/pcie_links.tsv"
for n in /sys/class/net/*; do
  ethtool -S "$(basename "$n")" > "$out/ethtool_S_$(basename "$n").txt" 2>&1
done
for p in /sys/class/infiniband/*/ports/*; do
  [ -d "$p" ] || continue
  echo "== $p"; (cd "$p/counters" && grep . ./*); (cd "$p/hw_counters" 2>/dev/null && grep . ./*)
done > "$out/ib_counters.txt" 2>&1
