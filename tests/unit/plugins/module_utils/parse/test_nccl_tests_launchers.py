"""nccl-tests output as launchers and old releases print it, and runs that aborted: real captures
(tests/unit/fixtures/README.md names each source)."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_run
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests


def parse(read_fixture, name):
    return nccl_tests.parse(read_fixture("nccl_tests", name))


def last_busbw(result):
    return result["rows"][-1]["out_of_place"]["busbw"]


def test_srun_label_prefix(read_fixture):
    # NVIDIA/nccl-tests#290: srun -l on two H100 nodes, 16 ranks, #wrong printed N/A (-c 0), no 'concluded' line.
    r = parse(read_fixture, "srun_label_h100x16_nccltests290.txt")
    assert len(r["ranks"]) == 16 and {rank["host"] for rank in r["ranks"]} == {"node005", "node007"}
    assert len(r["rows"]) == 11 and r["rows"][0]["size"] == 8388608 and r["rows"][-1]["size"] == 8589934592
    assert last_busbw(r) == 155.57 and r["peak_busbw"] == 167.87 and r["avg_busbw"] == 142.735
    assert r["completed"] and r["passed"] and r["errors"] == []


def test_mpirun_tag_output_with_stderr_noise(read_fixture):
    # eunomia-bpf/nccl-eBPF: mpirun --tag-output, X11 "Authorization required" lines on stderr of both ranks.
    r = parse(read_fixture, "tag_output_rtx5090_ncclebpf.txt")
    assert r["collective"] == "all_reduce" and r["nccl_tests_version"] == "2.18.0" and r["nccl_version"] == "2.29.7"
    assert [rank["rank"] for rank in r["ranks"]] == [0, 1]
    assert len(r["rows"]) == 8 and last_busbw(r) == 2.30 and r["avg_busbw"] == 1.57614
    assert r["completed"] and r["passed"]


def test_tag_output_old_release_with_info_lines_inside_the_table(read_fixture):
    # aws-samples/aws-efa-eks: NCCL 2.8.3, 'error' columns instead of #wrong, other ranks' NCCL INFO lines
    # interleaved with rank 0's table.
    r = parse(read_fixture, "tag_output_error_column_a100x16_awsefaeks.txt")
    assert len(r["ranks"]) == 16 and r["nccl_version"] == "2.8.3"
    assert len(r["rows"]) == 28 and r["rows"][-1]["size"] == 1073741824 and last_busbw(r) == 32.71
    assert r["rows"][-1]["out_of_place"]["error"] == 5e-07 and r["rows"][-1]["root"] is None
    assert r["completed"] and r["passed"]


@pytest.mark.parametrize("name", ["mpirun_tag_output_h100.txt", "mpirun_timestamp_tag_output_h100.txt",
                                  "mpirun_timestamp_output_h100.txt"])
def test_open_mpi_prefixes_read_like_the_plain_run(read_fixture, name):
    # Captured on the GPU machine (Open MPI 4.1.6): --tag-output, --timestamp-output with and without it.
    r = parse(read_fixture, name)
    assert r["collective"] == "all_reduce" and r["nccl_tests_version"] == "2.19.6" and r["nccl_version"] == "2.28.9"
    assert [row["size"] for row in r["rows"]] == [1024, 8192, 65536, 524288, 4194304, 33554432]
    assert len(r["ranks"]) == 1 and r["ranks"][0]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert r["completed"] and r["passed"] and r["errors"] == [] and r["out_of_bounds"] == {"count": 0, "ok": True}


def test_timestamps_do_not_change_the_numbers(read_fixture):
    plain = parse(read_fixture, "mpirun_tag_output_h100.txt")
    stamped = parse(read_fixture, "mpirun_timestamp_tag_output_h100.txt")
    assert [row["size"] for row in plain["rows"]] == [row["size"] for row in stamped["rows"]]
    assert len(stamped["rows"][-1]) == len(plain["rows"][-1])


def test_mpi_help_lines_do_not_fail_a_clean_run(read_fixture):
    # NVIDIA/nccl-tests#309: Open MPI's xpmem WARNING block ("Error code: 2 ...") and the orte_base_help_aggregate
    # lines between the header and the ranks; the run itself is clean.
    r = parse(read_fixture, "mpi_help_lines_h100x16_nccltests309.txt")
    assert r["passed"] and r["errors"] == [] and r["completed"]
    assert len(r["ranks"]) == 16 and len(r["rows"]) == 32 and last_busbw(r) == 469.21
    assert any("orte_base_help_aggregate" in line for line in r["warnings"])
    assert any(line.startswith("Error code: 2") for line in r["warnings"])


def test_a_run_that_aborted_before_its_table(read_fixture):
    # NVIDIA/nccl-tests#219: four ranks listed, then NCCL's internal error and mpirun's abort notice.
    r = parse(read_fixture, "aborted_before_table_nccltests219.txt")
    assert r["passed"] is False and r["rows"] == [] and r["table"] is False and r["completed"] is False
    assert [(rank["rank"], rank["host"]) for rank in r["ranks"]] == [
        (0, "fengyun416"), (1, "fengyun416"), (2, "fengyun"), (3, "fengyun")]
    assert r["errors"] == [
        "fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers / '",
        ".. fengyun pid 3164639: Test failure common.cu:844"]
    assert any("non-zero exit code" in line for line in r["warnings"])
    assert nccl_run.check_thresholds(r, min_busbw=100)[0].startswith(
        "no result table: fengyun: Test NCCL failure common.cu:959")


def test_a_run_refused_before_it_listed_ranks(read_fixture):
    # Captured: two MPI ranks on a machine with one GPU; nccl-tests stops at its GPU count check.
    r = parse(read_fixture, "aborted_duplicate_gpu_mpirun_h100.txt")
    assert r["passed"] is False and r["rows"] == [] and r["ranks"] == []
    assert r["errors"] == ["Invalid number of GPUs: 2 requested but only 1 were found.",
                           ".. vm pid 2984: Test failure common.cu:1454"]


def test_old_alltoall_with_a_blank_redop_column(read_fixture):
    # nccl-tests of June 2021 (526eaca) built and run on the GPU machine: alltoall printed redop as "".
    r = parse(read_fixture, "alltoall_blank_redop_2021_h100.txt")
    assert len(r["rows"]) == 6 and r["passed"] and r["completed"]
    first = r["rows"][0]
    assert (first["size"], first["count"], first["type"], first["redop"], first["root"]) == (1024, 256, "float", None, None)
    assert first["out_of_place"] == {"time_us": 11.16, "algbw": 0.09, "busbw": 0.0, "wrong": None, "error": 0.0}
    assert r["rows"][-1]["in_place"]["algbw"] == 11866.75


def test_old_all_reduce_with_error_columns(read_fixture):
    r = parse(read_fixture, "all_reduce_error_column_2021_h100.txt")
    assert [row["redop"] for row in r["rows"]] == ["sum"] * 6 and r["rows"][-1]["out_of_place"]["algbw"] == 1283.39
    assert r["ranks"][0]["group"] is None and r["passed"]


def test_a_tag_glued_into_the_middle_of_a_line():
    # Open MPI writes two chunks of one rank as one line at times (ExaWorks/psij-python#510).
    header = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong"
    row = "     1024           256     float     sum      -1     8.52    0.12    0.00       0     0.58    1.76    0.00       0"
    text = ("[1,0]<stdout>:%s\n[1,0]<stdout>:# Out of bounds values : 0 OK[1,0]<stdout>:%s\n"
            "[1,0]<stdout>:# Avg bus bandwidth    : 0\n" % (header, row))
    r = nccl_tests.parse(text)
    assert [row["size"] for row in r["rows"]] == [1024] and r["out_of_bounds"]["ok"]


@pytest.mark.parametrize("document, message", [
    ('{"results": [', "nccl-tests -J output is not valid JSON"),
    ('{"results": "none"}', "nccl-tests JSON has no 'results' list"),
    ('{"results": [{"size": "x", "count": 1}]}', "results[0] has no whole-number size and count"),
    ('{"results": [{"size": 8, "count": 2, "out_of_place": {"bus_bw": "fast"}}]}',
     "results[0].out_of_place.bus_bw is not a number: 'fast'"),
    ('{"config": {}}', "no 'results' list"),
])
def test_malformed_json_fails_with_a_message(document, message):
    with pytest.raises(nccl_tests.NcclTestsParseError, match=message.replace("[", r"\[").replace(".", r"\.")):
        nccl_tests.parse(document)
