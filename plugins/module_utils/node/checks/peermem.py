# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""peermem: GPUDirect RDMA's kernel module (nvidia_peermem, or the older nv_peer_mem) is loaded on a GPU node that
requires it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu


def read(node):
    # /proc/modules through the node (bounded, under procfs_root); the GPUs as nvidia_smi counted them (read once).
    return {"peermem": gpu.parse_peermem(node.proc_text("modules") or ""), "gpu_count": node.gpus()["count"]}


def judge(node, readings):
    return health.peermem_findings(node.host, readings["gpu_count"], readings["peermem"]["loaded"],
                                   node.opts["require_peermem"])


CHECK = Check(
    "peermem", "nvidia_peermem loaded where GPUDirect RDMA is required",
    reads=("procfs modules",), read=read, judge=judge,
    options=(Option("require_peermem", "bool", False,
                    description="Report a GPU node without C(nvidia_peermem) (or C(nv_peer_mem)) loaded."),),
    findings=("peermem",),      # each with its entry in docs/site/troubleshooting.yml
    observed=("peermem",))      # readings returned in node_health's observed
