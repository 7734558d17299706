#!/usr/bin/env bash
# Capture nccl-tests output as launchers and old releases print it, for the parser's fixtures:
# Open MPI's --tag-output and --timestamp-output prefixes, a run that aborts before its table
# (two ranks on one GPU: NCCL refuses a duplicate GPU), and nccl-tests of June 2021 (commit
# 526eaca), whose alltoall_perf prints an empty redop column.
#
#   bash tests/device/capture_launcher_outputs.sh OUT_DIR
#
# Needs vendor-src/nccl-tests (current) and vendor-src/nccl-tests-old (526eaca); neither is committed.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/device/common.sh
start_capture "${1:-}"
gencode="-gencode=arch=compute_90,code=sm_90"
mpirun --version | head -n1
make -s -C vendor-src/nccl-tests -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl MPI=1 MPI_HOME="$mpi_home" \
  NVCC_GENCODE="$gencode" >/tmp/build.log 2>&1 || { tail -n 30 /tmp/build.log; exit 1; }
# The 2021 Makefile links libnvToolsExt, which CUDA 13 no longer ships; nccl-tests of then calls none of it.
printf 'void gpufabric_nvtx_stub(void) {}\n' | gcc -shared -fPIC -x c -o /tmp/nccl/lib/libnvToolsExt.so -
make -s -C vendor-src/nccl-tests-old -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl \
  NVCC_GENCODE="$gencode" >/tmp/build-old.log 2>&1 || tail -n 30 /tmp/build-old.log
b=vendor-src/nccl-tests/build
old=vendor-src/nccl-tests-old/build
mpi=(mpirun --allow-run-as-root -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)
run() { local name=$1; shift; echo "+ $*" >"$out/$name.txt"; timeout -s KILL 120 "$@" >>"$out/$name.txt" 2>&1; echo "rc=$? $name"; }
run mpirun_tag_output "${mpi[@]}" --tag-output -np 1 "$b/all_reduce_perf" -b 1K -e 64M -f 8 -g 1
run mpirun_timestamp_tag_output "${mpi[@]}" --timestamp-output --tag-output -np 1 "$b/all_reduce_perf" -b 1K -e 64M -f 8 -g 1
run mpirun_timestamp_output "${mpi[@]}" --timestamp-output -np 1 "$b/all_reduce_perf" -b 1K -e 64M -f 8 -g 1
run mpirun_duplicate_gpu_abort "${mpi[@]}" -x CUDA_VISIBLE_DEVICES=0 -np 2 "$b/all_reduce_perf" -b 1K -e 64M -f 8 -g 1
run old_526eaca_alltoall "$old/alltoall_perf" -b 1K -e 64M -f 8 -g 1
run old_526eaca_all_reduce "$old/all_reduce_perf" -b 1K -e 64M -f 8 -g 1
ls -la "$out"
