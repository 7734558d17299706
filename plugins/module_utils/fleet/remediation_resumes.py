# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decider's plan, phase 10 (resumes): each node gpufabric drained and no finding holds, failing closed
(why_it_stays: escalated, an incomplete report, a finding recorded at the drain still there, findings not all known,
no certificate that answers this drain), then against the circuit breaker, a rebuilt ledger's hold and max_resumes
(resume_hold), and recorded: a shadow resume in shadow mode, an open intent (pending) in enforce mode, which keeps
the certificate it spends until the scheduler took it.

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
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_triage import maintenance, serious

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


def plan_resumes(resumes, reports, breaker, holds, resumes_recent, ledger, ctx):
    """Phase 10: each resume candidate of triage (decision, record, entry, reason), in name order: only on what the
    drain recorded, from a fresh and complete report and a certificate that answers this drain (why_it_stays),
    within the breaker and budget (resume_hold); returns how many resumes count within the interval now. Updates
    the decisions and the ledger."""
    for decision, record, entry, reason in resumes:
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
