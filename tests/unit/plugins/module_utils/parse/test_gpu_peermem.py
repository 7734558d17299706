"""How peer memory gets loaded, or why not, from gpu_facts' facts and what the node has."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu

H200 = {"present": True, "driver_version": "570.133.20", "peermem": {"loaded": False, "module": None}}
OLD = {"present": True, "driver_version": "460.106.00", "peermem": {"loaded": False, "module": None}}
NONE = {"present": False, "driver_version": None, "error": "nvidia-smi not found", "peermem": {"loaded": False}}


@pytest.mark.parametrize("facts, available, ib_core, container, wanted, module, action, reason", [
    (H200, {"nvidia_peermem": True}, True, False, "auto", "nvidia_peermem", "load",
     "driver 570.133.20, RDMA stack loaded: modprobe nvidia_peermem"),
    (dict(H200, peermem={"loaded": True, "module": "nvidia_peermem"}), {}, True, False, "auto", "nvidia_peermem",
     "none", "nvidia_peermem is loaded"),
    (NONE, {}, False, True, "auto", "nvidia_peermem", "skip",
     "a container: kernel modules belong to the host, load nvidia_peermem there"),
    (NONE, {}, True, False, "auto", "nvidia_peermem", "skip",
     "no NVIDIA GPU driver answers (nvidia-smi not found); install the driver first"),
    (H200, {"nvidia_peermem": True}, False, False, "auto", "nvidia_peermem", "fail",
     "ib_core is not loaded: nvidia_peermem needs the RDMA stack (run gpufabric.rdma.rdma_drivers first)"),
    (OLD, {"nvidia_peermem": False}, True, False, "auto", "nv_peer_mem", "fail",
     "driver 460.106.00 needs the legacy nv_peer_mem, which is not built: set peermem_legacy_source to Mellanox's "
     "nv_peer_memory source"),
    (OLD, {"nv_peer_mem": True}, True, False, "auto", "nv_peer_mem", "load",
     "driver 460.106.00, RDMA stack loaded: modprobe nv_peer_mem"),
    (H200, {"nv_peer_mem": True}, True, False, "nv_peer_mem", "nv_peer_mem", "load",
     "driver 570.133.20, RDMA stack loaded: modprobe nv_peer_mem"),
])
def test_peermem_plan(facts, available, ib_core, container, wanted, module, action, reason):
    assert gpu.peermem_plan(facts, available, ib_core, container, wanted) == {
        "module": module, "action": action, "reason": reason}


def test_a_driver_without_nvidia_peermem_is_explained():
    plan = gpu.peermem_plan(H200, {"nvidia_peermem": False}, True, False)
    assert plan["action"] == "fail"
    assert "reinstall the GPU driver after the RDMA stack" in plan["reason"]
