"""Readiness groups the nodes by NVLink domain and judges each node's fabric (judge/rack_domains.py, readiness'
_fabric_findings), on the records gpu_facts would make of real captures: GB200 and GB300 trays and HGX H100/B200
boards (NVIDIA/k8s-test-infra's nvidia-smi -q -x), the Azure GB200 tray stuck in registration (Azure/azhpc-images#506)
and the Unhealthy GB200 tray (dra-driver-nvidia-gpu#626); sources in tests/unit/fixtures/README.md."""

import copy

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import rack_domains, readiness
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as gpu_parse
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink

SCRUBBED = "00000001-0000-0000-0000-000000000001"


def _record(read_fixture, *capture):
    text = read_fixture(*capture)
    facts = gpu_parse.parse_nvidia_smi_xml(text) if text.lstrip().startswith("<") else {"gpus": [], "count": 0}
    facts.update(present=True, fabric=nvlink.fabric_fact(text))
    return {"gpu": facts}


@pytest.fixture
def gb200(read_fixture):
    return _record(read_fixture, "nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml")


def _rack(tray, count, clique=2, chassis="1820000000001", prefix="gb-r1n"):
    records = {}
    for number in range(1, count + 1):
        record = copy.deepcopy(tray)
        fabric = record["gpu"]["fabric"]
        fabric.update(domain="%s/%d" % (SCRUBBED, clique), clique_id=clique, chassis_serial=chassis, tray_index=number - 1)
        for entry in fabric["gpus"]:
            entry["clique_id"] = str(clique)
            entry["platform"]["chassis_serial"] = chassis
        records["%s%02d" % (prefix, number)] = record
    return records


def _checks(report):
    every = [f for n in report["nodes"].values() for f in n["findings"]] + report["cluster_findings"]
    return sorted((f["check"], f["severity"], f["target"]) for f in every)


def test_a_full_gb200_rack_is_one_domain_of_18_trays(gb200):
    report = readiness.build_report(_rack(gb200, 18))
    assert report["ready"] and _checks(report) == []
    [domain] = report["nvlink_domains"]
    assert (domain["domain"], len(domain["hosts"]), domain["expected"]) == ("%s/2" % SCRUBBED, 18, 18)
    assert domain["expected_from"] == "GB200: 72 GPUs a domain, 4 a tray" and domain["chassis"] == ["1820000000001"]
    assert report["nodes"]["gb-r1n05"]["nvlink"] == {"domain": "%s/2" % SCRUBBED, "chassis_serial": "1820000000001",
                                                     "slot_number": 14, "tray_index": 4}
    assert "NVLink domain %s/2: 18 of 18 trays (chassis 1820000000001" % SCRUBBED in readiness.render_text(report)
    assert "## NVLink domains" in readiness.render_markdown(report)


def test_a_domain_short_of_a_tray_is_named_with_its_trays(gb200):
    report = readiness.build_report(_rack(gb200, 17))
    [finding] = report["cluster_findings"]
    assert (finding["check"], finding["severity"], finding["target"]) == (
        "nvlink_domain_size", "warning", "NVLink domain %s/2" % SCRUBBED)
    assert finding["detail"].startswith("17 of its 18 trays found (chassis 1820000000001): gb-r1n01, ")
    # the size set wins over the SKU's: an NVL36 rack of 9 trays
    assert readiness.build_report(_rack(gb200, 9), nvlink_domain_size=9)["cluster_findings"] == []
    too_many = readiness.build_report(_rack(gb200, 18), nvlink_domain_size=9)["cluster_findings"]
    assert [f["detail"][:28] for f in too_many] == ["18 trays in a domain of 9 (c"]


def test_trays_of_one_chassis_in_two_domains(gb200):
    records = _rack(gb200, 18)
    records.update(_rack(gb200, 2, clique=3, prefix="gb-r1x"))     # two trays of the same chassis in clique 3
    report = readiness.build_report(records, nvlink_domain_size=18)
    checks = [(f["check"], f["target"]) for f in report["cluster_findings"]]
    assert ("nvlink_chassis_split", "chassis 1820000000001") in checks
    split = [f for f in report["cluster_findings"] if f["check"] == "nvlink_chassis_split"][0]
    assert "in 2 NVLink domains" in split["detail"] and "/3 (gb-r1x01, gb-r1x02)" in split["detail"]
    assert [len(d["hosts"]) for d in report["nvlink_domains"]] == [18, 2]


def test_a_stuck_tray_is_critical_azhpc506(read_fixture):
    stuck = _record(read_fixture, "nvidia_smi_fabric", "q_gb200_insufficient_resources_azhpc506.txt")
    report = readiness.build_report({"gb01": stuck}, nvlink_domain_size=18)
    assert ("nvlink_fabric_registration", "critical", "gb01/GPU 0") in _checks(report)
    assert not report["ready"]


def test_an_unhealthy_tray_is_critical_dra626(read_fixture):
    sick = _record(read_fixture, "nvidia_smi_fabric", "q_gb200_fabric_grep_dra626.txt")
    report = readiness.build_report({"gb01": sick})
    assert ("nvlink_fabric_health", "critical", "gb01/GPU 0") in _checks(report)


@pytest.mark.parametrize("capture", ["qx_h100x8_k8stestinfra.xml", "qx_b200x8_k8stestinfra.xml"])
def test_hgx_boards_are_in_no_domain_unless_the_site_says_they_are(read_fixture, capture):
    board = _record(read_fixture, "nvidia_smi_fabric", capture)
    quiet = readiness.build_report({"hgx01": board, "hgx02": board})
    assert quiet["ready"] and quiet["nvlink_domains"] == [] and _checks(quiet) == []
    assert readiness.build_report({"hgx01": board}, nvlink_domain_size=0)["ready"]
    told = readiness.build_report({"hgx01": board}, nvlink_domain_size=18)
    assert set(c for c, s, t in _checks(told)) == {"nvlink_fabric_domain"} and len(_checks(told)) == 8


def test_gb300_derives_its_size_and_per_host_sizes_are_read(read_fixture):
    tray = _record(read_fixture, "nvidia_smi_fabric", "qx_gb300x4_k8stestinfra.xml")
    report = readiness.build_report({"a": tray, "b": tray}, nvlink_domain_size={"a": None, "b": None})
    assert report["nvlink_domains"][0]["expected"] == 18
    assert report["nvlink_domain_size"] is None
    assert [f["check"] for f in report["cluster_findings"]] == ["nvlink_domain_size"]


def test_a_record_made_before_the_fabric_was_kept_per_gpu_is_grouped_not_judged():
    older = {"gpu": {"present": True, "count": 4, "gpus": [{"name": "NVIDIA GB200"}] * 4,
                     "fabric": {"domain": {"cluster_uuid": SCRUBBED, "clique_id": 2}, "reason": None}}}
    report = readiness.build_report({"a": older, "b": older, "c": {"gpu": {"fabric": {"domain": "x"}}}})
    assert [d["hosts"] for d in report["nvlink_domains"]] == [["a", "b"]]
    assert [f["check"] for f in report["cluster_findings"] if f["check"].startswith("nvlink")] == ["nvlink_domain_size"]
    assert report["nodes"]["c"]["nvlink"]["domain"] is None     # a damaged fabric fact is no domain, not a traceback


@pytest.mark.parametrize("value, size", [(None, None), ("", None), (18, 18), ("9", 9), (0, 0)])
def test_domain_size_as_typed(value, size):
    assert rack_domains.check_size(value) == size


@pytest.mark.parametrize("value", [True, -1, "eighteen", 1.5, "18 trays", 10 ** 6])
def test_a_domain_size_that_is_none_is_refused_naming_it(value):
    with pytest.raises(ValueError, match="gpufabric_nvlink_domain_size of gb01 must be the number of trays.*got %s"
                       % repr(value).replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        rack_domains.check_size(value, "gb01")


def test_the_preflight_refuses_a_domain_size_before_anything_runs():
    from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import inputs
    assert inputs.errors("_common", {"gpufabric_nvlink_domain_size": 18}) == []
    assert inputs.errors("_common", {"gpufabric_nvlink_domain_size": None}) == []
    [error] = inputs.errors("_common", {"gpufabric_nvlink_domain_size": -18})
    assert error.startswith("gpufabric_nvlink_domain_size must be the number of trays") and error.endswith("got -18")
