import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils import validation


@pytest.mark.parametrize("hosts, expected", [
    ([], []), (["a"], []), (["a", "b"], [{"server": "a", "client": "b"}]),
    (["a", "b", "c"], [{"server": "a", "client": "b"}]),
    (["a", "b", "c", "d"], [{"server": "a", "client": "b"}, {"server": "c", "client": "d"}]),
])
def test_pair_hosts(hosts, expected):
    assert validation.pair_hosts(hosts) == expected


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
    judged = validation.judge_perftest([ok, none], min_bw_gbps=40)
    assert [r["passed"] for r in judged] == [True, False]
    assert judged[1]["failures"] == [
        "ib_write_bw b -> a: no result (client exit 1); perftest printed: Couldn't get device list"]
    markdown = validation.perftest_markdown(judged)
    assert "| ib_send_bw | b -> a | 1024 | 5544.28 MB/sec average | PASS |" in markdown
    assert "| ib_write_bw | b -> a | - | no result | FAIL |" in markdown
    assert markdown.endswith("- ib_write_bw b -> a: no result (client exit 1); perftest printed: Couldn't get device list\n")
