# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""IMEX on this node: `nvidia-imex-ctl -N -j` run and read (the imex health check and the Slurm IMEX prolog), and the
prolog's and epilog's work - nodes_config.cfg written from the job's nodes (the site's own file kept aside and put
back), the daemon restarted and waited for, the channel device looked for. Every command runs under a
commands.Runner (killed with its children at its limit); the waiting is bounded. Host access, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nvidia_imex

SOURCE = "nvidia-imex-ctl -N -j"


def read_ctl(run, ctl):
    """(parse_nvidia_imex_ctl's result, None), or (None, why it could not be read): hung, failed, or printed no IMEX
    node table (foreign output)."""
    result = run([ctl, "-N", "-j"])
    if not result.ok:
        return None, result.describe()
    try:
        return nvidia_imex.parse_nvidia_imex_ctl(result.stdout), None
    except ValueError as exc:   # ToolTextError, TextError
        return None, "%s printed no IMEX node table: %s" % (SOURCE, str(exc)[:200])


def find_ctl(which, path):
    """The nvidia-imex-ctl to run (``path``, else the one on PATH), or None when there is none."""
    ctl = path or which("nvidia-imex-ctl")
    return ctl if ctl and os.path.exists(ctl) else None
