"""burnin.py's report side (moved down from the burnin filters): the pairwise report's failures, heat map and
whole report, and the search rounds' registered runs read as figures - on the real 8x H200 all_reduce capture."""
import xml.dom.minidom

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests

LARGEST_BUSBW = 364.98  # all_reduce_g8_h200x8.txt: out-of-place busbw at 4294967296 bytes


@pytest.fixture
def capture(read_fixture):
    return read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")


@pytest.fixture
def four_hosts(capture, scaled):
    """n1..n4, every pair once; n3 slow (half), n1-n2 a bad link (0.6), the last pair exited 1."""
    pairs = []
    for number, round_pairs in enumerate(burnin.rounds(["n1", "n2", "n3", "n4"])):
        for a, b in round_pairs:
            factor = 0.5 if "n3" in (a, b) else (0.6 if {a, b} == {"n1", "n2"} else 1.0)
            pairs.append({"a": a, "b": b, "round": number, "rc": 0, "output": scaled(capture, factor)})
    return pairs


def test_failures_name_slow_hosts_bad_links_low_pairs_and_failed_runs(capture, scaled):
    results = burnin.collect([
        {"a": "n1", "b": "n2", "round": 0, "rc": 0, "output": capture},
        {"a": "n1", "b": "n3", "round": 1, "rc": 0, "output": scaled(capture, 0.5)},
        {"a": "n2", "b": "n3", "round": 2, "rc": 1, "output": capture, "stderr": "rank 1 exited on signal 9"},
    ], nccl_tests.parse)
    ranked = burnin.rank(results, 0.1)
    found = burnin.failures(results, ranked, 300.0, "300")
    assert (ranked["slow_hosts"], ranked["bad_links"]) == (["n3"], ["n2-n3", "n1-n3"])
    # n2-n3 failed and is named once, as a bad link; n1-n3 (182.49 GB/s) is below the floor as the user wrote it.
    assert found == ["slow host n3", "bad link n2-n3", "bad link n1-n3", "pair n1-n3 below 300 GB/s"]
    assert burnin.failures(results, ranked, 300.0) == found[:3] + ["pair n1-n3 below 300.0 GB/s"]
    # A failed pair not already named as a bad link is named with why it failed.
    assert burnin.failures(results, dict(ranked, slow_hosts=[], bad_links=[]), None) == [
        "pair n2-n3 failed: exited 1: rank 1 exited on signal 9"]


def test_heatmap_inputs_are_sorted_hosts_every_pair_and_the_bad_links(four_hosts):
    results = burnin.collect(four_hosts, nccl_tests.parse)
    ranked = burnin.rank(results, 0.1)
    assert burnin.heatmap(results, ranked) == (
        ["n1", "n2", "n3", "n4"],
        {("n1", "n4"): LARGEST_BUSBW, ("n2", "n3"): 182.49, ("n1", "n3"): 182.49, ("n4", "n2"): LARGEST_BUSBW,
         ("n1", "n2"): 218.99, ("n3", "n4"): 182.49},
        [("n1", "n2")])  # the slow host's pairs are its fault, not their links'


def test_report_on_real_pairs(four_hosts):
    four_hosts[-1] = dict(four_hosts[-1], rc=1, output="n4: Test NCCL failure common.cu:1030 'unhandled system error'")
    report = burnin.report(four_hosts, nccl_tests.parse, 0.1, 200.0, "Pairs", shown_minimum=200)
    assert set(report) == {"results", "rank", "failures", "physical", "markdown", "svg"} and report["physical"] == {}
    assert report["failures"] == ["slow host n3", "bad link n3-n4", "bad link n1-n2", "pair n2-n3 below 200 GB/s",
                                  "pair n1-n3 below 200 GB/s"]
    assert [(r["a"], r["b"], r["busbw"], r["error"]) for r in report["results"]] == [
        ("n1", "n4", LARGEST_BUSBW, None), ("n2", "n3", 182.49, None), ("n1", "n3", 182.49, None),
        ("n4", "n2", LARGEST_BUSBW, None), ("n1", "n2", 218.99, None), ("n3", "n4", None, "exited 1")]
    assert report["results"][0]["largest_size"] == 4294967296
    assert report["markdown"].startswith("# Burn-in\n\nFAILED: 4 hosts, 6 pairs in 3 rounds; cluster median busbw 219.0 GB/s.")
    assert "- below 200.0 GB/s: n2-n3, n1-n3" in report["markdown"]
    svg = report["svg"]
    assert svg.startswith("<svg") and ">Pairs<" in svg and svg.count("<title>") == 12
    xml.dom.minidom.parseString(svg)


def test_report_draws_no_map_without_two_hosts_and_checks_the_title_when_it_draws(capture):
    empty = burnin.report([], nccl_tests.parse, title="two\nlines")
    assert (empty["results"], empty["failures"], empty["svg"]) == ([], [], None)
    one = burnin.report([{"a": "a", "b": "b", "round": 0, "rc": 0, "output": capture}], nccl_tests.parse)
    assert one["failures"] == [] and one["results"][0]["busbw"] == LARGEST_BUSBW
    assert one["svg"].count("<title>") == 2  # a-b and b-a
    with pytest.raises(ValueError, match="title contains a newline"):
        burnin.report([{"a": "a", "b": "b", "round": 0, "rc": 0, "output": capture}], nccl_tests.parse, title="two\nlines")


@pytest.mark.parametrize("value, run", [
    (None, {"not_run": "no run was recorded for it"}),
    ("text", {"rc": 0, "output": "text", "not_run": None}),
    ({"skipped": True, "msg": "Conditional result was False"}, {"not_run": "Conditional result was False"}),
    ({"skipped": True}, {"not_run": "skipped"}),
    ({"rc": 2, "stdout": "out", "stderr": "err"}, {"rc": 2, "output": "out\nerr", "stderr": "err", "not_run": None}),
    ({"rc": 1, "msg": "non-zero return code"}, {"rc": 1, "output": "", "stderr": "non-zero return code", "not_run": None}),
])
def test_run_record_reads_what_the_play_registered(value, run):
    """The one adapter from a registered result (judge/nccl_run.from_registered), as validation reads it too."""
    got = burnin.run_record(value)
    assert dict((key, got[key]) for key in run) == run


def test_run_record_refuses_what_is_not_a_run():
    with pytest.raises(ValueError, match="a run must be the registered result of the group's command, got int"):
        burnin.run_record(5)


def test_search_runs_judge_each_group_as_a_pair_is_judged(capture):
    runs = {0: {"rc": 0, "stdout": capture}, "1": capture, 2: {"rc": 1, "stdout": capture, "stderr": "killed\nsignal 9"},
            3: None, 4: {"rc": 0, "stdout": capture.replace("364.98", "nan", 1)}}
    figures, errors = burnin.split_figures(burnin.search_runs(runs, nccl_tests.parse))
    assert figures == {0: LARGEST_BUSBW, 1: LARGEST_BUSBW, 2: None, 3: None, 4: None}
    assert errors == {2: "exited 1: signal 9", 3: "not run: no run was recorded for it",
                      4: "busbw is nan or inf at 1 size(s): a failed measurement"}


def test_search_runs_name_the_test_whose_run_is_not_a_run():
    with pytest.raises(burnin.UnreadableRun, match="^test 7: a run must be the registered result"):
        burnin.search_runs({7: ["not", "a", "run"]}, nccl_tests.parse)
    assert issubclass(burnin.UnreadableRun, ValueError)


def test_judge_run_keeps_one_record_shape_for_both_strategies(capture):
    good = burnin.judge_run({"rc": 0, "output": capture}, nccl_tests.parse)
    assert good == {"rc": 0, "ranks": 8, "nccl_tests_passed": True, "busbw": LARGEST_BUSBW, "peak_busbw": 365.37,
                    "largest_size": 4294967296, "error": None}
    exited = burnin.judge_run({"rc": 1, "output": capture, "stderr": "signal 9"}, nccl_tests.parse)
    assert (exited["rc"], exited["ranks"], exited["nccl_tests_passed"], exited["busbw"]) == (1, 8, True, None)
    assert exited["error"] == "exited 1: signal 9"
    wrong = burnin.judge_run({"rc": 0, "output": capture.replace("Out of bounds values : 0 OK", "Out of bounds values : 3 FAILED")},
                             nccl_tests.parse)
    assert wrong["nccl_tests_passed"] is False and wrong["busbw"] is None and "wrong results" in wrong["error"]
    skipped = burnin.judge_run({"not_run": "check mode"}, nccl_tests.parse)
    assert set(skipped) == set(good) and skipped["error"] == "not run: check mode"


def test_the_cables_behind_a_slow_host_and_a_bad_link_from_the_fabric_map(capture, scaled, read_fixture):
    """Issue 39: with ibnetdiscover's map (the real PSMN X5 fabric and its GUID -> host map) the report names the
    switch port each slow host and each host of a bad link is cabled to; a host the map does not know is left out."""
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.ibnetdiscover import (
        parse_ibnetdiscover, parse_node_name_map)
    from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.cabling import observed_attachment
    fabric = parse_ibnetdiscover(read_fixture("ibnetdiscover", "x5_psmn_qdr_hpc_toolset.txt"),
                                 parse_node_name_map(read_fixture("ibnetdiscover", "x5_psmn_node_name_map.txt")))
    attachment = observed_attachment(ibnetdiscover=fabric)
    hosts = ["r422node1", "r422node2", "r422node5", "nowhere"]
    pairs = []
    for number, round_pairs in enumerate(burnin.rounds(hosts)):
        for a, b in round_pairs:
            factor = 0.5 if "nowhere" in (a, b) else (0.6 if {a, b} == {"r422node1", "r422node2"} else 1.0)
            pairs.append({"a": a, "b": b, "round": number, "rc": 0, "output": scaled(capture, factor)})
    report = burnin.report(pairs, nccl_tests.parse, 0.1, attachment=attachment)
    expected = dict((host, ["%s -> %s port %s" % (nic, where["leaf"], where["port"])
                            for nic, where in sorted(attachment[host].items())])
                    for host in ("r422node1", "r422node2"))
    assert report["rank"]["slow_hosts"] == ["nowhere"] and report["rank"]["bad_links"] == ["r422node1-r422node2"]
    assert report["physical"] == expected   # the slow host is not on the map: left out, never guessed
    assert all(len(lines) == 1 and " port " in lines[0] for lines in expected.values())
    assert "## The cables behind them (the fabric map)\n\n- r422node1: 0x003048c749820000 -> ib-0008f10500200b50 port 28" in report["markdown"]
