# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that judge and draw nccl-tests runs (thin wrappers over module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.rdma.plugins.module_utils import burnin, chart, nccl_tests, slurm, validation


def nccl_tests_collect(single_by_host, mpirun_results=None, hosts=None, gpus_by_host=None):
    if not isinstance(single_by_host, dict):
        raise AnsibleFilterError("gpufabric.rdma.nccl_tests_collect expects a mapping of host to registered results")
    return validation.collect_runs(single_by_host, mpirun_results, hosts, gpus_by_host)


def nccl_tests_judge(runs, min_busbw=None, min_busbw_by_size=None, max_wrong=0, placement="out_of_place"):
    if not isinstance(runs, list):
        raise AnsibleFilterError("gpufabric.rdma.nccl_tests_judge expects a list of runs, got %s" % type(runs).__name__)
    try:
        return validation.judge(runs, None if min_busbw in (None, "") else float(min_busbw),
                                min_busbw_by_size or None, max_wrong, placement)
    except (TypeError, ValueError, KeyError) as exc:
        raise AnsibleFilterError("gpufabric.rdma.nccl_tests_judge: %s" % exc)


def nccl_tests_summary(judged, output="text", thresholds=None):
    if output == "markdown":
        return validation.summary_markdown(judged, thresholds)
    return validation.summary_text(judged)


def bandwidth_svg(judged, threshold=None, title="NCCL bandwidth"):
    series = [{"label": run.get("label"), "rows": run["result"].get("rows")} for run in judged]
    try:
        return chart.bandwidth_svg(series, None if threshold in (None, "") else float(threshold), title)
    except ValueError as exc:
        raise AnsibleFilterError("gpufabric.rdma.bandwidth_svg: %s" % exc)


def mpirun_env_args(env):
    """{'NCCL_IB_HCA': '=mlx5_0:1'} -> ['-x', 'NCCL_IB_HCA==mlx5_0:1']: OpenMPI exports each to every rank."""
    if not isinstance(env, dict):
        raise AnsibleFilterError("gpufabric.rdma.mpirun_env_args expects a dict, got %s" % type(env).__name__)
    args = []
    for name in sorted(env):
        args += ["-x", "%s=%s" % (name, "" if env[name] is None else env[name])]
    return args


def pair_hosts(hosts):
    if not isinstance(hosts, list):
        raise AnsibleFilterError("gpufabric.rdma.pair_hosts expects a list of hosts")
    return validation.pair_hosts(hosts)


def perftest_judge(results, min_bw_gbps=None, max_lat_us=None):
    if not isinstance(results, list):
        raise AnsibleFilterError("gpufabric.rdma.perftest_judge expects a list of results")
    return validation.judge_perftest(results, None if min_bw_gbps in (None, "") else float(min_bw_gbps),
                                     None if max_lat_us in (None, "") else float(max_lat_us))


def slurm_job_runs(jobs):
    if not isinstance(jobs, list):
        raise AnsibleFilterError("gpufabric.rdma.slurm_job_runs expects a list of finished jobs")
    return slurm.job_runs(jobs)


def burnin_rounds(hosts):
    if not isinstance(hosts, list):
        raise AnsibleFilterError("gpufabric.rdma.burnin_rounds expects a list of hosts")
    try:
        return [[list(pair) for pair in pairs] for pairs in burnin.rounds(hosts)]
    except ValueError as exc:
        raise AnsibleFilterError("gpufabric.rdma.burnin_rounds: %s" % exc)


def burnin_rank(results, tolerance=0.1):
    if not isinstance(results, list):
        raise AnsibleFilterError("gpufabric.rdma.burnin_rank expects a list of {a, b, busbw}")
    return burnin.rank(results, float(tolerance))


def burnin_report(pairs, tolerance=0.1, min_busbw=None, title="Burn-in: busbw of each pair"):
    """Pair runs -> {results, rank, failures, markdown, svg} (see burnin_report.yml)."""
    if not isinstance(pairs, list):
        raise AnsibleFilterError("gpufabric.rdma.burnin_report expects a list of pair runs {a, b, round, rc, output}")
    minimum = None if min_busbw in (None, "") else float(min_busbw)
    results = burnin.collect(pairs, nccl_tests.parse)
    ranked = burnin.rank(results, float(tolerance))
    hosts = [h["host"] for h in sorted(ranked["hosts"], key=lambda h: h["host"])]
    failures = (["slow host %s" % h for h in ranked["slow_hosts"]] + ["bad link %s" % link for link in ranked["bad_links"]]
                + ["pair %s below %s GB/s" % (p, min_busbw) for p in burnin.below(results, minimum)])
    svg = None
    if len(hosts) >= 2:
        svg = chart.heatmap_svg(hosts, dict(((r["a"], r["b"]), r["busbw"]) for r in results), title=title,
                                marked=[(link["a"], link["b"]) for link in ranked["links"] if link["bad"]])
    return {"results": results, "rank": ranked, "failures": failures,
            "markdown": burnin.markdown(results, ranked, minimum), "svg": svg}


def slurm_jobs_report(finished):
    if not isinstance(finished, list):
        raise AnsibleFilterError("gpufabric.rdma.slurm_jobs_report expects a list of finished jobs")
    return slurm.jobs_report(finished)


def slurm_hostlist(expression):
    try:
        return slurm.expand_hostlist(expression or "")
    except slurm.SlurmParseError as exc:
        raise AnsibleFilterError("gpufabric.rdma.slurm_hostlist: %s" % exc)


def perftest_summary(judged):
    return validation.perftest_markdown(judged)


class FilterModule(object):
    def filters(self):
        return {"nccl_tests_collect": nccl_tests_collect, "nccl_tests_judge": nccl_tests_judge, "nccl_tests_summary": nccl_tests_summary,
                "bandwidth_svg": bandwidth_svg, "mpirun_env_args": mpirun_env_args,
                "pair_hosts": pair_hosts, "perftest_judge": perftest_judge, "perftest_summary": perftest_summary,
                "slurm_job_runs": slurm_job_runs, "burnin_report": burnin_report, "slurm_hostlist": slurm_hostlist,
                "slurm_jobs_report": slurm_jobs_report, "burnin_rounds": burnin_rounds, "burnin_rank": burnin_rank}
