#!/usr/bin/env bash
# Capture real nccl-tests outputs in the layouts the parse_nccl_tests filter must read.
#
#   bash tests/device/capture_nccl_tests.sh OUT_DIR
#
# Needs vendor-src/nccl-tests (not committed). Builds it with MPI=1 when mpirun is found.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/device/common.sh
start_capture "${1:-}"
mpi_args=()
if [[ -n $mpi_home ]]; then
  mpi_args=(MPI=1 "MPI_HOME=$mpi_home")
  mpirun --version | head -n1
fi
make -s -C vendor-src/nccl-tests -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl "${mpi_args[@]}" \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >/tmp/build.log 2>&1 || { tail -n 30 /tmp/build.log; exit 1; }
b=vendor-src/nccl-tests/build
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
run() { local name=$1; shift; echo "+ $*" >"$out/$name.txt"; "$@" >>"$out/$name.txt" 2>&1; echo "rc=$? $name"; }
run sendrecv "$b/sendrecv_perf" -b 8 -e 64M -f 8 -g "$ngpu"
run alltoall "$b/alltoall_perf" -b 1K -e 64M -f 8 -g "$ngpu"
run broadcast "$b/broadcast_perf" -b 8 -e 64M -f 8 -g "$ngpu"
run allreduce_c0 "$b/all_reduce_perf" -b 8 -e 64M -f 8 -g "$ngpu" -c 0
run aborted timeout -s KILL 6 "$b/all_reduce_perf" -b 64M -e 16G -f 2 -g "$ngpu" -n 400
if ((${#mpi_args[@]})); then
  run mpirun_info mpirun --allow-run-as-root -np "$ngpu" -x NCCL_DEBUG=INFO -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH \
    "$b/all_reduce_perf" -b 1K -e 64M -f 8 -g 1
fi
ls -la "$out"
