#!/usr/bin/env bash
# Capture nccl-tests on one GPU (one rank moves no data: busbw 0 for all_reduce, a local copy for
# sendrecv) and the same with NCCL_DEBUG=INFO, for the judges' fixtures.
#
#   bash tests/device/capture_one_gpu.sh OUT_DIR
#
# Needs vendor-src/nccl-tests (not committed).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/device/common.sh
start_capture "${1:-}"
make -s -C vendor-src/nccl-tests -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >/tmp/build.log 2>&1 || { tail -n 30 /tmp/build.log; exit 1; }
b=vendor-src/nccl-tests/build
run() { local name=$1; shift; echo "+ $*" >"$out/$name.txt"; "$@" >>"$out/$name.txt" 2>&1; echo "rc=$? $name"; }
run all_reduce_g1 "$b/all_reduce_perf" -b 8 -e 256M -f 4 -g 1
run sendrecv_g1 "$b/sendrecv_perf" -b 8 -e 256M -f 4 -g 1
NCCL_DEBUG=INFO run all_reduce_g1_debug_info "$b/all_reduce_perf" -b 8 -e 64M -f 8 -g 1
nvidia-smi -L > "$out/nvidia_smi_L.txt"
ls -la "$out"
