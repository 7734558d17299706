import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_run, validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests


def parse(read_fixture, name):
    return nccl_tests.parse(read_fixture("nccl_tests", name))


def test_all_reduce_single_process_8_gpus(read_fixture):
    r = parse(read_fixture, "all_reduce_g8_h200x8.txt")
    assert (r["collective"], r["nccl_tests_version"], r["nccl_version"]) == ("all_reduce", "2.19.6", "2.28.9")
    assert [k["rank"] for k in r["ranks"]] == list(range(8))
    assert r["ranks"][7] == {"rank": 7, "group": 0, "pid": 2485, "host": "vm", "device": 7,
                             "bus_id": "0000:00:0d", "gpu": "NVIDIA H200"}
    assert len(r["rows"]) == 30 and r["rows"][0]["size"] == 8 and r["rows"][-1]["size"] == 4294967296
    last = r["rows"][-1]
    assert (last["count"], last["type"], last["redop"], last["root"]) == (1073741824, "float", "sum", -1)
    assert last["out_of_place"] == {"time_us": 20593.2, "algbw": 208.56, "busbw": 364.98, "wrong": 0}
    assert last["in_place"] == {"time_us": 20571.5, "algbw": 208.78, "busbw": 365.37, "wrong": 0}
    assert r["avg_busbw"] == 108.749 and r["peak_busbw"] == 365.37
    assert r["out_of_bounds"] == {"count": 0, "ok": True}
    assert (r["wrong"], r["completed"], r["errors"], r["passed"]) == (0, True, [], True)


def test_json_matches_text(read_fixture):
    text = parse(read_fixture, "all_reduce_g8_h200x8.txt")
    js = parse(read_fixture, "all_reduce_g8_h200x8.json")
    assert js["format"] == "json" and js["collective"] == "all_reduce" and js["nccl_version"] == "2.28.9"
    assert [r["size"] for r in js["rows"]] == [r["size"] for r in text["rows"]]
    # JSON keeps more digits than the text prints
    assert js["rows"][-1]["out_of_place"]["busbw"] == pytest.approx(364.98, abs=0.01)
    assert js["avg_busbw"] == pytest.approx(text["avg_busbw"], abs=0.001)
    assert js["passed"] is True and js["wrong"] == 0


def test_all_gather_one_process_per_gpu(read_fixture):
    r = parse(read_fixture, "all_gather_mpi_h200x8.txt")
    assert r["collective"] == "all_gather" and len(r["ranks"]) == 8
    assert len(set(k["pid"] for k in r["ranks"])) == 8
    assert r["rows"][0]["redop"] == "none" and r["peak_busbw"] == 346.84 and r["passed"]


def test_mpirun_with_interleaved_nccl_info(read_fixture):
    r = parse(read_fixture, "mpirun_info_h200x2.txt")
    assert r["nccl_version"] == "2.28.9"
    assert [row["size"] for row in r["rows"]] == [1024, 8192, 65536, 524288, 4194304, 33554432]
    assert r["avg_busbw"] == 66.4105 and r["passed"] is True and r["errors"] == []


def test_check_disabled_prints_na(read_fixture):
    r = parse(read_fixture, "allreduce_c0_h200x2.txt")
    assert all(row["out_of_place"]["wrong"] is None for row in r["rows"])
    assert r["wrong"] == 0 and r["passed"] is True


def test_sendrecv_in_place_not_applicable(read_fixture):
    r = parse(read_fixture, "sendrecv_h200x2.txt")
    assert r["collective"] == "sendrecv"
    assert r["rows"][0]["out_of_place"]["wrong"] == 0 and r["rows"][0]["in_place"]["wrong"] is None
    assert r["passed"] is True


@pytest.mark.parametrize("name, collective, redop, root", [
    ("alltoall_h200x2.txt", "alltoall", "none", -1),
    ("broadcast_h200x2.txt", "broadcast", "none", 0),
])
def test_other_layouts(read_fixture, name, collective, redop, root):
    r = parse(read_fixture, name)
    assert r["collective"] == collective
    assert (r["rows"][0]["redop"], r["rows"][0]["root"]) == (redop, root)
    assert r["passed"] is True


def test_aborted_run_keeps_rows_and_fails(read_fixture):
    # killed 6 s in: four rows, then nothing - no "# Avg bus bandwidth" summary
    r = parse(read_fixture, "aborted_h200x2.txt")
    assert [row["size"] for row in r["rows"]] == [67108864, 134217728, 268435456, 536870912]
    assert r["completed"] is False and r["avg_busbw"] is None and r["passed"] is False
    assert r["errors"] == ["the output ends before nccl-tests' summary (no '# Avg bus bandwidth' line): "
                           "it was cut off, or the run was still going"]
    failures = nccl_run.check_thresholds(r, min_busbw=200)
    assert failures == ["the output ends before nccl-tests' summary (no '# Avg bus bandwidth' line): it was cut "
                        "off, or the run was still going (4 sizes measured, last 536870912 B)"]


def test_log_cut_before_the_summary_is_judged_with_a_reason(read_fixture):
    text = read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    cut = text[:text.index("# Out of bounds values")]
    (judged,) = validation.judge([{"label": "h200x8", "output": cut, "rc": None}], min_busbw=300)
    assert judged["passed"] is False
    assert judged["failures"] == ["the output ends before nccl-tests' summary (no '# Avg bus bandwidth' line): it "
                                  "was cut off, or the run was still going (%d sizes measured, last 4294967296 B)"
                                  % len(judged["result"]["rows"])]
    # the whole log has its summary and passes
    (whole,) = validation.judge([{"label": "h200x8", "output": text, "rc": 0}], min_busbw=300)
    assert whole["passed"] is True and whole["result"]["errors"] == []


def test_old_layout_without_root_and_with_error_column():
    # Layout of nccl-tests before 2.10 (NVIDIA/nccl-tests issue 107): no root column, 'error'
    # instead of '#wrong', Rank lines without Group, one header per MPI process.
    text = "\n".join([
        "# nThread 1 nGpus 1 minBytes 1310720000 maxBytes 1310720000 step: 1048576(bytes) warmup iters: 5 iters: 20 validation: 1",
        "#", "# Using devices",
        "#   Rank  0 Pid   1320 on ip-172-31-20-228 device  0 [0x00] Tesla V100-SXM2-16GB",
        "#   Rank  0 Pid   2066 on ip-172-31-22-230 device  0 [0x00] Tesla V100-SXM2-16GB",
        "#                                                       out-of-place                       in-place",
        "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "  1310720000     327680000     float     sum   1239.2    1.06    1.06  0e+00   1238.9    1.06    1.06  0e+00",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 1.05798",
    ])
    r = nccl_tests.parse(text)
    assert len(r["ranks"]) == 1 and r["ranks"][0]["group"] is None and r["ranks"][0]["gpu"] == "Tesla V100-SXM2-16GB"
    (row,) = r["rows"]
    assert row["root"] is None and row["redop"] == "sum"
    assert row["out_of_place"] == {"time_us": 1239.2, "algbw": 1.06, "busbw": 1.06, "wrong": None, "error": 0.0}
    assert r["completed"] is True and r["passed"] is True


def test_failure_lines_fail_the_run():
    text = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
            "           8             2     float     sum      -1    89.98    0.00    0.00       0    88.89    0.00    0.00       0\n"
            "node3: Test NCCL failure common.cu:1005 'unhandled system error'\n")
    r = nccl_tests.parse(text)
    assert r["errors"] == ["node3: Test NCCL failure common.cu:1005 'unhandled system error'"] and not r["passed"]
    # the judge says why it stopped, not that the log was cut
    assert nccl_run.check_thresholds(r) == [
        "the run stopped: node3: Test NCCL failure common.cu:1005 'unhandled system error' (1 sizes measured, last 8 B)"]


def test_not_nccl_tests_output():
    with pytest.raises(nccl_tests.NcclTestsParseError, match="no nccl-tests output in the text"):
        nccl_tests.parse("mpirun: command not found")


def test_thresholds(read_fixture):
    r = parse(read_fixture, "all_reduce_g8_h200x8.txt")
    assert nccl_run.check_thresholds(r, min_busbw=360) == []
    assert nccl_run.check_thresholds(r, min_busbw=400) == [
        "size 4294967296 B: busbw 364.98 GB/s, expected at least 400 GB/s"]
    assert nccl_run.check_thresholds(r, min_busbw=365.2, placement="best") == []
    assert nccl_run.check_thresholds(r, min_busbw_by_size={"16777216": 250, 1 << 40: 1}) == [
        "size 16777216 B: busbw 247.9 GB/s, expected at least 250 GB/s",
        "size 1099511627776 B was not measured (largest measured: 4294967296 B)"]
    r["wrong"] = 3
    assert nccl_run.check_thresholds(r) == ["3 wrong values (#wrong), at most 0 allowed"]


@pytest.mark.parametrize("code, version", [(22809, "2.28.9"), (21903, "2.19.3"), (2708, "2.7.8")])
def test_version_codes(code, version):
    assert nccl_tests.nccl_version_from_code(code) == version


def test_at_largest_size_is_the_one_headline_figure(read_fixture):
    r = parse(read_fixture, "all_reduce_g8_h200x8.txt")
    assert nccl_tests.at_largest_size(r) == (4294967296, 364.98)
    assert nccl_tests.at_largest_size(r, "in_place") == (4294967296, 365.37)
    assert nccl_tests.at_largest_size(r, "best") == (4294967296, 365.37)
    shuffled = dict(r, rows=list(reversed(r["rows"])))  # by size, not by position
    assert nccl_tests.at_largest_size(shuffled) == (4294967296, 364.98)
    s = parse(read_fixture, "sendrecv_h200x2.txt")  # here in-place is the faster one
    assert nccl_tests.at_largest_size(s)[1] == 204.83 and nccl_tests.at_largest_size(s, "best")[1] == 207.64
    assert nccl_tests.at_largest_size(nccl_tests.empty_result("none")) == (None, None)
    nan_row = dict(r["rows"][-1], out_of_place=dict(r["rows"][-1]["out_of_place"], busbw=float("nan")))
    hurt = dict(r, rows=r["rows"][:-1] + [nan_row])
    assert nccl_tests.finite(nccl_tests.at_largest_size(hurt)[1]) is False  # handed back, never hidden
    assert nccl_tests.at_largest_size(hurt, "best") == (4294967296, 365.37)


@pytest.mark.parametrize("name, rows, first_busbw, avg", [
    ("rows_without_header_nccltests119.txt", 6, 95.75, 84.8558),
    ("rows_without_header_rccl2078.txt", 4, 359.98, 142.652),
])
def test_a_table_pasted_without_its_header_is_read_in_the_standard_columns(read_fixture, name, rows, first_busbw, avg):
    """Issue 39: rows of 13 numbers, then "Out of bounds" and "Avg bus bandwidth", were refused as "no nccl-tests
    output"; they are read in the columns nccl-tests prints (and rccl-tests, which prints the same), and the
    report says the header was assumed."""
    result = nccl_tests.parse(read_fixture("nccl_tests", name))
    assert len(result["rows"]) == rows and result["rows"][0]["out_of_place"]["busbw"] == first_busbw
    assert result["rows"][0]["type"] == "float" and result["rows"][0]["redop"] == "sum" and result["rows"][0]["root"] == -1
    assert result["avg_busbw"] == avg and result["out_of_bounds"] == {"count": 0, "ok": True} and result["passed"]
    assert result["warnings"][0].startswith("no column header before the first result row")
    # A row of another shape is still not a table.
    with pytest.raises(nccl_tests.NcclTestsParseError):
        nccl_tests.parse("  8  2  float  sum  -1  1.0  0.01\n")
