# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""imex: the IMEX domain as this node's daemon sees it (`nvidia-imex-ctl -N -j`, within command_timeout, killed with
its children), judged only where a domain is expected: imex_expected says so, or - unset - a GPU of this node names a
multi-node NVLink domain (a ClusterUUID not all zeros, a CliqueId other than 0). A single-node HGX board or a tray
in no domain is not asked: IMEX not being configured there is normal (NVSentinel#1471). Where a domain is expected,
nvidia-imex-ctl missing is "not run" with its own words, and a hung, failing or foreign answer a source that could not
be read - never a pass. Every node IMEX lists is judged: READY, connected to its peers, and the domain UP."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import imex, nvlink_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, on_host

SOURCE = "nvidia-imex-ctl -N -j"
MISSING = ("nvidia-imex-ctl is not installed (or imex_ctl_path is not there), yet this node is in a multi-node NVLink "
           "domain: IMEX was not read")


def expected_here(node):
    """Whether this node is in an IMEX domain: imex_expected, else its GPUs name a multi-node NVLink domain."""
    if node.opts["imex_expected"] is not None:
        return node.opts["imex_expected"]
    fabric = node.fabric()["parsed"]
    return bool(fabric) and any(nvlink_fabric.in_domain(gpu) for gpu in fabric["gpus"])


def read(node):
    ctl = node.imex_ctl()
    if not ctl:
        return {"parsed": None, "not_run": MISSING, "unread": [(SOURCE, MISSING)]}
    parsed, why = node.read_imex(ctl)
    return {"parsed": parsed, "unread": [(SOURCE, why)] if why else []}


def judge(node, readings):
    if readings["parsed"] is None:
        return []
    # every node this daemon's configuration lists
    return on_host(node.host, imex.imex_findings(readings["parsed"], True))


CHECK = Check(
    "imex", "the IMEX domain up with every node READY and connected, where this node is in a domain",
    reads=("nvidia-imex-ctl -N -j (command_timeout), only where a domain is expected",), read=read, judge=judge,
    asked=expected_here,
    options=(Option("imex_ctl_path", "path", description="C(nvidia-imex-ctl) to run; default the one on PATH."),
             Option("imex_expected", "bool", description=[
                 "Whether this node runs in an IMEX domain: true judges IMEX whatever the GPUs say, false never reads "
                 "it; unset judges it where a GPU names a multi-node NVLink domain (a ClusterUUID not all zeros and a "
                 "CliqueId other than 0, as a GB200/GB300 tray in its rack does).",
                 "Set it false where IMEX runs only for a job (the health monitor's IMEX prolog starts it and its "
                 "epilog stops it): between jobs there is no daemon to ask, which is no fault."])),
    findings=("imex_node", "imex_connection", "imex_domain"))
