# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""One decider per cluster: from the nodes' reports to drains and resumes, as pure decisions.

Nodes detect and report; one decider per cluster (the remediator service on the Slurm controller,
or the remediate playbook, both through ``decider.py``) reads the whole fleet from the scheduler and
calls ``plan`` with every report it holds. ``plan`` never runs a command and never reads a clock:
``now`` is the scheduler's clock (slurmctld's, read by ``sdiag``), and every limit is counted from the
scheduler's own records (our drains in effect and the times slurmctld stamped on them) plus the
decider's ledger (resumes, the findings recorded at each drain, the remediation history).

A policy maps each finding (check, severity) to ``drain``, ``notify`` (the default) or ``none``.
Governance, in the order it is applied:

- **shadow mode** (``mode: shadow``, the default): every decision is made, recorded and posted, and
  nothing is done; the ledger keeps the shadow drains so the limits behave as they would for real;
- **circuit breaker**: when more than ``circuit_breaker.max_percent`` of a partition is unhealthy
  (drained by us, or reported a drain-worthy finding within ``circuit_breaker.window``), nothing in
  that partition is drained or resumed; the decider keeps reporting and alerts a human;
- **rate limit**: at most ``max_nodes`` new drains per ``interval`` and at most ``max_percent`` of a
  partition drained by us at once (at least one node when the percentage is above 0); at most
  ``max_resumes`` resumes per ``interval`` over the cluster;
- **escalation**: a node drained more than ``escalation.max_remediations`` times in
  ``escalation.days`` days is drained as ESCALATED and never resumed automatically;
- **fail closed**: a resume needs a fresh, complete report (every source read; a report is decided
  the moment it arrives, never from memory) in which every finding recorded at the drain has cleared,
  whatever the policy says now; a node an admin (or anyone but gpufabric) drained is never touched;
- **the rack is the unit** (``rack``, racks.py): when ``rack.min_nodes`` trays of one NVLink rack report a fabric
  finding the policy drains for within ``rack.window``, the rack's nodes drain together or none does, as one action
  against the rate limit and the breaker, and the decision names the rack and, where the trays' findings agree, the
  switch side; they return together, each certified with ``rack.certify`` (IMEX up, an NVLink-domain run) too;
- **certified**: and (``certification.required``, the default) a return-to-service certificate recorded after
  the drain and younger than ``certification.max_age``, in which every active check the policy names passed
  (certificate.py); a node that lacks one stays drained and its decision says ``certify``: the check to start.
  A resume records the certificate and the time from drain to resume (``mttr``).

The policy and the decider's configuration are checked in policy.py; the ledger (its checks, reconcile, confirmed,
rebuild) is ledger.py's. ``plan`` is a pipeline of named pure phases, each tested alone: remediation_counts.py (the
open intents, a rebuild's holds, the findings that ask for a drain, the fleet's counts, the certificates, the
breaker; after the decisions, held causes and bounded history), remediation_racks.py (the racks: what the nodes said
of them, their events, their nodes as one drain or one resume), remediation_triage.py (one decision per node),
remediation_drains.py and remediation_resumes.py. Planning is O(N log N) in the number of nodes (counters per
partition, one sort of the candidates).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_counts as counts
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_racks as racks
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import findings_from_reason
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.racks import RACK_FINDING
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_drains import plan_drains
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_resumes import plan_resumes
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_triage import triage

# At most this many past drains and resumes are kept per node (forget_old's bound).
HISTORY = counts.HISTORY


def plan(reports, fleet, ledger, settings, now, decider="gpufabric-remediator", certificates=None):
    """Decide for every reported node at once.

    reports: {node: report (check_report's shape)}: the nodes decided for this time (a batch), each
             report just received (it is never kept to decide later: a resume needs a fresh one).
    fleet:   {node: {"partitions": [...], "drained": bool, "reason": str|None, "reason_time": epoch|None}}
             for every node of the scheduler: the limits are counted over all of them.
    ledger:  the decider's record (empty_ledger() the first time); not changed in place.
    settings: check_config's result.  now: the scheduler's clock, epoch seconds.
    certificates: {node: certificate.check_certificate's result}: active checks made since the drain, recorded
             (stamped ``now``) on the nodes gpufabric drained; any other node's is ignored (result "certificates").

    Returns {"decisions": [...], "ledger": the new ledger, "breaker": {open, opened, closed, shares},
             "certificates": {node: "recorded" or why not}, "reconciled": {confirmed, dropped}}. Each decision: {node,
    action: drain|resume|none, held (a limit or the breaker stopped it), newly_held (held by a cause not told
    before), why, reason (for a drain), findings (keys), escalated, shadow, policy, via, certify (it stays drained
    only for want of a certificate: the active check to start), healthy (in service, a complete report, no critical
    or warning finding: a peer for a pairwise check), maintain (the MAINTENANCE findings to carry out on a node
    drained for them, idle and in no other need: what remediate.yml changes), evidence (a drain's bundle), rack (the
    rack whose decision drained, held or resumed the node, else None), and for a resume certificate, mttr}. A node of
    a rack that did not report gets a decision when its rack drains or returns with it.

    The phases, in order, each a pure function named for what it does (remediation_counts, _triage, _drains,
    _resumes; their docstrings number them): the open intents settled, a rebuilt ledger's holds, the findings the
    policy drains for, the racks (what their nodes said, their events), the fleet counted, the certificates recorded,
    the resumes within the interval, the circuit breaker, one decision per node, the racks' nodes gathered, the
    drains, the resumes, the causes held back by, the history bounded.
    """
    ctx = counts.context(settings, now, decider)
    ledger, reconciled = counts.settle_intents(ledger, fleet)
    holds = counts.rebuilt_holds(ledger, now)
    causes_of = counts.drain_causes(reports, fleet, ledger, ctx)
    view = racks.rack_view(reports, fleet, causes_of, ledger, ctx)
    counted = counts.count_fleet(fleet, ledger, ctx, view.units)
    taken = counts.take_certificates(certificates, counted.effective, ledger, ctx)
    resumes_recent = counts.recent_resumes(ledger, ctx)
    breaker = counts.trip_breaker(counted, ledger, ctx)
    decisions, drains, resumes = triage(reports, fleet, causes_of, counted.effective, ledger, ctx)
    drains, resumes = racks.gather(decisions, drains, resumes, fleet, view, counted.effective, ledger, ctx)
    plan_drains(drains, fleet, counted, breaker, holds, ledger, ctx)
    plan_resumes(resumes, reports, breaker, holds, resumes_recent, ledger, ctx)
    counts.mark_held(decisions, ledger)
    counts.forget_old(ledger, ctx)
    return {"decisions": decisions, "ledger": ledger, "breaker": breaker, "certificates": taken, "reconciled": reconciled}


def summary(result):
    """Counts for a log line: {'drain': n, 'resume': n, 'held': n, 'none': n}."""
    counts = {"drain": 0, "resume": 0, "held": 0, "none": 0}
    for decision in result["decisions"]:
        counts["held" if decision["held"] else decision["action"]] += 1
    return counts


def _check_target(keys):
    check, _sep, target = (keys[0] if keys else "remediation|").partition("|")
    return check, target


def messages(result, scheduler):
    """What the decider tells the webhooks about one batch: [{status, node, check, target, severity, detail,
    action, policy}]. Drains, resumes, escalations and failures one each; nodes newly held back by the same
    cause in one message (a fleet-wide alarm is one message, not one per node); breaker changes one per
    partition. Decisions that changed nothing are not told. (What the plan's reconcile confirmed is confirmed_messages':
    the decider saves it with the intents, before it acts.)"""
    out, held, by_rack = [], {}, {}
    for decision in result["decisions"]:
        if decision.get("rack") and decision["action"] in ("drain", "resume") and not decision.get("error"):
            by_rack.setdefault((decision["rack"], decision["action"]), []).append(decision)
            continue
        check, target = _check_target(decision["findings"])
        base = {"node": decision["node"], "check": check, "target": target or decision["node"],
                "severity": "critical", "detail": decision["why"], "action": decision_text(scheduler, decision),
                "policy": decision["policy"]}
        if decision.get("error"):
            out.append(dict(base, status="could-not-act", detail="%s; %s" % (decision["error"], decision["why"])))
        elif decision["action"] in ("drain", "resume"):
            status = "shadow" if decision["shadow"] else ("escalated" if decision["escalated"] else
                                                          {"drain": "drained", "resume": "resumed"}[decision["action"]])
            if decision.get("evidence"):
                base["detail"] += "; evidence: %s in the decider's evidence store, collected by the node now" % decision["evidence"]
            out.append(dict(base, status=status, severity="warning" if decision["action"] == "resume" else "critical"))
        elif decision["held"] and decision.get("newly_held"):
            held.setdefault(decision["why"].split(":", 1)[0], []).append(decision)
    for key in sorted(by_rack):
        out.append(_rack_message(key[0], by_rack[key], scheduler))
    for cause in sorted(held):
        group = sorted(held[cause], key=lambda d: d["node"])
        names = [d["node"] for d in group]
        shown = ", ".join(names[:20]) + (" and %d more" % (len(names) - 20) if len(names) > 20 else "")
        out.append({"node": names[0] if len(names) == 1 else "%d nodes" % len(names), "check": "remediation",
                    "target": shown, "severity": "warning", "status": "held", "policy": group[0]["policy"],
                    "detail": group[0]["why"], "action": "%s held back: %s" % (shown, cause)})
    for part in result["breaker"]["opened"]:
        out.append({"node": part, "check": "circuit_breaker", "target": "partition %s" % part, "severity": "critical",
                    "status": "breaker-open", "policy": None,
                    "detail": "%s%% of partition %s is unhealthy: gpufabric stops draining and resuming there, keeps "
                              "reporting, and waits for a human" % (result["breaker"]["shares"].get(part), part),
                    "action": "circuit breaker open in partition %s: a human must look" % part})
    for part in result["breaker"]["closed"]:
        out.append({"node": part, "check": "circuit_breaker", "target": "partition %s" % part, "severity": "warning",
                    "status": "breaker-closed", "policy": None,
                    "detail": "partition %s is back under the breaker's share (%s%% unhealthy)" % (
                        part, result["breaker"]["shares"].get(part, 0)),
                    "action": "circuit breaker closed in partition %s: gpufabric acts there again" % part})
    return out


def _shown(names, limit=20):
    return ", ".join(names[:limit]) + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


def _rack_message(rack, group, scheduler):
    """One message for a rack's nodes drained or resumed together (the same decision for each)."""
    first, names = group[0], [d["node"] for d in group]
    drain = first["action"] == "drain"
    escalated = [d["node"] for d in group if d.get("escalated")]
    status = "shadow" if first["shadow"] else ("drained" if drain else "resumed")
    done = decision_text(scheduler, dict(first, node=_shown(names, 8) + " together"))
    detail = first["why"].split("; ESCALATED", 1)[0]
    if escalated:
        detail += "; ESCALATED (drained more than the escalation allows; a human resumes them): %s" % _shown(escalated)
    evidence = [d["evidence"] for d in group if d.get("evidence")]
    if evidence:
        detail += "; evidence: %d bundle(s) in the decider's evidence store, collected by the nodes now" % len(evidence)
    return {"node": "rack %s" % rack, "check": RACK_FINDING, "target": "rack %s: %s" % (rack, _shown(names)),
            "severity": "critical" if drain else "warning", "status": status, "detail": detail,
            "action": done, "policy": first["policy"]}


def confirmed_messages(reconciled, scheduler):
    """A drain or resume the scheduler took while the decider died before it heard the answer, told once it is
    confirmed (ledger.reconcile: the plan's result["reconciled"])."""
    out = []
    who = {"slurm": "slurmctld", "kubernetes": "the API server"}.get(scheduler, scheduler)
    for entry in reconciled.get("confirmed") or []:
        node, drain = entry["node"], entry["action"] == "drain"
        check, target = _check_target(entry.get("findings") if drain else findings_from_reason(entry.get("reason"))[0])
        if drain:
            done = "%s %s" % ("drained" if scheduler == "slurm" else "cordoned and tainted", node)
        elif not entry.get("now"):
            done = "no longer lists %s (gpufabric's drain is gone with it)" % node
        elif entry["now"].get("drained"):
            done = "no longer holds gpufabric's drain of %s (drained since by someone else: %s)" % (
                node, entry["now"].get("reason") or "no reason")
        else:
            done = "%s %s" % ("resumed" if scheduler == "slurm" else "uncordoned and untainted", node)
        detail = ("confirmed after the decider restarted: %s %s (the %s was recorded, then the decider stopped before it "
                  "heard the answer, or could not save that it did)" % (who, done, entry["action"]))
        if entry.get("evidence"):
            detail += "; evidence: %s in the decider's evidence store, collected by the node now" % entry["evidence"]
        if entry.get("certificate"):
            detail += "; certified: %s" % ", ".join(entry["certificate"].get("checks") or [])
        decision = {"node": node, "action": entry["action"], "reason": entry.get("reason"), "held": False,
                    "shadow": False, "why": "confirmed after the decider restarted; drained for %s" % entry.get("reason")}
        status = ("escalated" if entry.get("escalated") else "drained") if drain else "resumed"
        out.append({"node": node, "check": check, "target": target or node,
                    "severity": "critical" if drain else "warning", "status": status, "detail": detail,
                    "action": decision_text(scheduler, decision), "policy": entry.get("policy")})
    return out


def decision_text(scheduler, decision):
    """What a decision did, for the log and the messages: 'Slurm: drained n1 (gpufabric: ...)'."""
    name = {"slurm": "Slurm", "kubernetes": "Kubernetes"}.get(scheduler, scheduler)
    verb = {"drain": "drained" if scheduler == "slurm" else "cordoned and tainted",
            "resume": "resumed" if scheduler == "slurm" else "uncordoned and untainted"}.get(decision["action"])
    if verb is None:
        return "%s: %s %s (%s)" % (name, "held back" if decision["held"] else "no action on", decision["node"], decision["why"])
    if decision.get("device_taints"):   # Kubernetes DRA: the devices tainted, not the node (k8s_device_taints.py)
        devices = ", ".join(sorted(r["spec"]["deviceSelector"]["device"] for r in decision["device_taints"]))
        verb = ("tainted %s (DeviceTaintRule, NoSchedule) on" if decision["action"] == "drain"
                else "removed the device taints of %s on") % devices
    if decision.get("error") and not decision["shadow"]:
        return "%s: could not %s %s: %s" % (name, decision["action"], decision["node"], decision["error"])
    if decision["shadow"]:
        return "%s: shadow mode, would have %s %s (%s)" % (name, verb, decision["node"], decision["why"])
    if decision["action"] == "resume":   # why it may return (the findings cleared, its certificate), not what drained it
        return "%s: %s %s (%s)" % (name, verb, decision["node"], decision["why"])
    return "%s: %s %s (%s)" % (name, verb, decision["node"], decision["reason"] or decision["why"])
