# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health monitor's configuration, checked on the controller with the monitor's own rules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils import monitor
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import Mapping, expect, filters


def health_monitor_config(webhooks, **settings):
    """The JSON object the monitor reads; errors name the entry, never a URL or a secret."""
    expect("health_monitor_config", webhooks if webhooks is not None else [], (list,), "a list of webhooks")
    config = dict(settings, webhooks=webhooks if webhooks is not None else [])
    config["webhooks"] = [dict((k, v) for k, v in w.items() if v is not None) if isinstance(w, Mapping) else w
                          for w in config["webhooks"]]
    checked = monitor.check_config(config)  # ConfigError is a ValueError: the filter error carries its message
    checked["checks"] = dict((k, v) for k, v in checked["checks"].items() if v is not None)
    return checked


class FilterModule(object):
    def filters(self):
        return filters({"health_monitor_config": health_monitor_config})
