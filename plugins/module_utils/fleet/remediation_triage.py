# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The decider's plan, phase 8 (triage): one decision per reported node, and which of them may drain or resume.

A node with a drain-worthy finding that is not drained is a drain candidate; one gpufabric drained that no finding
holds is a resume candidate; every other node's decision is made here (already drained, someone else's drain, a
record missing, in service). The drains and resumes are weighed against the limits by remediation_drains and
remediation_resumes. A drain for a change to carry out (MAINTENANCE) is said here and there.

Pure: the phase reads its arguments only (remediation_counts says what ``ctx`` holds).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import LEDGER_ANNOTATION
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import finding_key

# Findings a drain carries out rather than waits out: a change that needs the node out of service (NIC firmware settings
# take effect at a firmware reset). The node stays drained until the change is made and its check no longer reports it.
MAINTENANCE = {"nic_firmware_settings": "the NIC firmware settings"}


def serious(findings):
    """Whether a report holds a warning or critical finding."""
    return any(f["severity"] in ("critical", "warning") for f in findings)


def maintenance(keys, entry, shadow):
    """What the decision says when every finding in ``keys`` (those holding a node gpufabric drained) is a change to
    carry out (MAINTENANCE): {why} - and ``maintain``, the findings, once no job runs on the node; None otherwise."""
    still = sorted(keys)
    if not still or not all(k.split("|", 1)[0] in MAINTENANCE for k in still):
        return None
    what = "%s (%s)" % (MAINTENANCE[still[0].split("|", 1)[0]], ", ".join(k.split("|", 1)[1] for k in still[:3]))
    if shadow:
        return {"why": "shadow mode: would change %s once the node is drained and idle" % what}
    if entry.get("idle"):
        return {"maintain": still, "why": "stays drained: %s to change now that no job runs on it: remediate.yml "
                "sets them, resets the NIC and certifies the node" % what}
    return {"why": "stays drained: %s wait for the jobs still on it to end" % what}


def new_decision(node, report, causes, ctx):
    """A decision that changes nothing yet: {node, action, held, why, reason, escalated, findings, shadow, policy,
    via, certify, healthy, maintain, rack} (remediation.plan's docstring says what each means)."""
    return {"node": node, "action": "none", "held": False, "why": "", "reason": None, "escalated": False,
            "findings": [finding_key(f) for f in causes], "shadow": ctx.shadow, "policy": ctx.policy,
            "via": report.get("source", "timer"), "certify": False, "healthy": False, "maintain": [], "rack": None}


def sort_node(report, causes, entry, state, shadow):
    """(where the node goes: "drain", "resume" or None, what its decision says now). ``state``: the node's
    (drained, ours, since, reason) as count_fleet saw it."""
    drained, ours, _since, reason = state
    if causes and not drained:
        return "drain", {}
    if causes and ours:
        said = maintenance(set(finding_key(f) for f in causes), entry, shadow)
        return None, said or {"why": "already drained by gpufabric (%s)" % reason}
    if drained and not ours:
        return None, {"why": "drained by someone else (%s): gpufabric leaves it as it is" % (entry.get("reason") or "no reason")}
    if ours and entry.get("record_missing"):
        return None, {"why": "stays drained: the record of gpufabric's drain (annotation %s) is missing or damaged, so "
                             "what drained it and how often are unknown: a human must resume it" % LEDGER_ANNOTATION}
    if ours:
        return "resume", {}
    if not report["complete"]:
        return None, {"why": "in service; the check was incomplete (%s)" % ("; ".join(report["unreadable"]) or "a source")}
    return None, {"why": "in service, nothing asks for a drain", "healthy": not serious(report["findings"])}


def triage(reports, fleet, causes_of, states, ledger, ctx):
    """Phase 8: (decisions, drains, resumes). decisions: one per reported node, by name; drains: [(decision, causes)]
    for the drain candidates; resumes: [(decision, record, entry, reason)] for the resume candidates (record: the
    node's ledger record, or a new empty one). ``states``: Counts.effective. The ledger is read, not changed."""
    decisions, drains, resumes = [], [], []
    for node in sorted(reports):
        report, causes = reports[node], causes_of[node]
        decision = new_decision(node, report, causes, ctx)
        decisions.append(decision)
        entry = fleet.get(node)
        if entry is None:
            decision["why"] = "the scheduler does not know this node"
            continue
        where, said = sort_node(report, causes, entry, states[node], ctx.shadow)
        decision.update(said)
        if where == "drain":
            drains.append((decision, causes))
        elif where == "resume":
            resumes.append((decision, ledger["nodes"].get(node) or {}, entry, states[node][3]))
    return decisions, drains, resumes
