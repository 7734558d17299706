# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that judge and draw nccl-tests, perftest, Slurm and burn-in runs (thin wrappers over module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufabric.rdma.plugins.module_utils import burnin_search as search_planner

from ansible_collections.gpufabric.rdma.plugins.module_utils import baselines, burnin, chart, nccl_tests, slurm, text, validation
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    TEXT, Mapping, expect, expect_list_of_mappings, fail, filters, number_or_none)

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


def nccl_tests_judge(runs, min_busbw=None, min_busbw_by_size=None, max_wrong=0, placement="out_of_place", replayed_from=None):
    expect_list_of_mappings("nccl_tests_judge", runs, "a list of runs (nccl_tests_collect's result)")
    if replayed_from:
        # Stand-ins print a capture: every label - so every line that shows a figure - says so.
        note = text.check_line("replayed_from", replayed_from)
        runs = [dict(run, label="%s [figures REPLAYED from %s, not measured]" % (run.get("label"), note)) for run in runs]
    errors = validation.threshold_errors({"min_busbw": min_busbw, "min_busbw_by_size": min_busbw_by_size,
                                          "max_wrong": max_wrong})
    if errors:
        fail("nccl_tests_judge", "; ".join(errors))
    if placement not in PLACEMENTS:
        fail("nccl_tests_judge", "placement must be one of %s, got %r" % (", ".join(PLACEMENTS), placement))
    judged = validation.judge(runs, number_or_none("nccl_tests_judge", "min_busbw", min_busbw), min_busbw_by_size or None,
                              None if max_wrong in (None, "") else int(max_wrong), placement)
    if replayed_from:
        for run in judged:
            run["replayed_from"] = replayed_from
    return judged


def nccl_tests_summary(judged, output="text", thresholds=None):
    _judged("nccl_tests_summary", judged)
    if output not in ("text", "markdown"):
        fail("nccl_tests_summary", "output must be text or markdown, got %r" % (output,))
    if output == "markdown":
        return validation.summary_markdown(judged, expect("nccl_tests_summary", thresholds or {}, (Mapping,),
                                                          "thresholds as a mapping"))
    return validation.summary_text(judged)


def bandwidth_svg(judged, threshold=None, title="NCCL bandwidth"):
    _judged("bandwidth_svg", judged)
    series = [{"label": run.get("label"), "rows": run["result"].get("rows")} for run in judged]
    return chart.bandwidth_svg(series, number_or_none("bandwidth_svg", "threshold", threshold),
                               text.check_line("title", title))


def mpirun_env_args(env):
    """{'NCCL_IB_HCA': '=mlx5_0:1'} -> ['-x', 'NCCL_IB_HCA==mlx5_0:1']: OpenMPI exports each to every rank."""
    expect("mpirun_env_args", env, (Mapping,), "a mapping of environment variables")
    args = []
    for name in sorted(env, key=str):
        value = "" if env[name] is None else env[name]
        if not isinstance(name, str) or not name or not (name[0].isalpha() or name[0] == "_") \
                or not all(c.isalnum() or c == "_" for c in name):
            fail("mpirun_env_args", "%r is not an environment variable name" % (name,))
        if isinstance(value, (Mapping, list)):
            fail("mpirun_env_args", "%s must be a string or a number, got %s" % (name, type(value).__name__))
        args += ["-x", "%s=%s" % (name, text.check_line(name, value if not isinstance(value, bool) else str(value).lower()))]
    return args


def pair_hosts(hosts):
    expect("pair_hosts", hosts, (list, tuple), "a list of hosts")
    return validation.pair_hosts([text.check_line("hosts[%d]" % i, h, allow_empty=False) for i, h in enumerate(hosts)])


def perftest_judge(results, min_bw_gbps=None, max_lat_us=None):
    expect_list_of_mappings("perftest_judge", results, "a list of perftest results")
    errors = validation.threshold_errors({"min_bw_gbps": min_bw_gbps, "max_lat_us": max_lat_us})
    if errors:
        fail("perftest_judge", "; ".join(errors))
    return validation.judge_perftest(results, number_or_none("perftest_judge", "min_bw_gbps", min_bw_gbps),
                                     number_or_none("perftest_judge", "max_lat_us", max_lat_us))


def perftest_summary(judged):
    expect_list_of_mappings("perftest_summary", judged, "a list of judged perftest results (perftest_judge's result)")
    for index, run in enumerate(judged):
        if not isinstance(run.get("result"), Mapping) or "failures" not in run:
            fail("perftest_summary", "expects perftest_judge's result; item %d is not a judged result" % index)
    return validation.perftest_markdown(judged)


def slurm_job_runs(jobs):
    return slurm.job_runs(expect_list_of_mappings("slurm_job_runs", jobs, "a list of finished jobs"))


def slurm_job_errors(jobs):
    """Every field of every job that cannot go into an sbatch script, as sentences naming job and field."""
    expect_list_of_mappings("slurm_job_errors", jobs, "a list of jobs (slurm_jobs_list with defaults)")
    return [problem for job in jobs for problem in slurm.job_problems(job)]


def baseline_notes(judged, platform, fraction=0.9, local=None, user_threshold=False):
    """Each judged nccl-tests run with its baseline sentence ("346 GB/s = 100 % of the H200x2 NVLink
    baseline ...") or the note that none is known; without a user threshold, a run below ``fraction``
    of its baseline fails. Also returns ``record``: this run's figures as baseline entries."""
    expect_list_of_mappings("baseline_notes", judged, "the judged runs (run_report_judged)")
    platform = dict(platform or {})
    fraction = number_or_none("baseline_notes", "fraction", fraction)
    out, record = [], []
    for run in judged:
        run = dict(run)
        result = run.get("result") or {}
        rows = result.get("rows") or []
        collective = result.get("collective")
        if not rows or not platform.get("gpu") or not collective:
            run["baseline"] = None
            out.append(run)
            continue
        last = rows[-1]
        value = (last.get("out_of_place") or {}).get("busbw")
        gpus = platform.get("gpus_by_mode", {}).get(run.get("mode")) or platform.get("gpus")
        gpus = int(gpus) if str(gpus).isdigit() else gpus
        fabric = platform.get("interconnect_by_mode", {}).get(run.get("mode")) or platform.get("interconnect")
        entry = baselines.lookup("nccl_busbw", platform["gpu"], gpus, fabric, local, collective=collective, size=last.get("size"))
        if entry is None:
            run["baseline"] = baselines.unknown("nccl_busbw %s" % collective, platform["gpu"], gpus, fabric)
        else:
            run["baseline"] = baselines.describe(value, entry)
            if not user_threshold and fraction and value is not None and value < baselines.floor(entry, fraction):
                run["failures"] = list(run.get("failures") or []) + [
                    "busbw %.1f GB/s at %d bytes is below %.0f %% of the %s baseline (%.1f GB/s)" % (
                        value, last["size"], fraction * 100, baselines.label(entry), entry["value"])]
                run["passed"] = False
        if value is not None:
            record.append({"kind": "nccl_busbw", "gpu": platform["gpu"], "gpus": gpus, "interconnect": fabric,
                           "collective": collective, "size": last.get("size"), "value": value,
                           "source": "recorded here: %s" % run.get("label")})
        out.append(run)
    merged = list(local or [])
    for entry in record:
        merged = baselines.record(merged, entry)
    return {"runs": out, "record": merged}


def slurm_jobs_report(finished):
    return slurm.jobs_report(expect_list_of_mappings("slurm_jobs_report", finished, "a list of finished jobs"))


def slurm_hostlist(expression):
    return slurm.expand_hostlist(expect("slurm_hostlist", expression if expression is not None else "", TEXT,
                                        "a Slurm hostlist such as gpu-[01-08]"))


def burnin_rounds(hosts):
    expect("burnin_rounds", hosts, (list, tuple), "a list of hosts")
    for index, host in enumerate(hosts):
        if not isinstance(host, str) or not host:
            fail("burnin_rounds", "hosts[%d] must be a host name, got %r" % (index, host))
    return [[list(pair) for pair in pairs] for pairs in burnin.rounds(hosts)]


def _pair_results(name, results):
    expect_list_of_mappings(name, results, "a list of {a, b, busbw}")
    for index, result in enumerate(results):
        if not isinstance(result.get("a"), str) or not isinstance(result.get("b"), str):
            fail(name, "item %d needs host names a and b" % index)
        if result.get("busbw") is not None:
            number_or_none(name, "item %d busbw" % index, result["busbw"])
    return results


def _tolerance(name, tolerance):
    value = number_or_none(name, "tolerance", tolerance)
    if value is None or not 0 < value < 1:
        fail(name, "tolerance must be a number between 0 and 1, got %r" % (tolerance,))
    return value


def burnin_rank(results, tolerance=0.1):
    return burnin.rank(_pair_results("burnin_rank", results), _tolerance("burnin_rank", tolerance))


def burnin_report(pairs, tolerance=0.1, min_busbw=None, title="Burn-in: busbw of each pair"):
    """Pair runs -> {results, rank, failures, markdown, svg} (see burnin_report.yml)."""
    expect_list_of_mappings("burnin_report", pairs, "a list of pair runs {a, b, round, rc, output}")
    for index, pair in enumerate(pairs):
        if not isinstance(pair.get("a"), str) or not isinstance(pair.get("b"), str):
            fail("burnin_report", "pair %d needs host names a and b" % index)
    errors = validation.threshold_errors({"min_busbw": min_busbw})
    if errors:
        fail("burnin_report", "; ".join(errors))
    minimum = number_or_none("burnin_report", "min_busbw", min_busbw)
    results = burnin.collect(pairs, nccl_tests.parse)
    ranked = burnin.rank(results, _tolerance("burnin_report", tolerance))
    hosts = [h["host"] for h in sorted(ranked["hosts"], key=lambda h: h["host"])]
    failures = (["slow host %s" % h for h in ranked["slow_hosts"]] + ["bad link %s" % link for link in ranked["bad_links"]]
                + ["pair %s below %s GB/s" % (p, min_busbw) for p in burnin.below(results, minimum)])
    failures += ["pair %s-%s failed: %s" % (r["a"], r["b"], r["error"]) for r in results
                 if r["busbw"] is None and r["error"] and "%s-%s" % (r["a"], r["b"]) not in ranked["bad_links"]]
    svg = None
    if len(hosts) >= 2:
        svg = chart.heatmap_svg(hosts, dict(((r["a"], r["b"]), r["busbw"]) for r in results),
                                title=text.check_line("title", title),
                                marked=[(link["a"], link["b"]) for link in ranked["links"] if link["bad"]])
    return {"results": results, "rank": ranked, "failures": failures,
            "markdown": burnin.markdown(results, ranked, minimum), "svg": svg}


def burnin_search_start(hosts, expected=None, tolerance=0.15, topology=None):
    """A new search state over the hosts (burnin_search.start)."""
    expect("burnin_search_start", hosts, (list, tuple), "a list of hosts")
    return search_planner.start([str(h) for h in hosts], number_or_none("burnin_search_start", "expected", expected),
                                float(tolerance), dict(topology) if topology else None)


def burnin_search_next(state):
    """{state, tests}: the next round's disjoint groups ([] when done)."""
    expect("burnin_search_next", state, (Mapping,), "a burn-in search state")
    state = copy.deepcopy(dict(state))
    tests = search_planner.next_round(state)
    return {"state": state, "tests": tests}


def burnin_search_record(state, outputs):
    """The round's nccl-tests outputs ({test id: text, or None when it did not run}) -> the next state.

    A group's figure is its out-of-place busbw at the largest size; a run with no table counts as failed."""
    expect("burnin_search_record", state, (Mapping,), "a burn-in search state")
    expect("burnin_search_record", outputs, (Mapping,), "a mapping of test id to nccl-tests output")
    figures = {}
    for test_id, output in outputs.items():
        figure = None
        if output:
            try:
                rows = nccl_tests.parse(output).get("rows") or []
                figure = (rows[-1].get("out_of_place") or {}).get("busbw") if rows else None
            except ValueError:
                figure = None
        figures[int(test_id)] = figure
    state = copy.deepcopy(dict(state))
    return search_planner.record(state, figures)


def burnin_search_report(state, min_busbw=None):
    """{summary, failures, markdown, rank}: what the search found and the tree it grew."""
    expect("burnin_search_report", state, (Mapping,), "a burn-in search state")
    found = search_planner.summary(state)
    minimum = number_or_none("burnin_search_report", "min_busbw", min_busbw)
    failures = (["slow host %s" % h for h in found["slow_hosts"]] + ["bad link %s" % "-".join(l) for l in found["bad_links"]]
                + ["unresolved (short as a whole, every part passed): %s" % ", ".join(u) for u in found["unresolved"]])
    if minimum is not None and found["reference"] is not None and found["reference"] < minimum:
        failures.append("the cluster's reference busbw %.1f GB/s is below %s GB/s" % (found["reference"], min_busbw))
    lines = ["# Burn-in (search strategy)", "",
             "%d hosts, %d group runs in %d rounds; reference busbw %s GB/s (%s)." % (
                 len(state["hosts"]), found["runs"], found["rounds"],
                 "%.1f" % found["reference"] if found["reference"] is not None else "-",
                 "the baseline" if state.get("expected") is not None else "the median of the first round's groups"),
             "", "## Search tree", "", "```"] + found["tree_lines"] + ["```", ""]
    lines.append("%s: %d hosts, %d group runs in %d rounds%s" % (
        "PASSED" if not failures else "FAILED", len(state["hosts"]), found["runs"], found["rounds"],
        "" if not failures else " - " + "; ".join(failures)))
    return {"summary": found, "failures": failures, "markdown": "\n".join(lines) + "\n", "svg": None,
            "rank": {"cluster_median_busbw": found["reference"]}}


SEARCH_STEPS = {"start": burnin_search_start, "next": burnin_search_next, "record": burnin_search_record,
                "report": burnin_search_report}


def burnin_search(value, step, *args, **kwargs):
    """One step of the burn-in search: start (hosts), next (state), record (state, outputs), report (state)."""
    if step not in SEARCH_STEPS:
        raise ValueError("step must be one of %s, got %r" % (", ".join(sorted(SEARCH_STEPS)), step))
    return SEARCH_STEPS[step](value, *args, **kwargs)


def threshold_errors(values):
    """{'nccl_tests_min_busbw': '350', 'nccl_tests_min_busbw_by_size': {...}} -> [] or the sentences naming each bad one."""
    return validation.threshold_errors(expect("threshold_errors", values, (Mapping,), "a mapping of threshold name to value"))


class FilterModule(object):
    def filters(self):
        return filters({
            "nccl_tests_collect": nccl_tests_collect, "nccl_tests_judge": nccl_tests_judge,
            "nccl_tests_summary": nccl_tests_summary, "bandwidth_svg": bandwidth_svg,
            "mpirun_env_args": mpirun_env_args, "pair_hosts": pair_hosts, "perftest_judge": perftest_judge,
            "perftest_summary": perftest_summary, "slurm_job_runs": slurm_job_runs,
            "baseline_notes": baseline_notes,
            "burnin_search": burnin_search,
            "slurm_job_errors": slurm_job_errors, "burnin_report": burnin_report, "slurm_hostlist": slurm_hostlist,
            "slurm_jobs_report": slurm_jobs_report, "burnin_rounds": burnin_rounds, "burnin_rank": burnin_rank,
            "threshold_errors": threshold_errors,
        })
