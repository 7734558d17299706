# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A running job that runs slow: the stragglers the NCCL Inspector shows (judge/stragglers.py), each joined with the
health of its node (judge/suspects.py, the join hang.yml uses), as slow.yml reports them.

``slow_report`` takes the stragglers' verdict, the health check of each straggler's node, the map from the names the
Inspector wrote (each process's host name) to inventory hosts, and what each node asked said about its dumps; it says
per straggler ``hardware`` (its node has a finding - its own GPU's and NIC's first: clocks held down, ECC, a PCIe link
trained down, a port's counters, a link's errors; handed to the decider), ``application`` (the node's check read
everything and found nothing: named, never drained) or ``unknown`` (never drained, never cleared). The job's verdict
is the stragglers' (``stragglers``, ``agree``, ``unknown``); a node whose dumps could not be read makes an ``agree``
``unknown``: ranks not read are not ranks that agree. Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.report import markdown_table
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import stragglers, suspects

# What the report keeps of each judged communicator.
_COMM_KEYS = ("id", "name", "n_ranks", "nnodes", "ranks_seen", "ranks_missing", "compared", "partial", "verdict", "late",
              "source", "ranks")
_BUS_RE = re.compile(r"^(?:[0-9a-fA-F]{4})?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?$")


def gpu_target(bus_id):
    """nvidia-smi's '00000000:3B:00.0' -> '0000:3b:00', as a health finding's target names the GPU; else None."""
    match = _BUS_RE.match(str(bus_id or ""))
    return match.group(1).lower() if match else None


def host_map(read, addresses=None):
    """{name the Inspector wrote: inventory host}: ``addresses`` (hang_addresses: facts' names and addresses) first,
    else the one node whose own dumps named it (a name two nodes read - shared storage - is left to ``addresses``)."""
    seen = {}
    for item in read or []:
        for name in item.get("hostnames") or []:
            seen.setdefault(name, set()).add(item.get("node"))
    mapped = dict((name, owners.pop()) for name, owners in seen.items() if len(owners) == 1)
    mapped.update(addresses or {})
    return mapped


def _unread(read):
    return ["%s: %s" % (item.get("node"), item.get("msg") or "its dumps could not be read")
            for item in read or [] if not item.get("read")]


def slow_report(judged, health=None, addresses=None, job=None, read=None):
    """See the module docstring. ``judged``: nccl_stragglers' result; ``health``: {inventory host: node_health result};
    ``addresses``: {name or address: inventory host}; ``read``: [{node, read, msg, hostnames, files}] per node asked."""
    names = host_map(read, addresses)
    report = {"job": job, "read": list(read or []), "rules": judged.get("rules"), "dropped": judged.get("dropped") or {},
              "problems": judged.get("problems") or [], "suspects": [],
              "stragglers_left_out": judged.get("stragglers_left_out") or 0,
              "communicators": [dict((k, c.get(k)) for k in _COMM_KEYS) for c in judged.get("communicators") or []],
              "slow_communicators": judged.get("slow_communicators") or []}
    for straggler in judged.get("stragglers") or []:
        host = names.get(straggler.get("node")) or straggler.get("node")
        focus = [gpu_target(straggler.get("gpu_bus_id"))] + list(straggler.get("nics") or [])
        report["suspects"].append(suspects.judge_suspect(straggler, host, health, focus))
    verdict, summary = judged.get("verdict") or "unknown", judged.get("summary") or ""
    unread = _unread(read)
    if report["suspects"]:
        counts = suspects.verdict_counts(report["suspects"])
        summary = "%d straggler(s): %d with a hardware finding, %d without (the application), %d unknown" % (
            len(report["suspects"]), counts["hardware"], counts["application"], counts["unknown"])
    elif verdict == "agree" and unread:
        verdict, summary = "unknown", "the ranks read agree, but not every node's dumps were read: %s" % "; ".join(
            unread[:4])
    if unread and report["suspects"]:
        summary += "; not read: %s" % "; ".join(unread[:4])
    report.update(verdict=verdict, summary=summary)
    return report


def _figure(value, digits=0):
    return None if value is None else round(value, digits) if digits else int(round(value))


def render_markdown(report):
    """The report as Markdown: the verdict, the nodes read, each straggler with its node's findings, the
    communicators compared."""
    title = "# gpufabric.rdma slow-job report%s" % (" - job %s" % report["job"] if report.get("job") else "")
    lines = [title, "", "**%s**: %s" % (str(report.get("verdict")).upper(), report.get("summary")), ""]
    for item in report.get("read") or []:
        lines.append("- %s: %s" % (item.get("node"), "%d file(s) read" % len(item.get("files") or [])
                                   if item.get("read") else item.get("msg") or "not read"))
    if report.get("suspects"):
        lines += ["", "## Stragglers", ""]
        lines += markdown_table(
            ["rank", "node", "GPU", "NIC", "kind", "late share", "wait us", "verdict", "node findings"],
            [[s.get("rank"), s.get("host"), s.get("nvml_gpu") if s.get("nvml_gpu") is not None else s.get("gpu"),
              ", ".join(s.get("nics") or []) or None, s.get("kind"), s.get("late_share"), _figure(s.get("wait_us")),
              s["verdict"], "; ".join("%s: %s" % (f.get("check"), f.get("detail")) for f in s["hardware"][:3]) or None]
             for s in report["suspects"]])
        lines += [""] + ["- " + s["line"] for s in report["suspects"]]
    if report.get("communicators"):
        lines += ["", "## Communicators", ""]
        lines += markdown_table(["communicator", "ranks read", "compared", "verdict", "late ranks"], [
            [stragglers.comm_label(c), "%s of %s" % (c.get("ranks_seen"), c.get("n_ranks")), c.get("compared"),
             c.get("verdict"), ", ".join(str(r) for r in c.get("late") or []) or None]
            for c in report["communicators"]])
    dropped = dict((k, v) for k, v in sorted((report.get("dropped") or {}).items()) if v)
    if dropped or report.get("problems"):
        lines += ["", "## Left out", ""]
        lines += ["- %s: %d" % (key, value) for key, value in dropped.items()]
        lines += ["- %s" % problem for problem in report.get("problems") or []]
    return "\n".join(lines) + "\n"
