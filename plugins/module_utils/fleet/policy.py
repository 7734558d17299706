# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The decider's policy and configuration, checked: the rules that map each finding (check, severity) to
``drain``, ``notify`` or ``none``, the limits (rate limit, circuit breaker, escalation), the decider's settings
(mode, the certificate a resume needs, the rack as one unit (racks.py), the scheduler it acts on); and the marks of
gpufabric's drains: the drain reason it writes (``gpufabric: <check> <target> ...``), what such a reason says back, and
the taint and annotation it sets on a Kubernetes Node.

Pure functions, standard library only; remediation.py decides with them, ledger.py recognises our drains by them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import SEVERITIES
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import one_line
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate, evidence, racks, settings

ACTIONS = ("notify", "drain", "none")
MODES = ("shadow", "enforce")
OURS = "gpufabric:"
ESCALATED = "ESCALATED"
TAINT_KEY = "gpufabric.io/unhealthy"
# Set when gpufabric cordoned the node: recovery uncordons only such a node.
CORDON_ANNOTATION = "gpufabric.io/cordoned-at"
# The APIs that serve DeviceTaintRule, newest first (fleet/k8s_device_taints.py: health as device taints).
DEVICE_TAINT_APIS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1alpha3")
MAX_REASON = 200
LIMIT_DEFAULTS = {"max_nodes": 1, "max_percent": 10, "interval": 3600, "max_resumes": 5}
BREAKER_DEFAULTS = {"max_percent": 50, "window": 300}
ESCALATION_DEFAULTS = {"max_remediations": 3, "days": 7}

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
    return settings.section(given, defaults, where, PolicyError)


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
    "escalation": {}, "certification": {}, "evidence": {}, "rack": {},
    "slurm": {"enabled": False, "scontrol": "scontrol", "sinfo": "sinfo", "sdiag": "sdiag"},
    "kubernetes": {"enabled": False, "kubectl": "kubectl", "kubeconfig": None, "device_taints": None},
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
    try:
        merged["certification"] = certificate.check_settings(config.get("certification"))
    except certificate.CertificateError as exc:
        raise PolicyError(str(exc))
    try:
        merged["evidence"] = evidence.check_settings(config.get("evidence"))
        merged["rack"] = racks.check_settings(config.get("rack"), certificate.CHECKS)
    except (evidence.EvidenceError, racks.RackError) as exc:
        raise PolicyError(str(exc))
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
    taints = merged["kubernetes"].get("device_taints")
    if taints not in (None, "auto") + DEVICE_TAINT_APIS:
        raise PolicyError("remediation kubernetes device_taints must be auto (read it from the API) or the API that serves "
                          "DeviceTaintRule (%s), or unset to cordon the node; got %r" % (", ".join(DEVICE_TAINT_APIS), taints))
    return merged
