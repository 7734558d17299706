# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""pcie: a GPU or RDMA NIC whose PCIe link in sysfs is narrower than its maximum, or a NIC's slower."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import rates
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check


def read(node):
    return {"links": node.pcie_links()}


def judge(node, readings):
    return rates.pcie_findings(node.host, readings["links"])


CHECK = Check("pcie", "PCIe links of the GPUs and RDMA NICs at their maximum",
              reads=("sysfs bus/pci/devices/<address>/{current,max}_link_{speed,width}",), read=read, judge=judge,
              findings=("pcie_link",))
