# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""nvidia_smi: nvidia-smi answers and counts the GPUs the site expects.

A hung or failing nvidia-smi is critical and leaves the GPUs unread; a missing one matters where GPUs are expected (a
count, or NVIDIA GPUs on the PCI bus) - then it did not run and the report is incomplete. Its one reading of
`nvidia-smi -q -x` (node.gpus()) serves gpu_memory and gpu_clocks too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, whole


def read(node):
    gpus = node.gpus()
    problem = gpus["problem"]
    # Without nvidia-smi, GPUs are expected where the site expects a count or NVIDIA GPUs sit on the PCI bus.
    pci_gpus = node.pci_gpus() if problem and problem[0] == "missing" else []
    findings, unread = health.nvidia_smi_findings(node.host, problem, node.opts["expected_gpu_count"], pci_gpus)
    return {"gpu_count": gpus["count"], "gpu_error": problem[1] if problem else None, "answer": findings,
            "unread": [("nvidia-smi", problem[1])] if unread else [],
            "not_run": problem[1] if unread and problem[0] == "missing" else None}


def judge(node, readings):
    # With nvidia-smi broken the GPUs cannot be counted: its finding says so, not "a GPU fell off".
    counted = readings["gpu_count"] is not None
    return readings["answer"] + health.gpu_count_findings(node.host, readings["gpu_count"],
                                                          node.opts["expected_gpu_count"] if counted else None)


CHECK = Check(
    "nvidia_smi", "nvidia-smi answers and the GPUs the site expects are there",
    reads=("nvidia-smi -q -x (command_timeout)", "sysfs bus/pci/devices where nvidia-smi is missing"),
    read=read, judge=judge,
    options=(Option("nvidia_smi_path", "path", description="nvidia-smi to run; default the one on PATH."),
             Option("expected_gpu_count", "int", rules=(whole,), description=[
                 "GPUs the node should have; unset skips the count.",
                 "Where C(nvidia-smi) is missing, GPUs are still expected when NVIDIA GPUs sit on the PCI bus (sysfs); the "
                 "check is then critical (C(nvidia_smi)) and the report incomplete. A node with no GPU expected and no "
                 "C(nvidia-smi) is fine."])),
    findings=("nvidia_smi", "gpu_count"), observed=("gpu_count", "gpu_error"))
