# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""nccl_env: the NCCL configuration file (nccl_conf) against the variables the deployed profile sets
(expected_nccl_env): a variable missing or different is a warning, one set by hand is info."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, mapping
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_conf


def read(node):
    text = node.read_text(node.opts["nccl_conf"])
    return {"deployed": None if text is None else nccl_conf.parse_nccl_conf(text)}


def judge(node, readings):
    return health.nccl_drift_findings(node.host, readings["deployed"], node.opts["expected_nccl_env"], node.opts["nccl_conf"])


CHECK = Check(
    "nccl_env", "the NCCL configuration file against the deployed profile", reads=("nccl_conf (a file, bounded)",),
    read=read, judge=judge,
    options=(Option("expected_nccl_env", "dict", rules=(mapping("NCCL variables"),),
                    description="The NCCL variables the deployed profile sets; compared with O(nccl_conf) when given."),
             Option("nccl_conf", "path", "/etc/nccl.conf", description="The NCCL configuration file to compare.")),
    findings=("nccl_env_drift",), asked=lambda node: node.opts["expected_nccl_env"] is not None)
