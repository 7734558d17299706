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
  whatever the policy says now; a node an admin (or anyone but gpufabric) drained is never touched.

Planning is O(N log N) in the number of nodes (counters per partition, one sort of the candidates).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import math
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import SEVERITIES
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import one_line

ACTIONS = ("notify", "drain", "none")
MODES = ("shadow", "enforce")
OURS = "gpufabric:"
ESCALATED = "ESCALATED"
TAINT_KEY = "gpufabric.io/unhealthy"
# Set when gpufabric cordoned the node: recovery uncordons only such a node.
CORDON_ANNOTATION = "gpufabric.io/cordoned-at"
# The per-node ledger on Kubernetes (the API server holds it, so a one-shot AWX run sees it too).
LEDGER_ANNOTATION = "gpufabric.io/remediation"
MAX_REASON = 200
NO_PARTITION = "(no partition)"
LIMIT_DEFAULTS = {"max_nodes": 1, "max_percent": 10, "interval": 3600, "max_resumes": 5}
BREAKER_DEFAULTS = {"max_percent": 50, "window": 300}
ESCALATION_DEFAULTS = {"max_remediations": 3, "days": 7}
# At most this many past drains and resumes are kept per node (the escalation window needs few).
HISTORY = 20

_POLICY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


class PolicyError(ValueError):
    """A policy rule or a limit that cannot be used; the message names it."""


def check_policy(rules):
    """[{check, severity, action}] -> the same rules, checked; '*' (or leaving a key out) matches any."""
    if rules is None:
        return []
    if not isinstance(rules, list):
        raise PolicyError("the remediation policy must be a list of rules, got %s" % type(rules).__name__)
    checked = []
    for n, rule in enumerate(rules):
        where = "policy rule %d" % (n + 1)
        if not isinstance(rule, dict):
            raise PolicyError("%s must be a mapping with check, severity and action, got %r" % (where, rule))
        unknown = sorted(set(rule) - {"check", "severity", "action"})
        if unknown:
            raise PolicyError("%s has unknown key(s) %s (known: check, severity, action)" % (where, ", ".join(unknown)))
        action = rule.get("action")
        if action not in ACTIONS:
            raise PolicyError("%s: action must be one of %s, got %r" % (where, ", ".join(ACTIONS), action))
        severity = rule.get("severity", "*")
        if severity != "*" and severity not in SEVERITIES:
            raise PolicyError("%s: severity must be one of %s or *, got %r" % (where, ", ".join(SEVERITIES), severity))
        check = rule.get("check", "*")
        if not isinstance(check, str) or not (check == "*" or re.match(r"^[a-z0-9_]{1,64}$", check)):
            raise PolicyError("%s: check must be a check name (like gpu_xid) or *, got %r" % (where, check))
        checked.append({"check": check, "severity": severity, "action": action})
    return checked


def _whole(value, key, where, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PolicyError("%s %s must be a whole number of at least %d, got %r" % (where, key, minimum, value))
    return value


def _percent(value, key, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise PolicyError("%s %s must be a number from 0 to 100, got %r" % (where, key, value))
    return value


def _section(given, defaults, where):
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise PolicyError("%s must be a mapping, got %r" % (where, given))
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise PolicyError("unknown %s key(s) %s (known: %s)" % (where, ", ".join(unknown), ", ".join(sorted(defaults))))
    merged = dict(defaults)
    merged.update(dict((k, v) for k, v in given.items() if v is not None))
    return merged


def check_limits(limits):
    """{max_nodes, max_percent, interval, max_resumes} over LIMIT_DEFAULTS; bad values raise PolicyError."""
    merged = _section(limits, LIMIT_DEFAULTS, "rate limit")
    _whole(merged["max_nodes"], "max_nodes", "rate limit", 0)
    _whole(merged["max_resumes"], "max_resumes", "rate limit", 0)
    _whole(merged["interval"], "interval", "rate limit", 1)
    _percent(merged["max_percent"], "max_percent", "rate limit")
    return merged


def check_breaker(breaker):
    merged = _section(breaker, BREAKER_DEFAULTS, "circuit_breaker")
    _percent(merged["max_percent"], "max_percent", "circuit_breaker")
    _whole(merged["window"], "window", "circuit_breaker", 1)
    return merged


def check_escalation(escalation):
    merged = _section(escalation, ESCALATION_DEFAULTS, "escalation")
    _whole(merged["max_remediations"], "max_remediations", "escalation", 1)
    _whole(merged["days"], "days", "escalation", 1)
    return merged


def policy_id(rules, name=None):
    """The name every action records: the given name, else 'policy-' and a digest of the rules."""
    if name:
        return name
    digest = hashlib.sha256(json.dumps(rules, sort_keys=True).encode("utf-8")).hexdigest()[:8]
    return "policy-" + digest


def action_for(found, rules):
    """The first rule matching the finding's check and severity decides; no match: notify."""
    for rule in rules:
        if rule["check"] in ("*", found.get("check")) and rule["severity"] in ("*", found.get("severity")):
            return rule["action"]
    return "notify"


def finding_key(found):
    return "%s|%s" % (found.get("check"), found.get("target"))


def drain_findings(findings, rules):
    """The findings whose policy action is drain, in the order given (worst first)."""
    return [f for f in findings if action_for(f, rules) == "drain"]


def drain_reason(findings, policy=None, via=None, escalated=None):
    """'gpufabric: <check> <target> (+N more); policy P; via V' for the worst finding.

    An escalated drain says so first: the words a human reading `sinfo -R` must see.
    """
    if not findings:
        return None
    first = findings[0]
    what = "%s %s" % (first.get("check"), first.get("target"))
    if len(findings) > 1:
        what += " (+%d more)" % (len(findings) - 1)
    head = OURS + (" %s %s, a human must look:" % (ESCALATED, escalated) if escalated else "")
    tail = "".join("; %s %s" % (k, v) for k, v in (("policy", policy), ("via", via)) if v)
    what = one_line(what, MAX_REASON - len(head) - len(tail) - 1)
    return one_line("%s %s%s" % (head, what, tail))


def is_ours(reason):
    return bool(reason) and str(reason).startswith(OURS)


def is_escalated(reason):
    return is_ours(reason) and str(reason)[len(OURS):].lstrip().startswith(ESCALATED)


def findings_from_reason(reason):
    """What a drain reason of ours says about the findings behind it: (keys, complete).

    The reason names only the worst finding; '(+N more)' means the rest is unknown (complete False), and
    so does a reason that was cut ('...') or names no target (a Kubernetes taint holds only the check).
    """
    text = str(reason or "")[len(OURS):].strip()
    if text.startswith(ESCALATED):
        text = text.split(":", 1)[1].strip() if ":" in text else ""
    text = text.split(";", 1)[0].strip()
    if text.endswith("..."):
        return [], False
    more = re.search(r" \(\+\d+ more\)$", text)
    if more:
        text = text[:more.start()]
    check, _sep, target = text.partition(" ")
    if not check or not target.strip():
        return [], False
    return ["%s|%s" % (check, target)], not more


# --- configuration ---------------------------------------------------------------------------

CONFIG_DEFAULTS = {
    "mode": "shadow", "policy": [], "policy_name": None, "rate_limit": {}, "circuit_breaker": {},
    "escalation": {},
    "slurm": {"enabled": False, "scontrol": "scontrol", "sinfo": "sinfo", "sdiag": "sdiag"},
    "kubernetes": {"enabled": False, "kubectl": "kubectl", "kubeconfig": None},
}


def _one_line_path(value, where):
    if value is None:
        return None
    if not isinstance(value, str) or not value or re.search(r"[\x00-\x1f\x7f]", value):
        raise PolicyError("%s must be a one-line string, got %r" % (where, value))
    return value


def check_config(config):
    """The decider's settings with defaults, or PolicyError naming the bad entry."""
    config = config or {}
    if not isinstance(config, dict):
        raise PolicyError("remediation must be a mapping, got %s" % type(config).__name__)
    unknown = sorted(set(config) - set(CONFIG_DEFAULTS))
    if unknown:
        hint = " (dry_run is now mode: shadow)" if "dry_run" in unknown else ""
        raise PolicyError("remediation: unknown key(s) %s (known: %s)%s"
                          % (", ".join(unknown), ", ".join(sorted(CONFIG_DEFAULTS)), hint))
    merged = {"policy": check_policy(config.get("policy")), "rate_limit": check_limits(config.get("rate_limit")),
              "circuit_breaker": check_breaker(config.get("circuit_breaker")),
              "escalation": check_escalation(config.get("escalation"))}
    mode = config.get("mode", "shadow")
    if mode not in MODES:
        raise PolicyError("remediation mode must be shadow (decide and report, act on nothing) or enforce, got %r" % (mode,))
    merged["mode"] = mode
    name = config.get("policy_name")
    if name is not None and (not isinstance(name, str) or not _POLICY_NAME.match(name)):
        raise PolicyError("remediation policy_name must be 1 to 63 of [A-Za-z0-9._-], got %r" % (name,))
    merged["policy_name"] = policy_id(merged["policy"], name)
    for scheduler in ("slurm", "kubernetes"):
        given = config.get(scheduler) or {}
        if not isinstance(given, dict):
            raise PolicyError("remediation %s must be a mapping, got %r" % (scheduler, given))
        defaults = CONFIG_DEFAULTS[scheduler]
        unknown = sorted(set(given) - set(defaults))
        if unknown:
            raise PolicyError("remediation %s: unknown key(s) %s (known: %s)" % (scheduler, ", ".join(unknown), ", ".join(sorted(defaults))))
        entry = dict(defaults)
        entry.update(dict((k, v) for k, v in given.items() if v is not None and v != ""))
        if not isinstance(entry["enabled"], bool):
            raise PolicyError("remediation %s enabled must be true or false, got %r" % (scheduler, entry["enabled"]))
        for key in set(entry) - {"enabled"}:
            entry[key] = _one_line_path(entry[key], "remediation %s %s" % (scheduler, key))
        merged[scheduler] = entry
    if merged["slurm"]["enabled"] and merged["kubernetes"]["enabled"]:
        raise PolicyError("remediation: one decider acts on one scheduler: enable slurm or kubernetes, not both")
    return merged


# --- the ledger ----------------------------------------------------------------------------------

LEDGER_VERSION = 1


def empty_ledger():
    return {"version": LEDGER_VERSION, "nodes": {}, "breaker": {"open": []}}


def check_ledger(ledger):
    """A ledger read back from disk, or ValueError when its shape is not ours (the caller sets it aside)."""
    if not isinstance(ledger, dict) or ledger.get("version") != LEDGER_VERSION:
        raise ValueError("not a version %d ledger" % LEDGER_VERSION)
    if not isinstance(ledger.get("nodes"), dict) or not isinstance(ledger.get("breaker"), dict):
        raise ValueError("nodes and breaker must be objects")
    for name, record in ledger["nodes"].items():
        check_record(record, name)
    breaker = ledger["breaker"]
    if not isinstance(breaker.get("open", []), list) or not all(isinstance(p, str) for p in breaker.get("open", [])):
        raise ValueError("breaker open must be a list of partition names")
    if not _number_or_none(breaker.get("since")):
        raise ValueError("breaker since must be a time")
    rebuilt = ledger.get("rebuilt")
    if rebuilt is not None and (not isinstance(rebuilt, dict) or rebuilt.get("at") is None
                                or not all(_number_or_none(rebuilt.get(k)) for k in ("at", "resumes_from"))):
        raise ValueError("rebuilt must be {at, resumes_from, ...} times")
    return ledger


def _number_or_none(value):
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
                             and abs(value) < 1e12)


def check_record(record, name="node"):
    """One node's ledger record, every field typed (ValueError otherwise): a record of another shape
    must never reach the planner, where it would stop every decision."""
    if not isinstance(record, dict):
        raise ValueError("%s: the record is not an object" % name)
    for key in ("drains", "resumes"):
        entries = record.get(key, [])
        if not isinstance(entries, list):
            raise ValueError("%s: %s must be a list" % (name, key))
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("at") is None or not _number_or_none(entry.get("at")):
                raise ValueError("%s: every entry of %s needs a time 'at'" % (name, key))
            if key == "drains" and (not isinstance(entry.get("findings", []), list)
                                    or not all(isinstance(f, str) for f in entry.get("findings", []))
                                    or not isinstance(entry.get("reason", ""), (str, type(None)))):
                raise ValueError("%s: a drain needs findings (texts) and a reason" % name)
    if not _number_or_none(record.get("unhealthy_at")) or not isinstance(record.get("held"), (str, type(None))):
        raise ValueError("%s: unhealthy_at must be a time and held a text" % name)
    return record


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

def _severity_rank(findings):
    return sum(1 for f in findings if f.get("severity") == "critical")


def reconcile(ledger, fleet):
    """Open intents against what the scheduler shows (in place). A drain is recorded as an intent (``pending``)
    before the decider acts and confirmed once the scheduler took it; a decider killed in between leaves it open.
    One the scheduler shows (the node drained with that reason) is confirmed; one it does not never happened and is
    dropped, so it counts toward no limit. Returns {"confirmed": [...], "dropped": [...]} node names."""
    done = {"confirmed": [], "dropped": []}
    for name in sorted(ledger["nodes"]):
        drains = ledger["nodes"][name].get("drains") or []
        if not drains or not drains[-1].get("pending"):
            continue
        entry = fleet.get(name) or {}
        if entry.get("drained") and entry.get("reason") == drains[-1].get("reason"):
            drains[-1].pop("pending")
            done["confirmed"].append(name)
        else:
            drains.pop()
            done["dropped"].append(name)
    return done


def rebuild(ledger, fleet, now, interval, scheduler):
    """The decider's state was lost (deleted, damaged, or never there): what the limits need, from the scheduler,
    in place; returns ledger["rebuilt"] = {at, scheduler, drains_in_effect, recent_drains, resumes_from}.

    Our drains are recognisable in the scheduler itself (the reason starts with 'gpufabric:', its time is
    slurmctld's), and plan counts those in effect against max_nodes and max_percent from the fleet, ledger or no
    ledger. What Slurm keeps no trace of is a resume: the resumes gpufabric made before the loss are unknown, so
    while any drain of ours is in effect no resume is made for one interval (resumes_from); unknown is not a
    budget left. Kubernetes keeps the whole record on each Node (annotations), so nothing is held there.
    """
    ours = [name for name, entry in fleet.items() if entry.get("drained") and is_ours(entry.get("reason"))]
    recent = [name for name in ours if fleet[name].get("reason_time") is None
              or now - fleet[name]["reason_time"] <= interval]
    held = bool(ours) and scheduler != "kubernetes"
    ledger["rebuilt"] = {"at": now, "scheduler": scheduler, "drains_in_effect": len(ours),
                         "recent_drains": len(recent), "resumes_from": now + interval if held else now}
    return ledger["rebuilt"]


def rebuilt_text(rebuilt, scheduler):
    """One line on a rebuild, for the log and the one message that tells it."""
    name = {"slurm": "Slurm", "kubernetes": "Kubernetes"}.get(scheduler, scheduler)
    text = ("the decider's state was missing or set aside: its limits are rebuilt from %s: %d node(s) drained by "
            "gpufabric, %d of them within the rate interval" % (name, rebuilt["drains_in_effect"], rebuilt["recent_drains"]))
    if rebuilt["resumes_from"] > rebuilt["at"]:
        text += ("; %s keeps no record of the resumes gpufabric made before, so none is made for %d s"
                 % (name, rebuilt["resumes_from"] - rebuilt["at"]))
    return text


def confirmed(record):
    """The record with its last drain confirmed: what the decider keeps, and hands the scheduler, once it took it."""
    record = dict(record)
    if record.get("drains") and record["drains"][-1].get("pending"):
        record["drains"] = record["drains"][:-1] + [dict((k, v) for k, v in record["drains"][-1].items() if k != "pending")]
    return record


def plan(reports, fleet, ledger, settings, now, decider="gpufabric-remediator"):
    """Decide for every reported node at once.

    reports: {node: report (check_report's shape)}: the nodes decided for this time (a batch), each
             report just received (it is never kept to decide later: a resume needs a fresh one).
    fleet:   {node: {"partitions": [...], "drained": bool, "reason": str|None, "reason_time": epoch|None}}
             for every node of the scheduler: the limits are counted over all of them.
    ledger:  the decider's record (empty_ledger() the first time); not changed in place.
    settings: check_config's result.  now: the scheduler's clock, epoch seconds.

    Returns {"decisions": [...], "ledger": the new ledger, "breaker": {open, opened, closed, shares},
             "messages": [...]}. Each decision: {node, action: drain|resume|none, held (a limit or the
    breaker stopped it), why, reason (for a drain), findings (keys), escalated, shadow, policy, via}.
    """
    ledger = copy.deepcopy(ledger) if ledger else empty_ledger()
    reconcile(ledger, fleet)
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
    rebuilt = ledger.get("rebuilt")
    resumes_from = rebuilt["resumes_from"] if rebuilt else now
    if rebuilt and now >= resumes_from:
        del ledger["rebuilt"]   # one interval has passed: the ledger holds every resume since
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
                    "via": report.get("source", "timer")}
        decisions.append(decision)
        entry = fleet.get(node)
        if entry is None:
            decision["why"] = "the scheduler does not know this node"
            continue
        drained, ours, since, reason = effective[node]
        record = ledger["nodes"].get(node) or {}
        if causes and not drained:
            drains.append((decision, causes))
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
            decision["why"] = "in service, nothing asks for a drain"

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
        if over:
            decision.update(held=True, why=over)
            continue
        past = [e for e in _counted(record.get("drains") or [], shadow) if e.get("at", 0) >= history_from]
        escalated = len(past) + 1 > escalation["max_remediations"]
        count = "%d drains in %d d" % (len(past) + 1, escalation["days"]) if escalated else None
        reason = drain_reason(causes, policy, decision["via"], count)
        stays = ("; ESCALATED: %s, more than %d: it stays out until a human resumes it"
                 % (count, escalation["max_remediations"]) if escalated else "")
        decision.update(action="drain", reason=reason, escalated=escalated,
                        why="%d finding(s) ask for a drain%s" % (len(causes), stays))
        for part in parts:
            recent[part] = recent.get(part, 0) + 1
            in_effect[part] = in_effect.get(part, 0) + 1
        record["drains"] = (record.get("drains") or [])[-(HISTORY - 1):] + [dict(
            {"at": now, "findings": decision["findings"], "reason": reason, "policy": policy, "via": decision["via"],
             "by": decider, "escalated": escalated}, **({"shadow": True} if shadow else {"pending": True}))]

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
        if escalated:
            decision["why"] = "escalated (%s): it stays drained until a human resumes it" % reason
        elif not report["complete"]:
            decision["why"] = ("stays drained: the check could not read %s, and unknown is not healthy"
                               % "; ".join(report["unreadable"]) if report["unreadable"] else "stays drained: the check was incomplete")
        elif present & set(recorded):
            still = sorted(present & set(recorded))
            decision["why"] = "stays drained: %s recorded at the drain still reported (%s)" % (
                "finding" if len(still) == 1 else "%d findings" % len(still), ", ".join(still[:3]))
        elif not known and any(f["severity"] in ("critical", "warning") for f in report["findings"]):
            decision["why"] = ("stays drained: the findings recorded at the drain are not all known (%s), so every "
                               "warning and critical finding must clear first" % reason)
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
                decision.update(action="resume", reason=reason, findings=recorded,
                                why="a fresh, complete check: every finding recorded at the drain has cleared (%s)"
                                % ", ".join(recorded[:3]) if recorded else "a fresh, complete check with no finding")
                rec = _record(ledger, node)
                rec["resumes"] = (rec.get("resumes") or [])[-(HISTORY - 1):] + [dict(
                    {"at": now, "by": decider, "via": decision["via"]}, **({"shadow": True} if shadow else {}))]
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
    return {"decisions": decisions, "ledger": ledger, "breaker": breaker}


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
    partition. Decisions that changed nothing are not told."""
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
    return "%s: %s %s (%s)" % (name, verb, decision["node"], decision["reason"] or decision["why"])
