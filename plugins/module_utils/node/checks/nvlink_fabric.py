# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""nvlink_fabric: each GPU's NVLink fabric - its registration, its domain (ClusterUUID, CliqueId), its GPUs in one
clique, its Health rows - judged from the `nvidia-smi -q -x` nvidia_smi read (node.fabric(): not run again). A GPU
whose fabric is N/A gives nothing; a domain is expected where nvlink_domain_size says so, else where a GPU names its
rack's chassis (a GB200/GB300 tray). Where nvidia-smi could not be read, nvidia_smi says so, not this check."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nvlink_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, on_host, whole


def expected(size):
    """nvlink_fabric_findings' ``expected`` for the option: a size above 0 expects a domain, 0 none, unset infers."""
    return {"domain": None if size is None else size > 0}


def read(node):
    return {"fabric": node.fabric()["parsed"]}


def judge(node, readings):
    if not readings["fabric"]:
        return []
    return on_host(node.host, nvlink_fabric.nvlink_fabric_findings(readings["fabric"], expected(node.opts["nvlink_domain_size"])))


CHECK = Check(
    "nvlink_fabric", "each GPU's NVLink fabric registered, in its domain and healthy",
    reads=("nvidia-smi -q -x, as nvidia_smi read it",), read=read, judge=judge,
    options=(Option("nvlink_domain_size", "int", rules=(whole,), description=[
        "Nodes (trays) of this node's NVLink domain: above 0 expects a domain (a zero ClusterUUID or CliqueId 0 is "
        "then critical, C(nvlink_fabric_domain)), 0 expects none (an HGX board), unset decides by Platform Info (a "
        "GPU naming its rack's chassis, as a GB200/GB300 tray does).",
        "The same number as C(gpufabric_nvlink_domain_size) of the readiness report."]),),
    findings=("nvlink_fabric_registration", "nvlink_fabric_domain", "nvlink_fabric_clique", "nvlink_fabric_health"))
