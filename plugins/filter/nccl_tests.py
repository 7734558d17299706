# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that collect, judge, summarize and draw nccl-tests runs, and check their thresholds and launch
environment (thin wrappers over module_utils/judge/validation.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import ceiling
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import chart
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import mpirun
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    Mapping, expect, expect_list_of_mappings, fail, filters, number_or_none)

PLACEMENTS = ("out_of_place", "in_place", "best")


def _judged(name, judged):
    """A list of judged runs (nccl_tests_judge's result): each a mapping with a result mapping and passed."""
    expect_list_of_mappings(name, judged, "a list of judged runs (nccl_tests_judge's result)")
    for index, run in enumerate(judged):
        if not isinstance(run.get("result"), Mapping) or "passed" not in run:
            fail(name, "expects judged runs (nccl_tests_judge's result); item %d has no result and passed" % index)
    return judged


def nccl_tests_collect(single_by_host, mpirun_results=None, hosts=None, gpus_by_host=None):
    expect("nccl_tests_collect", single_by_host, (Mapping,), "a mapping of host to registered results")
    for what, value, kinds in (("mpirun_results", mpirun_results, (Mapping,)), ("hosts", hosts, (list, tuple)),
                               ("gpus_by_host", gpus_by_host, (Mapping,))):
        if value is not None:
            expect("nccl_tests_collect", value, kinds, "%s as a %s" % (what, "list" if kinds == (list, tuple) else "mapping"))
    return validation.collect_runs(single_by_host, mpirun_results, hosts, gpus_by_host)


def _platform(name, platform):
    """The baselines' platform, its 'hardware' ({nodes, ib_hca, fraction}) checked: the fraction a number from 0 to 1."""
    platform = dict(expect(name, platform or {}, (Mapping,), "baselines.platform as a mapping"))
    hardware = platform.get("hardware")
    if hardware in (None, "", {}):
        platform.pop("hardware", None)
        return platform
    hardware = dict(expect(name, hardware, (Mapping,), "platform.hardware as {nodes, ib_hca, fraction}"))
    expect(name, hardware.get("nodes") or {}, (Mapping,), "platform.hardware.nodes as a mapping of host to node record")
    fraction = number_or_none(name, "platform.hardware.fraction", hardware.get("fraction"))
    if fraction is not None and not 0 <= fraction <= 1:
        fail(name, "platform.hardware.fraction must be a share from 0 to 1 of what the hardware carries, got %r" % (fraction,))
    if fraction is None:
        hardware.pop("fraction", None)
    else:
        hardware["fraction"] = fraction
    platform["hardware"] = hardware
    return platform


def nccl_tests_judge(runs, min_busbw=None, min_busbw_by_size=None, max_wrong=0, placement="out_of_place", replayed_from=None,
                     nccl_debug=None, baselines=None):
    expect_list_of_mappings("nccl_tests_judge", runs, "a list of runs (nccl_tests_collect's result)")
    note = text.check_line("replayed_from", replayed_from) if replayed_from else None
    errors = validation.threshold_errors({"min_busbw": min_busbw, "min_busbw_by_size": min_busbw_by_size,
                                          "max_wrong": max_wrong})
    if errors:
        fail("nccl_tests_judge", "; ".join(errors))
    if placement not in PLACEMENTS:
        fail("nccl_tests_judge", "placement must be one of %s, got %r" % (", ".join(PLACEMENTS), placement))
    if baselines is not None:
        expect("nccl_tests_judge", baselines, (Mapping,), "baselines as {platform, fraction, local}")
        baselines = {"platform": _platform("nccl_tests_judge", baselines.get("platform")),
                     "fraction": number_or_none("nccl_tests_judge", "baselines.fraction", baselines.get("fraction", 0.9)),
                     "local": baselines.get("local")}
    try:
        return validation.judge(runs, number_or_none("nccl_tests_judge", "min_busbw", min_busbw), min_busbw_by_size or None,
                                None if max_wrong in (None, "") else int(max_wrong), placement, note, nccl_debug, baselines)
    except ValueError as exc:   # nccl_debug's settings, a traffic reading that is not counters
        fail("nccl_tests_judge", str(exc))


def nccl_tests_summary(judged, output="text", thresholds=None, not_measured=None):
    _judged("nccl_tests_summary", judged)
    if output not in ("text", "markdown"):
        fail("nccl_tests_summary", "output must be text or markdown, got %r" % (output,))
    not_measured = dict(expect("nccl_tests_summary", not_measured or {}, (Mapping,),
                               "not_measured as a mapping of node to its last validation record"))
    if output == "markdown":
        return validation.summary_markdown(judged, expect("nccl_tests_summary", thresholds or {}, (Mapping,),
                                                          "thresholds as a mapping"), not_measured)
    return validation.summary_text(judged, not_measured)


def bandwidth_svg(judged, threshold=None, title="NCCL bandwidth"):
    _judged("bandwidth_svg", judged)
    return chart.bandwidth_svg(validation.bandwidth_series(judged), number_or_none("bandwidth_svg", "threshold", threshold),
                               text.check_line("title", title))


def mpirun_env_args(env):
    """{'NCCL_IB_HCA': '=mlx5_0:1'} -> ['-x', 'NCCL_IB_HCA==mlx5_0:1']: OpenMPI exports each to every rank."""
    return mpirun.mpirun_env_args(expect("mpirun_env_args", env, (Mapping,), "a mapping of environment variables"))


def mpirun_argv(launcher, args, np, command, env=None, hosts=None, slots=None, hostfile=None):
    """The one mpirun command line (mpirun.mpirun_argv): ranks placed by hosts and slots or a hostfile."""
    return mpirun.mpirun_argv(launcher, args, np, command, env=expect("mpirun_argv", env or {}, (Mapping,), "a mapping of environment variables"),
                              hosts=hosts, slots=slots, hostfile=hostfile)


def baseline_notes(judged, platform, fraction=0.9, local=None, user_threshold=False):
    """Each judged nccl-tests run with its baseline sentence ("346 GB/s = 100 % of the H200x2 NVLink
    baseline ...") or the note that none is known; without a user threshold, a run below ``fraction``
    of its baseline fails. Also returns ``record``: this run's figures as baseline entries."""
    expect_list_of_mappings("baseline_notes", judged, "the judged runs (nccl_tests_judged)")
    return validation.baseline_notes(judged, _platform("baseline_notes", platform), number_or_none("baseline_notes", "fraction", fraction), local,
                                     user_threshold)


def busbw_ceiling(records, collective="all_reduce", gpus_per_node=None, ib_hca=None, fraction=None):
    """What the hardware carries for a run of ``collective`` over these nodes (judge/ceiling.py) and the floor a run
    must reach: {busbw, link, bound, fraction, floor} or {busbw: None, why, fraction, floor: None}."""
    if isinstance(records, Mapping) and "gpu" in records:
        records = {records.get("hostname") or "node": records}   # one node's record
    expect("busbw_ceiling", records, (Mapping,), "a mapping of host name to node record, or one node record")
    nodes = []
    for host in sorted(records):
        nodes.append(dict(expect("busbw_ceiling", records[host], (Mapping,), "a node record for host %s" % host), host=host))
    if gpus_per_node in (None, ""):
        counts = set(int((n.get("gpu") or {}).get("count") or 0) for n in nodes)
        gpus_per_node = counts.pop() if len(counts) == 1 else 0
    if isinstance(gpus_per_node, bool) or not str(gpus_per_node).strip().isdigit() or int(gpus_per_node) < 1:
        fail("busbw_ceiling", "gpus_per_node must be a whole number of 1 or more (or unset where every node's record "
             "counts the same GPUs), got %r" % (gpus_per_node,))
    share = number_or_none("busbw_ceiling", "fraction", fraction)
    if share is not None and not 0 <= share <= 1:
        fail("busbw_ceiling", "fraction must be a share from 0 to 1, got %r" % (fraction,))
    if ib_hca not in (None, ""):
        text.check_line("ib_hca", ib_hca)
    try:
        if isinstance(collective, (list, tuple)):   # several at once: {collective: result}
            return dict((str(c), ceiling.floor(ceiling.ceiling(c, nodes, int(gpus_per_node), ib_hca or None), share))
                        for c in collective)
        return ceiling.floor(ceiling.ceiling(collective, nodes, int(gpus_per_node), ib_hca or None), share)
    except ceiling.CeilingError as exc:
        fail("busbw_ceiling", str(exc))


def threshold_errors(values):
    """{'nccl_tests_min_busbw': '350', 'nccl_tests_min_busbw_by_size': {...}} -> [] or the sentences naming each bad one."""
    return validation.threshold_errors(expect("threshold_errors", values, (Mapping,), "a mapping of threshold name to value"))


class FilterModule(object):
    def filters(self):
        return filters({
            "nccl_tests_collect": nccl_tests_collect, "nccl_tests_judge": nccl_tests_judge,
            "nccl_tests_summary": nccl_tests_summary, "bandwidth_svg": bandwidth_svg,
            "mpirun_env_args": mpirun_env_args, "mpirun_argv": mpirun_argv, "baseline_notes": baseline_notes,
            "threshold_errors": threshold_errors, "busbw_ceiling": busbw_ceiling,
        })
