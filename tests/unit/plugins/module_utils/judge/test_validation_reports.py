"""validation.py's parts moved down from the nccl-tests filters: the replayed-from note on judged runs, the
bandwidth chart's series, mpirun's -x arguments and the baseline notes - on a real 2x H200 mpirun run
(docs/benchmarks/2026-11-22-h200x2-validate/hand_mpirun.txt)."""
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import mpirun
from paths import ROOT

PLATFORM = {"gpu": "NVIDIA H200", "gpus_by_mode": {"mpirun": "2"}, "interconnect_by_mode": {"mpirun": "nvlink"}}


@pytest.fixture
def runs():
    with open(os.path.join(ROOT, "docs", "benchmarks", "2026-11-22-h200x2-validate", "hand_mpirun.txt")) as handle:
        text = handle.read()
    return [{"label": "mpirun", "host": "vm", "mode": "mpirun", "command": "mpirun", "rc": 0, "output": text}]


def test_judge_marks_every_run_replayed_from_a_capture(runs):
    (plain,) = validation.judge(runs)
    (replayed,) = validation.judge(runs, replayed_from="captures/h200x2/hand_mpirun.txt")
    assert "replayed_from" not in plain and plain["label"] == "mpirun"
    assert replayed["replayed_from"] == "captures/h200x2/hand_mpirun.txt"
    assert replayed["label"] == "mpirun" and replayed["passed"] is True  # the label stays short
    assert validation.summary_rows([replayed])[0][-1] == "PASS (replayed)"


def test_bandwidth_series_is_one_line_per_run(runs):
    judged = validation.judge(runs + [dict(runs[0], label="not run", not_run="skipped in check mode")])
    series = validation.bandwidth_series(judged)
    assert [s["label"] for s in series] == ["mpirun", "not run"]
    assert len(series[0]["rows"]) == 30 and series[0]["rows"][-1]["size"] == 4294967296
    assert series[0]["rows"][-1]["out_of_place"]["busbw"] == 345.19
    assert series[1]["rows"] == []


def test_mpirun_env_args_exports_each_variable_to_every_rank():
    assert mpirun.mpirun_env_args({"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_DEBUG": None, "NCCL_NVLS_ENABLE": False,
                                   "NCCL_IB_GID_INDEX": 3, "_PRIVATE": "x"}) == [
        "-x", "NCCL_DEBUG=", "-x", "NCCL_IB_GID_INDEX=3", "-x", "NCCL_IB_HCA==mlx5_0:1", "-x", "NCCL_NVLS_ENABLE=false",
        "-x", "_PRIVATE=x"]
    assert mpirun.mpirun_env_args({}) == []


@pytest.mark.parametrize("env, message", [
    ({"A B": "1"}, "'A B' is not an environment variable name"),
    ({"1A": "1"}, "'1A' is not an environment variable name"),
    ({"": "1"}, "'' is not an environment variable name"),
    ({5: "1"}, "5 is not an environment variable name"),
    ({"A": [1]}, "A must be a string or a number, got list"),
    ({"A": {"b": 1}}, "A must be a string or a number, got dict"),
    ({"NCCL_DEBUG": "WARN\n-x LD_PRELOAD=/tmp/x.so"}, "NCCL_DEBUG contains a newline"),
])
def test_mpirun_env_args_refuses_what_would_break_the_command_line(env, message):
    with pytest.raises(ValueError) as raised:
        mpirun.mpirun_env_args(env)
    assert str(raised.value).startswith(message)


def test_mpirun_argv_is_the_one_command_line_of_the_three_roles():
    env = {"NCCL_IB_HCA": "=mlx5_0:1"}
    pair = mpirun.mpirun_argv("mpirun", ["--allow-run-as-root"], 16, ["./all_reduce_perf", "-b", "8", "-g", "1"],
                              env=env, hosts=["node1", "node2"], slots="8")
    assert pair == ["mpirun", "--allow-run-as-root", "-H", "node1:8,node2:8", "-np", "16", "-x", "NCCL_IB_HCA==mlx5_0:1",
                    "./all_reduce_perf", "-b", "8", "-g", "1"]
    assert mpirun.mpirun_argv("/opt/openmpi/bin/mpirun", [], 4, [], hostfile="/tmp/h") == [
        "/opt/openmpi/bin/mpirun", "--hostfile", "/tmp/h", "-np", "4"]
    assert mpirun.mpirun_argv("mpirun", [], 2, ["x"]) == ["mpirun", "-np", "2", "x"]


@pytest.mark.parametrize("call, message", [
    (dict(np=0), "mpirun -np must be a positive whole number, got 0"),
    (dict(np="2\n"), "mpirun -np must be a positive whole number"),
    (dict(np=True), "mpirun -np must be a positive whole number, got True"),
    (dict(hosts=["a"], slots=0), "mpirun slots must be a positive whole number, got 0"),
    (dict(hosts=["a\n-x LD_PRELOAD=/x"], slots=1), "mpirun host contains a newline"),
    (dict(hosts=[], slots=1), "mpirun: the host list is empty"),
    (dict(hosts=["a"], slots=1, hostfile="/h"), "mpirun: give hosts or a hostfile, not both"),
    (dict(hosts="a,b", slots=1), "mpirun hosts must be a list, got str"),
    (dict(launcher=""), "mpirun launcher must not be empty"),
    (dict(args="--mca x y"), "mpirun arguments must be a list, got str"),
    (dict(command=["./all_reduce_perf", "-b\r8"]), "command contains"),
])
def test_mpirun_argv_refuses_what_would_break_the_command_line(call, message):
    given = dict(launcher="mpirun", args=[], np=2, command=["x"])
    given.update(call)
    with pytest.raises(ValueError) as raised:
        mpirun.mpirun_argv(given["launcher"], given["args"], given["np"], given["command"], env=given.get("env"),
                           hosts=given.get("hosts"), slots=given.get("slots"), hostfile=given.get("hostfile"))
    assert str(raised.value).startswith(message), str(raised.value)


def test_baseline_notes_on_a_real_run(runs):
    result = validation.baseline_notes(validation.judge(runs), PLATFORM)
    (run,) = result["runs"]
    assert run["passed"] is True and run["baseline"].startswith("345 GB/s = 100 % of the H200x2 NVLink baseline")
    assert result["record"] == [{"kind": "nccl_busbw", "gpu": "NVIDIA H200", "gpus": 2, "interconnect": "nvlink",
                                 "collective": "all_reduce", "size": 4294967296, "value": 345.19,
                                 "source": "recorded here: mpirun"}]


def test_baseline_notes_fail_a_run_far_below_its_baseline_unless_the_user_set_a_threshold(runs):
    local = [{"kind": "nccl_busbw", "gpu": "H200", "gpus": 2, "interconnect": "nvlink", "collective": "all_reduce",
              "size": 4 << 30, "value": 500.0}]
    (run,) = validation.baseline_notes(validation.judge(runs), PLATFORM, 0.9, local)["runs"]
    assert run["passed"] is False and run["failures"] == [
        "busbw 345.2 GB/s at 4294967296 bytes is below 90 % of the H200x2 NVLink baseline (500.0 GB/s)"]
    (informed,) = validation.baseline_notes(validation.judge(runs), PLATFORM, 0.9, local, True)["runs"]
    assert informed["passed"] is True and informed["failures"] == []


def test_baseline_notes_without_a_platform_or_a_known_baseline(runs):
    (bare,) = validation.baseline_notes(validation.judge(runs), {})["runs"]
    assert bare["baseline"] is None
    result = validation.baseline_notes(validation.judge(runs), {"gpu": "NVIDIA B200", "gpus": 2, "interconnect": "nvlink"})
    assert result["runs"][0]["baseline"] == ("no nccl_busbw all_reduce baseline for NVIDIA B200 x2 nvlink: record one "
                                             "from this run with -e gpufabric_record_baseline=true")
    assert result["runs"][0]["passed"] is True
    assert result["record"][0]["gpu"] == "NVIDIA B200"


def test_one_judging_pass_sets_each_run_against_its_baseline(runs):
    """The baselines inside judge: the same runs, baselines and failures as judging and then noting them apart; a
    threshold of the user's (min_busbw, min_busbw_by_size) keeps the baseline from failing a run."""
    local = [{"kind": "nccl_busbw", "gpu": "H200", "gpus": 2, "interconnect": "nvlink", "collective": "all_reduce",
              "size": 4 << 30, "value": 500.0}]
    baselines = {"platform": PLATFORM, "fraction": 0.9, "local": local}
    (once,) = validation.judge(runs, baselines=baselines)
    (twice,) = validation.baseline_notes(validation.judge(runs), PLATFORM, 0.9, local)["runs"]
    assert once == twice and once["passed"] is False and once["baseline_busbw"] == 500.0
    (informed,) = validation.judge(runs, min_busbw=300, baselines=baselines)
    assert informed["passed"] is True and informed["baseline"].startswith("345 GB/s = 69 %")
    (by_size,) = validation.judge(runs, min_busbw_by_size={4 << 30: 300}, baselines=baselines)
    assert by_size["passed"] is True
    # no platform (a Slurm job's runs): every run still says it has no baseline, as the report reads it
    (bare,) = validation.judge(runs, baselines={"platform": {}, "fraction": 0.9, "local": []})
    assert bare["baseline"] is None and bare["passed"] is True


def test_the_figure_is_read_once_and_carried(runs):
    """judge carries each run's figure; the summary, the baselines and the metrics read that one, and a record without
    it (an earlier runs.json) is read from its rows."""
    from ansible_collections.gpufabric.rdma.plugins.module_utils.render import figures

    (run,) = validation.judge(runs)
    assert run["figure"] == {"size": 4294967296, "busbw": 345.19}
    carried = dict(run, figure={"size": 4294967296, "busbw": 123.0})   # not what the rows say: proves who is read
    assert validation.summary_rows([carried])[0][3:5] == [4294967296, 123.0]
    assert validation.baseline_notes([carried], PLATFORM)["runs"][0]["baseline"].startswith("123 GB/s")
    text = figures.text("nccl_tests", [carried], "c", 1.0, None)
    assert 'gpufabric_nccl_tests_largest_size_busbw_gigabytes_per_second{' in text
    assert [line for line in text.splitlines() if line.startswith("gpufabric_nccl_tests_largest_size_busbw")
            ][0].endswith(" 123")
    bare = dict(run)
    del bare["figure"]
    assert validation.summary_rows([bare])[0][3:5] == [4294967296, 345.19]
