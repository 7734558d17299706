#!/usr/bin/env bash
# The nccl role for real: "existing" mode on the NCCL wheel, a source build (run twice, the
# second building nothing), and nccl-tests linked against the built library.
#
#   bash tests/device/nccl_source.sh OUT_DIR
#
# Expects .whl/, vendor-src/nccl (NVIDIA/nccl) and vendor-src/nccl-tests; none committed.
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
. tests/device/common.sh
setup_ansible "$top"
setup_nccl_home
version=$(awk '/^NCCL_(MAJOR|MINOR|PATCH)/{v=v (v?".":"") $3} END{print v}' vendor-src/nccl/makefiles/version.mk)
rm -rf /opt/nccl-src && cp -r vendor-src/nccl /opt/nccl-src
start=$SECONDS
ansible-playbook tests/device/nccl_source.yml -e "build_version=$version" -e ansible_become=false \
  -e "ansible_python_interpreter=$(command -v python3)" >"$out/nccl_role.log" 2>&1 || { tail -n 60 "$out/nccl_role.log"; exit 1; }
echo "nccl role: $((SECONDS - start)) s"
grep -E 'existing:|source:|Build and install|changed=' "$out/nccl_role.log"
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
make -s -C vendor-src/nccl-tests -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/opt/nccl/current BUILDDIR=/tmp/nt-built \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" src.build >/tmp/nt.log 2>&1 || { tail -n 20 /tmp/nt.log; exit 1; }
LD_LIBRARY_PATH=/opt/nccl/current/lib /tmp/nt-built/all_reduce_perf -b 8 -e 1G -f 4 -g "$ngpu" >"$out/allreduce_built_nccl.txt" 2>&1
LD_LIBRARY_PATH=/opt/nccl/current/lib ldd /tmp/nt-built/all_reduce_perf | grep nccl | tee -a "$out/allreduce_built_nccl.txt"
grep -E 'nccl-tests version|Avg bus' "$out/allreduce_built_nccl.txt"
