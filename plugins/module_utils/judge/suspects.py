# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A rank a job singles out, joined with the health of its node: the one join of hang.yml (judge/hang.py, a rank
NCCL's RAS names in a job that stopped) and slow.yml (judge/stragglers.py, a rank the NCCL Inspector shows late or
slow in a job that runs).

``judge_suspect`` takes the suspect (its rank, kind, why, GPU, process), the inventory host it runs on and the health
checks of the suspects' nodes (node_health's result, or why it could not run), and says:

- ``hardware``: its node has a finding (Xid, ECC, a GPU's clocks held down, a PCIe link trained down, a port down or
  its counters rising, a link's errors) - the findings of the suspect's own GPU and NIC first. Only these are handed
  to the decider.
- ``application``: the node's check read every source and found nothing. Named, never drained.
- ``unknown``: the check could not run or not read everything, or the node is not in the inventory. Unknown is not
  healthy and not faulty: named, never drained, never cleared. Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import rank as severity_rank

# Findings that speak of the node's hardware, firmware or configuration (not the job): every health finding is one.
HARDWARE_SEVERITIES = ("critical", "warning")
VERDICTS = ("hardware", "application", "unknown")


def node_health(health, host, focus=()):
    """(findings that count, complete, why not known) of one node's check result; a finding whose target names one
    of ``focus`` (the suspect's GPU bus id, its NIC) comes first, then by severity."""
    result = (health or {}).get(host)
    if result is None:
        return [], False, "no health check of %s (not in the inventory, or not reached)" % host
    if result.get("failed") or result.get("unreachable"):
        return [], False, "the health check of %s could not run: %s" % (host, result.get("msg") or "unreachable")
    focus = [str(item).lower() for item in focus or () if item]

    def order(found):
        target = str(found.get("target") or "").lower()
        return (0 if any(item in target for item in focus) else 1, severity_rank(found.get("severity")),
                found.get("check") or "", found.get("target") or "")
    found = sorted((f for f in result.get("findings") or [] if f.get("severity") in HARDWARE_SEVERITIES), key=order)
    unread = result.get("unreadable") or []
    return found, bool(result.get("complete", not unread)), "; ".join(unread) if unread else None


def where(suspect, host):
    """'rank 1 behind on node gpu02, GPU 1' (or 'process 4242 ...' where NCCL named no rank)."""
    rank = "rank %s" % suspect["rank"] if suspect.get("rank") is not None else "process %s" % suspect.get("pid")
    gpu = ", GPU %s" % suspect["nvml_gpu"] if suspect.get("nvml_gpu") is not None else ""
    return "%s %s on node %s%s" % (rank, suspect.get("kind") or "singled out", host, gpu)


def judge_suspect(suspect, host, health, focus=()):
    """One suspect with its node's findings -> the suspect with host, verdict, hardware, health_complete, line."""
    found, complete, unread = node_health(health, host, focus)
    entry = dict(suspect, host=host, hardware=found, health_complete=complete)
    place = where(suspect, host)
    if found:
        shown = "; ".join("%s %s" % (f.get("check"), f.get("detail")) for f in found[:3])
        entry.update(verdict="hardware", line="%s (%s); node %s: %s" % (place, suspect.get("why"), host, shown))
    elif complete:
        entry.update(verdict="application", line="%s (%s); no hardware finding on %s: look at the application" % (
            place, suspect.get("why"), host))
    else:
        entry.update(verdict="unknown", line="%s (%s); node %s not known healthy: %s" % (
            place, suspect.get("why"), host, unread or "its health check did not read every source"))
    return entry


def verdict_counts(suspects):
    """{hardware: n, application: n, unknown: n} of judged suspects."""
    return dict((v, sum(1 for s in suspects if s.get("verdict") == v)) for v in VERDICTS)
