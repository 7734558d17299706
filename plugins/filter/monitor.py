# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health monitor's configuration, checked on the controller with the monitor's own rules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.gpufabric.rdma.plugins.module_utils import monitor, remediation
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import Mapping, expect, filters


def health_monitor_config(webhooks, **settings):
    """The JSON object the monitor reads; errors name the entry, never a URL or a secret."""
    expect("health_monitor_config", webhooks if webhooks is not None else [], (list,), "a list of webhooks")
    config = dict(settings, webhooks=webhooks if webhooks is not None else [])
    config["webhooks"] = [dict((k, v) for k, v in w.items() if v is not None) if isinstance(w, Mapping) else w
                          for w in config["webhooks"]]
    checked = monitor.check_config(config)  # ConfigError is a ValueError: the filter error carries its message
    # rate_rules is derived from rate_thresholds; the monitor derives it again on the node.
    checked["checks"] = dict((k, v) for k, v in checked["checks"].items() if v is not None and k != "rate_rules")
    return checked


def remediation_plan(findings_by_node, settings, scheduler, states, view=None, now=0, utc_offset=0):
    """Drain/resume decisions for the nodes of a play (the remediate playbook).

    Slurm: ``states`` maps each node to its `scontrol show node -o` text and ``view`` is the text of
    `sinfo -h -N -o '%n|%P|%H|%E'` (its times are the Slurm host's local time, ``utc_offset`` seconds
    east of UTC). Kubernetes: ``states`` is the list of Node objects from k8s_info.
    """
    expect("remediation_plan", findings_by_node, (Mapping,), "a mapping of node name to its findings")
    expect("remediation_plan", scheduler, (str,), "slurm or kubernetes")
    if scheduler not in ("slurm", "kubernetes"):
        raise ValueError("scheduler must be slurm or kubernetes, got %r" % scheduler)
    checked = remediation.check_config(settings or {})
    if scheduler == "slurm":
        expect("remediation_plan", states, (Mapping,), "a mapping of node name to scontrol show node -o text")
        parsed = dict((node, remediation.parse_scontrol_node(text)) for node, text in states.items())
        sinfo = remediation.parse_sinfo_nodes(view or "")
        slurm_view = {}
        for name, entry in sinfo.items():
            moment = remediation.parse_slurm_time(entry["reason_time"]) if remediation.is_ours(entry["reason"]) else None
            since = (moment - datetime.datetime(1970, 1, 1)).total_seconds() - int(utc_offset) if moment else None
            slurm_view[name] = {"partitions": entry["partitions"], "ours_since": since}
        return remediation.plan_cluster(findings_by_node, checked, "slurm", parsed, slurm_view, now)
    expect("remediation_plan", states, (list,), "the Node objects k8s_info returned (its resources)")
    objects = dict(((item.get("metadata") or {}).get("name"), item) for item in states if isinstance(item, Mapping))
    parsed = dict((name, remediation.k8s_state(item)) for name, item in objects.items())
    k8s_view = remediation.k8s_view({"items": list(objects.values())})
    return remediation.plan_cluster(findings_by_node, checked, "kubernetes", parsed, k8s_view, now, objects)


class FilterModule(object):
    def filters(self):
        return filters({"health_monitor_config": health_monitor_config, "remediation_plan": remediation_plan})
