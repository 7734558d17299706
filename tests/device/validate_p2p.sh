#!/usr/bin/env bash
# Issue 41 on a real machine: playbooks/validate.yml with its default settings, then with NCCL_P2P_DISABLE=1 in
# nccl_tests_env (what ACS on a PCIe switch, a VM without peer-to-peer or a wrong IOMMU setting does to a node),
# interleaved, two rounds; each with a single-process run (-g <GPUs>) and an mpirun run (one rank per GPU). No
# threshold and no recorded baseline: what the hardware carries (the node's record) is the expectation.
#
#   bash tests/device/validate_p2p.sh OUT_DIR
#
# Needs vendor-src/nccl-tests and the ansible-core wheels (.whl/ or vendor-src/whl/; neither committed). Uses the
# machine's OpenMPI (openmpi_provider=existing) and the pip NCCL. NVLink multicast stays off (common.sh).
set -uo pipefail
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
. tests/device/common.sh
prepare_playbook_run "$top"
runs='[{"name": "all_reduce_perf", "args": "-b 8M -e 512M -f 2", "mode": "single"},
       {"name": "all_reduce_perf", "args": "-b 8M -e 512M -f 2", "mode": "mpirun"}]'
for round in 1 2; do
  for p2p in on off; do
    extra=""
    [[ $p2p == off ]] && extra=', "NCCL_P2P_DISABLE": "1"'
    name="p2p_${p2p}_r$round"
    ansible-playbook playbooks/validate.yml -e ansible_become=false -e "ansible_python_interpreter=$(command -v python3)" \
      -e openmpi_provider=existing -e nccl_tests_nccl_home=/tmp/nccl -e "nccl_tests_report_dir=$out/$name" \
      -e "{\"nccl_tests_runs\": $runs, \"nccl_tests_env\": {\"NCCL_NVLS_ENABLE\": \"0\", \"LD_LIBRARY_PATH\": \"$LD_LIBRARY_PATH\"$extra}}" \
      >"$out/$name.log" 2>&1
    echo "validate.yml $name: rc=$?"
  done
done
for name in p2p_on_r1 p2p_off_r1; do
  echo "== $name"; grep -A3 '^## What the hardware carries' "$out/$name/summary.md"
  grep -E '^\*\*(PASS|FAIL)' "$out/$name/summary.md"
done
