#!/usr/bin/env bash
# Run playbooks/validate.yml for real on a GPU machine, then the same binary by hand.
#
#   bash tests/device/validate_and_compare.sh OUT_DIR
#
# Expects .whl/ (ansible-core and missing dependencies) and vendor-src/nccl-tests (neither
# committed). Uses the machine's OpenMPI (openmpi_provider=existing) and the NCCL of its
# Python (nvidia-nccl wheel). NVLink multicast stays off in every run.
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out/report"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
. tests/device/common.sh
prepare_playbook_run "$top"

runs='[{"name": "all_reduce_perf", "args": "-b 8 -e 4G -f 2", "mode": "single"},
       {"name": "all_reduce_perf", "args": "-b 8 -e 4G -f 2", "mode": "mpirun"}]'
set -x
ansible-playbook playbooks/validate.yml -e ansible_become=false -e "ansible_python_interpreter=$(command -v python3)" \
  -e openmpi_provider=existing -e nccl_tests_nccl_home=/tmp/nccl -e "nccl_tests_report_dir=$out/report" \
  -e "{\"nccl_tests_runs\": $runs, \"nccl_tests_env\": {\"NCCL_NVLS_ENABLE\": \"0\", \"LD_LIBRARY_PATH\": \"$LD_LIBRARY_PATH\"}}" \
  >"$out/validate.log" 2>&1 || { tail -n 60 "$out/validate.log"; exit 1; }
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
/opt/nccl-tests/build/all_reduce_perf -b 8 -e 4G -f 2 -g "$ngpu" >"$out/hand_single.txt" 2>&1
mpirun --allow-run-as-root -np "$ngpu" -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH \
  /opt/nccl-tests/build/all_reduce_perf -b 8 -e 4G -f 2 -g 1 >"$out/hand_mpirun.txt" 2>&1
set +x
tail -n 25 "$out/validate.log"
grep -h -E '^ +4294967296 ' "$out/hand_single.txt" "$out/hand_mpirun.txt"
