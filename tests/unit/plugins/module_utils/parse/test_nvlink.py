"""nvidia-smi nvlink --status / -e on real outputs (sources in tests/unit/fixtures/README.md), and the
NVLink-down and rising-error findings made from them."""


import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nvlink_links
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nvlink
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError
from paths import fixture_bytes


read = fixture_bytes


def test_nvlink_status_a100_8_gpus_gpud():
    gpus = nvlink.parse_nvlink_status(read("nvlink", "status_a100x8_gpud.txt"))
    assert [g["index"] for g in gpus] == list(range(8))
    assert (gpus[0]["name"], gpus[0]["uuid"]) == ("NVIDIA A100-SXM4-80GB", "GPU-5269b708-678a-b1a8-60f0-c90406537486")
    assert {len(g["links"]) for g in gpus} == {12} and {l["speed_gbps"] for g in gpus for l in g["links"]} == {25}
    assert nvlink_links.nvlink_down_findings(gpus) == []


def test_nvlink_status_inactive_links_azhpc73():
    gpus = nvlink.parse_nvlink_status(read("nvlink", "status_v100_inactive_azhpc73.txt"))
    assert [(l["link"], l["speed_gbps"], l["active"]) for l in gpus[0]["links"]] == [
        (0, 25.781, True), (1, 25.781, True), (2, 25.781, True), (3, None, False), (4, 25.781, True), (5, None, False)]
    assert gpus[0]["uuid"] is None   # redacted as '...'
    assert nvlink_links.nvlink_down_findings(gpus) == [{
        "check": "nvlink_down", "severity": "warning", "target": "GPU 3",
        "detail": "GPU 3 link(s) 3, 5 inactive while 4 of its links are active",
        "fix_hint": "NCCL loses that share of NVLink bandwidth: check nvidia-smi nvlink -e and the cabling or baseboard"}]


def test_a_gpu_whose_links_are_all_down_while_its_peers_are_up():
    text = read("nvlink", "status_a100x8_gpud.txt").decode().replace("GPU 7: NVIDIA A100-SXM4-80GB", "GPU 7: X")
    head, tail = text.split("GPU 7: X")
    tail = "\n".join(line.replace("25 GB/s", "<inactive>") for line in tail.split("\n"))
    found = nvlink_links.nvlink_down_findings(nvlink.parse_nvlink_status(head + "GPU 7: X" + tail))
    assert [(f["severity"], f["target"]) for f in found] == [("critical", "GPU 7")]
    assert found[0]["detail"] == "all 12 NVLinks of GPU 7 (X) are inactive while 7 other GPU(s) have active links"


@pytest.mark.parametrize("name, gpus, links, elided", [
    ("status_a100_tabs_truncated_nccltests228.txt", 3, [12, 12, 1], [False, False, True]),
    ("status_h100_elided_mlengineering.txt", 1, [2], [True]),
    ("status_gb200_k8stestinfra371.txt", 2, [18, 2], [False, True]),
])
def test_nvlink_status_tabs_and_elisions(name, gpus, links, elided):
    found = nvlink.parse_nvlink_status(read("nvlink", name))
    assert (len(found), [len(g["links"]) for g in found], [g["elided"] for g in found]) == (gpus, links, elided)
    assert nvlink_links.nvlink_down_findings(found) == []   # a shorter, elided listing is not a link down


@pytest.mark.parametrize("name", ["status_a10_no_nvlink_gpud.txt", "status_h100_vm_empty.txt", "errors_h100_vm_empty.txt"])
def test_no_nvlink_prints_nothing_and_finds_nothing(name):
    assert nvlink.parse_nvlink_status(read("nvlink", name)) == [] and nvlink.parse_nvlink_errors(read("nvlink", name)) == []
    assert nvlink_links.nvlink_down_findings([]) == [] and nvlink_links.nvlink_error_findings(None, []) == []


def test_nvlink_error_counters_h100_mlengineering():
    gpus = nvlink.parse_nvlink_errors(read("nvlink", "errors_h100_mlengineering.txt"))
    assert (gpus[0]["index"], gpus[0]["name"], gpus[0]["elided"]) == (0, "NVIDIA H100 80GB HBM3", True)
    assert [l["link"] for l in gpus[0]["links"]] == [0, 1, 17]
    assert gpus[0]["links"][2] == {"link": 17, "replay_errors": 0, "recovery_errors": 0, "crc_errors": 0,
                                   "counters": {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}}
    assert nvlink_links.nvlink_error_findings(gpus, gpus) == [] and nvlink_links.nvlink_error_findings(None, gpus) == []


def test_rising_nvlink_error_counters():
    before = nvlink.parse_nvlink_errors(read("nvlink", "errors_h100_mlengineering.txt"))
    after = nvlink.parse_nvlink_errors(read("nvlink", "errors_h100_mlengineering.txt").decode()
                                       .replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 12")
                                       .replace("Link 17: Recovery Errors: 0", "Link 17: Recovery Errors: 1"))
    found = nvlink_links.nvlink_error_findings(before, after)
    assert [(f["severity"], f["target"], f["detail"]) for f in found] == [
        ("warning", "GPU 0 link 1", "crc errors rose by 12 (0 -> 12)"),
        ("critical", "GPU 0 link 17", "recovery errors rose by 1 (0 -> 1)")]
    assert nvlink_links.nvlink_error_findings(after, before)[0]["detail"] == "crc errors went from 12 to 0: the counters were reset"
    assert [f["severity"] for f in nvlink_links.nvlink_error_findings(None, after)] == ["info", "info"]
    assert [f["target"] for f in nvlink_links.nvlink_error_findings(before, after, min_increase=2)] == ["GPU 0 link 1"]


def test_nvlink_errors_without_a_gpu_header_and_other_counters():
    # the shape of a public note (2x RTX A6000 in a rented container) whose -e listing came without its 'GPU n:' line
    found = nvlink.parse_nvlink_errors("\t Link 0: Replay Errors: 0\n\t Link 0: Recovery Errors: 0\n\t Link 0: CRC Errors: 0\n"
                                       "\t Link 0: Tx Discards: 2\n")
    assert found[0]["index"] is None and found[0]["links"][0]["counters"]["tx_discards"] == 2


def test_nvlink_helpers_refuse_other_things():
    with pytest.raises(ToolTextError, match="status must be a parsed nvidia-smi nvlink list, got str"):
        nvlink_links.nvlink_down_findings("GPU 0")
    with pytest.raises(ToolTextError, match=r"after\[0\] is not a GPU"):
        nvlink_links.nvlink_error_findings(None, [{"index": 0}])
    with pytest.raises(ToolTextError, match="min_increase must be a whole number of 1 or more, got 0"):
        nvlink_links.nvlink_error_findings(None, [], min_increase=0)
