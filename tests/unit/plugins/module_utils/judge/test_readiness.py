import copy
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import readiness, validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nccl
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import report
from paths import ROOT


@pytest.fixture
def h200_gpu(read_fixture):
    facts = gpu.parse_nvidia_smi_xml(read_fixture("nvidia_smi", "q_h200x8.xml"))
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_h200x8.txt"))
    facts.update(present=True, topology=topo, nvlink=gpu.has_nvlink(topo), peermem={"loaded": False, "module": None})
    return facts


@pytest.fixture
def roce_node(lab_facts, fixture_file, h200_gpu):
    devices = sysfs.read_rdma_devices(fixture_file("sysfs", "roce_mlx5"))
    facts = dict(lab_facts, interfaces=["eth05", "eth06", "lo"],
                 eth05={"mtu": 9000, "active": True}, eth06={"mtu": 9000, "active": False})
    return report.node_record(facts, devices, h200_gpu, nccl.compute_env("auto", devices, "eth05"))


def _checks(findings):
    return sorted((f["check"], f["severity"], f["target"]) for f in findings)


def test_lab_nodes_without_gpu_or_rdma_are_ready(lab_facts):
    records = dict((h, report.node_record(dict(lab_facts, hostname=h), [], None, nccl.compute_env("auto", [], "eth0")))
                   for h in ("node1", "node2"))
    result = readiness.build_report(records)
    assert result["ready"] is True and result["counts"] == {"critical": 0, "warning": 0, "info": 0}
    assert result["nodes"]["node1"]["fabric_mtu"] == {"eth0": 1500}
    assert result["nodes"]["node1"]["nccl"]["profile"] == "socket"


def test_expected_gpus_missing_on_a_node_without_driver(lab_facts):
    """No nvidia-smi where 8 GPUs are expected: the GPUs cannot be counted, and the health check's rule says so
    (nvidia_smi; it was gpu_count "no NVIDIA driver answered", a second copy of that rule - issue 52)."""
    records = {"node1": report.node_record(lab_facts, [], None, None)}
    result = readiness.build_report(records, expected_gpu_count="8")
    assert result["ready"] is False
    (only,) = result["nodes"]["node1"]["findings"]
    assert only["check"] == "nvidia_smi" and only["severity"] == "critical"
    assert only["detail"] == "nvidia-smi not found: cannot count GPUs (8 expected)"
    assert "install the NVIDIA driver" in only["fix_hint"]


def test_roce_node_findings(roce_node):
    result = readiness.build_report({"gpu1": roce_node}, expected_gpu_count=8)
    assert _checks(result["nodes"]["gpu1"]["findings"]) == [
        ("peermem", "warning", "gpu1"),
        ("rdma_port_state", "warning", "gpu1/mlx5_1 port 1"),
    ]
    port = [f for f in result["nodes"]["gpu1"]["findings"] if f["check"] == "rdma_port_state"][0]
    assert port["detail"] == "port is DOWN (physical state Disabled)" and "eth06" in port["fix_hint"]
    assert result["ready"] is True   # warnings do not block
    assert result["nodes"]["gpu1"]["gpus"] == {"count": 8, "model": "NVIDIA H200", "driver_version": "580.159.04",
                                               "nvlink": True}
    assert result["nodes"]["gpu1"]["fabric_mtu"] == {"eth05": 9000, "eth06": 9000}


def test_cluster_mtu_gpu_and_profile_mismatch(roce_node):
    other = copy.deepcopy(roce_node)
    other["interfaces"][0]["mtu"] = 1500
    other["gpu"]["count"] = 7
    other["nccl"]["profile"] = "socket"
    result = readiness.build_report({"gpu1": roce_node, "gpu2": other})
    assert _checks(result["cluster_findings"]) == [
        ("gpu_count_consistency", "warning", "cluster"),
        ("mtu_consistency", "warning", "cluster"),
        ("nccl_profile_consistency", "warning", "cluster"),
    ]
    mtu = [f for f in result["cluster_findings"] if f["check"] == "mtu_consistency"][0]
    assert mtu["detail"] == "MTU 1500 on gpu2:eth05; MTU 9000 on gpu1:eth05, gpu1:eth06, gpu2:eth06"


def test_all_ports_down_is_critical(roce_node):
    for device in roce_node["rdma_devices"]:
        for port in device["ports"]:
            port["state"] = "DOWN"
    result = readiness.build_report({"gpu1": roce_node})
    assert ("rdma_active", "critical", "gpu1") in _checks(result["nodes"]["gpu1"]["findings"])
    assert result["ready"] is False


def test_nccl_warnings_become_findings(lab_facts):
    env = nccl.compute_env("socket", [], "eth0", overrides={"NCCL_IB_GID_IDX": "3"})
    result = readiness.build_report({"n": report.node_record(lab_facts, [], None, env)})
    (only,) = result["nodes"]["n"]["findings"]
    assert only["check"] == "nccl_env" and "NCCL_IB_GID_INDEX" in only["detail"]


def test_markdown_and_text(roce_node):
    result = readiness.build_report({"gpu1": roce_node}, expected_gpu_count=8)
    markdown = readiness.render_markdown(result)
    assert "**READY**: 0 critical, 2 warning, 0 info finding(s) on 1 node(s)." in markdown
    assert ("| gpu1 | 8 x NVIDIA H200 | yes | mlx5_0 RoCE [1 ACTIVE Ethernet], mlx5_1 RoCE [1 DOWN Ethernet] "
            "| not loaded | eth05=9000, eth06=9000 | roce |") in markdown
    assert "- `NCCL_IB_GID_INDEX=3: GID 3 is RoCE v2 with an IPv4 address on an up netdev`" in markdown
    text = readiness.render_text(result).splitlines()
    assert text[0] == "READY: 0 critical, 2 warning, 0 info"
    assert text[1] == "gpu1: NCCL profile roce (RoCE devices with an ACTIVE port: mlx5_0)"
    assert text[2:6] == ["  NCCL_IB_DISABLE=0: use the IB verbs transport over RoCE",
                         "  NCCL_IB_HCA==mlx5_0:1: the RoCE ports that are ACTIVE, named exactly",
                         "  NCCL_IB_GID_INDEX=3: GID 3 is RoCE v2 with an IPv4 address on an up netdev",
                         "  NCCL_SOCKET_IFNAME=eth05: bootstrap and socket traffic on eth05"]
    assert text[6].split() == ["severity", "check", "target", "detail"]
    assert text[8].split()[:3] == ["warning", "peermem", "gpu1"]
    assert text[9].split()[:3] == ["warning", "rdma_port_state", "gpu1/mlx5_1"]


def test_rejects_non_mapping():
    with pytest.raises(TypeError, match="mapping of host name"):
        readiness.build_report([])


def test_readiness_names_the_node_with_two_nics_swapped(read_fixture):
    """Three nodes' nvidia-smi topo -m as discovery keeps it (gpu_facts' topology): two real aihub captures and the
    first one edited with mlx5_2 and mlx5_5 swapped (tests/unit/fixtures/README.md)."""
    def record(name):
        topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi_fabric", name))
        return {"gpu": {"present": True, "count": 8, "topology": topo}, "rdma_devices": [], "interfaces": []}
    records = {"node07": record("topo_nv18x8_12nic_aihub0007.txt"),
               "node08": record("topo_nv18x8_12nic_aihub0008_glued_cells.txt"),
               "node09": record("topo_nv18x8_12nic_aihub0007_edited_swap.txt")}
    rails = [f for f in readiness.cluster_findings(records) if f["check"] == "rail_mismatch"]
    assert [(f["severity"], f["target"]) for f in rails] == [("warning", "node09")]
    assert rails[0]["detail"].endswith("(two NICs swapped: mlx5_2 and mlx5_5 swapped between GPU2 and GPU3)")
    assert readiness.cluster_findings({"node07": records["node07"]}) == []


def test_the_readiness_nccl_check_joins_the_verdict(read_fixture):
    """A short mpirun run judged on what NCCL used (real NCCL logs before the real 8x H200 table): sockets where
    the profile promises RDMA is not ready; the RoCE/GDR log is an info line; a run with no verdict is not ready."""
    def run(log, label):
        return {"label": label, "mode": "mpirun", "rc": 0, "command": "mpirun", "not_run": None, "env": {},
                "output": read_fixture("nccl_debug", log) + read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")}
    judged = validation.judge([run("socket_fallback_efa_4node_trainingoneks.txt", "sockets"),
                               run("ib_roce_gdrdma_2node_slurmv4.txt", "roce")], nccl_debug={"profile": "roce"})
    records = {"n1": {"gpu": {"present": True, "count": 8}}}
    report = readiness.build_report(records, nccl_check=judged)
    found = [(f["severity"], f["detail"]) for f in report["cluster_findings"] if f["check"] == "nccl_path"]
    assert found[0] == ("critical", "sockets: inter-node traffic fell back to sockets (NET/Socket) although the "
                                    "profile expects RDMA")
    assert found[1][0] == "info" and found[1][1].startswith("roce: NCCL 2.27.5, NET/IB (RoCE) over mlx5_0:1")
    assert report["ready"] is False
    not_run = validation.judge([dict(run("ib_roce_gdrdma_2node_slurmv4.txt", "x"), not_run="check mode")],
                               nccl_debug={"profile": "roce"})
    assert readiness.build_report(records, nccl_check=not_run)["ready"] is False
    assert readiness.build_report(records, nccl_check=[])["cluster_findings"][0]["detail"] == (
        "the readiness NCCL check was asked for but no run was judged")
    assert readiness.build_report(records)["ready"] is True


def test_a_readiness_check_far_below_its_hardware_is_not_ready():
    """The real 4x H200 run with NVLink peer-to-peer disabled (docs/benchmarks/2026-11-27-h200x4-p2p) under mpirun,
    judged against what the node's NVLink carries: critical, naming both figures; the same run with P2P passes."""
    root = ROOT
    captures = os.path.join(root, "docs", "benchmarks", "2026-11-27-h200x4-p2p")

    def run(name):
        with open(os.path.join(captures, name)) as handle:
            return {"label": name, "host": "h200x4", "mode": "mpirun", "rc": 0, "command": "mpirun", "not_run": None,
                    "env": {}, "output": handle.read()}
    with open(os.path.join(captures, "topo_m.txt")) as handle:
        node = {"gpu": {"gpus": [{"index": i, "name": "NVIDIA H200"} for i in range(4)],
                        "topology": gpu.parse_nvidia_topo(handle.read())}}
    platform = {"gpu": "NVIDIA H200", "gpus": 4, "interconnect": "nvlink", "hardware": {"nodes": {"h200x4": node}}}
    judged = validation.judge([run("mpirun_p2p_off_r1.txt"), run("mpirun_p2p_on_r1.txt")], nccl_debug={"profile": None},
                              baselines={"platform": platform, "fraction": 0.9, "local": []})
    found = [f for f in readiness.build_report({"n1": {"gpu": {"present": True, "count": 4}}}, nccl_check=judged)
             ["cluster_findings"] if f["check"] == "nccl_below_hardware"]
    assert [(f["severity"], f["detail"][:80]) for f in found] == [
        ("critical", "mpirun_p2p_off_r1.txt: busbw 23.16 GB/s at 536870912 bytes is 5 % of what the ha")]
