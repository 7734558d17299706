"""The intra-node path (issue 41, point 3): where a node's GPUs are joined by NVLink, its ranks must talk
peer-to-peer. Real NCCL logs of one 4x H200 node (NV18 between every pair), all_reduce with peer-to-peer on and with
NCCL_P2P_DISABLE=1, in one process and under mpirun (docs/benchmarks/2026-11-27-h200x4-p2p: 346 against 23 GB/s)."""

import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge.nccl_path import judge_nccl_debug
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nccl_debug import parse_nccl_debug
from paths import ROOT

CAPTURES = os.path.join(ROOT, "docs", "benchmarks", "2026-11-27-h200x4-p2p")


def _log(name):
    with open(os.path.join(CAPTURES, name + ".txt")) as handle:
        return parse_nccl_debug(handle.read())


def _intra(verdict):
    return [r for r in verdict["reasons"] if r["check"] == "intra_node"]


@pytest.mark.parametrize("name", ["single_p2p_off_r1", "single_p2p_off_r2", "mpirun_p2p_off_r1", "mpirun_p2p_off_r2"])
def test_peer_to_peer_disabled_fails_naming_shm_and_the_cause(name):
    verdict = judge_nccl_debug(_log(name), {"p2p": True})
    (reason,) = _intra(verdict)
    assert verdict["passed"] is False and reason["ok"] is False
    assert reason["reason"] == ("GPUs joined by NVLink talk through shared memory (SHM/direct/direct: 16 channel "
                                "connection(s)), not peer-to-peer: NCCL_P2P_DISABLE set by environment to 1")
    assert len(reason["evidence"]) == 1 and " via SHM/direct/direct" in reason["evidence"][0]


# One process reaches the other GPUs by pointer; one process per GPU (mpirun) through CUDA's memory handles.
@pytest.mark.parametrize("name, how", [("single_p2p_on_r1", "P2P/direct pointer"), ("single_p2p_on_r2", "P2P/direct pointer"),
                                       ("mpirun_p2p_on_r1", "P2P/CUMEM"), ("mpirun_p2p_on_r2", "P2P/CUMEM")])
def test_the_same_node_with_peer_to_peer_passes(name, how):
    verdict = judge_nccl_debug(_log(name), {"p2p": True})
    (reason,) = _intra(verdict)
    assert verdict["passed"] is True and reason["ok"] is True
    assert reason["reason"] == "GPUs of one node talk peer-to-peer (%s: 96 channel connection(s))" % how
    # one node: nothing is called inter-node traffic
    assert [r["ok"] for r in verdict["reasons"] if r["check"] == "transport"] == [None]


def test_without_nvlink_or_without_a_word_on_it_shared_memory_fails_nothing():
    parsed = _log("single_p2p_off_r1")
    (note,) = _intra(judge_nccl_debug(parsed, {"p2p": False}))
    assert note["ok"] is None and "not joined by NVLink, so peer-to-peer is not expected" in note["reason"]
    verdict = judge_nccl_debug(parsed)
    assert verdict["passed"] is True and _intra(verdict) == []


def _lines(*messages, nodes=1):
    head = ["vm:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes %d localRanks 2 localRank 0 MNNVL 0" % nodes]
    return parse_nccl_debug("\n".join(head + ["vm:1:1 [0] NCCL INFO " + m for m in messages]) + "\n")


def test_no_word_from_the_environment_names_the_usual_causes():
    parsed = _lines("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", "Channel 00 : 1[1] -> 0[0] via SHM/direct/direct")
    (reason,) = _intra(judge_nccl_debug(parsed, {"p2p": True}))
    assert reason["ok"] is False and "nothing in the environment turned it off" in reason["reason"]
    assert "ACS on a PCIe switch, the IOMMU, or a VM without peer-to-peer" in reason["reason"]
    level = _lines("NCCL_P2P_LEVEL set by environment to LOC", "Channel 00 : 0[0] -> 1[1] via SHM/direct/direct")
    assert _intra(judge_nccl_debug(level, {"p2p": True}))[0]["reason"].endswith("NCCL_P2P_LEVEL set by environment to LOC")


def test_a_socket_between_gpus_of_one_node_is_never_inter_node_traffic():
    parsed = _lines("Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0", "NCCL_P2P_DISABLE set by environment to 1",
                    "NCCL_SHM_DISABLE set by environment to 1")
    verdict = judge_nccl_debug(parsed, {"p2p": True, "rdma": True})
    (transport,) = [r for r in verdict["reasons"] if r["check"] == "transport"]
    assert transport["ok"] is None and transport["reason"].startswith("one node: no inter-node traffic")
    (reason,) = _intra(verdict)
    assert reason["ok"] is False and "the network (NET/Socket/0: 1)" in reason["reason"]
    assert verdict["passed"] is False


def test_a_log_without_connections_between_local_gpus_says_so():
    (reason,) = _intra(judge_nccl_debug(_lines("NCCL_P2P_DISABLE set by environment to 1"), {"p2p": True}))
    assert reason["ok"] is None and "cannot be judged from it" in reason["reason"]


def test_p2p_must_be_a_boolean():
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nccl_debug import NcclDebugError
    with pytest.raises(NcclDebugError, match="expected p2p must be true, false or null, got 'yes'"):
        judge_nccl_debug(_lines(), {"p2p": "yes"})


# ----------------------------------------------------------------------------- one process, each GPU called a node

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "nccl_debug")
ONE_PROCESS = "socket_one_process_p2p_shm_off_2.28.9_constructed.txt"


def _fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return parse_nccl_debug(handle.read())


def test_a_socket_between_the_gpus_of_one_process_is_intra_node_traffic():
    """Issue 52: P2P and SHM off, 'all_reduce_perf -g 2' on a 2x H100 host; NCCL printed 'nNodes 2 localRanks 1' and
    connected the GPUs over NET/Socket. Both ranks are one process (host:pid h100x2:4821) on two GPUs (bus IDs 18000,
    2a000): the run was passed as 'inter-node traffic over sockets'; with NVLink expected it fails, naming both
    variables. (Fixture in NCCL 2.28.9's layout, constructed: no public capture of this run was found.)"""
    parsed = _fixture(ONE_PROCESS)
    assert (parsed["nodes"], parsed["net"]) == (2, "Socket")
    assert {(c["intra_process"], tuple(sorted(c["bus_ids"]))) for c in parsed["connections"]} == {(True, ("18000", "2a000"))}
    verdict = judge_nccl_debug(parsed, {"p2p": True})
    assert verdict["passed"] is False
    (transport,) = [r for r in verdict["reasons"] if r["check"] == "transport"]
    assert transport["ok"] is None and "inter-node traffic over sockets" not in transport["reason"]
    assert transport["reason"] == (
        "one host: no inter-node traffic; NCCL counted 2 nodes, but every rank it connected through NET/Socket is a GPU "
        "of one process (h100x2:4821, GPUs at bus IDs 18000, 2a000): judged as the intra-node path")
    (reason,) = _intra(verdict)
    assert reason["ok"] is False
    assert reason["reason"] == ("GPUs joined by NVLink talk through the network (NET/Socket/0: 8), not peer-to-peer: "
                                "NCCL_P2P_DISABLE set by environment to 1, NCCL_SHM_DISABLE set by environment to 1")
    assert reason["evidence"][0].endswith("[receive] via NET/Socket/0")


def test_one_process_over_sockets_asks_nothing_of_rdma_hcas_or_gdr():
    verdict = judge_nccl_debug(_fixture(ONE_PROCESS), {"rdma": True, "ib_hca": "mlx5", "gdr": True, "p2p": False})
    assert [(r["check"], r["ok"]) for r in verdict["reasons"]] == [("transport", None), ("intra_node", None)]
    assert verdict["passed"] is True


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(FIXTURES) if not n.endswith("_constructed.txt")))
def test_no_real_multi_process_log_is_called_one_process(name):
    """The ranks of a connection are one process only when that process placed both on two of its GPUs: a process that
    is rank 1 of one communicator and rank 0 of another (vLLM's tensor and pipeline groups) is not."""
    parsed = _fixture(name)
    assert not any(c.get("intra_process") for c in parsed["connections"])
