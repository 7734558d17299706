# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""mtu: each RDMA netdev's MTU is the one the network was configured with (a reboot or a NIC reset may lose it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, whole


def read(node):
    return {"netdev_mtus": node.netdev_mtus(node.netdevs())}


def judge(node, readings):
    return health.mtu_findings(node.host, readings["netdev_mtus"], node.opts["expected_mtu"])


CHECK = Check("mtu", "the MTU of each RDMA netdev", reads=("sysfs class/net/<netdev>/mtu of the RDMA netdevs",),
              read=read, judge=judge,
              options=(Option("expected_mtu", "int", rules=(whole,), description="MTU every RDMA netdev should have (e.g. 9000)."),),
              findings=("mtu",), observed=("netdev_mtus",))
