"""The nccl_tests, burnin and perftest roles for real (ansible-playbook, local connection) with stub
binaries (tests/stubs/misbehave.py) that print a real capture, print an aborted run, or are never run:

- a threshold that is not a number stops the play before anything is built or run (the stub log is empty);
- a run that printed no result table gives a written report with that run FAILED and why, and the play
  fails naming it;
- a --check run runs nothing, prints what a real run would run, leaves the last real run's reports (summary, runs,
  picture, figures) as they were, and passes: a plan is not a failure (issue 52; it used to overwrite a PASS report
  with "FAIL: 0 of 2 runs passed" and fail).
"""

import json
import os
import subprocess
import sys

import pytest

from moduletest import calls, stub_bin
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "nccl_tests")
GOOD = os.path.join(FIXTURES, "mpirun_tag_output_h100.txt")
ABORTED = os.path.join(FIXTURES, "aborted_before_table_nccltests219.txt")

PLAY = """
- hosts: all
  gather_facts: false
  roles:
    - role: gpufabric.rdma.{role}
"""


def _play(tmp_path, role, variables, hosts=("h1",), check=False, env=None):
    inventory = {"all": {"hosts": dict((h, {"ansible_connection": "local",
                                            "ansible_python_interpreter": sys.executable}) for h in hosts)}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAY.format(role=role))
    environ = dict(os.environ, ANSIBLE_NOCOLOR="1", STUB_LOG=str(tmp_path / "calls.jsonl"), **(env or {}))
    argv = ["ansible-playbook", "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml"),
            "-e", json.dumps(variables)] + (["--check"] if check else [])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=environ, cwd=str(tmp_path))
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def _nccl_tests_vars(tmp_path, **extra):
    bindir = stub_bin(tmp_path / "nccl-tests", {"all_reduce_perf": "misbehave"})
    variables = {"nccl_tests_build": False, "nccl_tests_bin_dir": bindir, "nccl_tests_gpus_per_node": 1,
                 "nccl_tests_report_dir": str(tmp_path / "report"), "nccl_tests_timeout": 60,
                 "nccl_tests_runs": [{"name": "all_reduce_perf", "args": "-b 1K -e 64M -f 8", "mode": "single"}]}
    variables.update(extra)
    return variables


@pytest.mark.parametrize("threshold, message", [
    # A typed option: ansible-core's own role argument check refuses it, naming the option.
    ({"nccl_tests_min_busbw": "fast"}, "argument 'nccl_tests_min_busbw' is of type str and we were unable to convert to float"),
    ({"nccl_tests_min_busbw": -1}, "nccl_tests_min_busbw must be a non-negative number or unset, got -1"),
    ({"nccl_tests_min_busbw_by_size": {"1G": 300}}, "nccl_tests_min_busbw_by_size: size '1G' is not a whole number of bytes"),
    ({"nccl_tests_max_wrong": -1}, "nccl_tests_max_wrong must be a whole number of wrong values allowed (0 or more), got -1"),
    ({"nccl_tests_max_wrong": "some"}, "argument 'nccl_tests_max_wrong' is of type str"),
])
def test_nccl_tests_refuses_bad_thresholds_before_running(tmp_path, threshold, message):
    rc, out = _play(tmp_path, "nccl_tests", _nccl_tests_vars(tmp_path, **threshold),
                    env={"STUB_ALL_REDUCE_PERF_MODE": "file:" + GOOD})
    assert rc != 0 and message in out, out[-3000:]
    assert calls(tmp_path / "calls.jsonl") == []
    assert not (tmp_path / "report").exists()


def test_nccl_tests_passes_a_good_run(tmp_path):
    rc, out = _play(tmp_path, "nccl_tests", _nccl_tests_vars(tmp_path, nccl_tests_min_busbw="0"),
                    env={"STUB_ALL_REDUCE_PERF_MODE": "file:" + GOOD})
    assert rc == 0, out[-3000:]
    (run,) = json.loads((tmp_path / "report" / "runs.json").read_text())
    assert run["passed"] is True and len(run["result"]["rows"]) == 6


def test_nccl_tests_reports_a_run_without_a_table(tmp_path):
    rc, out = _play(tmp_path, "nccl_tests", _nccl_tests_vars(tmp_path), env={"STUB_ALL_REDUCE_PERF_MODE": "file:" + ABORTED})
    assert rc != 0
    assert ("nccl-tests failed: h1: all_reduce_perf -g 1: no result table: fengyun: Test NCCL failure "
            "common.cu:959") in out, out[-3000:]
    (run,) = json.loads((tmp_path / "report" / "runs.json").read_text())
    assert run["passed"] is False and run["result"]["table"] is False and len(run["result"]["ranks"]) == 4
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "**FAIL**: 0 of 1 run(s) passed." in summary and "Test NCCL failure common.cu:959" in summary


def _last_real_run(directory, names):
    """A report directory as a real run left it: each file with content of its own -> {name: content}."""
    directory.mkdir(parents=True, exist_ok=True)
    files = dict((name, "last real run's %s: **PASS**\n" % name) for name in names)
    for name, content in files.items():
        (directory / name).write_text(content)
    return files


def _unchanged(directory, files):
    return dict((p.name, p.read_text()) for p in directory.iterdir()) == files


def test_nccl_tests_check_mode_runs_nothing_and_keeps_the_last_report(tmp_path):
    kept = _last_real_run(tmp_path / "report", ["runs.json", "summary.md", "busbw.svg", "gpufabric_nccl_tests.prom"])
    rc, out = _play(tmp_path, "nccl_tests", _nccl_tests_vars(tmp_path), check=True,
                    env={"STUB_ALL_REDUCE_PERF_MODE": "file:" + GOOD})
    assert rc == 0 and calls(tmp_path / "calls.jsonl") == [], out[-3000:]
    assert _unchanged(tmp_path / "report", kept)
    assert ("check mode measures nothing: the reports in %s (runs.json, summary.md, busbw.svg, gpufabric_nccl_tests.prom) "
            "are left as the last real run wrote them; a real run would:" % (tmp_path / "report")) in out, out[-3000:]
    assert '"run h1: all_reduce_perf -g 1"' in out, out[-3000:]
    assert "FAIL" not in out and "nccl-tests failed" not in out


def test_perftest_check_mode_runs_nothing_and_keeps_the_last_report(tmp_path):
    kept = _last_real_run(tmp_path / "perftest", ["perftest.json", "perftest.md", "gpufabric_perftest.prom"])
    rc, out = _play(tmp_path, "perftest", {"perftest_install": False, "perftest_report_dir": str(tmp_path / "perftest")},
                    hosts=("h1", "h2"), check=True)
    assert rc == 0, out[-3000:]
    assert _unchanged(tmp_path / "perftest", kept)
    assert '"measure ib_write_bw from h2 to h1"' in out, out[-3000:]
    assert "perftest failed" not in out


def _burnin_vars(tmp_path, **extra):
    bindir = stub_bin(tmp_path / "bin", {"mpirun": "misbehave"})
    variables = {"burnin_mpirun": os.path.join(bindir, "mpirun"), "burnin_mpirun_args": [], "burnin_gpus_per_node": 1,
                 "burnin_report_dir": str(tmp_path / "burnin"), "burnin_timeout": 60}
    variables.update(extra)
    return variables


def test_burnin_refuses_a_bad_floor_before_running(tmp_path):
    rc, out = _play(tmp_path, "burnin", _burnin_vars(tmp_path, burnin_min_busbw="high"), hosts=("h1", "h2"),
                    env={"STUB_MPIRUN_MODE": "file:" + GOOD})
    assert rc != 0 and "argument 'burnin_min_busbw' is of type str and we were unable to convert to float" in out, out[-3000:]
    assert calls(tmp_path / "calls.jsonl") == []


def test_burnin_check_mode_runs_nothing_and_keeps_the_last_report(tmp_path):
    kept = _last_real_run(tmp_path / "burnin", ["burnin.json", "burnin.md", "burnin-heatmap.svg", "gpufabric_burnin.prom"])
    rc, out = _play(tmp_path, "burnin", _burnin_vars(tmp_path), hosts=("h1", "h2"), check=True,
                    env={"STUB_MPIRUN_MODE": "file:" + GOOD})
    assert rc == 0 and calls(tmp_path / "calls.jsonl") == [], out[-3000:]
    assert _unchanged(tmp_path / "burnin", kept)
    assert '"run nccl-tests across h1 and h2 (round 1)"' in out, out[-3000:]
    # a pair that did not run is neither a bad link h1-h2 nor a slow host, and a plan is no failure
    assert "bad link h1-h2" not in out and "slow host h" not in out and "burn-in not run" not in out


def test_perftest_refuses_bad_limits_before_running(tmp_path):
    rc, out = _play(tmp_path, "perftest", {"perftest_install": False, "perftest_max_lat_us": "low",
                                           "perftest_report_dir": str(tmp_path / "perftest")}, hosts=("h1", "h2"))
    assert rc != 0 and "argument 'perftest_max_lat_us' is of type str and we were unable to convert to float" in out, out[-3000:]
