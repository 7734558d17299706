"""parse_nccl_debug's multi-node NVLink (MNNVL) and NVLink SHARP (NVLS) readings (parse/nccl_debug_nvlink.py) on real
GB200 logs: NVIDIA/nccl#2303 (NCCL 2.30.7, one tray, MNNVL 1 and MNNVL 0 on the communicator's line), NVIDIA/nccl#1769
(the fabric lines of four GB200 GPUs), and a B200 torchrun log with NVLS. The line shapes of other releases are the
format strings of NCCL's own src/init.cc and src/mnnvl.cc (v2.21.5-1 to v2.30.7-1)."""

import os
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug
from paths import COLLECTIONS, fixture_path

FIXTURES = fixture_path("nccl_debug")


def parse(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return nccl_debug.parse_nccl_debug(handle.read())


def test_mnnvl_on_is_read_from_the_communicators_line_nccl2303():
    result = parse("mnnvl_on_gb200_2.30.7_nccl2303.txt")
    assert result["nccl_version"] == "2.30.7"
    assert result["mnnvl"] is True
    detail = result["mnnvl_detail"]
    assert (detail["comms_on"], detail["comms_off"]) == (1, 0)
    assert detail["cliques"] == [{"mnnvl": True, "clique_id": 0x2786, "clique_size": 4, "nvl_domain_size": 4}]
    assert detail["fabric"] == [{"host": "watchtower-navy-cn13", "bus_id": "0x801000",
                                 "fabric_uuid": "a44167d15423d758.7d6b24c07d32e7b3", "clique_id": 0x2786, "state": 3,
                                 "state_name": "Completed", "health_mask": "0xaa"}]
    assert result["transport_counts"] == {"P2P/MNNVL": 1}
    assert (result["env"]["NCCL_MNNVL_ENABLE"], result["env"]["NCCL_CUMEM_ENABLE"]) == ("1", "1")
    assert result["evidence"]["mnnvl"][-1].endswith("localRank 0 MNNVL 1")
    # the same line still gives the communicator's size
    assert (result["ranks"], result["nodes"]) == (4, 1)


def test_mnnvl_off_nccl2303():
    result = parse("mnnvl_off_gb200_2.30.7_nccl2303.txt")
    assert result["mnnvl"] is False
    assert (result["mnnvl_detail"]["comms_on"], result["mnnvl_detail"]["comms_off"]) == (0, 1)
    assert result["env"]["NCCL_MNNVL_ENABLE"] == "0"


def test_fabric_lines_alone_do_not_say_whether_mnnvl_was_used_nccl1769():
    result = parse("mnnvl_fabric_lines_gb200_nccl1769.txt")
    assert result["mnnvl"] is None
    fabric = result["mnnvl_detail"]["fabric"]
    assert [entry["bus_id"] for entry in fabric] == ["0x901000", "0x1801000", "0x1901000", "0x801000"]
    # NCCL prints the clique in hex: 0x7ffe is the CliqueId 32766 nvidia-smi prints
    assert set((entry["clique_id"], entry["state_name"], entry["health_mask"]) for entry in fabric) == {
        (32766, "Completed", "0xaa")}
    assert result["env"]["NCCL_NVLS_ENABLE"] == "1"


def test_a_log_cut_before_its_mnnvl_lines_is_told_by_its_connections():
    with open(os.path.join(FIXTURES, "mnnvl_on_gb200_2.30.7_nccl2303.txt")) as handle:
        lines = [line for line in handle if "MNNVL 1" not in line]
    result = nccl_debug.parse_nccl_debug("".join(lines))
    assert result["mnnvl_detail"]["comms_on"] == 0 and result["mnnvl"] is True


@pytest.mark.parametrize("message, mnnvl, clique", [
    # src/init.cc v2.21.5-1 to v2.24.3-1 (a trailing space), src/mnnvl.cc v2.25.1-1 to v2.29
    ("MNNVL 1 cliqueId 7ffe cliqueSize 8 cliqueRank 3 ", True,
     {"mnnvl": True, "clique_id": 32766, "clique_size": 8, "nvl_domain_size": None}),
    ("MNNVL 0 cliqueId 0 cliqueSize 1 cliqueRank 0", False,
     {"mnnvl": False, "clique_id": 0, "clique_size": 1, "nvl_domain_size": None}),
])
def test_clique_lines_of_other_releases(message, mnnvl, clique):
    result = nccl_debug.parse_nccl_debug("gb1:10:10 [0] NCCL INFO %s\n" % message)
    assert result["mnnvl"] is mnnvl and result["mnnvl_detail"]["cliques"] == [clique]


def test_rack_line_of_nccl_2_28():
    result = nccl_debug.parse_nccl_debug(
        "gb1:10:10 [0] NCCL INFO MNNVL rack serial 1823825185529 slot 5 tray 4 hostId 1 peerType 1 moduleId 2\n")
    assert result["mnnvl_detail"]["racks"] == [{"host": "gb1", "rack_serial": "1823825185529", "slot": 5, "tray": 4,
                                                "host_id": 1}]


def test_one_communicator_on_mnnvl_is_enough():
    text = ("gb1:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0\n"
            "gb1:10:10 [0] NCCL INFO comm 0x2 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 1\n"
            "gb1:10:10 [0] NCCL INFO comm 0x3 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0\n")
    result = nccl_debug.parse_nccl_debug(text)
    assert result["mnnvl"] is True
    assert (result["mnnvl_detail"]["comms_on"], result["mnnvl_detail"]["comms_off"]) == (1, 2)


def test_nvls_used_on_b200_and_not_available_said_so(read_fixture):
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug/torchrun_tee_labels_efa_b200_tp4dp2.txt"))
    assert result["nvls"] is True
    assert "NVLS multicast support is available" in result["evidence"]["nvls"][0]
    result = nccl_debug.parse_nccl_debug("h1:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0\n")
    assert result["nvls"] is False
    both = ("h1:1:1 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
            "h1:1:1 [1] NCCL INFO NVLS multicast support is not available on dev 1\n")
    assert nccl_debug.parse_nccl_debug(both)["nvls"] is True


def test_two_b200_nodes_over_efa_say_mnnvl_0(read_fixture):
    # NCCL prints MNNVL 0 on every communicator's line where there is no multi-node NVLink: an answer, not silence
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug/torchrun_tee_labels_efa_b200_tp4dp2.txt"))
    assert result["mnnvl"] is False and result["mnnvl_detail"]["comms_on"] == 0
    assert result["mnnvl_detail"]["comms_off"] >= 5


def test_a_log_older_than_the_mnnvl_lines_says_nothing():
    result = parse("ib_2_4_no_host_version_nvpeermem56.txt")
    assert result["mnnvl"] is None and result["mnnvl_detail"] == {
        "comms_on": 0, "comms_off": 0, "cliques": [], "fabric": [], "racks": []}


def test_detail_is_bounded_and_long_lines_take_linear_time():
    lines = ["gb%d:1:1 [0] NCCL INFO MNNVL busId 0x%x fabric UUID 1.2 cliqueId 0x1 state 3 healthMask 0x0" % (i, i)
             for i in range(500)]
    result = nccl_debug.parse_nccl_debug("\n".join(lines))
    assert len(result["mnnvl_detail"]["fabric"]) == 72
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug\n"
            "line = 'h:1:1 [0] NCCL INFO MNNVL busId 0x' + 'f' * 100000 + ' cliqueId 0x1'\n"
            "line2 = 'h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 1 nNodes 1 localRanks 1 localRank 0 MNNVL ' + '1' * 100000\n"
            "line3 = 'h:1:1 [0] NCCL INFO MNNVL rack serial ' + 'a' * 100000 + ' slot 1'\n"
            "nccl_debug.parse_nccl_debug('\\n'.join([line, line2, line3] * 20))\n") % COLLECTIONS
    subprocess.run([sys.executable, "-c", code], check=True, timeout=20)


# ----------------------------------------------------------------------------- judged where the environment asks for it


def test_nccl_mnnvl_enable_1_promises_mnnvl():
    assert nccl_path.expected_from_env({"NCCL_MNNVL_ENABLE": "1"}, "infiniband")["mnnvl"] is True
    assert nccl_path.expected_from_env({"NCCL_MNNVL_ENABLE": "0"}, "infiniband")["mnnvl"] is False
    assert "mnnvl" not in nccl_path.expected_from_env({}, "infiniband")


def test_two_nodes_without_mnnvl_fail_where_it_was_asked_for(read_fixture):
    parsed = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug/torchrun_tee_labels_efa_b200_tp4dp2.txt"))
    verdict = nccl_path.judge_nccl_debug(parsed, {"mnnvl": True})
    [reason] = [r for r in verdict["reasons"] if r["check"] == "mnnvl"]
    assert reason["ok"] is False and "MNNVL 0" in reason["reason"]
    assert reason["evidence"][0].endswith("MNNVL 0")
    assert not verdict["passed"]
    # not asked: not judged
    assert not [r for r in nccl_path.judge_nccl_debug(parsed, {})["reasons"] if r["check"] == "mnnvl"]
    entry = nccl_path.report_entry(parsed, {"mnnvl": True})
    assert (entry["mnnvl"], entry["nvls"]) == (False, True)
    assert "multi-node NVLink off, NVLS" in nccl_path.used_text(entry)


def test_one_node_is_not_judged_for_mnnvl_nccl2303():
    # NCCL 2.21 to 2.25 check MNNVL only for nNodes > 1: one tray's MNNVL 0 says nothing about the fabric
    parsed = parse("mnnvl_off_gb200_2.30.7_nccl2303.txt")
    assert not [r for r in nccl_path.judge_nccl_debug(parsed, {"mnnvl": True})["reasons"] if r["check"] == "mnnvl"]


def test_several_nodes_on_mnnvl_pass():
    text = "gb1:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 1\n"
    verdict = nccl_path.judge_nccl_debug(nccl_debug.parse_nccl_debug(text), {"mnnvl": True})
    assert [r["ok"] for r in verdict["reasons"] if r["check"] == "mnnvl"] == [True] and verdict["passed"]
