# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The one way a DCGM diagnostic is run on a node: ``dcgmi diag`` with a time limit, its output read, and why it gave
no verdict when it did not (missing, killed at its limit, an error or nonsense instead of its table). The dcgm_diag
module and the health check (node_checks) both call it; judge/dcgm_diag.py judges what it returns.

Host access, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import dcgm


def diagnose(dcgmi, args, timeout, name="dcgmi", run=commands.run):
    """Run ``dcgmi`` (its full path, or None when it is not installed) with ``args`` for at most ``timeout`` seconds
    -> (parsed output or None, why it did not run or None, CommandResult or None). ``run(argv, timeout)`` runs a
    command (commands.run, or a Runner's run). A run is no verdict when the run and the reading of its output took
    longer than ``timeout`` together (the parser reads a bounded length, so this holds), or when dcgmi exited non-zero
    after a table with no failure in it."""
    if not dcgmi:
        return None, "%s is not installed (DCGM: datacenter-gpu-manager-4)" % name, None
    result = run([dcgmi] + list(args), timeout)
    if result.timed_out:
        return None, "it did not finish within %s s and was killed with its children" % timeout, result
    started = time.time()
    try:
        parsed = dcgm.parse_dcgmi_diag("\n".join(t for t in (result.stdout, result.stderr) if t))
    except ValueError as exc:
        return None, "%s (%s)" % (result.describe(), exc), result
    took = result.seconds + time.time() - started
    if took > timeout:   # the limit holds for the run and the reading of what it printed together
        return parsed, "the run and the reading of its output took %.1f s, past the time limit of %s s" % (
            took, timeout), result
    if result.rc not in (0, None) and not parsed.get("tests"):
        return parsed, result.describe(), result   # the tool refused: its own words, not a verdict
    if result.rc not in (0, None) and parsed.get("overall") != "fail":
        # dcgmi exits non-zero when the run failed; a table that shows no failure does not make it a pass
        return parsed, ("%s exited %d after a table in which no test failed: DCGM says the run did not succeed, so it "
                        "is not a pass" % (name, result.rc)), result
    return parsed, None, result
