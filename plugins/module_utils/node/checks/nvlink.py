# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""nvlink: NVLinks down (`nvidia-smi nvlink --status`) where the GPUs were counted - a GPU with none of its links
active while its peers have theirs, or some links of a GPU inactive. A listing that cannot be read is a source that
could not be read; a machine without NVLink prints nothing and gives nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nvlink_links
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nvlink

SOURCE = "nvidia-smi nvlink --status"


def read(node):
    smi = node.nvidia_smi()
    if not node.gpus()["count"] or not smi:
        return {"status": [], "failed": None}
    result = node.run([smi, "nvlink", "--status"])
    if not result.ok:
        return {"status": [], "failed": result.describe(), "unread": [(SOURCE, result.describe())]}
    try:
        return {"status": nvlink.parse_nvlink_status(result.stdout), "failed": None}
    except ValueError as exc:   # ToolTextError, TextError
        return {"status": [], "failed": None, "unread": [(SOURCE, str(exc))]}


def judge(node, readings):
    found = nvlink_links.nvlink_down_findings(readings["status"])
    for item in found:
        item["target"] = "%s/%s" % (node.host, item["target"])
    return nvlink_links.nvlink_status_findings(node.host, readings["failed"]) + found


CHECK = Check("nvlink", "NVLinks down where the machine shows they should be up",
              reads=("nvidia-smi nvlink --status (command_timeout), where nvidia-smi counted GPUs",), read=read,
              judge=judge, findings=("nvlink_status", "nvlink_down"))
