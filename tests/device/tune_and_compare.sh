#!/usr/bin/env bash
# Run playbooks/tune.yml for real on a GPU machine with 2 or more GPUs: build nccl-tests, search the
# NCCL settings against the defaults (interleaved, repeated), then compare the result afresh.
#
#   bash tests/device/tune_and_compare.sh OUT_DIR [BUDGET_S [NCCL_TUNE_ARGS [EXTRA_VARS_JSON]]]
#
# Expects .whl/ (ansible-core and its dependencies) and vendor-src/nccl-tests (neither committed).
# Uses the machine's OpenMPI (openmpi_provider=existing) and the NCCL of its Python (nvidia-nccl
# wheel). NVLink multicast stays off in every run (NCCL_NVLS_ENABLE=0 in nccl_tests_env).
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [BUDGET_S [NCCL_TUNE_ARGS [EXTRA_VARS_JSON]]]}
budget=${2:-420}
tune_args=${3:--b 1M -e 1G -f 2 -w 3 -n 10}
more=${4:-'{}'}
mkdir -p "$out/report"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
. tests/device/common.sh
prepare_playbook_run "$top"
extra=$(printf '{"nccl_tests_env": {"NCCL_NVLS_ENABLE": "0", "LD_LIBRARY_PATH": "%s"}, "nccl_tune_budget": %s}' \
  "$LD_LIBRARY_PATH" "$budget")
set -x
ansible-playbook playbooks/tune.yml -e ansible_become=false -e "ansible_python_interpreter=$(command -v python3)" \
  -e openmpi_provider=existing -e nccl_tests_nccl_home=/tmp/nccl -e "nccl_tests_report_dir=$out/report" \
  -e "nccl_tune_report_dir=$out/report" -e "nccl_tune_args='$tune_args'" \
  -e nccl_tune_repeats=2 -e nccl_tune_confirm_repeats=4 -e "$extra" -e "$more" >"$out/tune.log" 2>&1 \
  || { tail -n 80 "$out/tune.log"; exit 1; }
set +x
cp /var/tmp/gpufabric-nccl-tune/*.json /var/tmp/gpufabric-nccl-tune/progress.log "$out/" 2>/dev/null || true
tail -n 60 "$out/tune.log"
