"""A burn-in that could not run is "not run", with the launcher's own message, and names no host and no link.

The capture is real: Debian 12's Open MPI 4.1.4 `mpirun -np 2` on an nccl-tests path that does not exist (exit 132,
its message on stderr between rules of dashes, "2 total processes failed to start" on stdout), taken in the
prepared Molecule image (tests/unit/fixtures/README.md)."""

import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search_report
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search, burnin_search_record
from paths import fixture_path

LAUNCH = fixture_path("nccl_tests", "launch")
CAPTURE = fixture_path("nccl_tests", "all_reduce_g8_h200x8.txt")
MESSAGE = ("exited 132 before nccl-tests started: mpirun was unable to launch the specified application as it could "
           "not access; 2 total processes failed to start")


def _missing():
    with open(os.path.join(LAUNCH, "mpirun_executable_missing_ompi414.stdout")) as out, \
            open(os.path.join(LAUNCH, "mpirun_executable_missing_ompi414.stderr")) as err:
        return {"rc": 132, "output": out.read(), "stderr": err.read()}


def _good():
    with open(CAPTURE) as handle:
        return {"rc": 0, "output": handle.read()}


def test_the_launcher_says_why_a_run_never_started():
    run = _missing()
    assert nccl_tests.launch_failure(run["rc"], run["output"], run["stderr"]) == MESSAGE
    # the shell's 127 and Ansible's command module for a missing binary (rc 2, its msg as stderr)
    assert nccl_tests.launch_failure(127, "", "sh: 1: all_reduce_perf: not found") == \
        "exited 127 before nccl-tests started: sh: 1: all_reduce_perf: not found"
    assert "No such file or directory" in nccl_tests.launch_failure(
        2, "", "[Errno 2] No such file or directory: b'/opt/nccl-tests/build/all_reduce_perf'")


def test_a_run_that_started_is_judged_as_a_run_not_as_not_run():
    good = _good()
    assert nccl_tests.launch_failure(0, good["output"]) is None
    # nccl-tests printed its header and table, then mpirun reported a rank killed: a failed run, not "not run"
    assert nccl_tests.launch_failure(1, good["output"], "mpirun noticed that process rank 1 exited on signal 9") is None


def test_pairwise_names_no_host_and_no_link_when_nothing_could_start():
    pairs = [dict(_missing(), a="node1", b="node2", round=1)]
    report = burnin.report(pairs, nccl_tests.parse)
    assert report["rank"]["slow_hosts"] == [] and report["rank"]["bad_links"] == []
    assert report["failures"] == ["not run (1 of 1 runs): " + MESSAGE]
    assert report["markdown"].splitlines()[2].startswith("NOT RUN: 2 hosts, 1 pairs")
    assert "slow host" not in report["markdown"] and "bad link" not in report["markdown"]


def test_pairwise_with_one_pair_not_run_still_judges_the_others():
    pairs = [dict(_good(), a="n1", b="n2", round=1), dict(_good(), a="n3", b="n4", round=1),
             dict(_missing(), a="n1", b="n3", round=2), dict(_good(), a="n2", b="n4", round=2)]
    report = burnin.report(pairs, nccl_tests.parse)
    assert report["rank"]["slow_hosts"] == [] and report["rank"]["bad_links"] == []
    assert report["failures"] == ["not run (1 of 4 runs): " + MESSAGE]
    assert report["markdown"].splitlines()[2].startswith("FAILED: 4 hosts, 4 pairs")


def test_the_search_stops_at_a_group_that_could_not_start_and_blames_nobody():
    state = burnin_search.start(["n1", "n2", "n3", "n4"])
    tests = burnin_search.next_round(state)
    judged = dict((t["id"], burnin.judge_run(_missing(), nccl_tests.parse)) for t in tests)
    figures, errors = burnin.split_figures(judged)
    state = burnin_search_record.record(state, figures, errors, runs=judged)
    assert burnin_search.next_round(state) == []
    report = burnin_search_report.report(state)
    assert report["summary"]["slow_hosts"] == [] and report["summary"]["bad_links"] == []
    assert report["failures"] == ["not run (%d of %d runs): %s" % (len(tests), len(tests), MESSAGE)]
    assert report["markdown"].rstrip().splitlines()[-1].startswith("NOT RUN: 4 hosts")


def test_validation_and_tuning_say_not_run_with_the_launchers_message():
    from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation
    from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import tuning
    run = _missing()
    registered = {"results": [{"item": {"name": "all_reduce_perf", "label": "mpirun across the lab"}, "rc": 132,
                               "stdout": run["output"], "stderr": run["stderr"], "cmd": ["mpirun", "-np", "2"]}]}
    (judged,) = validation.judge(validation.collect_runs({}, registered, hosts=["node1", "node2"]), min_busbw=350)
    assert judged["not_run"] == MESSAGE and judged["passed"] is False
    assert any(MESSAGE in failure for failure in judged["failures"])
    assert "the command exited 132" not in judged["failures"]
    assert tuning.run_failure({"rc": 132, "stdout": run["output"], "stderr": run["stderr"]}) == "not run: " + MESSAGE
