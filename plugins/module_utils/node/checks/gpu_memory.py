# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""gpu_memory: each GPU's memory health - uncorrectable ECC errors, row remapping pending or failed, page retirement
pending or too many pages retired - from nvidia_smi's reading of `nvidia-smi -q -x`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, whole


def read(node):
    return {"memory": node.gpus()["memory"]}


def judge(node, readings):
    return health.gpu_memory_findings(node.host, readings["memory"], node.opts["max_retired_pages"])


CHECK = Check(
    "gpu_memory", "uncorrectable ECC errors, row remapping and retired pages of each GPU",
    reads=("nvidia-smi -q -x (nvidia_smi's reading)",), read=read, judge=judge,
    options=(Option("max_retired_pages", "int", 60, rules=(whole,),
                    description="More retired pages than this on one GPU is critical (NVIDIA's RMA guideline is 60 on "
                                "older GPUs)."),),
    findings=("gpu_ecc", "gpu_row_remap", "gpu_retired_pages"))
