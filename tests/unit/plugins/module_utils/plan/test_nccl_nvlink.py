"""The NCCL environment of a node whose NVLink calls for it (plan/nccl.nvlink_entries), on the facts gpu_facts would
make of real captures: a GB200 tray (NVIDIA/k8s-test-infra's nvidia-smi -q -x) with a real GB200 topo -m (every
GPU-NIC pair SYS: sgl-project/sglang#11208, its last GPU row cut by the index), HGX H100/B200 boards, an x86 H100 node
with PIX/NODE NICs (aihub0007) and a POWER9 node; each variable with its reason, overrides and unset having the last
word."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as gpu_parse
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nccl
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink


def _gpu(read_fixture, smi, topo=None):
    text = read_fixture(*smi)
    facts = gpu_parse.parse_nvidia_smi_xml(text)
    facts.update(fabric=nvlink.fabric_fact(text),
                 topology=gpu_parse.parse_nvidia_topo(read_fixture(*topo)) if topo else {})
    return facts


@pytest.fixture
def gb200(read_fixture):
    return _gpu(read_fixture, ("nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml"),
                ("nvidia_smi", "topo_gb200x4_sglang11208_cut.txt"))


@pytest.fixture
def infiniband(fixture_file):
    return sysfs.read_rdma_devices(fixture_file("sysfs", "ib_mlx5"))


def test_a_gb200_tray_over_infiniband_gets_mnnvl_cumem_and_gdr_c2c(gb200, infiniband):
    result = nccl.compute_env("auto", infiniband, "eth0", gpu=gb200)
    env = result["env"]
    assert (env["NCCL_MNNVL_ENABLE"], env["NCCL_CUMEM_ENABLE"], env["NCCL_NET_GDR_C2C"]) == ("1", "1", "1")
    reasons = dict(line.split(": ", 1) for line in result["reasons"])
    assert reasons["NCCL_MNNVL_ENABLE=1"].startswith(
        "the GPUs are in NVLink domain 00000001-0000-0000-0000-000000000001/2: NCCL crosses between")
    assert "MNNVL is not supported on this system" in reasons["NCCL_MNNVL_ENABLE=1"]
    assert "'MNNVL requires cuMem to be enabled'" in reasons["NCCL_CUMEM_ENABLE=1"]
    assert "SYS for every GPU-NIC pair of this GB200" in reasons["NCCL_NET_GDR_C2C=1"]
    assert "'GPU %d / HCA %lx connected to CPU %d via C2C link'" in reasons["NCCL_NET_GDR_C2C=1"]
    assert result["warnings"] == []       # every one is a variable NCCL documents (KNOWN_VARIABLES)
    # the profile's own variables come first, as before
    assert list(env)[:2] == ["NCCL_IB_DISABLE", "NCCL_IB_HCA"]


def test_over_sockets_there_is_no_gpudirect_rdma_to_ask_for(gb200):
    env = nccl.compute_env("socket", [], "eth0", gpu=gb200)["env"]
    assert env["NCCL_MNNVL_ENABLE"] == "1" and "NCCL_NET_GDR_C2C" not in env


def test_overrides_and_unset_have_the_last_word(gb200, infiniband):
    result = nccl.compute_env("infiniband", infiniband, "eth0", overrides={"NCCL_MNNVL_ENABLE": 0},
                              unset=["NCCL_NET_GDR_C2C"], gpu=gb200)
    assert result["env"]["NCCL_MNNVL_ENABLE"] == "0" and "NCCL_NET_GDR_C2C" not in result["env"]
    assert "NCCL_MNNVL_ENABLE=0: set by overrides (profile had '1')" in result["reasons"]


@pytest.mark.parametrize("smi, topo", [
    (("nvidia_smi_fabric", "qx_h100x8_k8stestinfra.xml"), ("nvidia_smi_fabric", "topo_nv18x8_12nic_aihub0007.txt")),
    (("nvidia_smi_fabric", "qx_b200x8_k8stestinfra.xml"), None),
    (("nvidia_smi", "q_h200x8.xml"), ("nvidia_smi", "topo_h200x8.txt")),
])
def test_hgx_boards_get_nothing(read_fixture, infiniband, smi, topo):
    facts = _gpu(read_fixture, smi, topo)
    assert nccl.nvlink_entries(facts, "infiniband") == []
    plain = nccl.compute_env("infiniband", infiniband, "eth0")
    assert nccl.compute_env("infiniband", infiniband, "eth0", gpu=facts) == plain


def test_sys_nics_on_a_cpu_that_is_no_grace_are_not_c2c(read_fixture, gb200):
    power9 = {"gpus": [{"name": "Tesla V100-SXM2-16GB"}],
              "topology": gpu_parse.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_ac922_power9_mlx5_milanpro.txt"))}
    assert nccl.nics_behind_c2c(power9) is None
    assert nccl.nics_behind_c2c(gb200) == "GB200"
    # the same all-SYS matrix under GPUs that are no Grace superchip: NICs on the other socket, not behind C2C
    assert nccl.nics_behind_c2c(dict(gb200, gpus=[{"name": "NVIDIA H100 80GB HBM3"}] * 4)) is None
    no_nics = dict(gb200, topology=gpu_parse.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_h200x8.txt")))
    assert nccl.nics_behind_c2c(no_nics) is None      # no NIC column: nothing behind anything


def test_a_record_of_any_age_and_odd_gpu_values(gb200):
    older = dict(gb200, fabric={"domain": {"cluster_uuid": "00000001-0000-0000-0000-000000000001", "clique_id": 2},
                                "reason": None})
    assert [name for name, value, why in nccl.nvlink_entries(older, "socket")] == ["NCCL_MNNVL_ENABLE", "NCCL_CUMEM_ENABLE"]
    assert nccl.nvlink_entries(dict(gb200, fabric={"domain": "x"}), "socket") == []
    assert nccl.nvlink_entries(None, "roce") == [] and nccl.nvlink_entries({}, "roce") == []
    with pytest.raises(ValueError, match="gpu.topology must be a dict"):
        nccl.compute_env("socket", gpu={"topology": "SYS"})
    with pytest.raises(ValueError, match="gpu must be gpu_facts' facts"):
        nccl.compute_env("socket", gpu="GB200")
