# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""fabric_events: what the kernel log says of the fabric without an Xid - NVSwitch SXids (fatal is critical),
NVLinks that did not come up at driver load, NICs on a PCIe link slower or narrower than they can use. The xid
check's reading of the kernel log; one that cannot be read is said by xid."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import kernel_log

NONE = {"sxid": [], "nvlink_training": [], "nic_pcie": []}


def read(node):
    text = node.kernel_log()[0]
    return {"fabric_events": kernel_log.parse_fabric_events(text) if text else dict(NONE)}


def judge(node, readings):
    return health.fabric_findings(node.host, readings["fabric_events"])


CHECK = Check("fabric_events", "NVSwitch SXids, NVLink training failures and NICs on a limited PCIe link",
              reads=("the kernel log (xid's reading)",), read=read, judge=judge,
              findings=("nvswitch_sxid", "nvlink_training", "nic_pcie_bandwidth"), observed=("fabric_events",))
