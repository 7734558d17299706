# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The decider's plan, the phases that count (remediation.plan runs them in this order, before and after the
decisions): the open intents settled, the holds a rebuilt ledger puts on drains and resumes, the findings that ask
for a drain, the fleet counted once per partition, the certificates handed in, the circuit breaker, the resumes
within the interval; after the decisions, the causes nodes are held back by, and the history kept within bounds.

Each phase is a pure function of its arguments: ``ctx`` (``context``: the settings and the scheduler's clock) and
the plan's own copy of the ledger, which a phase that records something updates in place (its docstring says
what). No phase reads a clock, a file or the network. Each is linear in the nodes it is given.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
from collections import namedtuple

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import empty_ledger, reconcile
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import drain_findings, is_ours

NO_PARTITION = "(no partition)"
# At most this many past drains and resumes are kept per node (the escalation window needs few).
HISTORY = 20

# What every phase reads: the checked settings (policy.check_config) taken apart once, and the scheduler's clock.
Context = namedtuple("Context", "now decider shadow policy rules limits breaker escalation certification evidence "
                                "rack interval window history_from")
# The fleet counted once (count_fleet): effective {node: (drained, ours, since, reason)}; size, in_effect (drained by
# gpufabric now), recent (drained by gpufabric within the rate interval), unhealthy: {partition: nodes}.
Counts = namedtuple("Counts", "effective size in_effect recent unhealthy")
# What a rebuilt ledger holds back (rebuilt_holds): no drain before drains_from, no resume before resumes_from (the
# scheduler's clock); rebuilt: the ledger's rebuild record while it holds anything, else None.
Holds = namedtuple("Holds", "drains_from resumes_from rebuilt")


def context(settings, now, decider):
    """The phases' view of check_config's result at the scheduler's clock ``now``."""
    limits, escalation = settings["rate_limit"], settings["escalation"]
    return Context(now=now, decider=decider, shadow=settings["mode"] == "shadow", policy=settings["policy_name"],
                   rules=settings["policy"], limits=limits, breaker=settings["circuit_breaker"], escalation=escalation,
                   certification=settings["certification"], evidence=settings["evidence"], rack=settings["rack"],
                   interval=limits["interval"], window=settings["circuit_breaker"]["window"],
                   history_from=now - escalation["days"] * 86400)


# --- the ledger's records, as the plan counts them -------------------------------------------------

def record_of(ledger, node):
    """The node's ledger record, made empty when it has none."""
    return ledger["nodes"].setdefault(node, {"drains": [], "resumes": []})


def counted(entries, shadow):
    """History entries that count: real ones always, shadow ones only in shadow mode."""
    return [e for e in entries if shadow or not e.get("shadow")]


def current_drain(record, entry, shadow):
    """The ledger's record of the drain in effect, or None (matched by the reason slurmctld holds)."""
    drains = counted((record or {}).get("drains") or [], shadow)
    if not drains:
        return None
    last = drains[-1]
    if last.get("shadow"):
        return last if shadow and not last.get("resumed") else None
    return last if entry.get("reason") and last.get("reason") == entry.get("reason") else None


def effective(entry, record, shadow):
    """(drained, ours, since, reason) of a node: the scheduler's view, plus a shadow drain in shadow mode."""
    if shadow:
        shadow_drain = current_drain(record, entry, True)
        if shadow_drain is not None and shadow_drain.get("shadow") and not entry.get("drained"):
            return True, True, shadow_drain.get("at"), shadow_drain.get("reason")
    ours = bool(entry.get("drained")) and is_ours(entry.get("reason"))
    return bool(entry.get("drained")), ours, entry.get("reason_time"), entry.get("reason")


# --- the phases before the decisions ---------------------------------------------------------------

def settle_intents(ledger, fleet):
    """Phase 1: (the plan's own copy of the ledger, what reconcile settled). The open intents go first: what the
    scheduler took (or not) while the decider was down (ledger.reconcile, on the copy; the caller's is not changed)."""
    ledger = copy.deepcopy(ledger) if ledger else empty_ledger()
    return ledger, reconcile(ledger, fleet)


def rebuilt_holds(ledger, now):
    """Phase 2: Holds - before these times (the scheduler's clock) a ledger rebuilt without its history makes no
    drain and no resume. Once both have passed the ledger holds every decision since and its rebuild mark goes."""
    rebuilt = ledger.get("rebuilt")
    if not rebuilt:
        return Holds(now, now, None)
    drains_from, resumes_from = rebuilt.get("drains_from") or rebuilt["at"], rebuilt["resumes_from"]
    if now >= max(drains_from, resumes_from):
        del ledger["rebuilt"]
        return Holds(drains_from, resumes_from, None)
    return Holds(drains_from, resumes_from, rebuilt)


def drain_causes(reports, fleet, ledger, ctx):
    """Phase 3: {node: the findings of its report the policy drains for}. A node of the scheduler with any is marked
    unhealthy now in the ledger (the circuit breaker counts it within its window)."""
    causes_of = {}
    for node, report in reports.items():
        causes_of[node] = drain_findings(report["findings"], ctx.rules)
        if causes_of[node] and node in fleet:
            record_of(ledger, node)["unhealthy_at"] = ctx.now
    return causes_of


def _fresh(ours, since, record, ctx):
    """Whether a node's drain counts within the rate interval. It does while the scheduler holds it (a drain of ours
    without a time counts: unknown is not old), and also after a resume, from the ledger: drain, resume, drain again
    must not pass the limit twice."""
    return (ours and (since is None or ctx.now - since <= ctx.interval)) or any(
        ctx.now - e.get("at", 0) <= ctx.interval for e in counted((record or {}).get("drains") or [], ctx.shadow))


def _once(counter, seen, part, unit):
    """One more in ``counter[part]``, unless this unit (a node, or a rack) was counted there already."""
    if (part, unit) not in seen:
        seen.add((part, unit))
        counter[part] = counter.get(part, 0) + 1


def count_fleet(fleet, ledger, ctx, units=None):
    """Phase 4: Counts, in one pass over every node of the scheduler: each node's effective state, and per partition
    its size (in nodes), our drains in effect and recent ones, and the unhealthy (drained by us, or a drain-worthy
    finding within the breaker's window). ``units`` (remediation_racks.rack_view): the nodes that count as their rack,
    once, in the last three."""
    size, in_effect, recent, unhealthy, states = {}, {}, {}, {}, {}
    seen = (set(), set(), set())
    units = units or {}
    for name, entry in fleet.items():
        record = ledger["nodes"].get(name)
        state = states[name] = effective(entry, record, ctx.shadow)
        ours, since = state[1], state[2]
        sick = ours or (record is not None and record.get("unhealthy_at") is not None
                        and ctx.now - record["unhealthy_at"] <= ctx.window)
        fresh = _fresh(ours, since, record, ctx)
        unit = units.get(name, name)
        for part in entry.get("partitions") or [NO_PARTITION]:
            size[part] = size.get(part, 0) + 1
            if ours:
                _once(in_effect, seen[0], part, unit)
            if fresh:
                _once(recent, seen[1], part, unit)
            if sick:
                _once(unhealthy, seen[2], part, unit)
    return Counts(states, size, in_effect, recent, unhealthy)


def take_certificates(certificates, states, ledger, ctx):
    """Phase 5: {node: "recorded" or why not}. A certificate (certificate.check_certificate's result) handed in for a
    node gpufabric drained is recorded in its ledger record, stamped with the scheduler's clock; any other is
    ignored. ``states``: Counts.effective."""
    taken = {}
    for node, cert in sorted((certificates or {}).items()):
        if node not in states or not states[node][1]:
            taken[node] = "ignored: %s is not drained by gpufabric" % node
            continue
        record_of(ledger, node)["certificate"] = certificate.record(cert, ctx.certification, ctx.now)
        taken[node] = "recorded"
    return taken


def recent_resumes(ledger, ctx):
    """Phase 6: how many resumes gpufabric made over the cluster within the rate interval (an open one counts); a
    rack's nodes returning together (their entries name the rack) count once."""
    single, racks = 0, set()
    for record in ledger["nodes"].values():
        for e in counted(record.get("resumes") or [], ctx.shadow):
            if ctx.now - e.get("at", 0) > ctx.interval:
                continue
            if e.get("rack"):
                racks.add((e["rack"], e.get("at")))
            else:
                single += 1
    return single + len(racks)


def trip_breaker(counts, ledger, ctx):
    """Phase 7: the circuit breaker {open, opened, closed, shares}: open in every partition whose unhealthy share is
    above circuit_breaker.max_percent; opened and closed against the ledger's breaker, which is updated (since: when
    it opened, kept while it stays open)."""
    size, unhealthy = counts.size, counts.unhealthy
    shares = dict((part, round(100.0 * unhealthy.get(part, 0) / size[part], 1)) for part in size)
    open_parts = sorted(p for p in size if shares[p] > ctx.breaker["max_percent"])
    was_open = list(ledger["breaker"].get("open") or [])
    since = ledger["breaker"].get("since") if was_open else ctx.now
    ledger["breaker"] = {"open": open_parts, "since": since if open_parts else None,
                         "shares": dict((p, shares[p]) for p in open_parts)}
    return {"open": open_parts, "opened": sorted(set(open_parts) - set(was_open)),
            "closed": sorted(set(was_open) - set(open_parts)), "shares": shares}


# --- the phases after the decisions ----------------------------------------------------------------

def mark_held(decisions, ledger):
    """Phase 11: held nodes are told once per cause, not every run. Each decision gets ``newly_held``; the cause (the
    text before the first colon of why) is kept in the node's record, and cleared once it is no longer held."""
    for decision in decisions:
        record = ledger["nodes"].get(decision["node"])
        cause = decision["why"].split(":", 1)[0] if decision["held"] else None
        decision["newly_held"] = bool(cause) and (record or {}).get("held") != cause
        if cause or (record or {}).get("held"):
            record_of(ledger, decision["node"])["held"] = cause


def forget_old(ledger, ctx):
    """Phase 12: bounded memory. History older than the escalation window (and the rate interval) is dropped, at most
    HISTORY entries a node are kept, and a node with nothing left to remember is forgotten."""
    keep_from = min(ctx.history_from, ctx.now - ctx.interval)
    for name in list(ledger["nodes"]):
        record = ledger["nodes"][name]
        for key in ("drains", "resumes"):
            record[key] = [e for e in record.get(key) or [] if e.get("at", 0) >= keep_from][-HISTORY:]
        if (not record["drains"] and not record["resumes"] and not record.get("held")
                and (record.get("unhealthy_at") is None or ctx.now - record["unhealthy_at"] > ctx.window)):
            del ledger["nodes"][name]
    _forget_rack_marks(ledger, keep_from, ctx)


def _forget_rack_marks(ledger, keep_from, ctx):
    """The rack memory bounded: a fault or a readiness older than rack.window goes, a rack's decision older than the
    history, and the memory itself once it holds nothing (what each node said of its rack stays while the scheduler
    lists the node: remediation_racks forgets the others)."""
    memory = ledger.get("racks")
    if memory is None:
        return
    for name, entry in memory["nodes"].items():
        if entry.get("fault") and ctx.now - entry["fault"].get("at", 0) > ctx.rack["window"]:
            del entry["fault"]
        if entry.get("ready") is not None and ctx.now - entry["ready"] > ctx.rack["window"]:
            del entry["ready"]
    memory["nodes"] = dict((name, entry) for name, entry in memory["nodes"].items() if entry)
    memory["decisions"] = dict((rack, d) for rack, d in memory["decisions"].items() if d.get("at", 0) >= keep_from)
    if not memory["nodes"] and not memory["decisions"]:
        del ledger["racks"]
