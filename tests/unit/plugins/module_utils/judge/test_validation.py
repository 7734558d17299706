import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import perftest_runs


@pytest.mark.parametrize("hosts, expected", [
    ([], []), (["a"], []), (["a", "b"], [{"server": "a", "client": "b"}]),
    (["a", "b", "c"], [{"server": "a", "client": "b"}]),
    (["a", "b", "c", "d"], [{"server": "a", "client": "b"}, {"server": "c", "client": "d"}]),
])
def test_pair_hosts(hosts, expected):
    assert perftest_runs.pair_hosts(hosts) == expected


def test_collect_and_judge(read_fixture):
    text = read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    single = {"n2": {"results": [{"item": {"name": "all_reduce_perf"}, "cmd": ["all_reduce_perf", "-g", "8"],
                                  "rc": 0, "stdout": text, "stderr": ""}]},
              "n1": {"results": [{"item": {"name": "all_reduce_perf"}, "msg": "async task did not complete within the requested time"}]}}
    mpirun = {"results": [{"item": {"name": "all_reduce_perf", "label": "x"}, "cmd": ["mpirun"], "rc": 0, "stdout": text}]}
    runs = validation.collect_runs(single, mpirun, ["n1", "n2"], {"n1": 8, "n2": 8})
    assert [r["label"] for r in runs] == ["n1: all_reduce_perf -g 8", "n2: all_reduce_perf -g 8", "x"]
    assert runs[0]["output"] == "error: async task did not complete within the requested time"
    judged = validation.judge(runs, min_busbw=360)
    assert [r["passed"] for r in judged] == [False, True, True]
    assert judged[0]["failures"] == ["no result table: no nccl-tests output in the text: no '# nThread' line, no result "
                                     "table ('#  size  count  type ...') and no nccl-tests failure line"]
    assert "output" not in judged[1]
    text_summary = validation.summary_text(judged).splitlines()
    assert text_summary[2].split()[-1] == "FAIL" and text_summary[3].split()[-1] == "PASS"
    assert text_summary[-1].startswith("n1: all_reduce_perf -g 8: no result table")
    markdown = validation.summary_markdown(judged, {"min_busbw": 360})
    assert "**FAIL**: 2 of 3 run(s) passed." in markdown and "Thresholds: min_busbw=360" in markdown


def test_a_check_mode_run_is_a_failed_run_with_the_reason(read_fixture):
    skipped = {"item": {"name": "all_reduce_perf"}, "cmd": ["all_reduce_perf", "-g", "8"], "rc": 0, "stdout": "",
               "skipped": True, "msg": "Command would have run if not in check mode"}
    runs = validation.collect_runs({"n1": {"results": [skipped]}}, None, ["n1"], {"n1": 8})
    (judged,) = validation.judge(runs, min_busbw=100)
    assert judged["passed"] is False and judged["result"]["collective"] is None
    assert judged["failures"][0] == ("no result table: not run: Command would have run if not in check mode: "
                                     "check mode measures nothing")
    assert "FAIL" in validation.summary_markdown([judged])


def test_judge_perftest(read_fixture):
    ok = {"test": "ib_send_bw", "client": "b", "server": "a", "client_rc": 0,
          "output": read_fixture("perftest", "send_bw_mbsec_perftest-65.txt")}
    none = {"test": "ib_write_bw", "client": "b", "server": "a", "client_rc": 1,
            "stdout": "", "stderr": " Couldn't get device list\n"}
    judged = perftest_runs.judge_perftest([ok, none], min_bw_gbps=40)
    assert [r["passed"] for r in judged] == [True, False]
    assert judged[1]["failures"] == [
        "ib_write_bw b -> a: no result (client exit 1); perftest printed: Couldn't get device list"]
    markdown = perftest_runs.perftest_markdown(judged)
    assert "| ib_send_bw | b -> a | 1024 | 5544.28 MB/sec average | PASS |" in markdown
    assert "| ib_write_bw | b -> a | - | no result | FAIL |" in markdown
    assert markdown.endswith("- ib_write_bw b -> a: no result (client exit 1); perftest printed: Couldn't get device list\n")


def _run(text, label="r"):
    return {"label": label, "command": "x", "rc": 0, "output": text}


def test_a_nan_or_inf_busbw_is_a_failed_measurement_never_a_pass(read_fixture):
    """The real 8x H200 capture with its largest row's busbw read as nan (and inf): it used to pass
    min_busbw 100, its peak taken from the other rows."""
    text = read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    last = [line for line in text.splitlines() if line.strip().startswith("4294967296")][0]
    fields = last.split()
    for bad in ("nan", "inf", "-nan"):
        broken = list(fields)
        broken[7] = bad  # out-of-place busbw of the largest size
        edited = text.replace(last, "  ".join(broken))
        (run,) = validation.judge([_run(edited)], min_busbw=100)
        assert not run["passed"]
        assert "busbw is nan or inf (a failed measurement) at 1 size(s), first 4294967296 B" in run["failures"]
        assert any(f.startswith("size 4294967296 B: busbw ") and f.endswith("expected at least 100 GB/s")
                   for f in run["failures"])
        peak = run["result"]["peak_busbw"]
        assert nccl_tests.finite(peak) and 0 < peak < 1000  # the peak of what was measured, never nan
    # Without any threshold it still fails: a run with a failed measurement is not a pass.
    (run,) = validation.judge([_run(edited)])
    assert not run["passed"] and run["failures"][0].startswith("busbw is nan or inf")


def test_one_rank_says_it_measured_no_bandwidth(read_fixture):
    (ar,) = validation.judge([_run(read_fixture("nccl_tests", "all_reduce_g1_h100.txt"), "all_reduce -g 1")])
    assert ar["result"]["peak_busbw"] == 0.0 and ar["passed"]
    assert ar["notes"] == ["1 rank: no data crosses a link - busbw is 0 for a reduction and a local copy for sendrecv "
                           "(peak 0 GB/s); this run shows the collective works, it measures no bandwidth"]
    (sr,) = validation.judge([_run(read_fixture("nccl_tests", "sendrecv_g1_h100.txt"), "sendrecv -g 1")])
    assert sr["result"]["peak_busbw"] == 28773.0
    assert sr["notes"][0].startswith("1 rank: no data crosses a link") and "(peak 28773 GB/s)" in sr["notes"][0]
    markdown = validation.summary_markdown([ar, sr])
    assert "## Notes" in markdown and "- sendrecv -g 1: 1 rank: no data crosses a link" in markdown
    assert "note: 1 rank" in validation.summary_text([ar])


def test_a_figure_beyond_any_link_on_several_ranks_is_not_a_result(read_fixture):
    """The one-GPU sendrecv's figures relabelled as two ranks: 28773 GB/s cannot have crossed a link."""
    text = read_fixture("nccl_tests", "sendrecv_g1_h100.txt")
    rank = [line for line in text.splitlines() if "Rank  0" in line][0]
    two = text.replace(rank, rank + "\n" + rank.replace("Rank  0", "Rank  1").replace("device  0", "device  1"))
    (run,) = validation.judge([_run(two)])
    assert not run["passed"] and run["notes"] == []
    assert run["failures"] == ["peak busbw 28773 GB/s is beyond what any link carries today (NVLink 5: 900 GB/s a "
                               "direction): a broken measurement, not a result"]


def test_the_baselines_section_is_lines_not_escaped_text(read_fixture):
    (run,) = validation.judge([_run(read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt"), "ar -g 8")])
    run["baseline"] = "365 GB/s = 100 % of the H200x8 NVLink baseline"
    markdown = validation.summary_markdown([run])
    assert "## Baselines\n\n- ar -g 8: 365 GB/s = 100 % of the H200x8 NVLink baseline\n" in markdown
    assert "\\n" not in markdown


# ----------------------------------------------------------------------------- perftest per rail

def test_perftest_plan_per_pair_and_per_rail():
    pairs, tests = [{"server": "a", "client": "b"}], [{"name": "ib_write_bw"}]
    assert perftest_runs.perftest_plan(pairs, tests, {"a": [], "b": []}) == [[pairs[0], tests[0], None]]
    plan = perftest_runs.perftest_plan(pairs, tests, {"a": ["mlx5_0", "mlx5_3"], "b": ["mlx5_0", "mlx5_2"]})
    assert [(p["client"], p["server"], r["index"], r["client_device"], r["server_device"]) for p, t, r in plan] == [
        ("b", "a", 0, "mlx5_0", "mlx5_0"), ("a", "b", 0, "mlx5_0", "mlx5_0"),
        ("b", "a", 1, "mlx5_2", "mlx5_3"), ("a", "b", 1, "mlx5_3", "mlx5_2")]


def test_perftest_rounds_run_disjoint_pairs_at_once_and_grow_with_a_pairs_runs_not_the_hosts():
    tests = [{"name": "ib_write_bw"}, {"name": "ib_read_lat"}]
    for count in (4, 64, 1000):
        hosts = ["h%04d" % i for i in range(count)]
        plan = perftest_runs.perftest_plan(perftest_runs.pair_hosts(hosts), tests)
        rounds = perftest_runs.plan_rounds(plan)
        assert len(plan) == count and len(rounds) == 2   # every pair's two tests, whatever the fleet's size
        for entries in rounds:
            busy = [h for e in entries for h in (e["pair"]["server"], e["pair"]["client"])]
            assert len(busy) == len(set(busy))   # no host in two runs of a round
        assert sorted(e["index"] for r in rounds for e in r) == list(range(len(plan)))
    # Per rail both directions of a pair share its hosts: one run a round, in the plan's order.
    plan = perftest_runs.perftest_plan([{"server": "a", "client": "b"}, {"server": "c", "client": "d"}], tests[:1],
                                       {h: ["mlx5_0", "mlx5_1"] for h in "abcd"})
    rounds = perftest_runs.plan_rounds(plan)
    assert [[(e["pair"]["client"], e["pair"]["server"], e["rail"]["index"]) for e in r] for r in rounds] == [
        [("b", "a", 0), ("d", "c", 0)], [("a", "b", 0), ("c", "d", 0)], [("b", "a", 1), ("d", "c", 1)],
        [("a", "b", 1), ("c", "d", 1)]]


@pytest.mark.parametrize("rails, message", [
    ({"a": ["mlx5_0", "mlx5_1"], "b": ["mlx5_0"]},
     "per-rail perftest needs as many rails on both hosts: b has 1 \\(mlx5_0\\), a has 2 \\(mlx5_0, mlx5_1\\)"),
    ({"a": ["-d mlx5_0"], "b": ["mlx5_0"]}, "perftest_rails of a: '-d mlx5_0' is not an RDMA device name"),
    ({"a": "mlx5_0"}, "perftest_rails of a must be a list of RDMA device names, got 'mlx5_0'"),
])
def test_perftest_plan_refuses(rails, message):
    with pytest.raises(ValueError, match=message):
        perftest_runs.perftest_plan([{"server": "a", "client": "b"}], [{"name": "ib_write_bw"}], rails)


def test_the_rail_table_names_the_rail_that_failed(read_fixture):
    """perftest issue #273's real ib_write_bw output on every rail but one, where the client found no device."""
    good = read_fixture("perftest", "write_bw_gbits_perftest-273.txt")
    plan = perftest_runs.perftest_plan([{"server": "a", "client": "b"}], [{"name": "ib_write_bw"}],
                                       {"a": ["mlx5_0", "mlx5_1"], "b": ["mlx5_0", "mlx5_1"]})
    results = [{"test": t["name"], "server": p["server"], "client": p["client"], "rail": r, "client_rc": 0,
                "stdout": good if (r["index"], p["client"]) != (1, "a") else "", "stderr": ""} for p, t, r in plan]
    results[3]["stderr"], results[3]["client_rc"] = "Couldn't connect to 10.0.0.2:18518", 1
    judged = perftest_runs.judge_perftest(results)
    assert [r["passed"] for r in judged] == [True, True, True, False]
    assert judged[3]["failures"] == ["ib_write_bw a -> b rail 1 (mlx5_1 -> mlx5_1): no result (client exit 1); "
                                     "perftest printed: Couldn't connect to 10.0.0.2:18518"]
    markdown = perftest_runs.perftest_markdown(judged, replayed_from="a capture")
    assert markdown.startswith("# gpufabric.rdma perftest\n\nFigures REPLAYED from a capture, not measured.\n")
    table = markdown.split("## Rails")[1].split("## Failures")[0]
    assert "| test | rail | b -> a | a -> b |" in table
    rows = [line for line in table.splitlines() if line.startswith("| ib_write_bw |")]
    assert len(rows) == 2 and "no result FAIL (mlx5_1 -> mlx5_1)" in rows[1] and "PASS (mlx5_0 -> mlx5_0)" in rows[0]
