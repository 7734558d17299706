# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The decider's plan, phase 10 (resumes): each node gpufabric drained and no finding holds, failing closed
(why_it_stays: escalated, an incomplete report, a finding recorded at the drain still there, findings not all known,
no certificate that answers this drain), then against the circuit breaker, a rebuilt ledger's hold and max_resumes
(resume_hold), and recorded: a shadow resume in shadow mode, an open intent (pending) in enforce mode, which keeps
the certificate it spends until the scheduler took it. The nodes a rack's decision drained (remediation_racks.
RackResume) return together or not at all, on certificates that also show IMEX up and an NVLink-domain run
(resume_rack), counted as one resume.

Pure: the phase reads its arguments only and records in the plan's copy of the ledger (remediation_counts says what
``ctx`` holds).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import KEPT_CERTIFICATE
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import (
    finding_key, findings_from_reason, is_escalated)
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_counts import (
    HISTORY, NO_PARTITION, current_drain, record_of)
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_racks import (
    RackResume, memory_of, rack_certification)
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_triage import maintenance, new_decision, serious

# What is known of the drain a resume would lift (drain_in_effect): current, the ledger's entry (None when it has
# none: then the scheduler's reason tells); recorded, the finding keys it was made for; known, whether that is all of
# them; escalated; at, when it was made (the ledger's time, else the scheduler's).
Drain = namedtuple("Drain", "current recorded known escalated at")


def drain_in_effect(record, entry, reason, shadow):
    """Drain: the drain in effect as the ledger recorded it, or as the scheduler's reason says."""
    current = current_drain(record, entry, shadow)
    if current is not None:
        return Drain(current, list(current.get("findings") or []), True, bool(current.get("escalated")), current.get("at"))
    recorded, known = findings_from_reason(reason)
    return Drain(None, recorded, known, is_escalated(reason), entry.get("reason_time"))


def why_it_stays(report, entry, reason, drain, refused, ctx):
    """What the decision says when the node stays drained whatever the limits allow - {why}, or maintenance's,
    or {certify, why} when only a certificate is missing - or None: the node may return. Fail closed: escalated,
    the report incomplete, a finding recorded at the drain still reported (a change to carry out: maintenance),
    the recorded findings not all known and any warning or critical finding, the certificate refused (``refused``:
    certificate.refusal's text) when certification is required."""
    present = set(finding_key(f) for f in report["findings"]) & set(drain.recorded)
    if drain.escalated:
        return {"why": "escalated (%s): it stays drained until a human resumes it" % reason}
    if not report["complete"]:
        return {"why": "stays drained: the check could not read %s, and unknown is not healthy" % "; ".join(report["unreadable"])
                if report["unreadable"] else "stays drained: the check was incomplete"}
    said = maintenance(present, entry, ctx.shadow)
    if said:
        return said
    if present:
        still = sorted(present)
        return {"why": "stays drained: %s recorded at the drain still reported (%s)" % (
            "finding" if len(still) == 1 else "%d findings" % len(still), ", ".join(still[:3]))}
    if not drain.known and serious(report["findings"]):
        return {"why": "stays drained: the findings recorded at the drain are not all known (%s), so every warning and "
                       "critical finding must clear first" % reason}
    if refused and ctx.certification["required"]:
        return {"certify": True, "why": "%s: %s" % ("stays drained" if not ctx.shadow else "would stay drained", refused)}
    return None


def resume_hold(parts, breaker, holds, resumes_recent, ctx):
    """Why a resume that may happen is held back, or None: the breaker open in one of its partitions, a rebuilt
    ledger's hold, max_resumes within the interval (``resumes_recent`` counts those made so far in this plan too)."""
    tripped = [p for p in parts if p in breaker["open"]]
    if tripped:
        return "circuit breaker open in partition %s: no resume until a human looks" % tripped[0]
    if ctx.now < holds.resumes_from:
        return ("resume budget unknown: the decider's state was rebuilt from the scheduler %d s ago, which keeps no "
                "record of the resumes made before; no resume for %d s more"
                % (ctx.now - holds.rebuilt["at"], holds.resumes_from - ctx.now))
    if resumes_recent + 1 > ctx.limits["max_resumes"]:
        return ("rate limit: %d node(s) resumed by gpufabric in the last %d s, at most %d"
                % (resumes_recent, ctx.interval, ctx.limits["max_resumes"]))
    return None


def _resume(decision, rec, reason, drain, cert, refused, ctx):
    """The decision made a resume, recorded in the node's ledger record ``rec`` as an open intent (pending) until the
    scheduler took it, like a drain: it counts toward max_resumes until it is known not to have happened
    (ledger.reconcile, settle). A certificate that certifies is spent: taken from the record, kept with the intent."""
    why = ("a fresh, complete check: every finding recorded at the drain has cleared (%s)"
           % ", ".join(drain.recorded[:3]) if drain.recorded else "a fresh, complete check with no finding")
    extra = {"shadow": True} if ctx.shadow else {}
    if drain.at is not None:
        extra.update(drained_at=drain.at, mttr=max(0, ctx.now - drain.at))
    if refused is None:
        extra["certificate"] = dict(certificate.brief(cert), cleared=drain.recorded)
        why += "; %s" % certificate.text(cert)
        rec.pop("certificate", None)   # one certificate, one resume
        if not ctx.shadow:   # ... kept with the open resume: put back if the resume does not happen
            extra[KEPT_CERTIFICATE] = cert
    decision.update(action="resume", reason=reason, findings=drain.recorded, why=why,
                    **dict((k, extra[k]) for k in ("certificate", "mttr") if k in extra))
    rec["resumes"] = (rec.get("resumes") or [])[-(HISTORY - 1):] + [dict(
        {"at": ctx.now, "by": ctx.decider, "via": decision["via"], "reason": reason},
        **dict(extra, **({} if ctx.shadow else {"pending": True})))]
    if drain.current is not None and drain.current.get("shadow"):
        drain.current["resumed"] = ctx.now


def _rack_node(node, rec, entry, reason, report, memory, ctx):
    """(Drain, certificate, why it stays or None) of one node a rack's decision drained. With its report now:
    why_it_stays under the rack's certification, its readiness kept for the window; without: ready only when a
    report within rack.window said so, and its certificate still answers the drain."""
    drain = drain_in_effect(rec, entry, reason, ctx.shadow)
    cert = rec.get("certificate")
    refused = certificate.refusal(cert, drain.at, ctx.now, ctx.certification, rec.get("resumes"))
    mark = memory["nodes"].setdefault(node, {})
    if report is not None:
        said = why_it_stays(report, entry, reason, drain, refused, ctx)
        if said is None:
            mark["ready"] = ctx.now
        else:
            mark.pop("ready", None)
        return drain, cert, said
    if mark.get("ready") is None or ctx.now - mark["ready"] > ctx.rack["window"]:
        return drain, cert, {"why": "no report within %d s that it may return" % ctx.rack["window"]}
    return drain, cert, {"why": refused} if refused else None


def _waiting_text(rack, waiting):
    shown = "; ".join("%s: %s" % (node, said["why"].split("stays drained: ", 1)[-1]) for node, said in waiting[:4])
    more = " and %d more" % (len(waiting) - 4) if len(waiting) > 4 else ""
    return "stays drained: rack %s returns together, and %d of its node(s) may not yet (%s%s)" % (rack, len(waiting), shown, more)


def resume_rack(item, reports, breaker, holds, resumes_recent, ledger, ctx):
    """A rack's nodes (RackResume) resumed together, or none: every node gpufabric drained by the rack's decision
    may return (_rack_node; certified with rack.certify as well), then the breaker, a rebuild's hold and max_resumes
    once for the rack. Returns the resumes counted within the interval now (one more when the rack returns)."""
    rctx = ctx._replace(certification=rack_certification(ctx))
    memory = memory_of(ledger)
    ready, waiting = [], []
    for decision, rec, entry, reason in item.candidates:
        drain, cert, said = _rack_node(decision["node"], rec, entry, reason, reports[decision["node"]], memory, rctx)
        decision["rack"] = item.rack
        if said is not None:
            decision.update(said)
            waiting.append((decision["node"], said))
        else:
            ready.append((decision, decision["node"], rec, entry, reason, drain, cert))
    for node, rec, entry, reason in item.others:
        drain, cert, said = _rack_node(node, rec, entry, reason, None, memory, rctx)
        if said is not None:
            waiting.append((node, said))
        else:
            ready.append((None, node, rec, entry, reason, drain, cert))
    held = _waiting_text(item.rack, sorted(waiting)) if waiting else None
    parts = sorted(set(p for r in ready for p in r[3].get("partitions") or [NO_PARTITION]))
    held = held or resume_hold(parts, breaker, holds, resumes_recent, ctx)
    if held:
        for decision in [r[0] for r in ready if r[0] is not None]:
            decision.update(held=not waiting, why=held if waiting else "%s; rack %s returns together" % (held, item.rack))
        return resumes_recent
    for decision, node, rec, entry, reason, drain, cert in ready:
        if decision is None:
            decision = new_decision(node, {"source": "rack"}, [], ctx)
            item.decisions.append(decision)
        decision["rack"] = item.rack
        _resume(decision, record_of(ledger, node), reason, drain, cert, None, ctx)
        decision["why"] = "rack %s returns together (%d node(s), every one certified with %s): %s" % (
            item.rack, len(ready), ", ".join(ctx.rack["certify"]) or "its checks", decision["why"])
        record_of(ledger, node)["resumes"][-1]["rack"] = item.rack
    item.decisions.sort(key=lambda d: d["node"])
    memory["decisions"][item.rack] = {"action": "resume", "at": ctx.now, "nodes": sorted(r[1] for r in ready),
                                      "shadow": ctx.shadow, "policy": ctx.policy}
    return resumes_recent + 1


def plan_resumes(resumes, reports, breaker, holds, resumes_recent, ledger, ctx):
    """Phase 10: each resume candidate of triage (decision, record, entry, reason), in name order: only on what the
    drain recorded, from a fresh and complete report and a certificate that answers this drain (why_it_stays),
    within the breaker and budget (resume_hold); a rack's nodes (RackResume) by resume_rack. Returns how many resumes
    count within the interval now. Updates the decisions and the ledger."""
    for item in resumes:
        if isinstance(item, RackResume):
            resumes_recent = resume_rack(item, reports, breaker, holds, resumes_recent, ledger, ctx)
            continue
        decision, record, entry, reason = item
        node = decision["node"]
        drain = drain_in_effect(record, entry, reason, ctx.shadow)
        cert = (ledger["nodes"].get(node) or {}).get("certificate")
        refused = certificate.refusal(cert, drain.at, ctx.now, ctx.certification, record.get("resumes"))   # None: it certifies
        said = why_it_stays(reports[node], entry, reason, drain, refused, ctx)
        if said is None:
            held = resume_hold(entry.get("partitions") or [NO_PARTITION], breaker, holds, resumes_recent, ctx)
            said = {"held": True, "why": held} if held else None
        if said is not None:
            decision.update(said)
            continue
        resumes_recent += 1
        _resume(decision, record_of(ledger, node), reason, drain, cert, refused, ctx)
    return resumes_recent
