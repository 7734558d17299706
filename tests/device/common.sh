# Sourced by the tests/device scripts: what every run on the GPU machine needs.
# NVLink multicast stays off on these shared machines (their docs say why).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

# NCCL as the nvidia-nccl pip wheel lays it out, plus the libnccl.so link a build needs,
# in /tmp/nccl (NCCL_HOME), and on LD_LIBRARY_PATH.
setup_nccl_home() {
  local home
  home=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
  mkdir -p /tmp/nccl/lib
  ln -sfn "$home/include" /tmp/nccl/include
  ln -sfn "$home/lib/libnccl.so.2" /tmp/nccl/lib/libnccl.so
  ln -sfn "$home/lib/libnccl.so.2" /tmp/nccl/lib/libnccl.so.2
  export LD_LIBRARY_PATH=/tmp/nccl/lib:${LD_LIBRARY_PATH:-}
}

# ansible-core from the carried wheels (.whl/, else vendor-src/whl/), and this checkout as gpufabric.rdma.
setup_ansible() {
  local top=$1
  local wheels=$top/.whl
  [[ -d $wheels ]] || wheels=$top/vendor-src/whl   # pip download -d vendor-src/whl "ansible-core==2.19.*" (ignored)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$wheels"/*.whl
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
  mkdir -p /tmp/collections/ansible_collections/gpufabric
  ln -sfn "$top" /tmp/collections/ansible_collections/gpufabric/rdma
  export ANSIBLE_COLLECTIONS_PATH=/tmp/collections ANSIBLE_CONFIG=$top/ansible.cfg ANSIBLE_FORCE_COLOR=0
}

# A fresh copy of the carried nccl-tests source where the nccl_tests role looks for it.
copy_nccl_tests_source() {
  local top=$1
  mkdir -p /opt/nccl-tests && rm -rf /opt/nccl-tests/src && cp -r "$top/vendor-src/nccl-tests" /opt/nccl-tests/src
}

# The CUDA toolkit of the nvcc on PATH, and the MPI prefix that holds mpi.h: distribution OpenMPI keeps
# mpi.h outside <prefix>/include, and mpicc knows where (OpenMPI 4: --showme:incdirs).
find_build_homes() {
  cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
  mpi_home=""
  if command -v mpirun >/dev/null; then
    mpi_home=$(dirname "$(mpicc --showme:incdirs 2>/dev/null | cut -d' ' -f1)")
    [[ -f $mpi_home/include/mpi.h ]] || mpi_home=$(dirname "$(dirname "$(command -v mpirun)")")
  fi
}

# A capture script's start: its output folder (the global out, from the script's first argument), the pip
# NCCL as a home, the CUDA and MPI prefixes for building nccl-tests.
start_capture() {
  out=${1:?usage: $0 OUT_DIR}
  mkdir -p "$out"
  setup_nccl_home
  find_build_homes
}

# Everything a playbook run on the GPU machine needs: ansible-core from the wheels, the pip NCCL as a
# home, a fresh nccl-tests source.
prepare_playbook_run() {
  local top=$1
  setup_ansible "$top"
  setup_nccl_home
  copy_nccl_tests_source "$top"
}
