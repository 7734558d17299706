#!/usr/bin/env bash
# The openmpi role's source mode for real: OpenMPI built from a checksum-verified archive
# (CUDA-aware), run twice (the second builds nothing), then playbooks/validate.yml builds
# nccl-tests against it and runs all_reduce_perf through its mpirun.
#
#   bash tests/device/openmpi_source.sh OUT_DIR
#
# Expects .whl/, vendor-src/nccl-tests and the archive below in vendor-src/ (Debian's
# openmpi_4.1.4.orig.tar.xz, sha256 from the signed openmpi_4.1.4-3.dsc); none committed.
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out/report"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
. tests/device/common.sh
prepare_playbook_run "$top"
cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
common=(-e ansible_become=false -e "ansible_python_interpreter=$(command -v python3)"
  -e openmpi_version=4.1.4 -e "openmpi_source_archive=$top/vendor-src/openmpi_4.1.4.orig.tar.xz"
  -e openmpi_source_checksum=sha256:ddaee7dbdb01eb4fab1fda5b5e03e8bbff026711806c095c1f39bb410f99f263
  -e "openmpi_with_cuda=$cuda_home" -e '{"openmpi_build_packages": [], "openmpi_configure_args": ["--disable-mpi-fortran"]}')
start=$SECONDS
ansible-playbook tests/device/openmpi_source.yml "${common[@]}" >"$out/openmpi_role.log" 2>&1 \
  || { tail -n 60 "$out/openmpi_role.log"; exit 1; }
echo "openmpi role, two passes: $((SECONDS - start)) s"
grep -E 'Configure, build|changed=|source:' "$out/openmpi_role.log"
/opt/openmpi/current/bin/ompi_info --parsable --all | grep -E 'ompi:version:full|mpi_built_with_cuda_support:value' | tee "$out/ompi_info.txt"
runs='[{"name": "all_reduce_perf", "args": "-b 8 -e 4G -f 2", "mode": "mpirun"}]'
start=$SECONDS
ansible-playbook playbooks/validate.yml "${common[@]}" -e openmpi_provider=source -e nccl_tests_nccl_home=/tmp/nccl \
  -e "nccl_tests_report_dir=$out/report" \
  -e "{\"nccl_tests_runs\": $runs, \"nccl_tests_env\": {\"NCCL_NVLS_ENABLE\": \"0\", \"LD_LIBRARY_PATH\": \"$LD_LIBRARY_PATH\"}}" \
  >"$out/validate.log" 2>&1 || { tail -n 60 "$out/validate.log"; exit 1; }
echo "validate.yml with the source-built OpenMPI: $((SECONDS - start)) s"
ldd /opt/nccl-tests/build/all_reduce_perf | grep -E 'libmpi|libnccl' | tee "$out/ldd.txt"
/opt/openmpi/current/bin/mpirun --allow-run-as-root -np "$ngpu" -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH \
  /opt/nccl-tests/build/all_reduce_perf -b 8 -e 4G -f 2 -g 1 >"$out/hand_mpirun.txt" 2>&1
tail -n 25 "$out/validate.log"
grep -h -E '^ +4294967296 ' "$out/hand_mpirun.txt"
