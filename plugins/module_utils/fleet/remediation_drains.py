# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The decider's plan, phase 9 (drains): the drain candidates, worst first, each against the circuit breaker, the
rate limits of every partition it is in and a rebuilt ledger's hold (drain_hold), then escalated or not
(escalation), and recorded: a shadow drain in shadow mode, an open intent (pending) in enforce mode. A rack in an
event (remediation_racks.RackDrain) is one candidate: its nodes drain together or none does, counted once
(drain_rack).

Pure: the phase reads its arguments only and records in the plan's copy of the ledger (remediation_counts says what
``ctx`` holds).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import evidence, racks
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import drain_reason, finding_key
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_counts import (
    HISTORY, NO_PARTITION, counted, current_drain, record_of)
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_racks import (
    RackDrain, memory_of, rack_why)


def _severity_rank(findings):
    return sum(1 for f in findings if f.get("severity") == "critical")


def allowed(size, max_percent):
    """How many nodes of a partition of ``size`` gpufabric may hold drained at once: max_percent of it, at least one
    when the percentage is above 0."""
    if max_percent <= 0:
        return 0
    return max(1, int(size * max_percent // 100))


def _over_limit(parts, recent, in_effect, size, ctx):
    """Why one more drain in these partitions passes a rate limit, or None."""
    limits = ctx.limits
    for part in parts:
        if recent.get(part, 0) + 1 > limits["max_nodes"]:
            return ("rate limit: %d node(s) of partition %s already drained by gpufabric in the last %d s, at most %d"
                    % (recent.get(part, 0), part, ctx.interval, limits["max_nodes"]))
        if in_effect.get(part, 0) + 1 > allowed(size[part], limits["max_percent"]):
            return ("rate limit: %d of the %d node(s) of partition %s are drained by gpufabric, at most %s%% (%d)"
                    % (in_effect.get(part, 0), size[part], part, limits["max_percent"],
                       allowed(size[part], limits["max_percent"])))
    return None


def _drain_budget_unknown(rebuilt, now, interval):
    return ("drain budget unknown: the decider's decision history could not be rebuilt (%s): the drains gpufabric made "
            "in the last %d s are unknown, so none is made for %d s more" % (
                rebuilt.get("why") or "unknown", interval, rebuilt["drains_from"] - now))


def drain_hold(parts, recent, in_effect, size, breaker, holds, ctx, limits=True):
    """Why a drain in these partitions is held back, or None: the breaker open in one of them, a rate limit (new
    drains within the interval, drains in effect against max_percent; not with ``limits`` false: a rack's nodes
    joining its drain already counted), a rebuilt ledger's hold. ``recent`` and ``in_effect`` count the drains made
    so far in this plan too."""
    tripped = [p for p in parts if p in breaker["open"]]
    if tripped:
        return ("circuit breaker open: %s of partition %s unhealthy (more than %s%%): gpufabric stops acting there "
                "until a human looks" % ("%s%%" % breaker["shares"][tripped[0]], tripped[0], ctx.breaker["max_percent"]))
    over = _over_limit(parts, recent, in_effect, size, ctx) if limits else None
    if over or ctx.now < holds.drains_from:
        return over or _drain_budget_unknown(holds.rebuilt, ctx.now, ctx.interval)
    return None


def escalation(record, ctx):
    """(escalated, count): whether one more drain of the node passes escalation.max_remediations within
    escalation.days (its counted drains in the ledger), and the count the reason then names ('3 drains in 7 d')."""
    past = [e for e in counted(record.get("drains") or [], ctx.shadow) if e.get("at", 0) >= ctx.history_from]
    escalated = len(past) + 1 > ctx.escalation["max_remediations"]
    count = "%d drains in %d d" % (len(past) + 1, ctx.escalation["days"]) if escalated else None
    return escalated, count


def _drain(decision, causes, record, ctx, rack=None):
    """The decision made a drain, and the drain recorded in the node's ledger record (``rack``: {rack, side, why} of
    a rack's drain, kept in the entry)."""
    node = decision["node"]
    escalated, count = escalation(record, ctx)
    reason = drain_reason(causes, ctx.policy, decision["via"], count)
    stays = ("; ESCALATED: %s, more than %d: it stays out until a human resumes it"
             % (count, ctx.escalation["max_remediations"]) if escalated else "")
    decision.update(action="drain", reason=reason, escalated=escalated,
                    why="%s%s" % (rack["why"] if rack else "%d finding(s) ask for a drain" % len(causes), stays))
    kept = {"shadow": True} if ctx.shadow else {"pending": True}
    if rack:
        kept.update(rack=rack["rack"], side=rack["side"])
    if ctx.evidence["enabled"] and not ctx.shadow:   # the bundle the node is asked for, named now
        decision["evidence"] = kept["evidence"] = evidence.bundle_name(evidence.bundle_id(node, ctx.now))
    record["drains"] = (record.get("drains") or [])[-(HISTORY - 1):] + [dict(
        {"at": ctx.now, "findings": decision["findings"], "reason": reason, "policy": ctx.policy,
         "via": decision["via"], "by": ctx.decider, "escalated": escalated}, **kept)]


def _worst_first(item):
    """The sort key of a drain candidate: most critical findings, then most findings, then its name (a rack's: its
    nodes' findings together, named 'rack <id>')."""
    if isinstance(item, RackDrain):
        causes = [f for ignored, member_causes in item.members for f in member_causes]
        return -_severity_rank(causes) - len(item.event.faulted), -len(causes), "rack " + item.rack
    return -_severity_rank(item[1]), -len(item[1]), item[0]["node"]


def drain_rack(item, fleet, counts, recent, in_effect, breaker, holds, ledger, ctx):
    """A rack in an event (RackDrain) as one action: held back as a whole (drain_hold over every partition of its
    nodes; a rack whose nodes already went out for this event is not counted again), or each node drained with the
    rack's finding first and its own after, the nodes drained for it already tagged as the rack's, and the rack's
    decision recorded in the ledger's rack memory. Counts the action once in ``recent`` and ``in_effect``."""
    nodes = [d["node"] for d, ignored in item.members]
    parts = sorted(set(p for n in nodes + item.joined for p in fleet[n].get("partitions") or [NO_PARTITION]))
    held = drain_hold(parts, recent, in_effect, counts.size, breaker, holds, ctx, limits=not item.joined)
    if held:
        for decision, ignored in item.members:
            decision.update(held=True, healthy=False, rack=item.rack, why="%s; rack %s: its %d node(s) drain together or "
                            "not at all" % (held, item.rack, len(nodes)))
        return
    why = rack_why(item.event, len(nodes), item.joined, ctx.rack["window"])
    found = {"check": racks.RACK_FINDING, "severity": "critical", "target": "rack %s" % item.rack, "detail": why}
    for decision, causes in item.members:
        decision.update(findings=[finding_key(f) for f in [found] + list(causes)], healthy=False, rack=item.rack,
                        maintain=[])
        _drain(decision, [found] + list(causes), record_of(ledger, decision["node"]), ctx,
               {"rack": item.rack, "side": item.event.side, "why": why})
    for node in item.joined:
        current = current_drain(ledger["nodes"].get(node), fleet[node], ctx.shadow)
        current.setdefault("rack", item.rack)
    memory_of(ledger)["decisions"][item.rack] = {
        "action": "drain", "at": ctx.now, "nodes": sorted(nodes + item.joined), "faulted": list(item.event.faulted),
        "side": item.event.side, "shadow": ctx.shadow, "policy": ctx.policy, "why": why}
    if not item.joined:
        for part in parts:
            recent[part] = recent.get(part, 0) + 1
            in_effect[part] = in_effect.get(part, 0) + 1


def plan_drains(drains, fleet, counts, breaker, holds, ledger, ctx):
    """Phase 9: each drain candidate of triage, worst first (most critical findings, then most findings, then by
    name), held back (drain_hold) or drained (escalation, the reason, the evidence bundle named, the ledger's
    entry); a rack's (RackDrain) by drain_rack. Updates the decisions and the ledger; ``counts`` is not changed (the
    drains made here are counted on copies)."""
    recent, in_effect = dict(counts.recent), dict(counts.in_effect)
    for item in sorted(drains, key=_worst_first):
        if isinstance(item, RackDrain):
            drain_rack(item, fleet, counts, recent, in_effect, breaker, holds, ledger, ctx)
            continue
        decision, causes = item
        parts = fleet[decision["node"]].get("partitions") or [NO_PARTITION]
        record = record_of(ledger, decision["node"])
        held = drain_hold(parts, recent, in_effect, counts.size, breaker, holds, ctx)
        if held:
            decision.update(held=True, why=held)
            continue
        _drain(decision, causes, record, ctx)
        for part in parts:
            recent[part] = recent.get(part, 0) + 1
            in_effect[part] = in_effect.get(part, 0) + 1
