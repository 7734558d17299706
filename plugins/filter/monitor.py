# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health monitor's, the remediation decider's and Alertmanager's configurations, checked on the
controller with their own rules, and gpufabric's Prometheus rules as a Kubernetes PrometheusRule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import yaml

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import alerts, chat, decider_settings, monitor
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import Mapping, expect, fail, filters


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
    return decider_settings.check_config(config)


def alertmanager_config(webhooks, relay_url="http://127.0.0.1:9095", cluster="gpufabric", decider_url=None,
                        decider_token=None, group_wait="30s", group_interval="5m", repeat_interval="4h"):
    """Alertmanager's routes, receivers and inhibition for gpufabric's alerts (alerts.alertmanager_config)."""
    names = [w["name"] for w in chat.check_webhooks(_webhooks("alertmanager_config", webhooks))]
    return alerts.alertmanager_config(names, relay_url, cluster, decider_url or None, decider_token or None,
                                      group_wait, group_interval, repeat_interval)


def alert_relay_config(settings):
    """The alert relay's configuration with defaults, checked with its own rules (alerts.check_relay_config)."""
    expect("alert_relay_config", settings, (Mapping,), "the relay's settings as a mapping")
    config = dict((k, v) for k, v in settings.items() if v is not None)
    for key in ("port", "max_per_minute"):
        if isinstance(config.get(key), str) and config[key].isdigit():
            config[key] = int(config[key])
    if "webhooks" in config:
        config["webhooks"] = _webhooks("alert_relay_config", config["webhooks"])
    return alerts.check_relay_config(config)


_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def prometheus_rule_manifest(rules, name="gpufabric", namespace="monitoring", labels=None):
    """A Prometheus rules file (its text or its data) as a PrometheusRule of the Prometheus Operator."""
    expect("prometheus_rule_manifest", rules, (str, Mapping), "the rules file's text or data")
    if isinstance(rules, str):
        try:
            rules = yaml.safe_load(rules)
        except yaml.YAMLError as exc:
            fail("prometheus_rule_manifest", "the rules are not YAML: %s" % str(exc).splitlines()[0])
    if not isinstance(rules, Mapping) or not isinstance(rules.get("groups"), list) or not rules["groups"]:
        fail("prometheus_rule_manifest", "expects a rules file with a non-empty groups list")
    for what, value in (("name", name), ("namespace", namespace)):
        if not isinstance(value, str) or not _K8S_NAME.match(value):
            fail("prometheus_rule_manifest", "%s must be a Kubernetes object name (lower case, digits, '-', '.'), got %r"
                 % (what, value))
    expect("prometheus_rule_manifest", labels if labels is not None else {}, (Mapping,), "labels as a mapping")
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": dict({"app.kubernetes.io/part-of": "gpufabric"}, **dict(labels or {}))},
            "spec": {"groups": rules["groups"]}}


class FilterModule(object):
    def filters(self):
        return filters({"health_monitor_config": health_monitor_config, "remediator_config": remediator_config,
                        "alertmanager_config": alertmanager_config, "prometheus_rule_manifest": prometheus_rule_manifest,
                        "alert_relay_config": alert_relay_config})
