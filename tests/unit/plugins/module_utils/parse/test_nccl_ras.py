"""parse_nccl_ras on replies captured on the GPU machine (2x H200, NCCL 2.28.9, PyTorch 2.11; tests/device/ras_job.py,
docs/benchmarks/2026-11-27-h200x2-nccl-ras): a job that is fine, a rank that stopped calling NCCL, a rank killed
(asked 5 s and 75 s after), a rank that aborted its communicator; each in text and in NCCL's JSON."""
import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_ras

NODE = "192.0.2.2"


def _suspects(result):
    return [(s["rank"], s["node"], s["nvml_gpu"], s["pid"], s["kind"]) for s in result["suspects"]]


@pytest.mark.parametrize("name", ["healthy_2rank_h200_2.28.9.txt", "healthy_2rank_h200_2.28.9.json"])
def test_a_job_that_is_fine_has_no_suspect(read_fixture, name):
    result = nccl_ras.parse_nccl_ras(read_fixture("nccl_ras", name))
    assert result["nccl_version"] == "2.28.9" and result["cuda_runtime"] == 13000
    assert result["suspects"] == [] and result["communicators"] == [] and result["complete"] is True


def test_the_job_summary_and_the_group_table(read_fixture):
    result = nccl_ras.parse_nccl_ras(read_fixture("nccl_ras", "healthy_2rank_h200_2.28.9.txt"))
    assert result["job"] == {"nodes": 1, "processes_per_node": 2, "gpus_per_process": 1, "processes": 2, "gpus": 2}
    assert result["groups"] == [{"group": 0, "communicators": 1, "nodes_per_communicator": 1, "ranks_per_node": "2",
                                 "ranks_per_communicator": 2, "ranks_in_group": 2, "status": "RUNNING", "errors": ["OK"]}]


@pytest.mark.parametrize("name", ["hang_rank1_stopped_calling_2.28.9.txt", "hang_rank1_stopped_calling_2.28.9.json"])
def test_the_rank_that_stopped_calling_nccl_is_the_one_behind(read_fixture, name):
    result = nccl_ras.parse_nccl_ras(read_fixture("nccl_ras", name))
    assert _suspects(result) == [(1, NODE, 1, 1369, "behind")]
    assert result["suspects"][0]["why"] == "behind: launched AllReduce up to operation 29, others up to 30"
    assert result["communicators"][0]["problem"] == "MISMATCH"


def test_a_killed_rank_is_missing_then_dead(read_fixture):
    early = nccl_ras.parse_nccl_ras(read_fixture("nccl_ras", "kill_rank1_incomplete_2.28.9.txt"))
    assert _suspects(early) == [(1, NODE, 1, 1475, "missing")]
    assert early["errors"][0]["kind"] == "INCOMPLETE" and early["groups"][0]["errors"] == ["INCOMPLETE"]
    for name in ("kill_rank1_dead_2.28.9.txt", "kill_rank1_dead_2.28.9.json"):
        late = nccl_ras.parse_nccl_ras(read_fixture("nccl_ras", name))
        assert _suspects(late) == [(1, NODE, 1, 1475, "dead")], name
        assert "considered dead" in late["suspects"][0]["why"]


@pytest.mark.parametrize("name", ["abort_rank1_nocomm_2.28.9.txt", "abort_rank1_nocomm_2.28.9.json"])
def test_a_rank_that_aborted_its_communicator_has_another_status(read_fixture, name):
    """NCCL 2.28.9's JSON of a missing rank lacks a comma after "nvml_dev"; it is read anyway."""
    result = nccl_ras.parse_nccl_ras(read_fixture("nccl_ras", name))
    assert _suspects(result) == [(1, NODE, 1, 1597, "status")]
    assert result["suspects"][0]["why"] == "communicator status NOCOMM"


def test_ranks_printed_under_a_shared_value_and_cuda_nvml_indexes():
    """The shapes of a bigger job (NCCL's client_support.cc): a value shared by several ranks printed once above them,
    a CUDA index that differs from the NVML one, a rank without process information, an asynchronous error."""
    text = ("NCCL version 2.28.9 compiled with CUDA 13.0\n\nErrors\n======\n\n"
            "#0-0 (00000000000000ab) ERROR\n  Asynchronous error on 1 rank\n"
            "  Rank 5 reported remote process exited or there was a network error -- GPU 1 (NVML 5) managed by "
            "process 77 on node gpu-b\n\nWarnings\n========\n\n#0-0 (00000000000000ab) MISMATCH\n"
            "  Communicator ranks have different AllReduce operation counts\n"
            "  6 ranks have launched up to operation 1200\n  2 ranks have launched up to operation 1199\n"
            "  Rank 3 -- GPU 3 managed by process 70 on node gpu-a\n  Rank 6 -- [process information not found]\r\n")
    result = nccl_ras.parse_nccl_ras(text)
    assert [(s["rank"], s["node"], s["gpu"], s["nvml_gpu"], s["kind"]) for s in result["suspects"]] == [
        (5, "gpu-b", 1, 5, "error"), (3, "gpu-a", 3, 3, "behind"), (6, None, None, None, "behind")]
    assert result["suspects"][1]["why"] == "behind: launched AllReduce up to operation 1199, others up to 1200"


@pytest.mark.parametrize("text, message", [
    ("", "no NCCL RAS status"),
    ("Connecting to localhost:28028: Connection refused\n", "no NCCL RAS status"),
    ('{"nccl_version": "2.28.9", "communicators": [', "cannot be read"),
    ("[1, 2]", "no NCCL RAS status"),
])
def test_what_is_no_status_is_refused_saying_so(text, message):
    with pytest.raises(nccl_ras.NcclRasError, match=message):
        nccl_ras.parse_nccl_ras(text)
