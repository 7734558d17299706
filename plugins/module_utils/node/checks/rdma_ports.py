# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""rdma_ports: the RDMA devices the node should have, each port ACTIVE and at least at the rate it should run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, number, whole


def read(node):
    devices = node.rdma_devices()
    return {"devices": devices, "rdma_devices": [d["name"] for d in devices]}


def judge(node, readings):
    return health.rdma_port_findings(node.host, readings["devices"], node.opts["expected_rdma_devices"],
                                     node.opts["min_port_rate_gbps"])


CHECK = Check(
    "rdma_ports", "RDMA devices present, ports ACTIVE and at their rate",
    reads=("sysfs class/infiniband (devices, ports, state, rate)",), read=read, judge=judge,
    options=(Option("expected_rdma_devices", "int", rules=(whole,),
                    description="RDMA devices the node should have; unset skips the check."),
             Option("min_port_rate_gbps", "float", rules=(number,),
                    description="Lowest acceptable rate of an ACTIVE port, in Gb/s.")),
    findings=("rdma_device_count", "rdma_port_state", "rdma_port_rate"), observed=("rdma_devices",))
