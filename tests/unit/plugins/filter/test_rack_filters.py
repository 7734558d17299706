"""The rack's filters (issue 55) as a playbook uses them - nvlink_fabric_findings, parse_nvidia_imex_ctl and
imex_findings on registered command results, on the text and on what the readers made, and with wrong arguments,
where the error names the filter and the value (never a traceback). Captures: tests/unit/fixtures/README.md."""

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.rdma_tools import FilterModule
from ansible_collections.gpufabric.rdma.plugins.filter.topology import FilterModule as TopologyFilters

FILTERS = FilterModule().filters()
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")


def text(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as handle:
        return handle.read()


def registered(*parts):
    return {"rc": 0, "stdout": text(*parts), "stdout_lines": text(*parts).splitlines(), "changed": False}


def error(name, *args, **kwargs):
    with pytest.raises(AnsibleFilterError) as caught:
        FILTERS[name](*args, **kwargs)
    message = str(caught.value)
    assert message.startswith("gpufabric.rdma.%s: " % name) and "Traceback" not in message
    return message


def test_the_new_filters_are_registered_and_documented():
    assert {"nvlink_fabric_findings", "parse_nvidia_imex_ctl", "imex_findings"} <= set(FILTERS)
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
    for name in ("nvlink_fabric_findings", "parse_nvidia_imex_ctl", "imex_findings"):
        assert os.path.exists(os.path.join(docs, name + ".yml")), name


def test_nvlink_fabric_findings_from_the_output_or_the_parse():
    stuck = registered("nvidia_smi_fabric", "q_gb200_insufficient_resources_azhpc506.txt")
    found = FILTERS["nvlink_fabric_findings"](stuck, {"domain": True})
    assert [f["check"] for f in found] == ["nvlink_fabric_registration"]
    parsed = TopologyFilters().filters()["parse_nvidia_smi_fabric"](stuck)
    assert FILTERS["nvlink_fabric_findings"](parsed, {"domain": True}) == found
    tray = registered("nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml")
    links = registered("nvlink", "status_gb200_k8stestinfra371.txt")
    assert FILTERS["nvlink_fabric_findings"](tray, status=links) == []
    before = text("nvlink", "errors_h100_mlengineering.txt")
    after = before.replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 7")
    assert [f["severity"] for f in FILTERS["nvlink_fabric_findings"](
        registered("nvidia_smi_fabric", "qx_h100x8_k8stestinfra.xml"), errors_after=after, errors_before=before)] == ["warning"]


def test_nvlink_fabric_findings_refuses_what_it_cannot_read():
    l40s = registered("nvidia_smi_fabric", "qx_l40s_k8stestinfra.xml")
    assert "expects expected as a mapping" in error("nvlink_fabric_findings", l40s, "yes")
    assert "expected.links must be a whole number of 0 or more, got '18'" in error("nvlink_fabric_findings", l40s,
                                                                                  {"links": "18"})
    assert "no GPU in the nvidia-smi -q output" in error("nvlink_fabric_findings", "hello")
    assert "errors_before needs errors_after" in error("nvlink_fabric_findings", l40s,
                                                       errors_before=text("nvlink", "errors_h100_mlengineering.txt"))
    assert "expects a parsed nvidia-smi nvlink list" in error("nvlink_fabric_findings", l40s, status=42)


def test_parse_nvidia_imex_ctl_takes_text_a_registered_result_or_loaded_json():
    old = FILTERS["parse_nvidia_imex_ctl"](registered("nvidia_imex", "ctl_N_2node_gh200_570_jpsnips.txt"))
    assert [n["status"] for n in old["nodes"]] == ["READY", "READY"] and old["domain_state"] == "UP"
    raw = text("nvidia_imex", "ctl_N_j_2node_gb200_up_pcluster.json")
    assert FILTERS["parse_nvidia_imex_ctl"](json.loads(raw)) == FILTERS["parse_nvidia_imex_ctl"](raw)
    assert "not nvidia-imex-ctl -N output" in error("parse_nvidia_imex_ctl", "Failed to connect to the IMEX daemon\n")
    assert "expects the tool's text" in error("parse_nvidia_imex_ctl", 42)


def test_imex_findings_only_where_a_domain_is_expected():
    down = registered("nvidia_imex", "ctl_N_j_unconfigured_down_pcluster.json")
    assert FILTERS["imex_findings"](down) == [] and FILTERS["imex_findings"](down, []) == []
    hosts = registered("nvidia_imex", "ctl_N_H_4node_unavailable_constructed.txt")
    found = FILTERS["imex_findings"](hosts, ["theia0271", "theia0272", "theia0273", "theia0274"])
    assert [(f["check"], f["target"]) for f in found] == [("imex_node", "theia0273"), ("imex_domain", "IMEX domain")]
    parsed = FILTERS["parse_nvidia_imex_ctl"](hosts)
    assert FILTERS["imex_findings"](parsed, 4) == FILTERS["imex_findings"](hosts, 4)
    assert "got the string 'theia0271'" in error("imex_findings", hosts, "theia0271")
    assert "expected_nodes must be" in error("imex_findings", hosts, {"a": 1})
