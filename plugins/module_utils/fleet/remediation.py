# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
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
- **certified**: and (``certification.required``, the default) a return-to-service certificate recorded after
  the drain and younger than ``certification.max_age``, in which every active check the policy names passed
  (certificate.py); a node that lacks one stays drained and its decision says ``certify``: the check to start.
  A resume records the certificate and the time from drain to resume (``mttr``).

The policy and the decider's configuration are checked in policy.py; the ledger (its checks, reconcile, confirmed,
rebuild) is ledger.py's. Planning is O(N log N) in the number of nodes (counters per partition, one sort of the
candidates).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate, evidence
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import (
    KEPT_CERTIFICATE, LEDGER_ANNOTATION, empty_ledger, reconcile)
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import (
    drain_findings, drain_reason, finding_key, findings_from_reason, is_escalated, is_ours)

NO_PARTITION = "(no partition)"
# Findings a drain carries out rather than waits out: a change that needs the node out of service (NIC firmware settings
# take effect at a firmware reset). The node stays drained until the change is made and its check no longer reports it.
MAINTENANCE = {"nic_firmware_settings": "the NIC firmware settings"}
# At most this many past drains and resumes are kept per node (the escalation window needs few).
HISTORY = 20


# --- the ledger's records, as the plan counts them -------------------------------------------------

def _record(ledger, node):
    return ledger["nodes"].setdefault(node, {"drains": [], "resumes": []})


def _counted(entries, shadow):
    """History entries that count: real ones always, shadow ones only in shadow mode."""
    return [e for e in entries if shadow or not e.get("shadow")]


def _current_drain(record, entry, shadow):
    """The ledger's record of the drain in effect, or None (matched by the reason slurmctld holds)."""
    drains = _counted((record or {}).get("drains") or [], shadow)
    if not drains:
        return None
    last = drains[-1]
    if last.get("shadow"):
        return last if shadow and not last.get("resumed") else None
    return last if entry.get("reason") and last.get("reason") == entry.get("reason") else None


def _effective(entry, record, shadow):
    """(drained, ours, since) of a node: the scheduler's view, plus a shadow drain in shadow mode."""
    if shadow:
        shadow_drain = _current_drain(record, entry, True)
        if shadow_drain is not None and shadow_drain.get("shadow") and not entry.get("drained"):
            return True, True, shadow_drain.get("at"), shadow_drain.get("reason")
    ours = bool(entry.get("drained")) and is_ours(entry.get("reason"))
    return bool(entry.get("drained")), ours, entry.get("reason_time"), entry.get("reason")


# --- planning ------------------------------------------------------------------------------------

def _serious(findings):
    """Whether a report holds a warning or critical finding."""
    return any(f["severity"] in ("critical", "warning") for f in findings)


def _severity_rank(findings):
    return sum(1 for f in findings if f.get("severity") == "critical")


def _maintenance(decision, keys, entry, shadow):
    """When every finding in ``keys`` (those holding a node gpufabric drained) is a change to carry out (MAINTENANCE),
    say so in the decision - and name them in ``maintain`` once no job runs on the node - and return True."""
    still = sorted(keys)
    if not still or not all(k.split("|", 1)[0] in MAINTENANCE for k in still):
        return False
    what = "%s (%s)" % (MAINTENANCE[still[0].split("|", 1)[0]], ", ".join(k.split("|", 1)[1] for k in still[:3]))
    if shadow:
        decision["why"] = "shadow mode: would change %s once the node is drained and idle" % what
    elif entry.get("idle"):
        decision.update(maintain=still, why="stays drained: %s to change now that no job runs on it: remediate.yml "
                        "sets them, resets the NIC and certifies the node" % what)
    else:
        decision["why"] = "stays drained: %s wait for the jobs still on it to end" % what
    return True


def _rebuilt_holds(ledger, now):
    """(drains_from, resumes_from): before these times (the scheduler's clock) a ledger rebuilt without its history
    makes no drain and no resume. Once both have passed the ledger holds every decision since and the mark goes."""
    rebuilt = ledger.get("rebuilt")
    if not rebuilt:
        return now, now
    drains_from, resumes_from = rebuilt.get("drains_from") or rebuilt["at"], rebuilt["resumes_from"]
    if now >= max(drains_from, resumes_from):
        del ledger["rebuilt"]
    return drains_from, resumes_from


def _drain_budget_unknown(rebuilt, now, interval):
    return ("drain budget unknown: the decider's decision history could not be rebuilt (%s): the drains gpufabric made "
            "in the last %d s are unknown, so none is made for %d s more" % (
                rebuilt.get("why") or "unknown", interval, rebuilt["drains_from"] - now))


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
             "certificates": {node: "recorded" or why not}}. Each decision: {node, action: drain|resume|none, held (a limit or the
    breaker stopped it), why, reason (for a drain), findings (keys), escalated, shadow, policy, via, certify (it
    stays drained only for want of a certificate: the active check to start), healthy (in service, a complete report,
    no critical or warning finding: a peer for a pairwise check), maintain (the MAINTENANCE findings to carry out on
    a node drained for them, idle and in no other need: what remediate.yml changes), and for a resume certificate, mttr}.
    """
    ledger = copy.deepcopy(ledger) if ledger else empty_ledger()
    reconciled = reconcile(ledger, fleet)   # open intents first: what the scheduler took while the decider was down
    rules = settings["policy"]
    limits, breaker_cfg, escalation = settings["rate_limit"], settings["circuit_breaker"], settings["escalation"]
    shadow = settings["mode"] == "shadow"
    policy = settings["policy_name"]
    interval, window = limits["interval"], breaker_cfg["window"]
    history_from = now - escalation["days"] * 86400

    causes_of = {}
    for node, report in reports.items():
        causes_of[node] = drain_findings(report["findings"], rules)
        if causes_of[node] and node in fleet:
            _record(ledger, node)["unhealthy_at"] = now

    # One pass over the fleet: sizes, our drains in effect and recent, the unhealthy share.
    size, in_effect, recent, unhealthy = {}, {}, {}, {}
    effective = {}
    for name, entry in fleet.items():
        record = ledger["nodes"].get(name)
        state = _effective(entry, record, shadow)
        effective[name] = state
        drained, ours, since = state[0], state[1], state[2]
        sick = ours or (record is not None and record.get("unhealthy_at") is not None
                        and now - record["unhealthy_at"] <= window)
        # A drain counts within the interval while slurmctld holds it (a drain of ours without a time
        # counts: unknown is not old), and also after a resume, from the ledger: drain, resume, drain
        # again must not pass the limit twice.
        fresh = (ours and (since is None or now - since <= interval)) or any(
            now - e.get("at", 0) <= interval for e in _counted((record or {}).get("drains") or [], shadow))
        for part in entry.get("partitions") or [NO_PARTITION]:
            size[part] = size.get(part, 0) + 1
            if ours:
                in_effect[part] = in_effect.get(part, 0) + 1
            if fresh:
                recent[part] = recent.get(part, 0) + 1
            if sick:
                unhealthy[part] = unhealthy.get(part, 0) + 1
    certify_cfg = settings["certification"]
    taken = {}
    for node, cert in sorted((certificates or {}).items()):
        if node not in effective or not effective[node][1]:
            taken[node] = "ignored: %s is not drained by gpufabric" % node
            continue
        _record(ledger, node)["certificate"] = certificate.record(cert, certify_cfg, now)
        taken[node] = "recorded"
    drains_from, resumes_from = _rebuilt_holds(ledger, now)
    resumes_recent = sum(1 for record in ledger["nodes"].values()
                         for e in _counted(record.get("resumes") or [], shadow) if now - e.get("at", 0) <= interval)

    shares = dict((part, round(100.0 * unhealthy.get(part, 0) / size[part], 1)) for part in size)
    open_parts = sorted(p for p in size if shares[p] > breaker_cfg["max_percent"])
    was_open = list(ledger["breaker"].get("open") or [])
    since = ledger["breaker"].get("since") if was_open else now
    ledger["breaker"] = {"open": open_parts, "since": since if open_parts else None,
                         "shares": dict((p, shares[p]) for p in open_parts)}
    breaker = {"open": open_parts, "opened": sorted(set(open_parts) - set(was_open)),
               "closed": sorted(set(was_open) - set(open_parts)), "shares": shares}

    def allowed(part):
        if limits["max_percent"] <= 0:
            return 0
        return max(1, int(size[part] * limits["max_percent"] // 100))

    decisions, drains, resumes = [], [], []
    for node in sorted(reports):
        report = reports[node]
        causes = causes_of[node]
        decision = {"node": node, "action": "none", "held": False, "why": "", "reason": None, "escalated": False,
                    "findings": [finding_key(f) for f in causes], "shadow": shadow, "policy": policy,
                    "via": report.get("source", "timer"), "certify": False, "healthy": False, "maintain": []}
        decisions.append(decision)
        entry = fleet.get(node)
        if entry is None:
            decision["why"] = "the scheduler does not know this node"
            continue
        drained, ours, since, reason = effective[node]
        record = ledger["nodes"].get(node) or {}
        if causes and not drained:
            drains.append((decision, causes))
        elif causes and ours and _maintenance(decision, set(finding_key(f) for f in causes), entry, shadow):
            pass
        elif causes and ours:
            decision["why"] = "already drained by gpufabric (%s)" % reason
        elif drained and not ours:
            decision["why"] = "drained by someone else (%s): gpufabric leaves it as it is" % (entry.get("reason") or "no reason")
        elif ours and entry.get("record_missing"):
            decision["why"] = ("stays drained: the record of gpufabric's drain (annotation %s) is missing or damaged, so "
                               "what drained it and how often are unknown: a human must resume it" % LEDGER_ANNOTATION)
        elif ours:
            resumes.append((decision, record, entry, reason))
        elif not report["complete"]:
            decision["why"] = "in service; the check was incomplete (%s)" % ("; ".join(report["unreadable"]) or "a source")
        else:
            decision.update(why="in service, nothing asks for a drain", healthy=not _serious(report["findings"]))

    # Drains: worst first, each against the breaker, then the limits of every partition it is in.
    drains.sort(key=lambda item: (-_severity_rank(item[1]), -len(item[1]), item[0]["node"]))
    for decision, causes in drains:
        node = decision["node"]
        parts = fleet[node].get("partitions") or [NO_PARTITION]
        record = _record(ledger, node)
        tripped = [p for p in parts if p in open_parts]
        if tripped:
            decision.update(held=True, why="circuit breaker open: %s of partition %s unhealthy (more than %s%%): "
                            "gpufabric stops acting there until a human looks" % (
                                "%s%%" % shares[tripped[0]], tripped[0], breaker_cfg["max_percent"]))
            continue
        over = None
        for part in parts:
            if recent.get(part, 0) + 1 > limits["max_nodes"]:
                over = ("rate limit: %d node(s) of partition %s already drained by gpufabric in the last %d s, at most %d"
                        % (recent.get(part, 0), part, interval, limits["max_nodes"]))
                break
            if in_effect.get(part, 0) + 1 > allowed(part):
                over = ("rate limit: %d of the %d node(s) of partition %s are drained by gpufabric, at most %s%% (%d)"
                        % (in_effect.get(part, 0), size[part], part, limits["max_percent"], allowed(part)))
                break
        if over or now < drains_from:
            decision.update(held=True, why=over or _drain_budget_unknown(ledger["rebuilt"], now, interval))
            continue
        past = [e for e in _counted(record.get("drains") or [], shadow) if e.get("at", 0) >= history_from]
        escalated = len(past) + 1 > escalation["max_remediations"]
        count = "%d drains in %d d" % (len(past) + 1, escalation["days"]) if escalated else None
        reason = drain_reason(causes, policy, decision["via"], count)
        stays = ("; ESCALATED: %s, more than %d: it stays out until a human resumes it"
                 % (count, escalation["max_remediations"]) if escalated else "")
        decision.update(action="drain", reason=reason, escalated=escalated,
                        why="%d finding(s) ask for a drain%s" % (len(causes), stays))
        kept = {"shadow": True} if shadow else {"pending": True}
        if settings["evidence"]["enabled"] and not shadow:   # the bundle the node is asked for, named now
            decision["evidence"] = kept["evidence"] = evidence.bundle_name(evidence.bundle_id(node, now))
        for part in parts:
            recent[part] = recent.get(part, 0) + 1
            in_effect[part] = in_effect.get(part, 0) + 1
        record["drains"] = (record.get("drains") or [])[-(HISTORY - 1):] + [dict(
            {"at": now, "findings": decision["findings"], "reason": reason, "policy": policy, "via": decision["via"],
             "by": decider, "escalated": escalated}, **kept)]

    # Resumes: only what the drain recorded, from a fresh and complete report, within the breaker and budget.
    for decision, record, entry, reason in resumes:
        node = decision["node"]
        report = reports[node]
        current = _current_drain(record, entry, shadow)
        if current is not None:
            recorded, known = list(current.get("findings") or []), True
            escalated = bool(current.get("escalated"))
        else:
            recorded, known = findings_from_reason(reason)
            escalated = is_escalated(reason)
        present = set(finding_key(f) for f in report["findings"])
        drain_at = current.get("at") if current is not None else entry.get("reason_time")
        cert = (ledger["nodes"].get(node) or {}).get("certificate")
        refused = certificate.refusal(cert, drain_at, now, certify_cfg, record.get("resumes"))   # None: it certifies
        if escalated:
            decision["why"] = "escalated (%s): it stays drained until a human resumes it" % reason
        elif not report["complete"]:
            decision["why"] = ("stays drained: the check could not read %s, and unknown is not healthy"
                               % "; ".join(report["unreadable"]) if report["unreadable"] else "stays drained: the check was incomplete")
        elif _maintenance(decision, present & set(recorded), entry, shadow):
            pass
        elif present & set(recorded):
            still = sorted(present & set(recorded))
            decision["why"] = "stays drained: %s recorded at the drain still reported (%s)" % (
                "finding" if len(still) == 1 else "%d findings" % len(still), ", ".join(still[:3]))
        elif not known and _serious(report["findings"]):
            decision["why"] = ("stays drained: the findings recorded at the drain are not all known (%s), so every "
                               "warning and critical finding must clear first" % reason)
        elif refused and certify_cfg["required"]:
            decision.update(certify=True, why="%s: %s" % ("stays drained" if not shadow else "would stay drained", refused))
        else:
            tripped = [p for p in entry.get("partitions") or [NO_PARTITION] if p in open_parts]
            if tripped:
                decision.update(held=True, why="circuit breaker open in partition %s: no resume until a human looks" % tripped[0])
            elif now < resumes_from:
                decision.update(held=True, why="resume budget unknown: the decider's state was rebuilt from the scheduler "
                                "%d s ago, which keeps no record of the resumes made before; no resume for %d s more"
                                % (now - ledger["rebuilt"]["at"], resumes_from - now))
            elif resumes_recent + 1 > limits["max_resumes"]:
                decision.update(held=True, why="rate limit: %d node(s) resumed by gpufabric in the last %d s, at most %d"
                                % (resumes_recent, interval, limits["max_resumes"]))
            else:
                resumes_recent += 1
                why = ("a fresh, complete check: every finding recorded at the drain has cleared (%s)"
                       % ", ".join(recorded[:3]) if recorded else "a fresh, complete check with no finding")
                rec = _record(ledger, node)
                extra = {"shadow": True} if shadow else {}
                if drain_at is not None:
                    extra.update(drained_at=drain_at, mttr=max(0, now - drain_at))
                if refused is None:
                    extra["certificate"] = dict(certificate.brief(cert), cleared=recorded)
                    why += "; %s" % certificate.text(cert)
                    rec.pop("certificate", None)   # one certificate, one resume
                    if not shadow:   # ... kept with the open resume: put back if the resume does not happen
                        extra[KEPT_CERTIFICATE] = cert
                decision.update(action="resume", reason=reason, findings=recorded, why=why,
                                **dict((k, extra[k]) for k in ("certificate", "mttr") if k in extra))
                # An open intent (pending) until the scheduler took it, like a drain: it counts toward max_resumes
                # until it is known not to have happened (ledger.reconcile, settle).
                rec["resumes"] = (rec.get("resumes") or [])[-(HISTORY - 1):] + [dict(
                    {"at": now, "by": decider, "via": decision["via"], "reason": reason},
                    **dict(extra, **({} if shadow else {"pending": True})))]
                if current is not None and current.get("shadow"):
                    current["resumed"] = now

    # Held nodes are reported once per cause, not every run.
    for decision in decisions:
        record = ledger["nodes"].get(decision["node"])
        cause = decision["why"].split(":", 1)[0] if decision["held"] else None
        decision["newly_held"] = bool(cause) and (record or {}).get("held") != cause
        if cause or (record or {}).get("held"):
            _record(ledger, decision["node"])["held"] = cause
    # Bounded memory: history older than the escalation window (and the rate interval) is dropped, and
    # a node with nothing left to remember is forgotten.
    keep_from = min(history_from, now - interval)
    for name in list(ledger["nodes"]):
        record = ledger["nodes"][name]
        for key in ("drains", "resumes"):
            record[key] = [e for e in record.get(key) or [] if e.get("at", 0) >= keep_from][-HISTORY:]
        if (not record["drains"] and not record["resumes"] and not record.get("held")
                and (record.get("unhealthy_at") is None or now - record["unhealthy_at"] > window)):
            del ledger["nodes"][name]
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
    out, held = [], {}
    for decision in result["decisions"]:
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
    if decision.get("error") and not decision["shadow"]:
        return "%s: could not %s %s: %s" % (name, decision["action"], decision["node"], decision["error"])
    if decision["shadow"]:
        return "%s: shadow mode, would have %s %s (%s)" % (name, verb, decision["node"], decision["why"])
    if decision["action"] == "resume":   # why it may return (the findings cleared, its certificate), not what drained it
        return "%s: %s %s (%s)" % (name, verb, decision["node"], decision["why"])
    return "%s: %s %s (%s)" % (name, verb, decision["node"], decision["reason"] or decision["why"])
