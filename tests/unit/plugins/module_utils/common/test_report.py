import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import report


GPU = {"present": True, "count": 2, "driver_version": "580.159.04", "nvlink": True,
       "gpus": [{"index": 0, "name": "NVIDIA H200", "temperature_c": 37, "ecc_uncorrected_volatile": 0,
                 "pcie": {"gen": 5, "width": 16, "gen_now": 1, "width_now": 16}},
                {"index": 1, "name": "NVIDIA H200", "temperature_c": 39, "ecc_uncorrected_volatile": 0}]}
DEVICES = [{"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "netdev": "eth0"}]},
           {"name": "mlx5_1", "ports": [{"port": 1, "state": "DOWN", "netdev": None}]}]


def test_node_record_from_real_lab_facts(lab_facts):
    record = report.node_record(lab_facts, rdma_devices=DEVICES, gpu=GPU,
                                nccl={"profile": "roce", "env": {"NCCL_IB_DISABLE": "0"}, "extra": 1})
    assert record["schema"] == report.NODE_RECORD_SCHEMA
    assert record["hostname"] == "gpufabric-node1"
    assert record["os"] == "Debian 12.15"
    assert record["virtualization"] == "docker/guest"
    assert record["cpus"] == 2
    assert record["memory_mib"] == lab_facts["memtotal_mb"]
    # loopback is dropped; eth0 keeps its MTU and lab address
    assert [i["name"] for i in record["interfaces"]] == ["eth0"]
    eth0 = record["interfaces"][0]
    assert eth0["mtu"] == 1500
    assert eth0["ipv4"] == lab_facts["eth0"]["ipv4"]["address"]
    assert eth0["active"] is True
    assert record["default_interface"] == "eth0"
    assert record["rdma_devices"] == DEVICES
    # temperatures, error counters and the PCIe generation an idle GPU drops to move on their own: kept out
    assert record["gpu"]["gpus"] == [{"index": 0, "name": "NVIDIA H200", "pcie": {"gen": 5, "width": 16}},
                                     {"index": 1, "name": "NVIDIA H200"}]
    assert record["gpu"]["count"] == 2 and GPU["gpus"][0]["temperature_c"] == 37
    assert record["nccl"]["profile"] == "roce" and "extra" not in record["nccl"]


def test_node_record_keeps_only_stable_values(lab_facts):
    """The record must not change between runs, or facts.json would never be idempotent."""
    changed = dict(lab_facts, uptime_seconds=1, memfree_mb=1, date_time={"epoch": "1"})
    assert report.node_record(changed) == report.node_record(lab_facts)


def test_node_record_fabric_interfaces_and_odd_names():
    facts = {
        "hostname": "gpu7",
        "interfaces": ["lo", "docker0", "ib0", "enp1s0f0np0", "bond0.100", "vethab12"],
        "ib0": {"mtu": 4092, "active": True, "ipv4": {"address": "10.0.0.7"}, "module": "ib_ipoib"},
        "enp1s0f0np0": {"mtu": 9000, "active": False, "module": "mlx5_core"},
        "bond0_100": {"mtu": 9000, "active": True},
    }
    record = report.node_record(facts)
    assert [i["name"] for i in record["interfaces"]] == ["bond0.100", "enp1s0f0np0", "ib0"]
    by_name = {i["name"]: i for i in record["interfaces"]}
    assert by_name["bond0.100"]["mtu"] == 9000
    assert by_name["enp1s0f0np0"]["driver"] == "mlx5_core"
    assert by_name["enp1s0f0np0"]["ipv4"] is None
    assert by_name["ib0"]["ipv4"] == "10.0.0.7"
    assert record["rdma_devices"] == [] and record["gpu"] == {"present": False, "count": 0, "gpus": []}
    assert "nccl" not in record


def test_node_record_rejects_non_dict():
    with pytest.raises(TypeError, match="ansible_facts dictionary, got str"):
        report.node_record("gpu7")


def test_node_summary_table(lab_facts):
    records = {
        "node2": report.node_record(dict(lab_facts, hostname="node2")),
        "node1": report.node_record(lab_facts, DEVICES, GPU, {"profile": "roce"}),
    }
    lines = report.node_summary(records).splitlines()
    assert lines[0].split()[:3] == ["node", "os", "kernel"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].startswith("node1 ") and lines[3].startswith("node2 ")
    assert "mlx5_0(1/1),mlx5_1(0/1)" in lines[2] and "eth0(1500)" in lines[2]
    assert "2 x NVIDIA H200" in lines[2] and lines[2].endswith("roce")
    assert " none " in lines[3] and lines[3].endswith("-")
    # columns line up: every row starts its kernel column at the same offset
    offset = lines[0].index("kernel")
    assert all(line[offset:].startswith(lab_facts["kernel"]) for line in lines[2:])


def test_node_summary_host_without_record():
    lines = report.node_summary({"down1": {}}).splitlines()
    assert lines[2].split()[0] == "down1"
    assert lines[2].split()[-3:] == ["none", "-", "-"]


def test_the_replayed_note_is_one_wording_for_every_report():
    from ansible_collections.gpufabric.rdma.plugins.module_utils.common.report import replayed_note, with_replayed_note
    from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import TextError
    assert replayed_note("the capture x.txt") == "Figures REPLAYED from the capture x.txt, not measured."
    assert replayed_note(["b", None, "a", "b"]) == "Figures REPLAYED from a; b, not measured."
    assert replayed_note("") is None and replayed_note([None]) is None
    assert with_replayed_note("# Burn-in\n\nPASSED: 2 hosts\n", "c") == (
        "# Burn-in\n\nFigures REPLAYED from c, not measured.\n\nPASSED: 2 hosts\n")
    assert with_replayed_note("no title\n", "c") == "Figures REPLAYED from c, not measured.\n\nno title\n"
    assert with_replayed_note("# T\n", None) == "# T\n"
    with pytest.raises(TextError):
        replayed_note("two\nlines")
