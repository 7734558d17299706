"""The search's report, plan/burnin_search_report.py (moved down from the burnin_search filter): a search over
six hosts whose groups print the real 8x H200 all_reduce capture (40 % slower with n4 in the group), judged by
burnin.search_runs."""
import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search_report as sr
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search as s
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search_record as rec

HOSTS = ["n%d" % i for i in range(1, 7)]
REFERENCE = 364.98  # all_reduce_g8_h200x8.txt: out-of-place busbw at 4294967296 bytes


def search(capture, slow=(), max_rounds=20, expected=None):
    state = s.start(HOSTS, expected=expected)
    for _round in range(max_rounds):
        tests = s.next_round(state)
        if state["done"] or not tests:
            break
        runs = dict((test["id"], {"rc": 0, "stdout": capture[0.6 if set(slow) & set(test["hosts"]) else 1.0]})
                    for test in tests)
        judged = burnin.search_runs(runs, nccl_tests.parse)
        figures, errors = burnin.split_figures(judged)
        rec.record(state, figures, errors, runs=judged)
    return state


@pytest.fixture
def capture(read_fixture, scaled):
    """The real capture, and how a group with a slow host prints it (40 % slower)."""
    text = read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    return {1.0: text, 0.6: scaled(text, 0.6)}


def test_failures_of_a_finished_search(capture):
    state = search(capture, slow=["n4"])
    found = sr.summary(state)
    assert state["done"] and found["reference"] == REFERENCE
    assert sr.failures(state, found) == ["slow host n4"]
    assert sr.failures(state, found, 400.0, "400") == [
        "slow host n4", "the cluster's reference busbw 365.0 GB/s is below 400 GB/s"]
    assert sr.failures(state, found, 400.0)[-1] == "the cluster's reference busbw 365.0 GB/s is below 400.0 GB/s"
    # Bad links and unresolved groups are named as they are found.
    assert sr.failures(state, dict(found, slow_hosts=[], bad_links=[["n1", "n2"]], unresolved=[["n3", "n5"]])) == [
        "bad link n1-n2", "unresolved (short as a whole, every part passed): n3, n5"]


def test_a_search_stopped_by_the_round_limit_fails_saying_so(capture):
    state = search(capture, max_rounds=1)
    assert not state["done"]
    assert sr.failures(state, sr.summary(state)) == [
        "the search stopped after 1 round(s) (burnin_search_max_rounds) before every host was cleared"]


def test_markdown_shows_the_tree_and_the_verdict(capture):
    state = search(capture, slow=["n4"])
    found = sr.summary(state)
    text = sr.markdown(state, found, sr.failures(state, found))
    lines = text.splitlines()
    assert lines[:5] == ["# Burn-in (search strategy)", "",
                         "6 hosts, 7 group runs in 4 rounds; reference busbw 365.0 GB/s (the median of the first "
                         "round's groups).", "", "## Search tree"]
    # a slow host is named once a second known-good partner confirms it
    assert "  round 2, probe n2..n4 (2): n4 against a known-good host; 219.0, below 310.2" in lines
    assert "    round 3, probe n1..n4 (2): n4 against another known-good host (confirming); 219.0, below 310.2" in lines
    assert lines[-1] == "FAILED: 6 hosts, 7 group runs in 4 rounds - slow host n4"
    assert text.endswith("\n")
    healthy = search(capture)
    assert sr.markdown(healthy, sr.summary(healthy), []).splitlines()[-1].startswith("PASSED: 6 hosts")


def test_report_is_shaped_as_the_pairwise_report(capture):
    state = search(capture, slow=["n4"], expected=REFERENCE)
    report = sr.report(state, 300.0, "300")
    assert set(report) == {"summary", "failures", "markdown", "svg", "rank", "results"}
    # each group run keeps the record a pairwise run keeps (burnin.judge_run), with its hosts and round
    first = report["results"][0]
    assert set(first) >= {"rc", "ranks", "nccl_tests_passed", "busbw", "peak_busbw", "largest_size", "error", "hosts", "round"}
    assert (first["rc"], first["ranks"], first["nccl_tests_passed"], first["round"]) == (0, 8, True, 1)
    assert len(report["results"]) == report["summary"]["runs"]
    assert report["failures"] == ["slow host n4"] and report["svg"] is None
    assert report["rank"] == {"cluster_median_busbw": REFERENCE}
    assert "reference busbw 365.0 GB/s (the baseline)." in report["markdown"]
    assert report["summary"]["slow_hosts"] == ["n4"]
