#!/usr/bin/env bash
# Run the collection for real on a GPU machine and measure what its NCCL advice does there.
#
#   bash tests/device/discover_and_bench.sh OUT_DIR
#
# Expects, in the checkout: .whl/ (ansible-core and its missing dependencies as wheels) and
# vendor-src/nccl-tests (NVIDIA/nccl-tests source; neither is committed). Uses the NCCL of the
# machine's Python (nvidia-nccl wheel) and its CUDA toolkit. NVLink multicast stays off.
#
# 1. playbooks/discover.yml on localhost (no inventory): facts.json, readiness report.
# 2. nccl-tests all_reduce_perf on all GPUs, alternately with no NCCL_* variable and with the
#    environment nccl_env recommended for this node (profile auto), twice each.
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out/report"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
. tests/device/common.sh
setup_ansible "$top"

ngpu=$(nvidia-smi -L | grep -c '^GPU ')
nvidia-smi -q -x >"$out/nvidia_smi_q.xml"
nvidia-smi topo -m >"$out/topo_m.txt"

echo "+ ansible-playbook playbooks/discover.yml -e expected_gpu_count=$ngpu" | tee "$out/discover.log"
ansible-playbook playbooks/discover.yml -e "report_dir=$out/report" -e "expected_gpu_count=$ngpu" \
  -e ansible_become=false -e "ansible_python_interpreter=$(command -v python3)" 2>&1 | tee -a "$out/discover.log"
cp /etc/gpufabric/facts.json "$out/facts.json"

setup_nccl_home
cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
make -s -C vendor-src/nccl-tests -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >/tmp/nccl-tests-build.log 2>&1 || {
  tail -n 40 /tmp/nccl-tests-build.log; exit 1; }

# The recommended environment, exactly as the report gives it.
auto_env=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); (n,)=r["nodes"].values(); print(" ".join("%s=%s" % kv for kv in n["nccl"]["env"].items()))' "$out/report/readiness.json")
bench=(vendor-src/nccl-tests/build/all_reduce_perf -b 8 -e 4G -f 2 -g "$ngpu" -w 5 -n 20)
: >"$out/allreduce.txt"
for round in 1 2; do
  for mode in none auto; do
    if [[ $mode == none ]]; then envs=(); else read -r -a envs <<<"$auto_env"; fi
    echo "### round $round, env $mode: ${envs[*]:-(no NCCL_* variable)} NCCL_NVLS_ENABLE=0 ${bench[*]}" >>"$out/allreduce.txt"
    env "${envs[@]}" "${bench[@]}" >>"$out/allreduce.txt" 2>&1
  done
done

# One line per run: the busbw of the largest size (out-of-place) and the average busbw.
awk '/^### /{run=$0} /^ +4294967296 /{big=$(NF-5)} /Avg bus bandwidth/{print run " | 4 GiB out-of-place busbw " big " GB/s | avg busbw " $NF " GB/s"}' \
  "$out/allreduce.txt" | tee "$out/summary.txt"
