"""parse_nccl_debug and judge_nccl_debug on real NCCL_DEBUG=INFO logs (sources in /tmp/helper-tools-fixtures.md,
to go into tests/unit/fixtures/README.md): RoCE with GPUDirect RDMA between two nodes, a 4-node socket
fallback after the EFA plugin failed, GDR disabled for every HCA, an HCA the operator did not want in use,
NCCL 2.4 to 2.28 line shapes, and the single-node captures of this project."""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug
from paths import COLLECTIONS, FIXTURES, fixture_bytes


read = fixture_bytes


def parse(*parts):
    return nccl_debug.parse_nccl_debug(read(*parts))


# ----------------------------------------------------------------------------- what the log says


def test_two_nodes_over_roce_with_gdr_slurmv4():
    result = parse("nccl_debug", "ib_roce_gdrdma_2node_slurmv4.txt")
    assert (result["nccl_version"], result["cuda_version"]) == ("2.27.5", "12.9")
    assert result["net"] == "IB" and result["gdr"] is True
    assert result["net_devices"] == ["mlx5_0:1", "mlx5_1:1", "mlx5_2:1", "mlx5_5:1", "mlx5_6:1", "mlx5_7:1",
                                     "mlx5_8:1", "mlx5_11:1"]
    assert [(d["index"], d["name"], d["link_type"]) for d in result["ib_devices"]][-1] == (7, "mlx5_11:1", "RoCE")
    assert result["ib_hca"] == "mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    assert result["network"] == "IB" and result["net_plugin"] == "IB"
    # the AWS OFI plugin loaded, failed ('plugin/net.cc:118 -> 2'), and NCCL went on with its own IB transport
    assert result["external_net_plugin"] == "AWS Libfabric (v6)"
    assert (result["nodes"], result["ranks"]) == (2, 16)
    assert result["transport_counts"] == {"NET/IB": 64, "P2P/IPC": 240}
    assert result["channels"] == {"coll": 16, "collnet": 16, "nvls": 0, "p2p": 16, "p2p_per_peer": 2}
    assert sorted(result["dmabuf_gpus"]) == list(range(8))
    assert result["env"]["NCCL_NET_GDR_LEVEL"] == "PIX" and result["env"]["NCCL_NVLS_ENABLE"] == "0"
    first = [c for c in result["connections"] if c["kind"] == "NET"][0]
    assert (first["channel"], first["from_rank"], first["to_rank"], first["direction"], first["transport"],
            first["device"]) == (6, 7, 14, "receive", "NET/IB/6/GDRDMA", "mlx5_8:1")


def test_socket_fallback_on_four_nodes_after_efa_failed_trainingoneks():
    result = parse("nccl_debug", "socket_fallback_efa_4node_trainingoneks.txt")
    assert (result["nccl_version"], result["net"], result["gdr"]) == ("2.27.3", "Socket", False)
    assert result["net_devices"] == ["eth0"]
    assert [(d["name"], d["address"]) for d in result["socket_devices"]] == [("eth0", "10.0.4.51")]
    assert result["ib_device_found"] is False and result["external_net_plugin"] == "Libfabric (v10)"
    assert (result["nodes"], result["ranks"], result["ring_channels"]) == (4, 4, 2)
    assert result["warnings"][0] == "NET/OFI Unable to find a protocol that worked.  Failing initialization."
    # the WARN lines carry a '[2025-12-28 16:04:25] ' stamp before the host: the host is still the host
    assert result["hosts"] == ["llama-3-8b-node-0-0"]
    assert result["evidence"]["net_fallback"] == ["llama-3-8b-node-0-0:152:386 [0] NCCL INFO NET/IB : No device found."]


def test_gdr_disabled_for_every_hca_nccl1537():
    result = parse("nccl_debug", "gdr_disabled_roce_nccl1537.txt")
    assert result["net"] is None   # the excerpt stops before any channel is connected
    assert result["gdr"] is False and result["network"] == "IB"
    assert [(e["hca_index"], e["hca"], e["enabled"]) for e in result["gdr_hcas"]] == [(0, "mlx5_0", False), (1, "mlx5_1", False)]
    assert [d["name"] for d in result["ib_devices"]] == ["mlx5_0:1", "mlx5_1:1"]


def test_old_format_without_gdrdma_and_no_module_nccl899():
    result = parse("nccl_debug", "gdr_disabled_no_module_2node_nccl899.txt")
    assert result["net"] == "IB" and result["gdr"] is False
    assert result["net_device_indexes"] == [0] and result["net_devices"] == []   # no 'NET/IB : Using' line to name it
    assert [(e["hca"], e["reason"]) for e in result["gdr_hcas"]][0] == ("mlx5_1", "no module")
    assert result["nodes"] == 2 and result["hosts"] == ["21346d5cefce", "6a5a91752e39"]
    assert result["transport_counts"] == {"NET/IB": 11}


def test_nccl_2_4_prints_its_version_without_a_host_nvpeermem56():
    result = parse("nccl_debug", "ib_2_4_no_host_version_nvpeermem56.txt")
    assert (result["nccl_version"], result["cuda_version"]) == ("2.4.7", "10.0")
    assert [(d["name"], d["link_type"]) for d in result["ib_devices"]] == [("mlx5_0:1", "IB")]
    assert result["env"] == {"NCCL_IB_DISABLE": "0"}
    assert result["net"] is None and result["gdr"] is None


def test_ring_lines_of_nccl_2_6_behind_a_rank_label_nccl302():
    result = parse("nccl_debug", "ib_roce_port_in_use_nccl302.txt")
    assert result["net"] == "IB" and result["net_devices"] == ["mlx5_2:1"]
    assert [(d["name"], d["link_type"]) for d in result["ib_devices"]] == [
        ("mlx5_3:1", "IB"), ("mlx5_0:1", "IB"), ("mlx5_2:1", "RoCE"), ("mlx5_4:1", "IB")]
    assert result["warnings"] == ["Call to ibv_modify_qp failed with error Invalid argument"]


def test_merged_nics_and_sharp_devices():
    merged = parse("nccl_debug", "ibext_merged_nics_nccltests373.txt")
    assert merged["network"] == "IBext_v8" and merged["net"] == "IB"
    assert [d["name"] for d in merged["ib_devices"]] == ["mlx5_2:1+mlx5_3:1", "mlx5_0:1+mlx5_1:1"]
    assert merged["net_devices"] == ["mlx5_0:1", "mlx5_1:1"]   # NET/IBext_v8/1 is the second merged NIC
    sharp = parse("nccl_debug", "ib_sharp_devices_nccl1357.txt")
    assert [(d["name"], d["link_type"], d["sharp"]) for d in sharp["ib_devices"]][0] == ("mlx5_0:1", "IB", True)
    assert sharp["network"] == "IBext" and sharp["nodes"] == 2


@pytest.mark.parametrize("parts, transports", [
    (("nccl_debug", "all_reduce_g1_socket_h100.txt"), {}),
    (("nccl_tests", "mpirun_info_h200x2.txt"), {"P2P/CUMEM": 48}),
])
def test_one_node_shows_no_inter_node_connection(parts, transports):
    result = parse(*parts)
    assert (result["net"], result["gdr"], result["net_devices"]) == (None, None, [])
    assert result["network"] == "Socket" and result["net_plugins_failed"] == ["IB"]
    assert result["nodes"] == 1 and result["transport_counts"] == transports
    assert result["nccl_version"] == "2.28.9"


@pytest.mark.parametrize("message, expected", [
    ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", ("P2P", "P2P/IPC/read")),
    ("Channel 00 : 1[1a000] -> 2[af000] via direct shared memory", ("SHM", "direct shared memory")),
    ("Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct", ("SHM", "SHM/direct/direct")),
    ("Channel 01/1 : 0[0] -> 1[1] [send] via NET/Socket/0/Shared", ("NET", "NET/Socket/0/Shared")),
    ("Channel 00/0 : 1[0] -> 0[0] [receive] via NET/NCCL RDMA Plugin v10/0", ("NET", "NET/NCCL RDMA Plugin v10/0")),
    ("Channel 01/0 : 1[0] -> 0[0] [receive] via NET/Socket/0 comm 0x2083dd50 nRanks 02", ("NET", "NET/Socket/0")),
    ("Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/2(3)/GDRDMA", ("NET", "NET/IB/2(3)/GDRDMA")),
])
def test_transport_shapes_of_other_releases(message, expected):
    result = nccl_debug.parse_nccl_debug("h:1:2 [0] NCCL INFO " + message)
    connection = result["connections"][0]
    assert (connection["kind"], connection["transport"]) == expected


def test_plugin_with_spaces_and_pxn_index():
    result = nccl_debug.parse_nccl_debug(
        "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.0.0.1<0>\n"
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/2(3)/GDRDMA\n"
        "h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/NCCL RDMA Plugin v10/0\n")
    assert result["net"] == "IB" and result["net_devices"] == ["mlx5_0:1", "mlx5_2:1"]
    assert result["gdr"] is True


@pytest.mark.parametrize("message, expected", [
    # NCCL 2.7-2.18: the GPU and the PCI distance before the HCA
    ("NET/IB : GPU Direct RDMA Enabled for GPU 1a000 / HCA 0 (distance 2 <= 2), read 1", ("IB", True, 0, None, "distance 2 <= 2")),
    ("NET/IB : GPU Direct RDMA Disabled for GPU 3d000 / HCA 2 (distance 4 > 2)", ("IB", False, 2, None, "distance 4 > 2")),
    # DMA-BUF registration (NCCL 2.19+) and a plugin whose name holds spaces (a DGX Spark report)
    ("NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'rocep1s0f0'", ("IB", True, 0, "rocep1s0f0", None)),
    ("NET/NCCL RDMA Plugin v10 : GPU Direct RDMA Disabled for HCA 0 'rocep1s0f0'",
     ("NCCL RDMA Plugin v10", False, 0, "rocep1s0f0", None)),
    ("NET/FastSocket : GPU Direct RDMA Disabled for HCA 3 'eth3'", ("FastSocket", False, 3, "eth3", None)),
])
def test_gdr_lines_of_other_releases_and_plugins(message, expected):
    entry = nccl_debug.parse_nccl_debug("h:1:2 [0] NCCL INFO " + message)["gdr_hcas"][0]
    assert (entry["plugin"], entry["enabled"], entry["hca_index"], entry["hca"], entry["reason"]) == expected


def test_sockets_have_no_gpudirect_rdma_and_the_judge_does_not_ask_for_it():
    """Issue 52 (5): NCCL says 'Disabled' for every socket interface; that is GPUDirect RDMA off (it was None, 'not
    shown'), and over sockets the judge does not ask for it."""
    result = nccl_debug.parse_nccl_debug("h:1:2 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'")
    assert result["gdr"] is False
    assert reasons(nccl_path.judge_nccl_debug(result, {"gdr": True}), "gdr") == []


def test_tuning_lines_and_the_algorithm_asked_for():
    # NCCL_DEBUG_SUBSYS=TUNING prints one line per collective and size (the shape of src/enqueue.cc)
    result = nccl_debug.parse_nccl_debug(
        "h:1:2 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
        "h:1:2 [0] NCCL INFO AllReduce: 33554432 Bytes -> Algo Ring proto Simple channel{Lo..Hi}={0..15}\n"
        "h:1:2 [0] NCCL INFO AllGather: 1024 Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..1}\n")
    assert (result["algorithms"], result["protocols"]) == (["Ring"], ["Simple", "LL"])
    assert result["tuning"][0] == {"collective": "AllReduce", "bytes": 33554432, "algorithm": "Ring", "protocol": "Simple"}
    assert result["env"]["NCCL_ALGO"] == "Ring"


# ----------------------------------------------------------------------------- NCCL_IB_HCA as NCCL reads it


@pytest.mark.parametrize("ib_hca, device, port, allowed", [
    (None, "mlx5_7", 1, True),
    ("", "mlx5_7", 1, True),
    ("mlx5", "mlx5_10", 1, True),
    ("mlx5_1", "mlx5_11", 1, True),        # a prefix: mlx5_1 also names mlx5_10 ... mlx5_19 (nccl PR 236)
    ("=mlx5_1", "mlx5_11", 1, False),
    ("=mlx5_1", "mlx5_1", 1, True),
    ("mlx5_0:1,mlx5_1:1", "mlx5_0", 2, False),
    ("mlx5_0:1,mlx5_1:1", "mlx5_1", 1, True),
    ("^mlx5_3,mlx5_4", "mlx5_4", 1, False),   # '^' excludes the whole list (nccl issue 1412's advice)
    ("^mlx5_3,mlx5_4", "mlx5_30", 1, False),
    ("^mlx5_3,mlx5_4", "mlx5_0", 1, True),
    ("^=mlx5_3", "mlx5_30", 1, True),
    ("^=mlx5_3:1", "mlx5_3", 2, True),
    ("^=mlx5_3:1", "mlx5_3", 1, False),
    ("mlx5_bond_0", "mlx5_0", 1, False),
])
def test_ib_hca_prefix_exact_exclude_and_port(ib_hca, device, port, allowed):
    assert nccl_debug.ib_hca_allows(ib_hca, device, port) is allowed


def test_ib_hca_parse():
    assert nccl_debug.parse_ib_hca("^=mlx5_0:1, mlx5_3") == {"exclude": True, "exact": True,
                                                             "entries": [("mlx5_0", 1), ("mlx5_3", None)]}
    with pytest.raises(nccl_debug.NcclDebugError, match="NCCL_IB_HCA must be a string, got int"):
        nccl_debug.parse_ib_hca(5)


# ----------------------------------------------------------------------------- the verdict


def judge(parts, expected):
    return nccl_path.judge_nccl_debug(parse(*parts), expected)


def reasons(verdict, check):
    return [r for r in verdict["reasons"] if r["check"] == check]


def test_roce_with_gdr_and_its_own_ib_hca_passes():
    verdict = judge(("nccl_debug", "ib_roce_gdrdma_2node_slurmv4.txt"),
                    {"rdma": True, "ib_hca": "mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11", "gdr": True})
    assert verdict["passed"] is True
    # the placement is a note: no claim named the rails to hold the run to
    assert [r["ok"] for r in verdict["reasons"]] == [True, True, True, None]
    assert reasons(verdict, "transport")[0]["reason"] == "inter-node traffic over NET/IB (RoCE)"
    assert reasons(verdict, "gdr")[0]["evidence"][0].endswith("[receive] via NET/IB/6/GDRDMA")


def test_hca_outside_the_profile_fails_with_one_line_per_hca():
    verdict = judge(("nccl_debug", "ib_roce_gdrdma_2node_slurmv4.txt"), {"rdma": True, "ib_hca": "=mlx5_0:1,mlx5_1:1"})
    assert verdict["passed"] is False
    failed = [r for r in verdict["reasons"] if r["ok"] is False]
    assert [r["check"] for r in failed] == ["ib_hca"]
    assert failed[0]["reason"] == ("NCCL used mlx5_2:1, mlx5_5:1, mlx5_6:1, mlx5_7:1, mlx5_8:1, mlx5_11:1, "
                                   "outside NCCL_IB_HCA==mlx5_0:1,mlx5_1:1")
    assert "via NET/IB/2/GDRDMA" in failed[0]["evidence"][0]   # mlx5_2 is NET/IB/2
    note = [r for r in reasons(verdict, "ib_hca") if r["ok"] is None][0]
    assert note["reason"].startswith("NCCL_IB_HCA in the log is 'mlx5_0,mlx5_1,")


def test_an_hca_the_operator_excluded_nccl302():
    # The reporter said the RoCE port mlx5_2 'should not be used'; the profile excludes it, NCCL used it.
    verdict = judge(("nccl_debug", "ib_roce_port_in_use_nccl302.txt"), {"rdma": True, "ib_hca": "^=mlx5_2"})
    assert verdict["passed"] is False
    failed = [r for r in verdict["reasons"] if r["ok"] is False][0]
    assert failed["reason"] == "NCCL used mlx5_2:1, outside NCCL_IB_HCA=^=mlx5_2"
    assert failed["evidence"][0].endswith("Ring 00 : 51[3d000] -> 56[1a000] [receive] via NET/IB/2")


def test_socket_fallback_fails_when_rdma_is_expected():
    verdict = judge(("nccl_debug", "socket_fallback_efa_4node_trainingoneks.txt"), {"rdma": True, "gdr": True})
    assert verdict["passed"] is False
    transport = reasons(verdict, "transport")[0]
    assert transport["reason"] == "inter-node traffic fell back to sockets (NET/Socket) although the profile expects RDMA"
    assert transport["evidence"] == [
        "llama-3-8b-node-0-0:152:510 [0] NCCL INFO Channel 00/0 : 3[0] -> 0[0] [receive] via NET/Socket/0",
        "llama-3-8b-node-0-0:152:386 [0] NCCL INFO Using network Socket",
        "llama-3-8b-node-0-0:152:507 [0] NCCL INFO Using network Socket"]
    assert reasons(verdict, "gdr") == []   # over sockets GDR is not the question


def test_socket_profile_passes_on_sockets():
    verdict = judge(("nccl_debug", "socket_fallback_efa_4node_trainingoneks.txt"), {"rdma": False})
    assert verdict["passed"] is True


def test_rdma_although_the_profile_turns_it_off_nccltests373():
    verdict = judge(("nccl_debug", "ibext_merged_nics_nccltests373.txt"), {"rdma": False})
    assert verdict["passed"] is False
    assert reasons(verdict, "transport")[0]["reason"].startswith("inter-node traffic went over NET/IB although the profile")


@pytest.mark.parametrize("parts, why", [
    (("nccl_debug", "gdr_disabled_roce_nccl1537.txt"), ""),
    (("nccl_debug", "gdr_disabled_no_module_2node_nccl899.txt"), " (no module)"),
])
def test_no_gdr_fails_when_gdr_is_expected(parts, why):
    verdict = judge(parts, {"rdma": True, "gdr": True})
    assert verdict["passed"] is False
    gdr = reasons(verdict, "gdr")[0]
    assert gdr["ok"] is False
    assert gdr["reason"] == "NCCL ran without GPUDirect RDMA%s although peermem/DMA-BUF is expected" % why
    assert "GPU Direct RDMA Disabled for HCA" in gdr["evidence"][0]


def test_one_node_is_a_note_not_a_failure():
    verdict = judge(("nccl_debug", "all_reduce_g1_socket_h100.txt"), {"rdma": True, "ib_hca": "=mlx5_0:1", "gdr": True})
    assert verdict["passed"] is True
    transport = reasons(verdict, "transport")[0]
    assert transport["ok"] is None
    assert transport["reason"].startswith("no inter-node connection in this log (1 node(s))")
    assert transport["evidence"][0].endswith("nRanks 1 nNodes 1 localRanks 1 localRank 0 MNNVL 0")


def test_socket_chosen_for_several_nodes_without_connection_lines():
    log = ("n1:1:1 [0] NCCL INFO Using network Socket\n"
           "n1:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n")
    verdict = nccl_path.judge_nccl_debug(nccl_debug.parse_nccl_debug(log), {"rdma": True})
    assert verdict["passed"] is False
    assert reasons(verdict, "transport")[0]["reason"] == (
        "NCCL chose the Socket network for 2 nodes although the profile expects RDMA")


@pytest.mark.parametrize("expected, message", [
    ({"rdma": "yes"}, "expected rdma must be true, false or null, got 'yes'"),
    ({"gdr": 1}, "expected gdr must be true, false or null, got 1"),
    ({"ib_hca": ["mlx5_0"]}, "expected ib_hca must be the NCCL_IB_HCA string or null, got ['mlx5_0']"),
    ({"rdma": True, "hca": "x"}, "expected has unknown keys hca; it reads rdma, ib_hca, gdr, p2p, rails, channels, mnnvl"),
    ("rdma", "expected must be a mapping with rdma, ib_hca and gdr, got str"),
])
def test_expectations_that_are_not_what_the_judge_reads(expected, message):
    with pytest.raises(nccl_debug.NcclDebugError, match="^%s$" % message.replace("[", r"\[").replace("]", r"\]")):
        nccl_path.judge_nccl_debug(nccl_debug.empty_result(), expected)


def test_the_judge_needs_a_parse_result():
    with pytest.raises(nccl_debug.NcclDebugError, match="needs parse_nccl_debug's result, got list"):
        nccl_path.judge_nccl_debug([], {})


# ----------------------------------------------------------------------------- text as it is found

FILES = [("nccl_debug", name) for name in sorted(os.listdir(os.path.join(FIXTURES, "nccl_debug")))] + [
    ("nccl_tests", "mpirun_info_h200x2.txt")]


def _variants(data):
    lines = data.split(b"\n")
    return {
        "crlf": data.replace(b"\n", b"\r\n"),
        "bom": b"\xef\xbb\xbf" + data,
        "ansi": b"\n".join(b"\x1b[1;32m" + line + b"\x1b[0m" if line.strip() else line for line in lines),
        "stray_bytes": b"\xff\xfe\x80 stray \xc3\x28 bytes\n" + data,
        "tag_output": b"\n".join(b"[1,0]<stdout>:" + line for line in lines),
        "srun_label": b"\n".join(b"12: " + line for line in lines),
    }


@pytest.mark.parametrize("parts", FILES, ids=["/".join(p) for p in FILES])
def test_same_facts_from_dirty_text(parts):
    data = read(*parts)
    clean = nccl_debug.parse_nccl_debug(data)
    for name, dirty in _variants(data).items():
        assert nccl_debug.parse_nccl_debug(dirty) == clean, name


@pytest.mark.parametrize("parts", FILES, ids=["/".join(p) for p in FILES])
def test_a_log_cut_anywhere_still_parses(parts):
    data = read(*parts)
    step = max(1, len(data) // 40)
    for cut in range(0, len(data), step):
        result = nccl_debug.parse_nccl_debug(data[:cut])
        verdict = nccl_path.judge_nccl_debug(result, {"rdma": True, "ib_hca": "mlx5", "gdr": True})
        assert verdict["passed"] in (True, False)


@pytest.mark.parametrize("junk", ["", "NCCL INFO", "NCCL INFO NET/IB : Using [", "x NCCL WARN", "\x00" * 50,
                                  "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via ", "NCCL INFO NET/IB : Using [0]={[0] mlx5_0:1",
                                  "NCCL INFO Channel 99999999/0 : 1 -> 2 via NET/IB/999/GDRDMA"])
def test_odd_lines_give_a_result_not_a_traceback(junk):
    result = nccl_debug.parse_nccl_debug(junk)
    assert set(result) == set(nccl_debug.empty_result())


RUNNER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug
shapes = json.loads(sys.stdin.read())
for name, text in shapes.items():
    started = time.time()
    nccl_path.judge_nccl_debug(nccl_debug.parse_nccl_debug(text), {"rdma": True, "ib_hca": "mlx5", "gdr": True})
    assert time.time() - started < 5, name
print("ok")
"""


def test_100000_character_lines_take_linear_time():
    n = 100000
    context = "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
    shapes = {
        "spaces": context + "h:1:2 [0] NCCL INFO " + " " * n + "x",
        "using": context + "h:1:2 [0] NCCL INFO NET/IB : Using " + "[0]" * (n // 3),
        "merged": context + "h:1:2 [0] NCCL INFO NET/IB : Using [0]={" + "[1] a:1, " * (n // 9),
        "socket": context + "h:1:2 [0] NCCL INFO NET/Socket : Using " + "[0]eth0:" * (n // 8),
        "channel": context + "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/" + "1/" * (n // 2),
        "gdr": context + "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for " + "HCA 0 (" * (n // 7),
        "prefix": context + " " * n + "h:1:2 [0] NCCL INFO Using network IB",
        "colons": context + ":" * n + " [0] NCCL INFO x",
        "env": context + "h:1:2 [0] NCCL INFO NCCL_IB_HCA set to " + "mlx5_1," * (n // 7),
        "version": "NCCL version " + "1." * (n // 2),
        "warns": "h:1:2 [0] NCCL WARN x\n" * (n // 20),
        "rank_place": context + "h:1:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId " + "a" * n,
        "gdr_quote": context + "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 '" + "a" * n,
        "ports": context + "".join("h:1:2 [0] NCCL INFO NET/IB: [%d] mlx5_%d:uverbs%d:1/IB\n" % (i, i, i) for i in range(999)),
        "ray_dedup": "(RayWorkerWrapper pid=1, ip=10.0.0.1) h:1:2 [0] NCCL INFO x" + " [repeated 2x across cluster]" * (n // 28),
    }
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER, COLLECTIONS], input=json.dumps(shapes),
                              capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("parse_nccl_debug did not finish 100,000-character lines in 60 s: a regular expression backtracks")
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("name, warning", [
    ("warn_wrapped_completion_error_ml_engineering.txt",
     "NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)"),
    ("warn_wrapped_message_truncated_nccl626.txt",
     "NET/Socket : peer 192.168.161.30<59210> message truncated : receiving 1048576 bytes instead of 65536"),
])
def test_a_warning_nccl_wrapped_over_lines_is_kept_whole(read_fixture, name, warning):
    """Issue 39: the line after a WARN that NCCL continued (no prefix of its own) was dropped, losing the vendor
    error or the sizes; it is joined to its warning. The NCCL INFO lines after it are not."""
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", name))
    assert result["warnings"] == [warning]


def test_only_a_warning_that_has_not_ended_takes_the_next_lines():
    text = ("h:1:2 [0] misc/x.cc:1 NCCL WARN Cuda failure 'out of memory'.\nTraceback (most recent call last):\n"
            "h:1:2 [0] misc/x.cc:2 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out,\n"
            "  on device mlx5_3\nunrelated 1\nunrelated 2\nunrelated 3\nunrelated 4\n")
    assert nccl_debug.parse_nccl_debug(text)["warnings"] == [
        "Cuda failure 'out of memory'.",
        "Call to ibv_modify_qp failed with error Connection timed out, on device mlx5_3 unrelated 1 unrelated 2"]


@pytest.mark.parametrize("name, host, devices, link", [
    ("rank_prefix_tag_output_nccl1713.txt", "aiplatform-wlf2-ge78-70", ["mlx5_%d" % i for i in range(10)], "RoCE"),
    ("rank_prefix_host_colon_nccl1029.txt", "rdma-gpu-train-worker-0", ["mlx5_9"], "IB"),
])
def test_launcher_prefixed_lines_give_the_device_list(read_fixture, name, host, devices, link):
    """Issue 39: lines behind mpirun --tag-output ([1,2]<stdout>:, NCCL 2.27) or a pdsh-style 'host: ' label name the
    host and the devices NCCL listed."""
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", name))
    listed = [d for d in result["ib_devices"] if d["host"] == host]
    assert [d["device"] for d in listed] == devices and {d["link_type"] for d in listed} == {link}
    assert host in result["hosts"]


def test_nccl_2_27_per_port_lines_give_the_ports_and_their_speed(read_fixture):
    """Issue 39 fault (2): NCCL 2.27+ prints each HCA port on its own line ('NET/IB: [1] rocep1s0f1:uverbs1:1/RoCE
    provider=Mlx5 speed=200000 ...'); the provider, speed and PCI path are read, on both hosts."""
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", "per_port_lines_2.28.9_dgxspark.txt"))
    ports = sorted((p["host"], p["index"], p["device"], p["uverbs"], p["port"], p["link_type"], p["provider"],
                    p["speed_mbps"], p["adaptive_routing"]) for p in result["ib_physical_devices"])
    assert ports == [(host, index, device, "uverbs%d" % index, 1, "RoCE", "Mlx5", 200000, False)
                     for host in ("spark-4440", "spark-fb97")
                     for index, device in ((1, "rocep1s0f1"), (3, "roceP2p1s0f1"))]
    assert result["ib_physical_devices"][0]["pci_path"] == "/sys/devices/pci0000:00/0000:00:00.0/0000:01:00.0"
    assert [d["name"] for d in result["ib_devices"]] == ["rocep1s0f1:1", "roceP2p1s0f1:1"]


def test_a_log_cut_before_the_using_line_names_the_devices_by_their_virtual_index(read_fixture):
    """Issue 39 fault (2): a 2.28 log that ends before 'NET/IB : Using' (a job that died in init, a paste cut short)
    gave no ib_devices; the per-port and 'Made virtual device' lines name them, numbered as connections number them
    (virtual [0] and [1], not the port indexes [1] and [3])."""
    lines = read_fixture("nccl_debug", "per_port_lines_2.28.9_dgxspark.txt").splitlines()
    cut = "\n".join(lines[:next(i for i, line in enumerate(lines) if "NET/IB : Using" in line)])
    result = nccl_debug.parse_nccl_debug(cut)
    assert result["ib_device_found"] is True
    assert [(d["index"], d["name"], d["link_type"], d["host"]) for d in result["ib_devices"]] == [
        (0, "rocep1s0f1:1", "RoCE", "spark-4440"), (1, "roceP2p1s0f1:1", "RoCE", "spark-4440")]
