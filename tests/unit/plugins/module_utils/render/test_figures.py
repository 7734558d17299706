"""Validation figures as node_exporter textfile metrics (figures.py), from the reports the roles wrote in the lab
(tests/unit/fixtures/figures/: the real 8x H200 all_reduce capture replayed on two nodes) and from the real
perftest, tuning and DDP captures judged by the roles' own filters; read back by promtool's parser."""

import json
import math
import os
import re
import subprocess

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import baselines, burnin, validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ddp
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests, perftest
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import tuning
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import figures
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import perftest_runs
from paths import ROOT

PROMTOOL = os.path.join(ROOT, "build", "tools", "bin", "promtool")
WHEN = 1795000000
_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def fixture(*parts):
    with open(os.path.join(ROOT, "tests", "unit", "fixtures", *parts), encoding="utf-8") as handle:
        return handle.read()


def samples(text):
    """{(name, frozenset(labels)): value} of exposition text; every sample line must parse and be there once."""
    found = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = _LINE.match(line)
        assert match, line
        key = (match.group(1), frozenset(_PAIR.findall(match.group(2) or "")))
        assert key not in found, line
        found[key] = float(match.group(3))
    return found


def series(found, name, **labels):
    """The samples of one metric whose labels include these: {frozenset(labels): value}."""
    want = set((k, str(v)) for k, v in labels.items())
    return dict((k[1], v) for k, v in found.items() if k[0] == name and want <= k[1])


def one(found, name, **labels):
    hits = series(found, name, **labels)
    assert len(hits) == 1, (name, labels, hits)
    return list(hits.values())[0]


def promtool_check(text):
    """Prometheus' own exposition parser reads the text; its linter's only notes are the units we chose: the
    figures are written in the units their tools print and people compare (GB/s, Gb/s, microseconds)."""
    if not os.access(PROMTOOL, os.X_OK):
        pytest.fail("promtool missing: run `make prometheus-tools` (tests/promtool/fetch-tools.sh)")
    result = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60, check=False)
    notes = [line for line in (result.stdout + result.stderr).decode().splitlines() if line.strip()]
    assert result.returncode in (0, 3), notes
    assert [n for n in notes if "use base unit" not in n] == []


@pytest.fixture
def lab_runs():
    return json.loads(fixture("figures", "nccl_tests_runs_lab.json"))


def judged_capture(text, **run):
    record = {"label": "n1: all_reduce_perf -g 8", "host": "n1", "mode": "single", "command": "all_reduce_perf -g 8",
              "rc": 0, "output": text}
    record.update(run)
    return validation.judge([record])


def test_the_h200x8_capture_on_two_lab_nodes_reads_as_the_report_does(lab_runs):
    text = figures.text("nccl_tests", lab_runs, "lab", WHEN)
    promtool_check(text)
    found = samples(text)
    busbw = "gpufabric_nccl_tests_busbw_gigabytes_per_second"
    at_4g = dict(cluster="lab", collective="all_reduce", size_bytes=4294967296)
    assert one(found, busbw, nodes="gpufabric-node1", ranks=8, placement="in_place", **at_4g) == 365.37
    assert one(found, busbw, nodes="gpufabric-node1", ranks=8, placement="out_of_place", **at_4g) == 364.98
    # the mpirun run across both nodes: one node set, written as a Slurm hostlist
    assert one(found, busbw, nodes="gpufabric-node[1-2]", ranks=16, placement="in_place", **at_4g) == 365.37
    assert one(found, "gpufabric_nccl_tests_algbw_gigabytes_per_second", nodes="gpufabric-node[1-2]",
               placement="out_of_place", **at_4g) == 208.56
    # every row of every run, both placements: 3 runs x 30 sizes x 2
    assert len(series(found, busbw)) == 180
    assert one(found, busbw, nodes="gpufabric-node2", placement="out_of_place", size_bytes=8) == 0
    # the headline figure is the one reports and baselines read
    size, figure = nccl_tests.at_largest_size(lab_runs[2]["result"])
    assert one(found, "gpufabric_nccl_tests_largest_size_busbw_gigabytes_per_second", nodes="gpufabric-node[1-2]") \
        == figure == 364.98
    assert series(found, "gpufabric_nccl_tests_largest_size_busbw_gigabytes_per_second",
                  nodes="gpufabric-node[1-2]", size_bytes=size)
    assert series(found, "gpufabric_nccl_tests_run_passed") == {
        frozenset({("cluster", "lab"), ("mode", "single"), ("nodes", "gpufabric-node1"),
                   ("run", "gpufabric-node1: all_reduce_perf -g 8")}): 1,
        frozenset({("cluster", "lab"), ("mode", "single"), ("nodes", "gpufabric-node2"),
                   ("run", "gpufabric-node2: all_reduce_perf -g 8")}): 1,
        frozenset({("cluster", "lab"), ("mode", "mpirun"), ("nodes", "gpufabric-node[1-2]"),
                   ("run", "mpirun across the lab")}): 1}
    assert one(found, "gpufabric_nccl_tests_run_timestamp_seconds") == WHEN
    assert series(found, "gpufabric_nccl_tests_baseline_busbw_gigabytes_per_second") == {}  # the lab knows no GPU


def test_a_run_set_against_its_baseline_writes_both_figures_with_the_same_labels(lab_runs):
    entry = baselines.lookup("nccl_busbw", "NVIDIA H200", 8, "nvlink", collective="all_reduce", size=4 << 30)
    run = dict(lab_runs[0], baseline_busbw=entry["value"])
    found = samples(figures.text("nccl_tests", [run], "lab", WHEN))
    labels = dict(collective="all_reduce", nodes="gpufabric-node1", ranks=8, size_bytes=4294967296)
    assert one(found, "gpufabric_nccl_tests_baseline_busbw_gigabytes_per_second", **labels) == 365.0
    assert one(found, "gpufabric_nccl_tests_largest_size_busbw_gigabytes_per_second", **labels) == 364.98


def test_a_failed_measurement_is_left_out_not_written_as_zero():
    capture = fixture("nccl_tests", "all_reduce_g8_h200x8.txt").replace(
        "20571.5  208.78  365.37", "20571.5     nan     nan")
    (run,) = judged_capture(capture)
    assert run["passed"] is False and run["result"]["failed_sizes"] == [4294967296]
    found = samples(figures.text("nccl_tests", [run], "c", WHEN))
    busbw = "gpufabric_nccl_tests_busbw_gigabytes_per_second"
    assert series(found, busbw, size_bytes=4294967296, placement="in_place") == {}
    assert one(found, busbw, size_bytes=4294967296, placement="out_of_place") == 364.98
    assert one(found, busbw, size_bytes=2147483648, placement="in_place") == 362.73
    assert one(found, "gpufabric_nccl_tests_run_passed") == 0
    assert "nan" not in figures.text("nccl_tests", [run], "c", WHEN).lower()


def test_a_run_that_did_not_run_says_so_and_writes_no_figure():
    (run,) = judged_capture("", mode="mpirun", host="gpu-a01,gpu-a02", label="mpirun all_reduce_perf x 2 nodes", rc=None,
                            not_run="skipped in check mode")
    text = figures.text("nccl_tests", [run], "train-a", WHEN)
    found = samples(text)
    assert found == {
        ("gpufabric_nccl_tests_run_passed", frozenset({("cluster", "train-a"), ("mode", "mpirun"), ("nodes", "gpu-a[01-02]"),
                                                       ("run", "mpirun all_reduce_perf x 2 nodes")})): 0,
        ("gpufabric_nccl_tests_run_timestamp_seconds", frozenset({("cluster", "train-a")})): WHEN}
    promtool_check(text)


def test_the_same_test_twice_in_one_report_writes_the_slower(scaled):
    capture = fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    runs = judged_capture(capture) + judged_capture(scaled(capture, 0.5))
    found = samples(figures.text("nccl_tests", runs, "c", WHEN))
    assert one(found, "gpufabric_nccl_tests_largest_size_busbw_gigabytes_per_second") == 182.49  # 364.98 x 0.5


def judged_perftest_runs():
    return perftest_runs.judge_perftest([
        {"test": "ib_write_bw", "client": "n2", "server": "n1", "client_rc": 0,
         "stdout": fixture("perftest", "write_bw_gbits_perftest-273.txt")},
        {"test": "ib_send_bw", "client": "n2", "server": "n1", "client_rc": 0,
         "stdout": fixture("perftest", "send_bw_mbsec_perftest-65.txt")},
        {"test": "ib_write_lat", "client": "n4", "server": "n3", "client_rc": 0,
         "stdout": fixture("perftest", "write_lat_constructed.txt")},
        {"test": "ib_write_bw", "client": "n6", "server": "n5", "client_rc": None, "not_run": "skipped in check mode"},
    ])


def test_perftest_bandwidth_and_latency_per_pair():
    judged = judged_perftest_runs()
    text = figures.text("perftest", judged, "c", WHEN)
    promtool_check(text)
    found = samples(text)
    bandwidth = "gpufabric_perftest_bandwidth_gigabits_per_second"
    pair = dict(client="n2", server="n1")
    assert one(found, bandwidth, test="ib_write_bw", device="ib0", size_bytes=8, stat="average", **pair) == 0.48
    # perftest printed MB/sec: Gb/s as the judge reads it (perftest.bw_gbps, the one owner of the unit)
    row = judged[1]["result"]["rows"][-1]
    assert row["unit"] == "MB/sec"
    assert one(found, bandwidth, test="ib_send_bw", size_bytes=row["bytes"], stat="average", **pair) \
        == round(perftest.bw_gbps(row), 6)
    latency = "gpufabric_perftest_latency_microseconds"
    lat = dict(client="n4", server="n3", test="ib_write_lat", device="mlx4_0", size_bytes=2)
    assert one(found, latency, stat="typical", **lat) == 1.79
    assert one(found, latency, stat="p99", **lat) == 1.88
    passed = series(found, "gpufabric_perftest_run_passed")
    assert passed[frozenset({("cluster", "c"), ("test", "ib_write_lat"), ("client", "n4"), ("server", "n3")})] == 1
    assert passed[frozenset({("cluster", "c"), ("test", "ib_write_bw"), ("client", "n6"), ("server", "n5")})] == 0
    assert series(found, bandwidth, client="n6") == {} and series(found, latency, client="n6") == {}


def test_the_pairwise_burnin_of_the_lab():
    report = json.loads(fixture("figures", "burnin_pairwise_lab.json"))
    text = figures.text("burnin", [report], "lab", WHEN)
    promtool_check(text)
    found = samples(text)
    assert one(found, "gpufabric_burnin_busbw_gigabytes_per_second", nodes="gpufabric-node[1-2]", kind="pair",
               ranks=16, size_bytes=4294967296) == 364.98
    assert one(found, "gpufabric_burnin_test_passed", nodes="gpufabric-node[1-2]") == 1
    assert series(found, "gpufabric_burnin_host_slow") == {
        frozenset({("cluster", "lab"), ("Hostname", "gpufabric-node1")}): 0,
        frozenset({("cluster", "lab"), ("Hostname", "gpufabric-node2")}): 0}
    assert one(found, "gpufabric_burnin_host_median_busbw_gigabytes_per_second", Hostname="gpufabric-node1") == 364.98
    assert one(found, "gpufabric_burnin_link_bad", nodes="gpufabric-node[1-2]") == 0
    assert one(found, "gpufabric_burnin_reference_busbw_gigabytes_per_second") == 364.98
    assert one(found, "gpufabric_burnin_run_passed") == 1


def test_the_search_burnin_of_the_lab_written_before_uplinks_were_searched():
    report = json.loads(fixture("figures", "burnin_search_lab.json"))
    assert "bad_uplinks" not in report["summary"]
    found = samples(figures.text("burnin", [report], "lab", WHEN))
    assert one(found, "gpufabric_burnin_busbw_gigabytes_per_second", kind="group", nodes="gpufabric-node[1-2]") == 364.98
    assert len(series(found, "gpufabric_burnin_host_slow")) == 2 and not any(series(found, "gpufabric_burnin_host_slow").values())
    assert series(found, "gpufabric_burnin_uplink_bad") == {}
    assert one(found, "gpufabric_burnin_run_passed") == 1


def test_a_burnin_that_names_a_slow_host_and_a_bad_link(scaled):
    capture = fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    pairs = []
    for number, round_pairs in enumerate(burnin.rounds(["n1", "n2", "n3", "n4"])):
        for a, b in round_pairs:
            factor = 0.5 if "n3" in (a, b) else (0.6 if {a, b} == {"n1", "n2"} else 1.0)
            pairs.append({"a": a, "b": b, "round": number, "rc": 0, "output": scaled(capture, factor)})
    report = burnin.report(pairs, nccl_tests.parse, 0.1)
    assert report["rank"]["slow_hosts"] == ["n3"] and report["rank"]["bad_links"] == ["n1-n2"]
    found = samples(figures.text("burnin", [report], "c", WHEN))
    assert one(found, "gpufabric_burnin_host_slow", Hostname="n3") == 1
    assert one(found, "gpufabric_burnin_host_slow", Hostname="n1") == 0
    assert one(found, "gpufabric_burnin_link_bad", nodes="n[1-2]") == 1
    assert one(found, "gpufabric_burnin_link_bad", nodes="n[1,4]") == 0
    assert one(found, "gpufabric_burnin_busbw_gigabytes_per_second", nodes="n[1-2]") == 218.99  # 364.98 x 0.6
    assert one(found, "gpufabric_burnin_run_passed") == 0


def test_a_burnin_that_did_not_run():
    report = burnin.report([{"a": "n1", "b": "n2", "round": 1, "not_run": "check mode"}], nccl_tests.parse)
    found = samples(figures.text("burnin", [report], "c", WHEN))
    assert one(found, "gpufabric_burnin_run_passed") == 0
    assert one(found, "gpufabric_burnin_test_passed", nodes="n[1-2]") == 0
    assert series(found, "gpufabric_burnin_busbw_gigabytes_per_second") == {}
    assert series(found, "gpufabric_burnin_reference_busbw_gigabytes_per_second") == {}


def test_a_search_names_uplinks_and_unresolved_groups():
    report = {"results": [], "failures": ["bad uplink of leaf leaf2"], "rank": {"cluster_median_busbw": None},
              "summary": {"slow_hosts": ["n3"], "bad_links": [["n1", "n2"]], "bad_uplinks": ["leaf2"],
                          "unresolved": [["n5", "n6", "n7"]]}}
    found = samples(figures.text("burnin", [report], "c", WHEN))
    assert one(found, "gpufabric_burnin_uplink_bad", leaf="leaf2") == 1
    assert one(found, "gpufabric_burnin_link_bad", nodes="n[1-2]") == 1
    assert one(found, "gpufabric_burnin_unresolved", nodes="n[5-7]") == 1
    assert one(found, "gpufabric_burnin_host_slow", Hostname="n3") == 1


def test_tuning_busbw_per_setting_and_what_was_chosen():
    report = tuning.report(json.loads(fixture("nccl_tune", "search_channels_h200x2.json")))
    text = figures.text("tune", [report], "c", WHEN, nodes=["gpu-a02", "gpu-a01"])
    promtool_check(text)
    found = samples(text)
    where = dict(nodes="gpu-a[01-02]", phase="search", collective="all_reduce")
    median_1g = report["table"]["all_reduce"]["default"][str(1 << 30)]
    assert one(found, "gpufabric_nccl_tune_busbw_gigabytes_per_second", setting="default", size_bytes=1 << 30,
               **where) == median_1g == 329.39
    assert one(found, "gpufabric_nccl_tune_best_busbw_gigabytes_per_second", setting="NCCL_MIN_NCHANNELS=32",
               **where) == 342.38
    assert one(found, "gpufabric_nccl_tune_gain_ratio", setting="NCCL_MIN_NCHANNELS=32", **where) \
        == round(report["decisions"]["all_reduce"]["NCCL_MIN_NCHANNELS=32"]["gain"], 6)
    assert one(found, "gpufabric_nccl_tune_setting_kept", setting="NCCL_MIN_NCHANNELS=32", **where) == 0
    assert one(found, "gpufabric_nccl_tune_setting_kept", setting="NCCL_MIN_NCHANNELS=32", phase="search",
               collective="all_gather") == 1
    assert series(found, "gpufabric_nccl_tune_setting_chosen") == {
        frozenset({("cluster", "c"), ("nodes", "gpu-a[01-02]"), ("setting", tuning.DEFAULT)}): 1}
    assert one(found, "gpufabric_nccl_tune_run_passed") == 1 and one(found, "gpufabric_nccl_tune_failed_runs") == 0
    assert one(found, "gpufabric_nccl_tune_run_timestamp_seconds", nodes="gpu-a[01-02]") == WHEN


def ddp_runs(*texts):
    return [{"world_size": size, "round": 1, "stdout": text, "rc": 0} for size, text in texts]


def test_ddp_images_per_second_and_scaling_efficiency():
    report = ddp.report(ddp_runs((1, fixture("ddp", "ddp_resnet50_g1_h200x2.txt")),
                                 (2, fixture("ddp", "ddp_resnet50_g2_h200x2.txt"))))
    text = figures.text("ddp", [report], "c", WHEN, nodes="gpu-a01")
    promtool_check(text)
    found = samples(text)
    assert one(found, "gpufabric_ddp_images_per_second", nodes="gpu-a01", gpus=1) == 3162.62
    assert one(found, "gpufabric_ddp_images_per_second", nodes="gpu-a01", gpus=2) == 6267.54
    assert one(found, "gpufabric_ddp_images_per_second_per_gpu", gpus=2) == 3133.77
    assert one(found, "gpufabric_ddp_scaling_efficiency_ratio", gpus=2) == round(report["efficiency"], 6) == 0.990878
    assert one(found, "gpufabric_ddp_allreduce_busbw_gigabytes_per_second", gpus=2) == 294.2
    assert one(found, "gpufabric_ddp_run_passed", nodes="gpu-a01") == 1


def test_a_ddp_run_without_torch_passes_nothing_and_writes_no_figure():
    report = ddp.report([{"world_size": 1, "round": 1, "stdout": "", "rc": 1, "stderr": fixture("ddp", "no_torch_stderr.txt")}])
    assert report["failures"]
    found = samples(figures.text("ddp", [report], "c", WHEN, nodes=["gpu-a01"]))
    assert set(k[0] for k in found) == {"gpufabric_ddp_run_passed", "gpufabric_ddp_run_timestamp_seconds"}
    assert one(found, "gpufabric_ddp_run_passed") == 0


@pytest.mark.parametrize("kind", figures.KINDS)
def test_records_with_missing_keys_are_read_as_far_as_they_go(kind):
    for records in ([], [{}], [{"result": "x", "rows": "y", "results": [1, None], "rank": [], "table": {"c": "x"},
                                "summary": {"bad_links": "ab", "unresolved": [None]}, "world_size": "2",
                                "decisions": {"c": None}, "confirmed": {"figures": {"s": "x"}}}]):
        found = samples(figures.text(kind, records, "c", WHEN, nodes=["n1"] if kind in figures.KINDS_WITH_NODES else None))
        assert all(value in (0, WHEN) for value in found.values()), found


@pytest.mark.parametrize("args, message", [
    (("nccl", [], "c", WHEN), "kind must be one of nccl_tests, perftest, burnin, tune, ddp, dcgm_diag, readiness, hang, slow, got 'nccl'"),
    (("burnin", {"results": []}, "c", WHEN), "burnin figures are read from a list of records, got dict"),
    (("perftest", [{}, "x"], "c", WHEN), "perftest record 1 is not a mapping but str"),
    (("ddp", [], "a\nb", WHEN), "cluster contains a newline"),
    (("ddp", [], "", WHEN), "cluster must not be empty"),
    (("tune", [], "c", float("nan")), "run_time must be the run's time in epoch seconds, got nan"),
    (("nccl_tests", [], "c", WHEN, ["n1"]), "nodes is for tune and ddp, whose records do not name their hosts"),
    (("ddp", [], "c", WHEN, {"n1": 1}), "nodes must be a host name or a list of them, got dict"),
])
def test_input_that_is_not_records_is_refused_naming_it(args, message):
    with pytest.raises(figures.FiguresError) as error:
        figures.families(*args)
    assert message in str(error.value)


def test_node_sets_are_slurm_hostlists_the_same_way_every_time():
    assert figures.node_set(["gpu-a10", "gpu-a09", "gpu-a08", "login", "gpu-a09"]) == "gpu-a[08-10],login"
    assert figures.node_set("n1") == "n1"
    assert figures.node_set([]) is None and figures.node_set([None, ""]) is None
    assert math.isnan(figures._lowest(1.0, float("nan")))


def test_node_sets_too_long_for_a_label_never_break_the_file(lab_runs):
    hosts = ["host-%03d-gpu" % n for n in range(60)]  # no trailing number: no range to compress them to
    runs = [dict(lab_runs[2], host=",".join(hosts + [extra]), label="run %s" % extra) for extra in ("zz-a", "zz-b")]
    found = samples(figures.text("nccl_tests", runs, "c", WHEN))
    nodes = [dict(k)["nodes"] for k in series(found, "gpufabric_nccl_tests_largest_size_busbw_gigabytes_per_second")]
    assert len(nodes) == 1 and nodes[0].endswith("...")


def test_a_slow_jobs_ranks_as_metrics_a_rank_drifting_shows():
    from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import slow_job, stragglers
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_inspector
    folder = os.path.join(ROOT, "tests", "unit", "fixtures", "nccl_inspector", "job_8rank_rank5_late_constructed")
    parsed = nccl_inspector.parse_nccl_inspector([{"name": name, "content": open(os.path.join(folder, name)).read()}
                                                  for name in sorted(os.listdir(folder))])
    report = slow_job.slow_report(stragglers.nccl_stragglers(parsed), {"gpu-a02": {"findings": [], "complete": True}},
                                  job="4242")
    text = figures.text("slow", [report], "c", WHEN)
    promtool_check(text)
    found = samples(text)
    assert one(found, "gpufabric_slow_verdict", job="4242", verdict="stragglers") == 1
    assert one(found, "gpufabric_slow_straggler", rank=5, node="gpu-a02", kind="late", verdict="application") == 1
    assert one(found, "gpufabric_slow_rank_late_ratio", rank=5, node="gpu-a02") == 1
    assert one(found, "gpufabric_slow_rank_late_ratio", rank=4) == 0
    assert 0.0015 <= one(found, "gpufabric_slow_rank_wait_seconds", rank=5) <= 0.004
    assert len(series(found, "gpufabric_slow_rank_busbw_gigabytes_per_second")) == 8
    assert one(found, "gpufabric_slow_run_timestamp_seconds") == WHEN
