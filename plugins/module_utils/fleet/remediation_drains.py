# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decider's plan, phase 9 (drains): the drain candidates, worst first, each against the circuit breaker, the
rate limits of every partition it is in and a rebuilt ledger's hold (drain_hold), then escalated or not
(escalation), and recorded: a shadow drain in shadow mode, an open intent (pending) in enforce mode.

Pure: the phase reads its arguments only and records in the plan's copy of the ledger (remediation_counts says what
``ctx`` holds).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import evidence
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import drain_reason
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_counts import (
    HISTORY, NO_PARTITION, counted, record_of)


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


def drain_hold(parts, recent, in_effect, size, breaker, holds, ctx):
    """Why a drain in these partitions is held back, or None: the breaker open in one of them, a rate limit (new
    drains within the interval, drains in effect against max_percent), a rebuilt ledger's hold. ``recent`` and
    ``in_effect`` count the drains made so far in this plan too."""
    tripped = [p for p in parts if p in breaker["open"]]
    if tripped:
        return ("circuit breaker open: %s of partition %s unhealthy (more than %s%%): gpufabric stops acting there "
                "until a human looks" % ("%s%%" % breaker["shares"][tripped[0]], tripped[0], ctx.breaker["max_percent"]))
    over = _over_limit(parts, recent, in_effect, size, ctx)
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


def _drain(decision, causes, record, ctx):
    """The decision made a drain, and the drain recorded in the node's ledger record."""
    node = decision["node"]
    escalated, count = escalation(record, ctx)
    reason = drain_reason(causes, ctx.policy, decision["via"], count)
    stays = ("; ESCALATED: %s, more than %d: it stays out until a human resumes it"
             % (count, ctx.escalation["max_remediations"]) if escalated else "")
    decision.update(action="drain", reason=reason, escalated=escalated,
                    why="%d finding(s) ask for a drain%s" % (len(causes), stays))
    kept = {"shadow": True} if ctx.shadow else {"pending": True}
    if ctx.evidence["enabled"] and not ctx.shadow:   # the bundle the node is asked for, named now
        decision["evidence"] = kept["evidence"] = evidence.bundle_name(evidence.bundle_id(node, ctx.now))
    record["drains"] = (record.get("drains") or [])[-(HISTORY - 1):] + [dict(
        {"at": ctx.now, "findings": decision["findings"], "reason": reason, "policy": ctx.policy,
         "via": decision["via"], "by": ctx.decider, "escalated": escalated}, **kept)]


def plan_drains(drains, fleet, counts, breaker, holds, ledger, ctx):
    """Phase 9: each drain candidate of triage, worst first (most critical findings, then most findings, then by
    name), held back (drain_hold) or drained (escalation, the reason, the evidence bundle named, the ledger's
    entry). Updates the decisions and the ledger; ``counts`` is not changed (the drains made here are counted on
    copies)."""
    recent, in_effect = dict(counts.recent), dict(counts.in_effect)
    for decision, causes in sorted(drains, key=lambda item: (-_severity_rank(item[1]), -len(item[1]), item[0]["node"])):
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
