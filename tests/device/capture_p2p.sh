#!/usr/bin/env bash
# Capture what a node's intra-node path looks like to NCCL with NVLink peer-to-peer on and off (issue 41): the same
# all_reduce with NCCL_P2P_DISABLE unset and =1, in one process (-g N) and under mpirun (one rank per GPU), with
# NCCL_DEBUG=INFO over the subsystems that print the channel lines (INIT,P2P,SHM,NET,GRAPH,ENV); the topology it ran
# on (nvidia-smi topo -m, nvlink --status, -q); and a binary built without MPI launched by mpirun -np N (each
# process runs alone). Interleaved and repeated, so on and off are compared within one run.
#
#   bash tests/device/capture_p2p.sh OUT_DIR
#
# Needs vendor-src/nccl-tests (not committed) and at least two GPUs. NVLink multicast stays off (common.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/device/common.sh
start_capture "${1:-}"
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
echo "GPUs: $ngpu"
nvidia-smi -L >"$out/gpus.txt" 2>&1
nvidia-smi topo -m >"$out/topo_m.txt" 2>&1
nvidia-smi nvlink --status >"$out/nvlink_status.txt" 2>&1
nvidia-smi -q >"$out/nvidia_smi_q.txt" 2>&1
python3 -c 'import nvidia.nccl, importlib.metadata as m; print("nccl wheel", m.version("nvidia-nccl-cu13") if any(d.metadata["Name"]=="nvidia-nccl-cu13" for d in m.distributions()) else [d.metadata["Name"]+" "+d.version for d in m.distributions() if "nccl" in d.metadata["Name"]])' >"$out/versions.txt" 2>&1
mpirun --version 2>&1 | head -n1 >>"$out/versions.txt"
nvcc --version 2>&1 | tail -n2 >>"$out/versions.txt"
if ((ngpu < 2)); then echo "one GPU: no peer-to-peer to capture"; exit 0; fi
gencode="-gencode=arch=compute_90,code=sm_90"
make -s -C vendor-src/nccl-tests -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl MPI=1 "MPI_HOME=$mpi_home" \
  NVCC_GENCODE="$gencode" >/tmp/build.log 2>&1 || { tail -n 30 /tmp/build.log; exit 1; }
cp -r vendor-src/nccl-tests /tmp/nccl-tests-nompi && make -s -C /tmp/nccl-tests-nompi clean >/dev/null 2>&1
make -s -C /tmp/nccl-tests-nompi -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl NVCC_GENCODE="$gencode" \
  >/tmp/build-nompi.log 2>&1 || { tail -n 30 /tmp/build-nompi.log; exit 1; }
b=$PWD/vendor-src/nccl-tests/build
dbg=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET,GRAPH,ENV)
run() { local name=$1; shift; echo "+ $*" >"$out/$name.txt"; env "$@" >>"$out/$name.txt" 2>&1; echo "rc=$? $name"; }
args=(-b 8M -e 512M -f 2 -n 20 -w 5)
for round in 1 2; do
  run "single_p2p_on_r$round" "${dbg[@]}" "$b/all_reduce_perf" "${args[@]}" -g "$ngpu"
  run "single_p2p_off_r$round" "${dbg[@]}" NCCL_P2P_DISABLE=1 "$b/all_reduce_perf" "${args[@]}" -g "$ngpu"
  run "mpirun_p2p_on_r$round" mpirun --allow-run-as-root -np "$ngpu" -x NCCL_DEBUG=INFO \
    -x NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET,GRAPH,ENV -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH "$b/all_reduce_perf" "${args[@]}" -g 1
  run "mpirun_p2p_off_r$round" mpirun --allow-run-as-root -np "$ngpu" -x NCCL_DEBUG=INFO \
    -x NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET,GRAPH,ENV -x NCCL_NVLS_ENABLE=0 -x NCCL_P2P_DISABLE=1 -x LD_LIBRARY_PATH \
    "$b/all_reduce_perf" "${args[@]}" -g 1
done
run mpirun_without_mpi_build mpirun --allow-run-as-root -np "$ngpu" -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH \
  /tmp/nccl-tests-nompi/build/all_reduce_perf -b 8M -e 64M -f 2 -g 1
grep -h -E '^ +536870912 ' "$out"/*_r1.txt "$out"/*_r2.txt | head -n 20
for f in "$out"/*_r1.txt; do echo "$(basename "$f"): $(grep -c ' via ' "$f") 'via' lines"; done
ls -la "$out"
