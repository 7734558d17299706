# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From findings to actions on the scheduler, as pure decisions (no command is run here).

A policy maps each finding (by check and severity) to an action: ``notify`` (post it, the default),
``drain`` (take the node out of service) or ``none`` (ignore it). ``decide`` turns a node's
findings, its scheduler state and a view of the cluster into one decision:

- drain when a finding asks for it and the node is in service, unless the rate limit says too many
  nodes were taken out by gpufabric recently (a fleet-wide false alarm must not empty the cluster);
- resume when no finding asks for a drain any more and the node is drained *by us* (the reason
  starts with ``gpufabric:``); a node an admin drained for another reason stays drained;
- nothing otherwise, with the reason why.

The same decision drives Slurm (``scontrol update``) and Kubernetes (cordon + a
``gpufabric.io/unhealthy=<check>:NoSchedule`` taint, undone on recovery); ``slurm_argv`` and
``k8s_patch`` spell out the exact command and merge-patch body.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.text import clean

ACTIONS = ("notify", "drain", "none")
SEVERITIES = ("critical", "warning", "info")
OURS = "gpufabric:"
TAINT_KEY = "gpufabric.io/unhealthy"
# Set when gpufabric cordoned the node (an epoch second): recovery uncordons only such a node, and the
# rate limit counts them.
CORDON_ANNOTATION = "gpufabric.io/cordoned-at"
MAX_REASON = 200
LIMIT_DEFAULTS = {"max_nodes": 1, "max_percent": 10, "interval": 3600}

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
_TAINT_VALUE = re.compile(r"[^A-Za-z0-9._-]")


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


def check_limits(limits):
    """{max_nodes, max_percent, interval} over LIMIT_DEFAULTS; bad values raise PolicyError."""
    merged = dict(LIMIT_DEFAULTS)
    unknown = sorted(set(limits or {}) - set(LIMIT_DEFAULTS))
    if unknown:
        raise PolicyError("unknown rate limit key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(LIMIT_DEFAULTS))))
    merged.update(dict((k, v) for k, v in (limits or {}).items() if v is not None))
    for key in ("max_nodes", "interval"):
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key == "interval" else 0):
            raise PolicyError("rate limit %s must be a whole number%s, got %r"
                              % (key, " of seconds above 0" if key == "interval" else " (0 drains nothing)", value))
    value = merged["max_percent"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise PolicyError("rate limit max_percent must be a number from 0 to 100, got %r" % (value,))
    return merged


def action_for(found, rules):
    """The first rule matching the finding's check and severity decides; no match: notify."""
    for rule in rules:
        if rule["check"] in ("*", found.get("check")) and rule["severity"] in ("*", found.get("severity")):
            return rule["action"]
    return "notify"


def one_line(text, limit=MAX_REASON):
    """Text safe for a Slurm reason or a taint: one line, printable, bounded."""
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", str(text)).strip()
    return text if len(text) <= limit else text[:limit - 3] + "..."


def drain_reason(findings):
    """'gpufabric: <check> <target>' for the worst finding (and how many more there are)."""
    if not findings:
        return None
    first = findings[0]
    reason = "%s %s %s" % (OURS, first.get("check"), first.get("target"))
    if len(findings) > 1:
        reason += " (+%d more)" % (len(findings) - 1)
    return one_line(reason)


def is_ours(reason):
    return bool(reason) and str(reason).startswith(OURS)


def drain_findings(findings, rules):
    """The findings whose policy action is drain, in the order given (worst first)."""
    return [f for f in findings if action_for(f, rules) == "drain"]


def rate_limited(node, view, limits, now):
    """None when one more drain is allowed, else why not.

    ``view`` is {node: {"partitions": [...], "ours_since": epoch or None}} for the nodes that share a
    partition with ``node`` (every node when partitions are unknown): ``ours_since`` is when gpufabric
    drained it, None when it is in service or drained by someone else.
    """
    mine = set((view.get(node) or {}).get("partitions") or [])
    peers = [name for name, entry in view.items()
             if not mine or not entry.get("partitions") or mine & set(entry["partitions"])]
    if node not in peers:
        peers.append(node)
    recent = sorted(name for name in peers if name != node and view[name].get("ours_since") is not None
                    and now - view[name]["ours_since"] <= limits["interval"])
    total = max(len(peers), 1)
    if len(recent) + 1 > limits["max_nodes"]:
        return ("rate limit: %d node(s) already drained by gpufabric in the last %d s (%s), at most %d"
                % (len(recent), limits["interval"], ", ".join(recent[:5]) or "none", limits["max_nodes"]))
    percent = 100.0 * (len(recent) + 1) / total
    if percent > limits["max_percent"]:
        return ("rate limit: draining this node takes %.0f%% of its %d node(s) out (%d drained by gpufabric in the last"
                " %d s), at most %s%%" % (percent, total, len(recent), limits["interval"], limits["max_percent"]))
    return None


def decide(node, findings, rules, state, view=None, limits=None, now=0):
    """One node's decision: {action: drain|resume|none, reason, why, limited, findings}.

    ``state`` is the scheduler's view of the node: {"drained": bool, "reason": str or None}.
    """
    limits = limits or dict(LIMIT_DEFAULTS)
    causes = drain_findings(findings, rules)
    reason = drain_reason(causes)
    keys = ["%s|%s" % (f.get("check"), f.get("target")) for f in causes]
    drained, current = bool(state.get("drained")), state.get("reason")
    decision = {"node": node, "action": "none", "reason": None, "why": "", "limited": False, "findings": keys}
    if causes:
        if drained and is_ours(current):
            decision["why"] = "already drained by gpufabric (%s)" % current
        elif drained:
            decision["why"] = "already drained by someone else (%s): left as it is" % (current or "no reason")
        else:
            limited = rate_limited(node, view or {}, limits, now)
            if limited:
                decision.update(limited=True, why="%s; %s is not drained" % (limited, reason))
            else:
                decision.update(action="drain", reason=reason, why="%d finding(s) ask for a drain" % len(causes))
    elif drained and is_ours(current):
        decision.update(action="resume", why="every finding that drained it has cleared (%s)" % current)
    elif drained:
        decision["why"] = "drained by someone else (%s): gpufabric does not resume it" % (current or "no reason")
    else:
        decision["why"] = "in service, nothing asks for a drain"
    return decision


# --- Slurm ---------------------------------------------------------------------------------


_REASON_STAMPED = re.compile(r"(?:^|\s)Reason=(.*?) \[([^@\]\s]{0,64})@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]")
_REASON_BARE = re.compile(r"(?:^|\s)Reason=(.*?)(?=\s+[A-Z][A-Za-z]{1,40}=|$)")


def parse_scontrol_node(text):
    """`scontrol show node [-o] NAME` -> {name, state, flags, drained, reason, reason_user, reason_time}.

    The one-line (-o) and the indented forms read the same. Reason is free text: it ends at Slurm's
    "[user@time]" stamp ("Reason=gpufabric: gpu_xid n1 [root@2026-11-23T18:00:00]"), or at the next field.
    """
    lines = clean(text or "").splitlines()
    start = next((i for i, l in enumerate(lines) if l.lstrip().startswith("NodeName=")), None)
    if start is None:
        raise ValueError("no NodeName= in the scontrol output: %r" % one_line(text or "", 120))
    block = [lines[start].strip()]
    for line in lines[start + 1:]:
        if line.lstrip().startswith("NodeName="):
            break
        block.append(line.strip())
    flat = " ".join(l for l in block if l)
    reason = user = when = None
    match = _REASON_STAMPED.search(flat) or _REASON_BARE.search(flat)
    if match:
        reason = match.group(1).strip() or None
        if match.re is _REASON_STAMPED:
            user, when = match.group(2), match.group(3)
        flat = flat[:match.start()] + " " + flat[match.end():]
    fields = {}
    for found in re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]{0,40})=(\S*)", flat):
        fields.setdefault(found.group(1), found.group(2))
    state = fields.get("State", "")
    flags = state.split("+")
    return {"name": fields.get("NodeName"), "state": state, "flags": flags,
            "drained": any(f in ("DRAIN", "DRAINED", "DRAINING") for f in flags),
            "reason": reason, "reason_user": user, "reason_time": when}


def parse_slurm_time(text):
    """'2026-11-23T18:00:00' -> a naive datetime (the controller's local time), else None."""
    try:
        return datetime.datetime.strptime(text or "", "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None


def parse_sinfo_nodes(text):
    """`sinfo -h -N -o '%n|%P|%H|%E'` -> {node: {"partitions": [...], "reason_time": str or None, "reason": str or None}}.

    The reason comes last, so a '|' inside it is kept; 'none' / 'Unknown' mean no reason.
    """
    nodes = {}
    for line in (text or "").splitlines():
        parts = line.strip().split("|", 3)
        if len(parts) != 4 or not _NAME.match(parts[0]):
            continue
        name, partition, when, reason = parts
        entry = nodes.setdefault(name, {"partitions": [], "reason_time": None, "reason": None})
        partition = partition.rstrip("*")
        if partition and partition not in entry["partitions"]:
            entry["partitions"].append(partition)
        if reason.strip() and reason.strip() != "none":
            entry["reason"] = reason.strip()
            entry["reason_time"] = when if when not in ("Unknown", "") else None
    return nodes


def slurm_argv(node, decision, scontrol="scontrol"):
    """The scontrol command line that carries out a decision (None for 'none')."""
    if not _NAME.match(node or ""):
        raise ValueError("Slurm node name %r is not a plain host name" % (node,))
    if decision["action"] == "drain":
        return [scontrol, "update", "NodeName=%s" % node, "State=DRAIN", "Reason=%s" % one_line(decision["reason"])]
    if decision["action"] == "resume":
        return [scontrol, "update", "NodeName=%s" % node, "State=RESUME"]
    return None


# --- Kubernetes ----------------------------------------------------------------------------

def _taints(node_obj):
    return list(((node_obj or {}).get("spec") or {}).get("taints") or [])


def k8s_state(node_obj):
    """A Node object -> the scheduler state decide() reads: drained (cordoned or tainted by us) and reason."""
    spec = (node_obj or {}).get("spec") or {}
    ours = [t for t in _taints(node_obj) if t.get("key") == TAINT_KEY]
    annotations = ((node_obj or {}).get("metadata") or {}).get("annotations") or {}
    if ours or CORDON_ANNOTATION in annotations:
        value = ours[0].get("value") if ours else "cordoned"
        return {"drained": True, "reason": "%s %s" % (OURS, value)}
    if spec.get("unschedulable"):
        return {"drained": True, "reason": "cordoned by someone else"}
    return {"drained": False, "reason": None}


def taint_value(check):
    """A check name as a taint value (at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric)."""
    value = _TAINT_VALUE.sub("-", str(check or "unknown"))[:63].strip("-._")
    return value or "unknown"


def k8s_patch(node_obj, decision, check, now):
    """The JSON merge-patch body that carries out a decision on a Node (None for 'none').

    drain: cordon (spec.unschedulable), add our NoSchedule taint, note when in CORDON_ANNOTATION;
    resume: remove our taint, uncordon only when our annotation says we cordoned it, drop the annotation.
    A merge patch replaces the taint list whole, so it is rebuilt from the node's own taints.
    """
    others = [t for t in _taints(node_obj) if t.get("key") != TAINT_KEY]
    annotations = ((node_obj or {}).get("metadata") or {}).get("annotations") or {}
    if decision["action"] == "drain":
        taint = {"key": TAINT_KEY, "value": taint_value(check), "effect": "NoSchedule"}
        already = bool(((node_obj or {}).get("spec") or {}).get("unschedulable"))
        patch = {"spec": {"taints": others + [taint]}}
        if not already:
            patch["spec"]["unschedulable"] = True
            patch["metadata"] = {"annotations": {CORDON_ANNOTATION: str(int(now))}}
        return patch
    if decision["action"] == "resume":
        patch = {"spec": {"taints": others if others else None}}
        if CORDON_ANNOTATION in annotations:
            patch["spec"]["unschedulable"] = None
            patch["metadata"] = {"annotations": {CORDON_ANNOTATION: None}}
        return patch
    return None


def k8s_view(node_list):
    """A NodeList -> the view rate_limited() reads (every node in one pool; ours_since from our annotation)."""
    view = {}
    for item in (node_list or {}).get("items") or []:
        name = ((item.get("metadata") or {}).get("name"))
        if not name:
            continue
        since = ((item.get("metadata") or {}).get("annotations") or {}).get(CORDON_ANNOTATION)
        try:
            since = int(since) if since is not None else None
        except ValueError:
            since = None
        view[name] = {"partitions": [], "ours_since": since}
    return view


# --- configuration ---------------------------------------------------------------------------

CONFIG_DEFAULTS = {
    "policy": [], "dry_run": False, "rate_limit": {},
    "slurm": {"enabled": False, "node": None, "scontrol": "scontrol", "sinfo": "sinfo"},
    "kubernetes": {"enabled": False, "node": None, "kubectl": "kubectl", "kubeconfig": None},
}


def _one_line_path(value, where):
    if value is None:
        return None
    if not isinstance(value, str) or not value or re.search(r"[\x00-\x1f\x7f]", value):
        raise PolicyError("%s must be a one-line string, got %r" % (where, value))
    return value


def check_config(config):
    """The monitor's ``remediation`` section with defaults, or PolicyError naming the bad entry."""
    config = config or {}
    if not isinstance(config, dict):
        raise PolicyError("remediation must be a mapping, got %s" % type(config).__name__)
    unknown = sorted(set(config) - set(CONFIG_DEFAULTS))
    if unknown:
        raise PolicyError("remediation: unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(CONFIG_DEFAULTS))))
    merged = {"policy": check_policy(config.get("policy")), "rate_limit": check_limits(config.get("rate_limit"))}
    if not isinstance(config.get("dry_run", False), bool):
        raise PolicyError("remediation dry_run must be true or false, got %r" % (config.get("dry_run"),))
    merged["dry_run"] = config.get("dry_run", False)
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
        if entry["node"] is not None and not _NAME.match(str(entry["node"])):
            raise PolicyError("remediation %s node must be a plain node name, got %r" % (scheduler, entry["node"]))
        for key in set(entry) - {"enabled", "node"}:
            entry[key] = _one_line_path(entry[key], "remediation %s %s" % (scheduler, key))
        merged[scheduler] = entry
    return merged


def action_text(scheduler, decision, dry_run):
    """What a decision did, for the messages: 'Slurm: drained (gpufabric: ...)'."""
    name = {"slurm": "Slurm", "kubernetes": "Kubernetes"}[scheduler]
    verb = {"drain": "drained" if scheduler == "slurm" else "cordoned and tainted",
            "resume": "resumed" if scheduler == "slurm" else "uncordoned and untainted"}.get(decision["action"])
    if verb is None:
        return "%s: no action (%s)" % (name, decision["why"])
    if dry_run:
        return "%s: dry run, would have %s %s (%s)" % (name, verb, decision["node"], decision["why"])
    return "%s: %s %s (%s)" % (name, verb, decision["node"], decision["reason"] or decision["why"])


def plan_cluster(findings_by_node, settings, scheduler, states, view, now, node_objects=None):
    """Decisions for many nodes at once (the remediate playbook), the rate limit counting the drains
    decided earlier in the same batch. Nodes are taken worst first (most drain-causing findings), then
    by name. Returns [{node, action, reason, why, limited, findings, argv | patch, text}]."""
    rules = settings["policy"]
    view = dict((name, dict(entry)) for name, entry in (view or {}).items())
    order = sorted(findings_by_node, key=lambda n: (-len(drain_findings(findings_by_node[n] or [], rules)), n))
    planned = []
    for node in order:
        findings = findings_by_node[node] or []
        if node not in states:
            planned.append({"node": node, "action": "none", "reason": None, "limited": False, "findings": [],
                            "why": "the scheduler does not know this node", "text": "%s: not in the scheduler" % node})
            continue
        decision = decide(node, findings, rules, states[node], view, settings["rate_limit"], now)
        causes = drain_findings(findings, rules)
        if scheduler == "slurm":
            decision["argv"] = slurm_argv(node, decision, (settings.get("slurm") or {}).get("scontrol") or "scontrol")
        else:
            decision["patch"] = k8s_patch((node_objects or {}).get(node), decision, causes[0]["check"] if causes else None, now)
        decision["text"] = action_text(scheduler, decision, settings.get("dry_run"))
        if decision["action"] == "drain":
            view.setdefault(node, {"partitions": []})["ours_since"] = now
        planned.append(decision)
    return planned
