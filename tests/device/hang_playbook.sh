#!/usr/bin/env bash
# Issue 40 on a real machine: playbooks/hang.yml asked about a job hung on one rank (the last rank stops calling NCCL at
# step 30) and about a healthy one, each a PyTorch job over all GPUs of this machine (tests/device/ras_job.py --hold),
# the machine its own inventory host (connection local). The health checks are the defaults (real nvidia-smi, the
# kernel log as the machine lets it be read).
#
#   bash tests/device/hang_playbook.sh OUT_DIR
#
# Needs 2 or more GPUs, PyTorch's NCCL 2.24 or later, the ansible-core wheels (.whl/ or vendor-src/whl/; not committed).
set -uo pipefail
final=${1:?usage: $0 OUT_DIR}
mkdir -p "$final"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
. tests/device/common.sh
setup_ansible "$top"
work=$(mktemp -d)
out=$work/hang
mkdir -p "$out"
printf 'all:\n  hosts:\n    gpu-machine: {ansible_connection: local, ansible_python_interpreter: %s}\n' "$(command -v python3)" \
  >"$work/inventory.yml"
{ command -v ip; command -v hostname && hostname -I; } >"$out/addresses.txt" 2>&1
for scenario in hang healthy; do
  python3 tests/device/ras_job.py "$work/jobs" --hold 240 "$scenario" >"$out/job_$scenario.log" 2>&1 &
  job=$!
  for _ in $(seq 180); do [[ -e $work/jobs/$scenario/ready ]] && break; sleep 1; done
  started=$(date +%s)
  ansible-playbook -i "$work/inventory.yml" playbooks/hang.yml -e '{"hang_nodes": ["gpu-machine"]}' \
    -e ansible_become=false -e "hang_report_dir=$out/report_$scenario" >"$out/hang_$scenario.log" 2>&1
  rc=$?
  echo "hang.yml on the $scenario job: rc=$rc in $(( $(date +%s) - started )) s"
  touch "$work/jobs/$scenario/done"
  wait $job
  grep -A4 'Say who the job waits for' "$out/hang_$scenario.log" | tail -4
done
cp -r "$work/jobs" "$out/jobs"
tar -C "$work" -czf "$final/hang.tar.gz" hang   # one file: the machine returns only so many
