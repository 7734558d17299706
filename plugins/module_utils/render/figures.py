# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The figures of validation runs as metric families, so a fleet's numbers can be graphed against time and
baseline: nccl-tests busbw per collective, size and node set; perftest bandwidth and latency per pair;
burn-in busbw per pair or group and its verdict per host; NCCL tuning busbw per setting; DDP images/s and
scaling efficiency; the DCGM diagnostic per node; readiness findings; a hung job's suspects; a slow job's ranks
(slow_figures.py). Pure functions from each role's judged records to metrics.family() lists; metrics.render writes them for node_exporter's textfile collector.

The collector takes no timestamps, so every kind carries its run's time as a gauge of its own
(``gpufabric_<kind>_run_timestamp_seconds``). A failed measurement (nan, inf) or a figure the record does
not have is left out, never written as 0; a run that did not run says so with its ``..._run_passed`` 0 and
no figures. Node sets are Slurm hostlists (``node[01-04]``, hostlist.compress_hostlist), so one label names
any number of hosts the same way every time. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from collections.abc import Mapping

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_run
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import perftest
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import tuning
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import metrics, slow_figures
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import compress_hostlist
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import median
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import check_line

KINDS = ("nccl_tests", "perftest", "burnin", "tune", "ddp", "dcgm_diag", "readiness", "hang", "slow")
# The kinds whose records do not name the hosts they ran on: the caller names them (``nodes``).
KINDS_WITH_NODES = ("tune", "ddp")
PLACEMENTS = ("out_of_place", "in_place")
# perftest's latency columns, by the statistic they hold.
LATENCY_STATS = (("typical", "t_typical_us"), ("average", "t_avg_us"), ("min", "t_min_us"), ("max", "t_max_us"),
                 ("p99", "p99_us"), ("p99_9", "p99_9_us"))

_NCCL = metrics.PREFIX + "nccl_tests_"
_PERFTEST = metrics.PREFIX + "perftest_"
_BURNIN = metrics.PREFIX + "burnin_"
_TUNE = metrics.PREFIX + "nccl_tune_"
_DDP = metrics.PREFIX + "ddp_"
_DCGM = metrics.PREFIX + "dcgm_diag_"
_READINESS = metrics.PREFIX + "readiness_"
_HANG = metrics.PREFIX + "hang_"


class FiguresError(ValueError):
    """Records that cannot be read as figures; the message names the value and what was expected."""


def _mapping(value):
    return value if isinstance(value, Mapping) else {}


def _items(value):
    """The mappings of a list (anything else in it is not a record and is passed over)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def _value(value):
    """A figure as it was measured (nan and inf kept: render leaves them out), or None when it is no number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _whole(value):
    """A size or count for a label: 4294967296 from 4294967296, 4294967296.0 or "4294967296"; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit() and len(value) <= 18:
        return int(value)
    return None


def _flag(value):
    """1 for a record's ``passed: true``, else 0 (missing, false or anything else: not passed)."""
    return 1 if value is True else 0


def node_set(hosts):
    """The ``nodes`` label: the hosts as one sorted Slurm hostlist ('gpufabric-node[1-2]'), None without hosts."""
    if isinstance(hosts, str):
        hosts = [hosts]
    names = [str(h) for h in hosts or [] if h not in (None, "") and not isinstance(h, (list, dict, bool))]
    return compress_hostlist(names) if names else None


def _lowest(old, new):
    """Two samples of one series in one report (the same test run twice): the worse one - a failed measurement,
    else the lower figure (a graph must not hide the slower run)."""
    for value in (old, new):
        if isinstance(value, float) and not math.isfinite(value):
            return value
    return min(old, new)


def _latest(old, new):
    """Two samples of one series: the later one (a burn-in search runs a group again; its last run decides)."""
    return new


class _Series(object):
    """The samples of one family, one per label set; a second sample with the same labels is merged by ``merge``
    (node_exporter refuses a file with two)."""

    def __init__(self, merge):
        self.merge = merge
        self.samples = {}

    def add(self, labels, value):
        if value is None:
            return
        if isinstance(value, float) and math.isfinite(value):
            value = round(value, 6)  # a median or a ratio, not 28.520000000000003
        # As render writes the labels (cut at metrics.MAX_LABEL_VALUE): two label sets it would write alike are one.
        key = tuple(sorted((k, metrics.escape(v)) for k, v in labels.items() if v not in (None, "")))
        if key in self.samples:
            value = self.merge(self.samples[key][1], value)
        self.samples[key] = (dict(labels), value)

    def list(self):
        return [self.samples[key] for key in sorted(self.samples)]


def _family(name, help_text, series):
    return metrics.family(name, "gauge", help_text, series.list() if isinstance(series, _Series) else series)


def _timestamp(prefix, what, base, run_time):
    return _family(prefix + "run_timestamp_seconds",
                   "When the %s ran (epoch seconds): the collector takes no timestamps, so this dates every figure "
                   "beside it." % what, [(base, run_time)])


def _hosts_of_run(run, result):
    """The hosts an nccl-tests run spanned, by their inventory names: the run's host field (a comma list for
    mpirun and Slurm), else the hosts its ranks printed."""
    named = [h.strip() for h in str(run.get("host") or "").split(",") if h.strip()]
    return named or [rank.get("host") for rank in _items(result.get("ranks"))]


def _measured_rows(result):
    """The rows as at_largest_size reads them, rebuilt from what is a size and a figure (a record read back
    from JSON by hand may hold anything)."""
    rows = []
    for row in _items(result.get("rows")):
        if _whole(row.get("size")) is not None:
            measured = dict((placement, {"busbw": _value(_mapping(row.get(placement)).get("busbw"))})
                            for placement in PLACEMENTS)
            rows.append(dict(measured, size=_whole(row.get("size"))))
    return rows


def nccl_tests_families(judged, cluster, run_time):
    """The judged nccl-tests runs (nccl_tests_judged, as in runs.json) -> families.

    Per run: ``..._run_passed`` {run, mode, nodes}. Per measured row: busbw and algbw (GB/s) {collective, nodes,
    ranks, size_bytes, placement}; per run, the out-of-place busbw at the largest size (nccl_tests.at_largest_size,
    the figure reports and baselines read) and, when the record names it (``baseline_busbw``), the baseline it is
    set against, and (``expected_busbw``) what its hardware carries, with the same labels so a panel draws one
    against the other.
    """
    base = {"cluster": cluster}
    passed, busbw, algbw = _Series(_lowest), _Series(_lowest), _Series(_lowest)
    largest, baseline, expected = _Series(_lowest), _Series(_lowest), _Series(_lowest)
    for run in judged:
        result = _mapping(run.get("result"))
        nodes = node_set(_hosts_of_run(run, result))
        passed.add(dict(base, run=run.get("label"), mode=run.get("mode"), nodes=nodes), _flag(run.get("passed")))
        if run.get("not_run"):
            continue
        ranks = len(_items(result.get("ranks"))) or None
        where = dict(base, collective=result.get("collective"), nodes=nodes, ranks=ranks)
        for row in _items(result.get("rows")):
            size = _whole(row.get("size"))
            if size is None:
                continue
            for placement in PLACEMENTS:
                group = _mapping(row.get(placement))
                labels = dict(where, size_bytes=size, placement=placement)
                busbw.add(labels, _value(group.get("busbw")))
                algbw.add(labels, _value(group.get("algbw")))
        # the figure judging carried (nccl_run.figure), else read once from the measured rows of a bare record
        size, value = nccl_run.figure({"figure": _mapping(run.get("figure")) or None, "result": {"rows": _measured_rows(result)}})
        size, value = _whole(size), _value(value)
        if size is not None:
            largest.add(dict(where, size_bytes=size), _value(value))
            baseline.add(dict(where, size_bytes=size), _value(run.get("baseline_busbw")))
            expected.add(dict(where, size_bytes=size), _value(run.get("expected_busbw")))
    return [
        _timestamp(_NCCL, "nccl-tests runs", base, run_time),
        _family(_NCCL + "run_passed", "1 when the nccl-tests run passed every check and threshold, 0 when it failed or "
                "did not run; run is the run's label, nodes the hosts it spanned (a Slurm hostlist).", passed),
        _family(_NCCL + "busbw_gigabytes_per_second", "nccl-tests bus bandwidth (GB/s) per collective, message size, "
                "node set, rank count and placement (in_place, out_of_place).", busbw),
        _family(_NCCL + "algbw_gigabytes_per_second", "nccl-tests algorithm bandwidth (GB/s), labelled as busbw.", algbw),
        _family(_NCCL + "largest_size_busbw_gigabytes_per_second", "The run's out-of-place busbw (GB/s) at the largest "
                "size it measured: the figure its report and its baseline read.", largest),
        _family(_NCCL + "baseline_busbw_gigabytes_per_second", "The baseline busbw (GB/s) the run is set against at that "
                "size, for the same GPU model, count and interconnect.", baseline),
        _family(_NCCL + "expected_busbw_gigabytes_per_second", "What the run's hardware carries (GB/s): the ceiling of "
                "its busbw from its nodes' NVLink, PCIe and RDMA ports (judge/ceiling.py), labelled as the largest-size "
                "figure, so a panel plots their ratio per node set over time.", expected),
    ]


def _pair_labels(base, run):
    return dict(base, test=run.get("test"), client=run.get("client"), server=run.get("server"))


def perftest_families(judged, cluster, run_time):
    """The judged perftest runs (perftest_judged, as in perftest.json) -> families: ``..._run_passed`` {test, client,
    server}; per measured row bandwidth (Gb/s, average and peak) or latency (us, typical, average, min, max, p99,
    p99.9) {test, client, server, device, size_bytes, stat}."""
    base = {"cluster": cluster}
    passed, bandwidth, latency = _Series(_lowest), _Series(_lowest), _Series(_lowest)
    for run in judged:
        passed.add(_pair_labels(base, run), _flag(run.get("passed")))
        if run.get("not_run"):
            continue
        result = _mapping(run.get("result"))
        where = dict(_pair_labels(base, run), device=result.get("device") if isinstance(result.get("device"), str) else None)
        for row in _items(result.get("rows")):
            size = _whole(row.get("bytes"))
            if size is None:
                continue
            if result.get("kind") == "bandwidth":
                for stat, column in (("average", "bw_average"), ("peak", "bw_peak")):
                    figure = _value(row.get(column))
                    if figure is not None and isinstance(row.get("unit"), str):
                        bandwidth.add(dict(where, size_bytes=size, stat=stat),
                                      perftest.bw_gbps({"bw_average": figure, "unit": row.get("unit")}))
            elif result.get("kind") == "latency":
                for stat, column in LATENCY_STATS:
                    latency.add(dict(where, size_bytes=size, stat=stat), _value(row.get(column)))
    return [
        _timestamp(_PERFTEST, "perftest runs", base, run_time),
        _family(_PERFTEST + "run_passed", "1 when the perftest run between client and server passed, 0 when it failed "
                "or did not run.", passed),
        _family(_PERFTEST + "bandwidth_gigabits_per_second", "perftest bandwidth (Gb/s, 10^9 bits a second) per pair, "
                "RDMA device and message size; stat is average (the judged one) or peak.", bandwidth),
        _family(_PERFTEST + "latency_microseconds", "perftest latency (microseconds) per pair, RDMA device and message "
                "size; stat is typical (the judged one), average, min, max, p99 or p99_9.", latency),
    ]


def _run_hosts(run):
    """A burn-in run's hosts: a search group's ``hosts``, or a pair's a and b."""
    hosts = run.get("hosts")
    if isinstance(hosts, (list, tuple)) and hosts:
        return hosts
    return [run.get("a"), run.get("b")]


def burnin_families(reports, cluster, run_time):
    """The burn-in's result (burnin_result, pairwise or search; as in burnin.json) -> families: the burn-in's verdict;
    per pair or group run its busbw at the largest size and whether it measured; per host whether it is slow (and its
    median busbw, pairwise); per link whether it is bad; the search's bad leaf uplinks and unresolved groups; the
    reference busbw the hosts are judged against."""
    base = {"cluster": cluster}
    passed, reference = _Series(_latest), _Series(_latest)
    run_passed, busbw = _Series(_latest), _Series(_latest)
    slow, host_median, link_bad, uplink_bad, unresolved = (_Series(_latest) for ignored in range(5))
    for report in reports:
        results = sorted(_items(report.get("results")), key=lambda r: _whole(r.get("round")) or 0)
        failures = report.get("failures")
        measured = any(_value(r.get("busbw")) is not None for r in results)
        passed.add(base, 1 if isinstance(failures, list) and not failures and measured else 0)
        ranked = _mapping(report.get("rank"))
        reference.add(base, _value(ranked.get("cluster_median_busbw")))
        hosts = set()
        for run in results:
            members = [h for h in _run_hosts(run) if h not in (None, "")]
            hosts.update(str(h) for h in members)
            where = dict(base, nodes=node_set(members), kind=run.get("kind") or "pair")
            figure = _value(run.get("busbw"))
            ok = run.get("error") is None and figure is not None and math.isfinite(figure)
            run_passed.add(where, 1 if ok else 0)
            if ok:
                busbw.add(dict(where, ranks=_whole(run.get("ranks")), size_bytes=_whole(run.get("largest_size"))), figure)
        found = _mapping(report.get("summary"))
        if _items(ranked.get("hosts")):  # pairwise: every host ranked
            for host in _items(ranked.get("hosts")):
                slow.add(dict(base, Hostname=host.get("host")), 1 if host.get("slow") else 0)
                host_median.add(dict(base, Hostname=host.get("host")), _value(host.get("median_busbw")))
        else:  # search: the hosts its runs covered, the slow ones named
            named = set(str(h) for h in found.get("slow_hosts") or [] if isinstance(h, str))
            for host in sorted(hosts | named):
                slow.add(dict(base, Hostname=host), 1 if host in named else 0)
        for link in _items(ranked.get("links")):
            link_bad.add(dict(base, nodes=node_set([link.get("a"), link.get("b")])), 1 if link.get("bad") else 0)
        for link in found.get("bad_links") or []:
            if isinstance(link, (list, tuple)) and link:
                link_bad.add(dict(base, nodes=node_set(link)), 1)
        for leaf in found.get("bad_uplinks") or []:
            if isinstance(leaf, str) and leaf:
                uplink_bad.add(dict(base, leaf=leaf), 1)
        for group in found.get("unresolved") or []:
            if isinstance(group, (list, tuple)) and group:
                unresolved.add(dict(base, nodes=node_set(group)), 1)
    return [
        _timestamp(_BURNIN, "burn-in", base, run_time),
        _family(_BURNIN + "run_passed", "1 when the burn-in found nothing (no slow host, bad link, failed run or figure "
                "below the floor), 0 otherwise or when nothing was measured.", passed),
        _family(_BURNIN + "reference_busbw_gigabytes_per_second", "The busbw (GB/s) hosts and links are judged against: "
                "the median of the hosts' medians (pairwise), or the search's reference.", reference),
        _family(_BURNIN + "test_passed", "1 when the pair or group run (kind pair, group, or the search's own kinds) "
                "measured a figure, 0 when it failed or did not run.", run_passed),
        _family(_BURNIN + "busbw_gigabytes_per_second", "A burn-in run's out-of-place busbw (GB/s) at the largest size, "
                "per node set, kind, rank count and size.", busbw),
        _family(_BURNIN + "host_slow", "1 when the burn-in names the host slow, 0 when it cleared it.", slow),
        _family(_BURNIN + "host_median_busbw_gigabytes_per_second", "The median busbw (GB/s) of a host's pairs "
                "(pairwise burn-in).", host_median),
        _family(_BURNIN + "link_bad", "1 for a link (the two hosts in nodes) the burn-in names bad; the pairwise burn-in "
                "also writes 0 for each link it cleared.", link_bad),
        _family(_BURNIN + "uplink_bad", "1 for a leaf whose uplink the burn-in search names bad.", uplink_bad),
        _family(_BURNIN + "unresolved", "1 for a group that fell short as a whole while every part of it passed.",
                unresolved),
    ]


def tune_families(reports, cluster, run_time, nodes=None):
    """The tuning report (nccl_tune_report's result) -> families, per node set (``nodes``: the hosts it ran on).

    Per phase (search, confirm), collective and setting (``default`` is NCCL's own): the median busbw per size and
    the best of them, the geometric-mean gain over the defaults and whether the setting was kept; the setting
    chosen (``default`` when none beat NCCL's); how many runs failed.
    """
    base = {"cluster": cluster, "nodes": node_set(nodes)}
    passed, failed, chosen = _Series(_latest), _Series(_latest), _Series(_latest)
    busbw, best, gain, kept = _Series(_latest), _Series(_latest), _Series(_latest), _Series(_latest)
    for report in reports:
        search = _mapping(report.get("search"))
        confirmed = _mapping(report.get("confirmed"))
        failed_runs = search.get("failed_runs") if isinstance(search.get("failed_runs"), list) else []
        tables = (("search", _mapping(report.get("table"))), ("confirm", _mapping(confirmed.get("table"))))
        measured = False
        for phase, table in tables:
            for collective, by_setting in sorted(table.items()):
                for setting, sizes in sorted(_mapping(by_setting).items()):
                    where = dict(base, phase=phase, collective=collective, setting=setting)
                    figures = []
                    for size, value in _mapping(sizes).items():
                        figure = _value(value)
                        if _whole(size) is None or figure is None:
                            continue
                        busbw.add(dict(where, size_bytes=_whole(size)), figure)
                        if math.isfinite(figure):
                            figures.append(figure)
                    if figures:
                        measured = True
                        best.add(where, max(figures))
        decisions = [("search", collective, setting, numbers)
                     for collective, by_setting in sorted(_mapping(report.get("decisions")).items())
                     for setting, numbers in sorted(_mapping(by_setting).items())]
        decisions += [("confirm", collective, setting, numbers)
                      for setting, per in sorted(_mapping(confirmed.get("figures")).items())
                      for collective, numbers in sorted(_mapping(per).items())]
        for phase, collective, setting, numbers in decisions:
            numbers = _mapping(numbers)
            where = dict(base, phase=phase, collective=collective, setting=setting)
            gain.add(where, _value(numbers.get("gain")))
            if isinstance(numbers.get("kept"), bool):
                kept.add(where, 1 if numbers["kept"] else 0)
        passed.add(base, 1 if measured and not failed_runs else 0)
        failed.add(base, len(failed_runs))
        if measured:
            chosen.add(dict(base, setting=confirmed.get("chosen") or tuning.DEFAULT), 1)
    return [
        _timestamp(_TUNE, "NCCL tuning", base, run_time),
        _family(_TUNE + "run_passed", "1 when the tuning measured and no run of it failed, 0 otherwise or when it did "
                "not run.", passed),
        _family(_TUNE + "failed_runs", "How many of the tuning's runs failed (left out of every decision).", failed),
        _family(_TUNE + "busbw_gigabytes_per_second", "Median out-of-place busbw (GB/s) of a setting's repeats, per "
                "phase (search, confirm), collective and size; setting default is NCCL's own.", busbw),
        _family(_TUNE + "best_busbw_gigabytes_per_second", "The best median busbw (GB/s) a setting reached over the "
                "sizes, per phase and collective.", best),
        _family(_TUNE + "gain_ratio", "Geometric-mean busbw of a setting over the defaults' in the judged window "
                "(1.05: 5 % faster).", gain),
        _family(_TUNE + "setting_kept", "1 when the setting beat the defaults' run-to-run spread without losing at "
                "any guarded size, 0 when it did not.", kept),
        _family(_TUNE + "setting_chosen", "1 for the setting the tuning chose (default: NCCL's own settings).",
                chosen),
    ]


def ddp_families(reports, cluster, run_time, nodes=None):
    """The DDP benchmark's result (ddp_benchmark_result) -> families, per node set (``nodes``): median images/s and
    images/s per GPU on 1 GPU and on every GPU asked for, the scaling efficiency between them, the median all_reduce
    busbw of the benchmark's own probe, and whether it passed."""
    base = {"cluster": cluster, "nodes": node_set(nodes)}
    passed, images, per_gpu, efficiency, allreduce = (_Series(_latest) for ignored in range(5))
    for report in reports:
        rows = _items(report.get("rows"))
        failures = report.get("failures")
        passed.add(base, 1 if rows and isinstance(failures, list) and not failures else 0)
        world = _whole(report.get("world_size"))
        for gpus, figure in ((1, _value(report.get("single"))), (world, _value(report.get("many")))):
            if gpus:
                images.add(dict(base, gpus=gpus), figure)
                per_gpu.add(dict(base, gpus=gpus), figure / gpus if figure is not None else None)
        if world and world > 1:
            efficiency.add(dict(base, gpus=world), _value(report.get("efficiency")))
        probes = {}
        for row in rows:
            figure = _value(row.get("allreduce_busbw_gbps"))
            if _whole(row.get("world_size")) and figure is not None and math.isfinite(figure):
                probes.setdefault(_whole(row.get("world_size")), []).append(figure)
        for gpus, figures in sorted(probes.items()):
            allreduce.add(dict(base, gpus=gpus), median(figures))
    return [
        _timestamp(_DDP, "DDP benchmark", base, run_time),
        _family(_DDP + "run_passed", "1 when every DDP run printed its result and met the thresholds, 0 otherwise.",
                passed),
        _family(_DDP + "images_per_second", "Median images/s of the DDP benchmark (all GPUs together) on gpus GPUs.",
                images),
        _family(_DDP + "images_per_second_per_gpu", "Median images/s per GPU on gpus GPUs.", per_gpu),
        _family(_DDP + "scaling_efficiency_ratio", "Images/s on gpus GPUs over gpus x images/s on one (1.0: perfect "
                "scaling).", efficiency),
        _family(_DDP + "allreduce_busbw_gigabytes_per_second", "Median all_reduce busbw (GB/s) of the benchmark's own "
                "probe on gpus GPUs.", allreduce),
    ]


def dcgm_diag_families(records, cluster, run_time):
    """The DCGM diagnostic per node (the dcgm_diag role's records: {host, level, status, failures}) -> families:
    ``..._passed`` (1 pass or warn, 0 fail; no sample for a run that did not run), ``..._not_run`` (1 when it could not
    run), ``..._gpu_failed`` per GPU and test that failed (1), with the level as a label."""
    base = {"cluster": cluster}
    passed, not_run, gpu_failed = _Series(_lowest), _Series(_lowest), _Series(_lowest)
    for record in records:
        where = dict(base, node=str(record.get("host")), level=str(record.get("level")))
        status = record.get("status")
        not_run.add(where, 1 if status == "not run" else 0)
        if status in ("pass", "warn", "fail"):
            passed.add(where, 0 if status == "fail" else 1)
        for failure in _items(record.get("failures")):
            gpu = failure.get("gpu")
            gpu_failed.add(dict(where, gpu="node" if gpu is None else str(gpu), test=str(failure.get("test"))), 1)
    return [
        _timestamp(_DCGM, "DCGM diagnostic", base, run_time),
        _family(_DCGM + "passed", "1 when the DCGM diagnostic level passed on the node (or only warned), 0 when a test "
                "failed; no sample when it did not run.", passed),
        _family(_DCGM + "not_run", "1 when the level could not run on the node (dcgmi missing, no host engine, timed "
                "out, cut, every test skipped): unknown, neither a pass nor a failure.", not_run),
        _family(_DCGM + "gpu_failed", "1 for each GPU (node: a failure no GPU carries) and test that failed.", gpu_failed),
    ]


def readiness_families(findings, cluster, run_time):
    """Readiness findings (the report's node and cluster findings: {check, severity, target}) -> ``..._finding`` (1
    per check, severity and target, the node the target names as a label: version_floor, version_drift, pcie_acs,
    gpudirect_path and every other check can be alerted on) and ``..._findings`` (how many per check and severity)."""
    base = {"cluster": cluster}
    each, counted = _Series(_latest), {}
    for found in findings:
        if not found.get("check") or found.get("severity") not in ("critical", "warning", "info"):
            continue   # not a finding
        target = str(found.get("target") or "")
        node = target.split("/", 1)[0].split(":", 1)[0] or "cluster"
        labels = dict(base, node=node, check=str(found.get("check")), severity=str(found.get("severity")), target=target)
        each.add(labels, 1)
        key = (labels["check"], labels["severity"])
        counted[key] = counted.get(key, 0) + 1
    totals = _Series(_latest)
    for (name, severity), count in sorted(counted.items()):
        totals.add(dict(base, check=name, severity=severity), count)
    return [
        _timestamp(_READINESS, "readiness report", base, run_time),
        _family(_READINESS + "finding", "1 for each readiness finding: its check, severity, target and the node it "
                "names (version_floor, version_drift, pcie_acs, gpudirect_path, iommu_mode and the rest).", each),
        _family(_READINESS + "findings", "How many readiness findings of each check and severity.", totals),
    ]


def hang_families(reports, cluster, run_time):
    """hang.yml's reports (judge/hang.py) -> ``..._verdict`` (1 for the job's verdict) and ``..._suspect`` (1 per
    suspect rank: its node, GPU, why NCCL singled it out and whether its node has a hardware finding)."""
    base = {"cluster": cluster}
    verdicts, suspects = _Series(_latest), _Series(_latest)
    for report in reports:
        if report.get("verdict") not in ("healthy", "suspects", "trouble", "unknown"):
            continue   # not a hang report
        job = dict(base, job=str(report.get("job") or ""))
        verdicts.add(dict(job, verdict=str(report.get("verdict"))), 1)
        for suspect in _items(report.get("suspects")):
            suspects.add(dict(job, rank=str(suspect.get("rank")), node=str(suspect.get("host")),
                              gpu=str(suspect.get("nvml_gpu")), kind=str(suspect.get("kind")),
                              verdict=str(suspect.get("verdict"))), 1)
    return [
        _timestamp(_HANG, "hang report", base, run_time),
        _family(_HANG + "verdict", "1 for the verdict on a job that stopped making progress: healthy, suspects, "
                "trouble, or unknown (no node answered on NCCL's RAS port).", verdicts),
        _family(_HANG + "suspect", "1 for each rank NCCL singled out in a hung job, with its node and GPU, why "
                "(behind, status, error, missing, dead) and its node's verdict (hardware, application, unknown).",
                suspects),
    ]


def check(kind, records, cluster, run_time, nodes=None):
    """The inputs checked: FiguresError naming the value and what was expected."""
    if kind not in KINDS:
        raise FiguresError("kind must be one of %s, got %r" % (", ".join(KINDS), kind))
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, (list, tuple)):
        raise FiguresError("%s figures are read from a list of records, got %s" % (kind, type(records).__name__))
    for index, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise FiguresError("%s record %d is not a mapping but %s" % (kind, index, type(record).__name__))
    try:
        check_line("cluster", cluster, allow_empty=False)
    except ValueError as exc:
        raise FiguresError(str(exc))
    if isinstance(run_time, bool) or not isinstance(run_time, (int, float)) or not math.isfinite(run_time):
        raise FiguresError("run_time must be the run's time in epoch seconds, got %r" % (run_time,))
    if nodes not in (None, "", []) and kind not in KINDS_WITH_NODES:
        raise FiguresError("nodes is for %s, whose records do not name their hosts; %s records name theirs"
                           % (" and ".join(KINDS_WITH_NODES), kind))
    if nodes not in (None, "") and not isinstance(nodes, (str, list, tuple)):
        raise FiguresError("nodes must be a host name or a list of them, got %s" % type(nodes).__name__)


def families(kind, records, cluster, run_time, nodes=None):
    """The metric families of one kind's records (see KINDS); FiguresError for input that is not such records."""
    check(kind, records, cluster, run_time, nodes)
    cluster = str(cluster)
    if kind == "nccl_tests":
        return nccl_tests_families(records, cluster, run_time)
    if kind == "perftest":
        return perftest_families(records, cluster, run_time)
    if kind == "burnin":
        return burnin_families(records, cluster, run_time)
    if kind == "tune":
        return tune_families(records, cluster, run_time, nodes)
    if kind == "dcgm_diag":
        return dcgm_diag_families(records, cluster, run_time)
    if kind == "readiness":
        return readiness_families(records, cluster, run_time)
    if kind == "hang":
        return hang_families(records, cluster, run_time)
    if kind == "slow":
        return slow_figures.slow_families(records, cluster, run_time)
    return ddp_families(records, cluster, run_time, nodes)


def text(kind, records, cluster, run_time, nodes=None):
    """The records' figures as node_exporter textfile text (metrics.render)."""
    return metrics.render(families(kind, records, cluster, run_time, nodes))
