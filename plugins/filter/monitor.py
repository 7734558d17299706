# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health monitor's and the remediation decider's configurations, checked on the controller with
their own rules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils import monitor
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


class FilterModule(object):
    def filters(self):
        return filters({"health_monitor_config": health_monitor_config, "remediator_config": remediator_config})
