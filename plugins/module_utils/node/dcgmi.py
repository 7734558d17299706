# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a DCGM diagnostic is run on a node: ``dcgmi diag`` with a time limit, its output read, and why it gave
no verdict when it did not (missing, killed at its limit, an error or nonsense instead of its table). The dcgm_diag
module and the health check (node_checks) both call it; judge/dcgm_diag.py judges what it returns.

Host access, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import dcgm


def diagnose(dcgmi, args, timeout, name="dcgmi", run=commands.run):
    """Run ``dcgmi`` (its full path, or None when it is not installed) with ``args`` for at most ``timeout`` seconds
    -> (parsed output or None, why it did not run or None, CommandResult or None). ``run(argv, timeout)`` runs a
    command (commands.run, or a Runner's run)."""
    if not dcgmi:
        return None, "%s is not installed (DCGM: datacenter-gpu-manager-4)" % name, None
    result = run([dcgmi] + list(args), timeout)
    if result.timed_out:
        return None, "it did not finish within %s s and was killed with its children" % timeout, result
    try:
        parsed = dcgm.parse_dcgmi_diag("\n".join(t for t in (result.stdout, result.stderr) if t))
    except ValueError as exc:
        return None, "%s (%s)" % (result.describe(), exc), result
    if result.rc not in (0, None) and not parsed.get("tests"):
        return parsed, result.describe(), result   # the tool refused: its own words, not a verdict
    return parsed, None, result
