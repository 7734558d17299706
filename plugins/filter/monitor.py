# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health monitor's and the remediation decider's configurations, checked on the controller with
their own rules, and the decider's plan for Kubernetes (the remediate playbook)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils import monitor, remediation
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import Mapping, expect, filters


def _webhooks(name, webhooks):
    expect(name, webhooks if webhooks is not None else [], (list,), "a list of webhooks")
    return [dict((k, v) for k, v in w.items() if v is not None) if isinstance(w, Mapping) else w
            for w in webhooks or []]


def health_monitor_config(webhooks, **settings):
    """The JSON object the monitor reads; errors name the entry, never a URL or a secret."""
    config = dict((k, v) for k, v in settings.items() if v is not None)
    config["webhooks"] = _webhooks("health_monitor_config", webhooks)
    decider = config.get("decider")
    if isinstance(decider, Mapping):
        decider = dict((k, v) for k, v in decider.items() if v not in (None, ""))
        config["decider"] = decider if decider.get("url") else None
    checked = monitor.check_config(config)  # ConfigError is a ValueError: the filter error carries its message
    # rate_rules is derived from rate_thresholds; the monitor derives it again on the node.
    checked["checks"] = dict((k, v) for k, v in checked["checks"].items() if v is not None and k != "rate_rules")
    return checked


def remediator_config(webhooks, **settings):
    """The JSON object the remediation decider reads, checked with its own rules."""
    config = dict((k, v) for k, v in settings.items() if v is not None)
    config["webhooks"] = _webhooks("remediator_config", webhooks)
    return monitor.check_decider_config(config)


def remediation_plan(reports, settings, nodes, now):
    """The decider's plan for Kubernetes Nodes (k8s_info's resources), with the JSON patch of each action.

    ``reports``: node name -> {findings, complete, unreadable} (what node_health returned, or nothing for a
    node that could not be checked: it is left out, and so never resumed).
    """
    expect("remediation_plan", reports, (Mapping,), "a mapping of node name to its node_health result")
    expect("remediation_plan", nodes, (list,), "the Node objects k8s_info returned (its resources)")
    checked = remediation.check_config(settings or {})
    checked_reports = {}
    for name, result in reports.items():
        expect("remediation_plan", result, (Mapping,), "a node_health result for %s" % name)
        checked_reports[name] = remediation.check_report({
            "node": name, "findings": list(result.get("findings") or []), "complete": result.get("complete") is True,
            "unreadable": list(result.get("unreadable") or []), "source": "awx"})
    fleet, records, objects = remediation.k8s_fleet(list(nodes))
    ledger = dict(remediation.empty_ledger(), nodes=records)
    result = remediation.plan(checked_reports, fleet, ledger, checked, int(now), "gpufabric.rdma.remediate")
    out = []
    for decision in result["decisions"]:
        decision = dict(decision, text=remediation.decision_text("kubernetes", decision))
        record = result["ledger"]["nodes"].get(decision["node"]) or {}
        act = decision["action"] in ("drain", "resume") and not decision["shadow"]
        decision["patch"] = remediation.k8s_json_patch(objects.get(decision["node"]), decision, record, now) if act else None
        out.append(decision)
    return {"decisions": out, "breaker": result["breaker"], "messages": remediation.messages(result, "kubernetes")}


class FilterModule(object):
    def filters(self):
        return filters({"health_monitor_config": health_monitor_config, "remediator_config": remediator_config,
                        "remediation_plan": remediation_plan})
