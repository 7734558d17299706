# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""dcgm: DCGM's diagnostic (`dcgmi diag -r 1` on every check; level 2 from the Slurm epilog, between jobs) judged by
judge/dcgm_diag.py - each failing GPU a critical finding in DCGM's words. One that could not run (dcgmi missing, no
host engine, timed out) makes the report incomplete: such a report never puts a node back into service."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import dcgm_diag
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import CheckOptionError, Check, Option


def periodic_level(name, value):
    if isinstance(value, bool) or value != 1:
        raise CheckOptionError("%s must be 1 or unset (levels 2 and up stress the GPUs for minutes: run them with "
                               "the dcgm_diag role on a drained node), got %r" % (name, value))


def level(node):
    """The level this run asks for: the Slurm epilog's (node.dcgm_level, 1 or 2), else the option's; None: not run."""
    return node.dcgm_level or node.opts["dcgm_level"]


def read(node):
    asked = level(node)
    # Between jobs a level runs within its own time limit; a periodic check within command_timeout.
    timeout = dcgm_diag.TIMEOUTS[asked] if node.dcgm_level else node.timeout
    parsed, not_run = node.dcgmi_diagnose(["diag", "-r", str(asked)], timeout)
    judged = dcgm_diag.verdict(parsed, asked, not_run, host=node.host)
    readings = {"verdict": judged, "dcgm": dict((k, judged[k]) for k in ("status", "level", "failures", "reason"))}
    if judged["status"] == "not run":
        readings.update(unread=[("dcgmi diag -r %d" % asked, judged["reason"])], not_run=judged["reason"])
    return readings


def judge(node, readings):
    return [f for f in readings["verdict"]["findings"] if f["severity"] != "info"]


CHECK = Check(
    "dcgm", "DCGM's diagnostic: level 1 on every check, or the Slurm epilog's level between jobs",
    reads=("dcgmi diag -r <level> (command_timeout; the epilog's level its own limit)",), read=read, judge=judge,
    options=(
        Option("dcgm_level", "int", rules=(periodic_level,), description=(
            "1 runs DCGM's level-1 diagnostic (C(dcgmi diag -r 1), seconds) on every check; each failing GPU is a "
            "critical finding in DCGM's words. One that cannot run (dcgmi missing, no host engine, timed out) is a "
            "warning and makes the report incomplete, so it never returns a node to service. Levels 2 and up stress the "
            "GPUs for minutes and are refused here - run them with role P(gpufabric.rdma.dcgm_diag#role) on a drained "
            "node.")),
        Option("dcgmi_path", "path", description="Path of C(dcgmi); default the one on C(PATH).")),
    findings=("dcgm_diag", "dcgm_diag_not_run"), observed=("dcgm",), asked=lambda node: bool(level(node)))
