# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the rdma_network role (thin wrappers over module_utils.netconf)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.filter.fabric import _wrap
from ansible_collections.gpufabric.rdma.plugins.module_utils import netconf


def rdma_boot_script(steps):
    return netconf.render_boot_script(steps or [])


def mtu_mismatch(hostvars, hosts, key="rdma_network_results"):
    """'' when the MTUs set on the hosts agree, else a sentence naming them."""
    return netconf.mtu_mismatch(dict((host, (hostvars[host].get(key) or {}).get("results", []))
                                     for host in hosts))


class FilterModule(object):
    def filters(self):
        return {
            "rdma_boot_script": _wrap(rdma_boot_script),
            "mtu_mismatch": _wrap(mtu_mismatch),
        }
