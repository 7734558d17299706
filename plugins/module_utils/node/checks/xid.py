# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""xid: the GPUs' Xid events in the kernel log since boot, rated from NVIDIA's Xid catalog (application Xids are
info), repeats folded; a GPU that fell off the bus without an Xid line counts as Xid 79. A kernel log that cannot be
read is a warning and makes the report incomplete: a node drained by gpufabric stays drained."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import CheckOptionError, Check, Option
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import kernel_log


def xid_numbers(name, value):
    if not isinstance(value, list) or not all(isinstance(x, int) for x in value):
        raise CheckOptionError("%s must be a list of Xid numbers, got %r" % (name, value))


def read(node):
    text, source, none_started = node.kernel_log()
    if text is None:
        return {"xid_events": [], "kernel_log_source": None, "why": source, "unread": [("kernel log", source)],
                "not_run": source if none_started else None}
    return {"xid_events": kernel_log.parse_xid_events(text), "kernel_log_source": source, "why": None}


def judge(node, readings):
    return (health.xid_findings(node.host, readings["xid_events"], set(node.opts["xid_ignore"]))
            + health.kernel_log_findings(node.host, readings["why"]))


CHECK = Check(
    "xid", "Xid events of the GPUs in the kernel log since boot",
    reads=("kernel_log (a file, bounded), else journalctl -k -b --no-pager -o short-iso, dmesg -T, dmesg "
           "(command_timeout each)",),
    read=read, judge=judge,
    options=(Option("kernel_log", "path",
                    description="Read the kernel log from this file instead of C(journalctl -k -b) / C(dmesg)."),
             Option("xid_ignore", "list", [], elements="int", rules=(xid_numbers,),
                    description="Xid codes to leave out (e.g. application Xids 13, 31, 43 on a shared cluster).")),
    findings=("gpu_xid", "kernel_log"), observed=("xid_events", "kernel_log_source"))
