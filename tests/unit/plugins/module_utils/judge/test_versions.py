"""judge/versions.py through the readiness report: each node's versions and SKU from discovery's record (nvidia-smi -q -x
of a real 8x H200, real mlx5 device entries), the shipped security floors, a site's floors and pins, and drift from the
SKU's majority - a fleet with one node off the majority and one below a floor gives exactly those two findings."""
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.filter.fabric import FilterModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import known_good_floors, readiness, versions
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as gpu_parse, ofed
from ansible.errors import AnsibleFilterError
from paths import FIXTURES

readiness_report = FilterModule().filters()["readiness_report"]


def _record(driver="580.95.05", fw="28.39.1002", kernel="6.8.0-60-generic"):
    with open(os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml")) as handle:
        gpu = gpu_parse.parse_nvidia_smi_xml(handle.read())
    gpu["driver_version"] = driver
    nics = [{"name": "mlx5_%d" % i, "driver": "mlx5_core", "transport": "InfiniBand", "fw_ver": fw, "hca_type": "MT4129",
             "board_id": "MT_0000000838", "ports": []} for i in range(2)]
    return {"hostname": "x", "kernel": kernel, "gpu": dict(gpu, present=True), "rdma_devices": nics, "interfaces": []}


def _fleet(**changes):
    records = dict(("n%d" % i, _record()) for i in range(1, 6))
    for host, change in changes.items():
        records[host] = _record(**change)
    return records


def test_a_record_says_its_versions_and_its_sku():
    record = _record()
    assert versions.sku(record) == "NVIDIA H200 x MT4129"
    assert versions.versions(record) == {"driver": "580.95.05", "cuda": "13.0", "kernel": "6.8.0-60-generic",
                                         "vbios": "96.00.A5.00.1A", "nic_fw": {"mlx5_0": "28.39.1002", "mlx5_1": "28.39.1002"},
                                         "nic_psid": {"mlx5_0": "MT_0000000838", "mlx5_1": "MT_0000000838"}, "ofed": None}
    assert versions.branch("570.124.06") == "570" and versions.version_key("28.39.1002") == (28, 39, 1002)


def test_one_node_off_the_majority_and_one_below_a_floor_give_exactly_those_two_findings():
    records = _fleet(n2={"fw": "28.37.1014"}, n4={"driver": "580.82.07"})
    found = [f for f in readiness.build_report(records)["cluster_findings"] if f["check"].startswith("version")]
    assert [(f["check"], f["severity"], f["target"]) for f in found] == [
        ("version_floor", "critical", "n4"),
        ("version_drift", "warning", "n2/mlx5_0"), ("version_drift", "warning", "n2/mlx5_1")]
    assert found[0]["detail"] == ("driver 580.82.07 is below the floor 580.95.05 (NVIDIA security bulletin 5703 "
                                  "(October 2025, CVE-2025-23280))")
    assert found[1]["detail"] == "nic_fw 28.37.1014 differs from its SKU's majority 28.39.1002 (4 of 5 NVIDIA H200 x MT4129 nodes)"


def test_a_sites_floor_and_pin_come_first_and_an_unknown_branch_is_said():
    records = _fleet(n3={"kernel": "5.15.0-100-generic"}, n5={"driver": "575.51.02"})
    policy = {"NVIDIA H200 x MT4129": {"floors": {"kernel": "6.8"}, "pins": {"nic_fw": "28.39.1002"}}}
    report = readiness_report(records, known_good=policy)
    found = [(f["check"], f["severity"], f["target"], f["detail"]) for f in report["cluster_findings"]
             if f["check"].startswith("version")]
    assert ("version_floor", "critical", "n3", "kernel 5.15.0-100-generic is below the floor 6.8 (the site's floor for "
            "NVIDIA H200 x MT4129)") in found
    assert ("version_floor", "info", "n5", "driver 575.51.02: no security floor is known for branch 575 (the collection "
            "knows 470, 535, 550, 570, 580)") in found
    # n5's driver differs from the majority (a warning), n3's kernel is below a floor (no second finding for it)
    assert [f[2] for f in found if f[0] == "version_drift"] == ["n5"]
    assert report["known_good"]["NVIDIA H200 x MT4129"]["versions"]["driver"] == "580.95.05"
    text = readiness.render_markdown(report)
    assert "## Known-good state" in text and "- **NVIDIA H200 x MT4129** (5 node(s)): cuda 13.0, driver 580.95.05" in text


def test_a_small_or_split_fleet_has_no_majority_to_drift_from():
    assert versions.drift_findings(dict(list(_fleet(n2={"fw": "1.0"}).items())[:2])) == []
    split = _fleet(n1={"fw": "1.0"}, n2={"fw": "1.0"}, n3={"fw": "2.0"}, n4={"fw": "2.0"}, n5={"fw": "3.0"})
    assert [f for f in versions.drift_findings(split) if "nic_fw" in f["detail"]] == []


@pytest.mark.parametrize("policy, message", [
    ({"*": {"floors": {"bios": "1"}}}, "known_good[*].floors: unknown key 'bios'"),
    ({"*": {"floors": {"driver": "latest"}}}, "known_good[*].floors.driver must be a version, got 'latest'"),
    ({"*": "570"}, "known_good[*] must be a mapping with floors and pins"),
])
def test_a_bad_policy_is_refused_naming_the_entry(policy, message):
    with pytest.raises(AnsibleFilterError, match=message.replace("[", r"\[").replace("]", r"\]").replace("*", r"\*")):
        readiness_report(_fleet(), known_good=policy)


def test_every_shipped_floor_is_a_version_of_its_branch_with_a_source():
    for name, (version, source) in known_good_floors.DRIVER_FLOORS.items():
        assert versions.branch(version) == name and "NVIDIA security bulletin" in source and "CVE-" in source


def test_a_nic_with_another_board_id_than_its_sku_drifts_and_a_board_id_takes_no_floor():
    records = _fleet()
    records["n3"]["rdma_devices"][1]["board_id"] = "MT_0000000834"
    found = [(f["target"], f["detail"]) for f in versions.drift_findings(records)]
    assert found == [("n3/mlx5_1", "nic_psid MT_0000000834 differs from its SKU's majority MT_0000000838 (4 of 5 NVIDIA "
                                   "H200 x MT4129 nodes)")]
    with pytest.raises(versions.KnownGoodError, match="unknown key 'nic_psid'"):
        versions.check_policy({"*": {"floors": {"nic_psid": "MT_0000000838"}}})


def test_the_rdma_stack_from_real_ofed_info_outputs_drifts_and_takes_a_floor():
    with open(os.path.join(FIXTURES, "ofed_info", "ofed_info_s_mlnx_ofed_23.07.txt")) as handle:
        old = ofed.parse_ofed_info(handle.read())
    with open(os.path.join(FIXTURES, "ofed_info", "ofed_info_s_doca_ofed_internal_24.10.txt")) as handle:
        new = ofed.parse_ofed_info(handle.read())
    assert old == {"stack": "MLNX_OFED", "version": "23.07-0.5.1.2", "text": "MLNX_OFED_LINUX-23.07-0.5.1.2"}
    assert new == {"stack": "DOCA-OFED", "version": "24.10-1.1.4.0.200", "text": "OFED-internal-24.10-1.1.4.0.200"}
    assert ofed.parse_ofed_info("") is None
    records = _fleet()
    for host in records:
        records[host]["rdma_stack"] = new
    records["n3"]["rdma_stack"] = old
    policy = {"*": {"floors": {"ofed": "24.04"}}}
    found = [(f["check"], f["target"], f["detail"]) for f in readiness_report(records, known_good=policy)["cluster_findings"]
             if f["check"].startswith("version")]
    assert found == [("version_floor", "n3", "ofed MLNX_OFED 23.07-0.5.1.2 is below the floor 24.04 (the site's floor for every SKU)")]
    records["n3"]["rdma_stack"] = dict(new, version="24.07-0.6.1.0")
    found = [(f["check"], f["target"]) for f in readiness.build_report(records)["cluster_findings"] if f["check"].startswith("version")]
    assert found == [("version_drift", "n3")]


def test_the_two_findings_are_metrics_naming_node_check_and_target():
    from ansible_collections.gpufabric.rdma.plugins.module_utils.render import figures
    report = readiness.build_report(_fleet(n2={"fw": "28.37.1014"}, n4={"driver": "580.82.07"}))
    found = report["cluster_findings"] + [f for n in report["nodes"].values() for f in n["findings"]]
    text = figures.text("readiness", found, "lab", 1795526184)
    assert ('gpufabric_readiness_finding{check="version_floor",cluster="lab",node="n4",severity="critical",target="n4"} 1'
            in text), text
    assert ('gpufabric_readiness_finding{check="version_drift",cluster="lab",node="n2",severity="warning",'
            'target="n2/mlx5_0"} 1') in text
    assert 'gpufabric_readiness_findings{check="version_drift",cluster="lab",severity="warning"} 2' in text
    assert "gpufabric_readiness_run_timestamp_seconds" in text
