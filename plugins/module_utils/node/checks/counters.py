# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""counters: the RDMA ports' error counters. The module compares two readings counter_interval seconds apart (or the
reading a caller saved); the health monitor keeps a history and judges rates over rate_window - symbol errors,
link flaps, RoCE congestion, PFC pause storms (from `ethtool -S` of each RDMA netdev, when ethtool is there: one
that fails or hangs is a source that could not be read)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health, rates
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import (
    CheckOptionError, Check, Option, at_least, at_most, boolean, whole)
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ethtool

RATE_COUNTERS = sorted(rates.RATE_RULES)
MAX_COUNTER_INTERVAL = 600


def thresholds(name, value):
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
                                              and v >= 0 for k, v in value.items()):
        raise CheckOptionError("%s must map counter names to non-negative numbers, got %r" % (name, value))
    unknown = sorted(k for k in value if k not in RATE_COUNTERS)
    if unknown:
        raise CheckOptionError("%s: unknown counter(s) %s (known: %s)" % (name, ", ".join(unknown), ", ".join(RATE_COUNTERS)))


def settle(opts):
    """rate_thresholds as the rules judge/rates.py takes (rate_rules)."""
    opts["rate_rules"] = dict((name, rates.RATE_RULES[name][:3] + (value,)) for name, value in opts["rate_thresholds"].items())


def _pause_counters(node, netdevs, unread):
    """{'eth2|tx_pause_storm_error_events': 0, ...} from `ethtool -S` of each RDMA netdev."""
    counters = {}
    tool = node.which("ethtool") if node.opts["ethtool"] else None
    for netdev in netdevs if tool else ():
        result = node.run([tool, "-S", netdev])
        if result.ok:
            for name, value in rates.pause_counters(ethtool.parse_ethtool_stats(result.stdout)).items():
                counters["%s|%s" % (netdev, name)] = value
        else:
            unread.append(("pause counters of %s" % netdev, result.describe()))
    return counters


def read(node):
    opts, now, after = node.opts, node.now(), node.port_counters()
    readings = {"port_counters": after, "counters_at": now, "history": node.history, "unread": []}
    previous = node.previous_counters
    if node.history is not None:
        counters = node.grey_counters(node.netdevs())
        counters.update(_pause_counters(node, node.netdevs(), readings["unread"]))
        readings["history"] = rates.add_sample(node.history, {"at": now, "counters": counters}, opts["rate_window"])
        readings["rates"] = True
    elif previous and previous.get("ports"):
        readings.update(before=previous["ports"], interval=int(round(now - previous.get("at", now))))
    elif opts["counter_interval"] and after:
        node.sleep(opts["counter_interval"])
        readings.update(before=after, interval=opts["counter_interval"], counters_at=node.now(), port_counters=node.port_counters())
    return readings


def judge(node, readings):
    if readings.get("rates"):
        return rates.rate_findings(node.host, readings["history"], node.opts["rate_min_span"], node.opts["rate_rules"])
    if "before" in readings:
        return health.counter_findings(node.host, health.rising_counters(readings["before"], readings["port_counters"]),
                                       readings["interval"])
    return []


CHECK = Check(
    "counters", "RDMA port error counters rising, or their rates over the monitor's history",
    reads=("sysfs class/infiniband/*/ports/*/counters and hw_counters, class/net/<netdev>/carrier_changes",
           "ethtool -S <netdev> per RDMA netdev for the monitor's rates (command_timeout each)"),
    read=read, judge=judge,
    options=(Option("counter_interval", "int", 0, rules=(whole, at_most(MAX_COUNTER_INTERVAL, "seconds")),
                    description="Seconds between the two readings of the port error counters; 0 reads once (no rise "
                                "check)."),
             Option("rate_window", "int", 3600, rules=(whole, at_least(1, "second")), description=[
                 "Seconds of history the health monitor takes counter rates over. This module reads once and takes no "
                 "rates (it has no history); the option is accepted so one set of check options serves both."]),
             Option("rate_min_span", "int", 300, rules=(whole,),
                    description="Shortest span (seconds) the health monitor extrapolates a per-hour rate from (see "
                                "O(rate_window))."),
             Option("rate_thresholds", "dict", {}, rules=(thresholds,), description=[
                 "Counter name to threshold for the health monitor's rates (per hour, or a count for "
                 "C(carrier_changes)), e.g. C({symbol_error: 120}) (see O(rate_window))."]),
             Option("ethtool", "bool", True, rules=(boolean,),
                    description="Let the health monitor read PFC pause counters with C(ethtool -S) (see O(rate_window)).")),
    findings=("rdma_counter", "rdma_error_rate", "link_flap", "roce_congestion", "pfc_pause_storm"),
    observed=("port_counters", "counters_at", "history"),
    metrics={"gpufabric_port_events_total": ("device", "port", "event")}, settle=settle)
