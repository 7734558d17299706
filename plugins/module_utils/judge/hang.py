# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A hung job's culprit: NCCL's RAS status (parse/nccl_ras.py) joined with the health of each suspect's node.

``hang_report`` takes what the nodes of a job answered (the first that answered, in the order asked), the health
check of each suspect node (node_health's result, or why it could not run) and the map from the addresses NCCL names
nodes by to inventory hosts, and says per suspect rank:

- ``hardware``: its node has a finding (Xid, ECC, a port down, a link, a counter rising): "rank 1 behind on node X,
  GPU 1; node X: Xid 79 ...". Only these are handed to the decider (by the node's own health monitor, which
  reports the same findings as always; the decider drains within its limits, with evidence).
- ``application``: the node's check read every source and found nothing: "no hardware finding on X: look at the
  application (rank 1 behind: ...)". Never drained, only named.
- ``unknown``: the node's check could not run or not read everything, or the node is not in the inventory.
  Unknown is not healthy and not faulty: named, never drained, never cleared.

The job's verdict is ``healthy`` (a node answered, no communicator in trouble), ``suspects``, ``trouble`` (NCCL
reports a problem but singles out no rank) or ``unknown`` (no node answered: each node asked and why not). Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.report import markdown_table
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import suspects

# The join of a suspect with its node's health is judge/suspects.py's, shared with slow.yml's stragglers.
HARDWARE_SEVERITIES = suspects.HARDWARE_SEVERITIES
VERDICTS = ("healthy", "suspects", "trouble", "unknown")
judge_suspect = suspects.judge_suspect


def hang_report(status, asked, health=None, addresses=None, job=None):
    """See the module docstring. ``status``: parse_nccl_ras's result of the node that answered, or None;
    ``asked``: [{node, answered, stage, kind, msg}] in the order asked; ``health``: {host: node_health result};
    ``addresses``: {address or name NCCL printed: inventory host}."""
    addresses = addresses or {}
    answered = next((a for a in asked or [] if a.get("answered")), None)
    report = {"job": job, "asked": list(asked or []), "answered_by": answered.get("node") if answered else None,
              "nccl_version": (status or {}).get("nccl_version"), "suspects": [], "communicators": [],
              "complete": bool(status and status.get("complete"))}
    if status is None:
        report["verdict"] = "unknown"
        report["summary"] = "no node of the job answered on NCCL's RAS port: %s" % ("; ".join(
            "%s %s" % (a.get("node"), a.get("msg") or a.get("kind")) for a in asked or []) or "no node was asked")
        return report
    report["communicators"] = [{"id": c["id"], "hash": c["hash"], "problem": c["problem"], "reasons": c["reasons"]}
                               for c in status.get("communicators") or [] if c.get("problem")]
    for suspect in status.get("suspects") or []:
        host = addresses.get(suspect.get("node")) or suspect.get("node")
        report["suspects"].append(judge_suspect(suspect, host, health))
    if report["suspects"]:
        report["verdict"] = "suspects"
        counts = suspects.verdict_counts(report["suspects"])
        report["summary"] = "%d suspect(s): %d with a hardware finding, %d without (the application), %d unknown" % (
            len(report["suspects"]), counts["hardware"], counts["application"], counts["unknown"])
    elif report["communicators"]:
        report["verdict"] = "trouble"
        report["summary"] = "NCCL reports %d communicator(s) in trouble but singles out no rank: %s" % (
            len(report["communicators"]), "; ".join(" ".join(c["reasons"][:1]) or c["problem"]
                                                    for c in report["communicators"]))
    else:
        report["verdict"] = "healthy"
        report["summary"] = "NCCL sees every communicator of the job running, no rank behind, none missing"
    if status.get("suspects_left_out"):
        report["summary"] += " (%d more suspects not listed)" % status["suspects_left_out"]
    return report


def address_map(hosts):
    """[hostvars of a host] -> {address or name: inventory host}; see the hang_addresses filter. The addresses are
    the gathered facts' and ``gpufabric_node_addresses`` (hang.yml reads them with hostname -I where the facts have
    none)."""
    claimed = {}
    for host in hosts:
        name = host.get("inventory_hostname")
        if not name:
            continue
        facts = host.get("ansible_facts") or {}
        names = [name, host.get("ansible_host"), facts.get("hostname"), facts.get("fqdn"), facts.get("nodename")]
        names += list(facts.get("all_ipv4_addresses") or []) + list(facts.get("all_ipv6_addresses") or [])
        names += list(host.get("gpufabric_node_addresses") or [])
        for value in names:
            if not value or not isinstance(value, str) or value.startswith("127.") or value in ("::1", "localhost"):
                continue
            claimed.setdefault(value, set()).add(name)
    return dict((value, owners.pop()) for value, owners in sorted(claimed.items()) if len(owners) == 1)


def render_markdown(report):
    """The report as Markdown: the verdict, who answered, each suspect with its node's findings."""
    title = "# gpufabric.rdma hang report%s" % (" - job %s" % report["job"] if report.get("job") else "")
    lines = [title, "", "**%s**: %s" % (report["verdict"].upper(), report["summary"]), ""]
    if report.get("answered_by"):
        lines.append("Answered by %s (NCCL %s)." % (report["answered_by"], report.get("nccl_version") or "?"))
    for item in report.get("asked") or []:
        if not item.get("answered"):
            lines.append("- %s did not answer: %s" % (item.get("node"), item.get("msg") or item.get("kind")))
    if report.get("suspects"):
        lines += ["", "## Suspects", ""]
        lines += markdown_table(["rank", "node", "GPU", "process", "why", "verdict", "node findings"], [
            [s.get("rank"), s.get("host"), s.get("nvml_gpu"), s.get("pid"), s.get("why"), s["verdict"],
             "; ".join("%s: %s" % (f.get("check"), f.get("detail")) for f in s["hardware"]) or None]
            for s in report["suspects"]])
        lines += [""] + ["- " + s["line"] for s in report["suspects"]]
    if report.get("communicators"):
        lines += ["", "## Communicators in trouble", ""]
        lines += ["- %s (%s) %s: %s" % (c["id"], c["hash"], c["problem"], "; ".join(c["reasons"]) or "-")
                  for c in report["communicators"]]
    return "\n".join(lines) + "\n"
