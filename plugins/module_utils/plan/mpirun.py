# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The one mpirun command line of the collection (validation, burn-in, the tuner, DDP): the launcher, where the
ranks go, -np, one -x per exported variable, the command - every part checked to be one line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import check_line


def _env_name(name):
    return isinstance(name, str) and bool(name) and (name[0].isalpha() or name[0] == "_") \
        and all(c.isalnum() or c == "_" for c in name)


def mpirun_env_args(env):
    """{'NCCL_IB_HCA': '=mlx5_0:1'} -> ['-x', 'NCCL_IB_HCA==mlx5_0:1']: OpenMPI exports each to every rank.

    Sorted by name; None is an empty value, a boolean is written as YAML writes it (true/false). ValueError
    naming the variable for a name that is not an environment variable name, a list or mapping value, or a
    value with a newline or a control character (it would smuggle a second option onto the command line).
    """
    args = []
    for name in sorted(env, key=str):
        value = "" if env[name] is None else env[name]
        if not _env_name(name):
            raise ValueError("%r is not an environment variable name" % (name,))
        if isinstance(value, (Mapping, list)):
            raise ValueError("%s must be a string or a number, got %s" % (name, type(value).__name__))
        args += ["-x", "%s=%s" % (name, check_line(name, value if not isinstance(value, bool) else str(value).lower()))]
    return args


def mpirun_argv(launcher, args, np, command, env=None, hosts=None, slots=None, hostfile=None):
    """The one mpirun command line: launcher, its own arguments, where the ranks go, -np, -x per variable, command.

    ``hosts`` with ``slots`` places ``slots`` ranks on each host (``-H a:8,b:8``); ``hostfile`` names a file
    (``--hostfile``); with neither, mpirun decides (Slurm's allocation). ``command`` may be empty (a prefix a
    runner completes). Every part must be one line; ValueError names the first that is not, a non-positive
    ``np`` or ``slots``, both placements at once, and an empty launcher.
    """
    argv = [check_line("mpirun launcher", launcher, allow_empty=False)]
    argv += [check_line("mpirun argument", a) for a in _as_list("mpirun arguments", args)]
    if hosts is not None and hostfile is not None:
        raise ValueError("mpirun: give hosts or a hostfile, not both")
    if hosts is not None:
        hosts = _as_list("mpirun hosts", hosts)
        per_host = _positive_int("mpirun slots", slots)
        if not hosts:
            raise ValueError("mpirun: the host list is empty")
        argv += ["-H", ",".join("%s:%d" % (check_line("mpirun host", h, allow_empty=False), per_host) for h in hosts)]
    elif hostfile is not None:
        argv += ["--hostfile", check_line("mpirun hostfile", hostfile, allow_empty=False)]
    argv += ["-np", str(_positive_int("mpirun -np", np))]
    argv += mpirun_env_args(env or {})
    return argv + [check_line("command", c) for c in _as_list("command", command)]


def _as_list(name, value):
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise ValueError("%s must be a list, got %s" % (name, type(value).__name__))
    return list(value)


def _positive_int(name, value):
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str) and value.isdigit() and value.isascii() and int(value) >= 1:
        return int(value)
    raise ValueError("%s must be a positive whole number, got %r" % (name, value))
