"""The rdma_tools filters and the parse_* filters of the RDMA/NVLink tools (parsers.py) as a playbook uses them: on a
registered command result, on the text, and with wrong arguments, where the error names the filter and the value
(never a traceback)."""

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.parsers import FilterModule as ParserFilters
from ansible_collections.gpufabric.rdma.plugins.filter.rdma_tools import FilterModule

FILTERS = dict(FilterModule().filters(), **ParserFilters().filters())
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")


def text(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as handle:
        return handle.read()


def registered(*parts):
    return {"rc": 0, "stdout": text(*parts), "stdout_lines": text(*parts).splitlines(), "changed": False}


def error(name, *args):
    with pytest.raises(AnsibleFilterError) as caught:
        FILTERS[name](*args)
    message = str(caught.value)
    assert message.startswith("gpufabric.rdma.%s: " % name) and "Traceback" not in message
    return message


def test_every_filter_has_its_documentation():
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
    assert sorted(n for n in FILTERS if not os.path.exists(os.path.join(docs, n + ".yml"))) == []


@pytest.mark.parametrize("name, parts, check", [
    ("parse_ibstat", ("ibstat", "roce_active_mooncake1999.txt"), lambda r: [c["name"] for c in r] == ["mlx5_0", "mlx5_1", "mlx5_10"]),
    ("parse_ibstatus", ("ibstat", "ibstatus_roce_edr_nccl1866.txt"), lambda r: r[0]["ports"][0]["rate"] == 100),
    ("parse_ibdev2netdev", ("ibdev2netdev", "roce_daocloud.txt"), lambda r: r[1]["netdev"] == "enp4s0f1np1"),
    ("parse_show_gids", ("show_gids", "roce_3dev_rdmatutorial.txt"), lambda r: len(r) == 12),
    ("parse_rdma_link", ("rdma_link", "json_pretty_iproute2_2017.txt"), lambda r: r[0]["lid"] == 13399),
    ("parse_eadm_stat", ("eadm", "stat_live_seed002.txt"), lambda r: r["rx_packets"] == 8406769),
    ("parse_nvlink_status", ("nvlink", "status_v100_inactive_azhpc73.txt"), lambda r: r[0]["links"][3]["speed_gbps"] is None),
    ("parse_nvlink_errors", ("nvlink", "errors_h100_mlengineering.txt"), lambda r: r[0]["links"][0]["crc_errors"] == 0),
    ("parse_nccl_debug", ("nccl_debug", "ib_roce_gdrdma_2node_slurmv4.txt"), lambda r: r["gdr"] is True),
])
def test_parsers_take_a_registered_result_or_the_text(name, parts, check):
    assert check(FILTERS[name](registered(*parts)))
    assert FILTERS[name](registered(*parts)) == FILTERS[name](text(*parts))


def test_judge_nccl_debug_from_the_log_or_the_parse():
    log = text("nccl_debug", "socket_fallback_efa_4node_trainingoneks.txt")
    verdict = FILTERS["judge_nccl_debug"](log, {"rdma": True})
    assert verdict["passed"] is False
    assert verdict == FILTERS["judge_nccl_debug"](FILTERS["parse_nccl_debug"](log), {"rdma": True})
    assert FILTERS["judge_nccl_debug"](registered("nccl_debug", "all_reduce_g1_socket_h100.txt"))["passed"] is True


def test_gid_index_and_cross_check_take_show_gids_text():
    show_gids = registered("show_gids", "macvlan_index4_7_nccl1573.txt")
    assert FILTERS["roce_v2_gid_index"](show_gids) == 7
    assert FILTERS["roce_v2_gid_index"](show_gids, "net3") is None   # mlx5_2's IPv4 GIDs are cut off
    assert FILTERS["roce_v2_gid_index"](show_gids, None, "10.152.4.12") == 7
    assert FILTERS["show_gids_cross_check"](show_gids, [])[0]["detail"] == (
        "show_gids lists mlx5_0/1 but rdma_devices has no such port")


def test_nvlink_findings_from_texts():
    errors = text("nvlink", "errors_h100_mlengineering.txt")
    after = errors.replace("Link 1: Replay Errors: 0", "Link 1: Replay Errors: 40")
    found = FILTERS["nvlink_findings"](text("nvlink", "status_v100_inactive_azhpc73.txt"), after, errors)
    assert [(f["check"], f["severity"], f["target"]) for f in found] == [
        ("nvlink_down", "warning", "GPU 3"), ("nvlink_errors", "warning", "GPU 0 link 1")]


def test_port_counter_deltas_filter():
    result = FILTERS["port_counter_deltas"]({"mlx5_0/1": {"port_xmit_data": 10}, "mlx5_1/1": {"port_xmit_data": 10}},
                                            {"mlx5_0/1": {"port_xmit_data": 260}, "mlx5_1/1": {"port_xmit_data": 10}},
                                            {"mlx5_1/1": 1}, "0.2")
    assert result["ports"][0]["tx_bytes"] == 1000 and result["flagged"] == ["mlx5_1/1"]


@pytest.mark.parametrize("name, args, message", [
    ("parse_ibstat", (5,), "expects the tool's text (or a registered result), got an integer"),
    ("parse_nccl_debug", ({"stdout": None},), "expects the tool's text (or a registered result), got null"),
    ("parse_rdma_link", ('[{"ifname": ',), "rdma -j link output is not valid JSON"),
    ("roce_v2_gid_index", ("", 5), "expects netdev as a string, got an integer"),
    ("roce_v2_gid_index", ([3],), "item 0 is an integer"),
    ("show_gids_cross_check", ("", "mlx5_0"), "expects the rdma_devices fact as the second argument, got a string"),
    ("nvlink_findings", (["GPU 0"],), "item 0 is a string"),
    ("port_counter_deltas", ({}, {}, None, "lots"), "low_fraction must be a number, got 'lots'"),
    ("port_counter_deltas", ({}, {}, None, 3), "low_fraction must be a number between 0 and 1, got 3"),
    ("port_counter_deltas", ([], {}), "expects the counters before the run"),
    ("judge_nccl_debug", ("", {"rdma": "yes"}), "expected rdma must be true, false or null, got 'yes'"),
    ("judge_nccl_debug", ("", ["rdma"]), "expects expected as a mapping (rdma, ib_hca, gdr, p2p, rails, channels, mnnvl), got a list of 1"),
    ("judge_nccl_debug", (5,), "expects parse_nccl_debug's result or the log's text, got an integer"),
])
def test_the_error_names_the_filter_and_the_value(name, args, message):
    assert message in error(name, *args)


# --- the rack (issue 55): nvlink_fabric_findings, parse_nvidia_imex_ctl, imex_findings -------------------------

def test_the_new_filters_are_registered_and_documented():
    assert {"nvlink_fabric_findings", "parse_nvidia_imex_ctl", "imex_findings"} <= set(FILTERS)
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
    for name in ("nvlink_fabric_findings", "parse_nvidia_imex_ctl", "imex_findings"):
        assert os.path.exists(os.path.join(docs, name + ".yml")), name


def test_nvlink_fabric_findings_from_the_output_or_the_parse():
    stuck = registered("nvidia_smi_fabric", "q_gb200_insufficient_resources_azhpc506.txt")
    found = FILTERS["nvlink_fabric_findings"](stuck, {"domain": True})
    assert [f["check"] for f in found] == ["nvlink_fabric_registration"]
    parsed = FILTERS["parse_nvidia_smi_fabric"](stuck)
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
    message = error("nvlink_fabric_findings", l40s, {"links": "18"})
    assert "expected.links must be a whole number of 0 or more, got '18'" in message
    assert "no GPU in the nvidia-smi -q output" in error("nvlink_fabric_findings", "hello")
    assert "errors_before needs errors_after" in error("nvlink_fabric_findings", l40s, None, None, None,
                                                       text("nvlink", "errors_h100_mlengineering.txt"))
    assert "expects a parsed nvidia-smi nvlink list" in error("nvlink_fabric_findings", l40s, None, 42)


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
