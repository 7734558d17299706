# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""slow.yml's reports (judge/slow_job.py) as metric families, per rank, so a dashboard shows a rank drifting from one
run of slow.yml to the next (AWX schedules it): how often each rank came last, how long the others waited for it,
its collectives' time and bus bandwidth, with the job's verdict and each straggler. Labels: ``job``, ``comm`` (the
communicator's name, else its hash), ``rank`` (empty from Prometheus textfiles, which carry none), ``node`` (the host
the Inspector wrote), ``gpu``. A figure the report does not have is left out, never written as 0. Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import stragglers
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import metrics

PREFIX = metrics.PREFIX + "slow_"
# Ranks written per report at most (a 10,000-rank job is read by its stragglers, not by every rank's series).
MAX_RANKS = 4096
_RANK_FIGURES = (
    ("rank_late_ratio", "late_share", 1.0,
     "The share of a communicator's collectives compared at which this rank came last, the others waiting for it."),
    ("rank_wait_seconds", "wait_us", 1e-6,
     "How long the others waited for this rank at the collectives it came last to (median, seconds)."),
    ("rank_collective_seconds", "exec_us", 1e-6,
     "This rank's execution time of its communicator's collectives (median, seconds, the Inspector's GPU timing)."),
    ("rank_busbw_gigabytes_per_second", "busbw", 1.0,
     "This rank's bus bandwidth of its communicator's collectives (median, GB/s, as the Inspector computes it)."),
)


def _scaled(value, factor):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value * factor


def _rank_samples(reports, cluster):
    out = dict((name, []) for name, key, factor, text in _RANK_FIGURES)
    written = 0
    for report in reports:
        job = str(report.get("job") or "")
        for comm in report.get("communicators") or []:
            for row in comm.get("ranks") or []:
                if written >= MAX_RANKS:
                    return out
                written += 1
                labels = {"cluster": cluster, "job": job, "comm": stragglers.comm_label(comm),
                          "rank": "" if row.get("rank") is None else str(row["rank"]),
                          "node": str(row.get("host") or ""), "gpu": str(row.get("gpu") or "")}
                for name, key, factor, text in _RANK_FIGURES:
                    value = _scaled(row.get(key), factor)
                    if value is not None:
                        out[name].append((labels, round(value, 9)))
    return out


def slow_families(reports, cluster, run_time):
    """The reports' metric families: run time, verdict per job, each straggler, each rank's figures."""
    base = {"cluster": cluster}
    reports = [r for r in reports if r.get("verdict") in stragglers.VERDICTS]
    verdicts, named = [], []
    for report in reports:
        job = str(report.get("job") or "")
        verdicts.append((dict(base, job=job, verdict=str(report["verdict"])), 1))
        for suspect in report.get("suspects") or []:
            gpu = suspect.get("nvml_gpu") if suspect.get("nvml_gpu") is not None else suspect.get("gpu") or ""
            named.append((dict(base, job=job, comm=str(suspect.get("comm_name") or suspect.get("comm") or ""),
                               rank="" if suspect.get("rank") is None else str(suspect["rank"]),
                               node=str(suspect.get("host") or ""), gpu=str(gpu),
                               nic=",".join(suspect.get("nics") or []), kind=str(suspect.get("kind")),
                               verdict=str(suspect.get("verdict"))), 1))
    ranks = _rank_samples(reports, cluster)
    families = [
        metrics.family(PREFIX + "run_timestamp_seconds", "gauge", "When slow.yml read the job (epoch seconds): the "
                       "collector takes no timestamps, so this dates every figure beside it.", [(base, run_time)]),
        metrics.family(PREFIX + "verdict", "gauge", "1 for the verdict on a running job: stragglers, agree, or unknown "
                       "(too little read, or a node's dumps not read).", _unique(verdicts)),
        metrics.family(PREFIX + "straggler", "gauge", "1 for each rank the NCCL Inspector shows late or slow, with its "
                       "node, GPU, NIC, kind (late, slow) and its node's verdict (hardware, application, unknown).",
                       _unique(named)),
    ]
    families += [metrics.family(PREFIX + name, "gauge", text, _unique(ranks[name]))
                 for name, key, factor, text in _RANK_FIGURES]
    return families


def _unique(samples):
    """One sample per label set (node_exporter refuses two): the last one kept."""
    seen = {}
    for labels, value in samples:
        seen[tuple(sorted(labels.items()))] = (labels, value)
    return list(seen.values())
