import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nccl


@pytest.fixture
def roce(fixture_file):
    return sysfs.read_rdma_devices(fixture_file("sysfs", "roce_mlx5"))


@pytest.fixture
def erdma(fixture_file):
    return sysfs.read_rdma_devices(fixture_file("sysfs", "erdma"))


@pytest.fixture
def infiniband(fixture_file):
    return sysfs.read_rdma_devices(fixture_file("sysfs", "ib_mlx5"))


# The seed documents, to the letter (names, values and order).
def test_acs_type1_matches_seed_000():
    assert list(nccl.compute_env("acs_rdma_type1")["env"].items()) == [
        ("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_HCA", "mlx5"), ("NCCL_DEBUG", "INFO")]


def test_acs_type2_matches_seed_000():
    result = nccl.compute_env("acs_rdma_type2")
    assert list(result["env"].items()) == [
        ("NCCL_IB_DISABLE", "1"), ("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_HCA", ""), ("NCCL_DEBUG", "INFO")]
    assert result["warnings"] == []   # empty NCCL_IB_HCA with IB disabled is no contradiction


def test_erdma_matches_seed_004():
    assert nccl.compute_env("erdma")["env"] == {
        "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "0", "NCCL_IB_GID_INDEX": "1",
        "NCCL_NET_GDR_LEVEL": "5", "NCCL_IB_QPS_PER_CONNECTION": "4", "NCCL_MIN_NCHANNELS": "16",
        "NCCL_ALGO": "Ring", "NCCL_P2P_LEVEL": "5", "NCCL_DEBUG": "INFO"}


def test_auto_on_erdma_nodes(erdma):
    result = nccl.compute_env("auto", erdma)
    assert result["profile"] == "erdma" and "erdma_0" in result["profile_reason"]
    # what the sysfs tree says agrees with the guide's fixed GID index
    assert erdma[0]["ports"][0]["roce_v2_gid_index"] == int(result["env"]["NCCL_IB_GID_INDEX"])


def test_auto_on_roce(roce):
    result = nccl.compute_env("auto", roce, socket_ifname="bond0")
    assert result["profile"] == "roce"
    assert result["env"] == {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1",
                             "NCCL_IB_GID_INDEX": "3", "NCCL_SOCKET_IFNAME": "bond0"}
    assert result["reasons"][2].startswith("NCCL_IB_GID_INDEX=3: GID 3 is RoCE v2")
    assert len(result["reasons"]) == len(result["env"])
    assert result["warnings"] == []


def test_auto_on_infiniband(infiniband):
    result = nccl.compute_env("auto", infiniband, socket_ifname="eth0")
    assert result["profile"] == "infiniband"
    assert result["env"] == {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "eth0"}


def test_auto_without_rdma_is_socket_and_touches_nothing_else():
    result = nccl.compute_env("auto", [], socket_ifname="eth0")
    assert result["profile"] == "socket" and result["profile_reason"] == "no RDMA device found"
    # no algorithm, protocol, channel or P2P setting that could slow an NVSwitch node down
    assert result["env"] == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth0"}


def test_auto_with_only_down_ports_is_socket(roce):
    for device in roce:
        for port in device["ports"]:
            port["state"] = "DOWN"
    result = nccl.compute_env("auto", roce)
    assert result["profile"] == "socket" and "none has an ACTIVE" in result["profile_reason"]


def test_roce_profile_without_active_port_warns():
    result = nccl.compute_env("roce", [])
    assert "NCCL_IB_HCA" not in result["env"]
    assert any("no ACTIVE RoCE port" in w for w in result["warnings"])


def test_overrides_and_unset(roce):
    result = nccl.compute_env("roce", roce, overrides={"NCCL_IB_GID_INDEX": 5, "NCCL_DEBUG": "WARN"},
                              unset=["NCCL_SOCKET_IFNAME"])
    assert result["env"]["NCCL_IB_GID_INDEX"] == "5" and result["env"]["NCCL_DEBUG"] == "WARN"
    assert "NCCL_SOCKET_IFNAME" not in result["env"]
    assert "NCCL_IB_GID_INDEX=5: set by overrides (profile had '3')" in result["reasons"]


def test_typo_is_named_with_a_suggestion():
    result = nccl.compute_env("socket", overrides={"NCCL_IB_GID_IDX": "3"})
    assert result["warnings"] == ["NCCL_IB_GID_IDX is not an NCCL variable NCCL documents; did you mean NCCL_IB_GID_INDEX?"]


def test_contradiction_is_named():
    result = nccl.compute_env("socket", overrides={"NCCL_IB_HCA": "mlx5_0"})
    assert any("NCCL_IB_DISABLE=1 turns IB off, so NCCL_IB_HCA=mlx5_0" in w for w in result["warnings"])


@pytest.mark.parametrize("bad", ["ib", "", None])
def test_unknown_profile(bad):
    with pytest.raises(ValueError, match="profile must be one of auto, infiniband"):
        nccl.compute_env(bad)


def test_bad_override_name():
    with pytest.raises(ValueError, match="'NCCL IB'"):
        nccl.compute_env("socket", overrides={"NCCL IB": "1"})


def test_renderings():
    result = nccl.compute_env("acs_rdma_type2")
    conf = nccl.render_conf(result).splitlines()
    assert conf[0].startswith("# Managed by gpufabric.rdma (nccl_env, profile acs_rdma_type2")
    assert [line for line in conf if not line.startswith("#")] == [
        "NCCL_IB_DISABLE=1", "NCCL_SOCKET_IFNAME=eth0", "NCCL_IB_HCA=", "NCCL_DEBUG=INFO"]
    script = nccl.render_profile_script(result).splitlines()
    assert "export NCCL_IB_HCA=''" in script and "export NCCL_DEBUG=INFO" in script


def test_default_route_interface():
    route = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
             "eth0\t00000000\t01005A0A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
             "eth0\t00005A0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
    assert nccl.default_route_interface(route) == "eth0"
    assert nccl.default_route_interface(route.splitlines()[0]) is None
