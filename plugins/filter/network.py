# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the rdma_network role (thin wrappers over module_utils.netconf)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import netconf
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    Mapping, expect, expect_list_of_mappings, filters)


def rdma_boot_script(steps):
    return netconf.render_boot_script(expect_list_of_mappings(
        "rdma_boot_script", steps if steps is not None else [], "a list of boot steps (rdma_netdev's boot_steps)"))


def mtu_mismatch(hostvars, hosts, key="rdma_network_results"):
    """'' when the MTUs set on the hosts agree, else a sentence naming them."""
    expect("mtu_mismatch", hostvars, (Mapping,), "hostvars")
    expect("mtu_mismatch", hosts, (list, tuple), "a list of host names")
    results = {}
    for host in hosts:
        values = hostvars.get(host) if isinstance(host, str) else None
        if not isinstance(values, Mapping):
            raise ValueError("host %r has no hostvars" % (host,))
        registered = values.get(key) or {}
        results[host] = registered.get("results", []) if isinstance(registered, Mapping) else []
    return netconf.mtu_mismatch(results)


class FilterModule(object):
    def filters(self):
        return filters({"rdma_boot_script": rdma_boot_script, "mtu_mismatch": mtu_mismatch})
