# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""gpu_clocks: GPU clocks held down by HW slowdown, HW thermal slowdown, HW power brake or SW thermal slowdown, from
nvidia_smi's reading of `nvidia-smi -q -x`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import rates
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check


def read(node):
    return {"clocks": node.gpus()["clocks"]}


def judge(node, readings):
    return rates.clock_findings(node.host, readings["clocks"])


CHECK = Check("gpu_clocks", "GPU clocks held down by hardware or thermal slowdown",
              reads=("nvidia-smi -q -x (nvidia_smi's reading)",), read=read, judge=judge, findings=("gpu_clock_throttle",))
