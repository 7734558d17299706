# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Which directories a role may own (create, chmod, delete): pure path rules, shared by the
owned_directory module, the health monitor's and the decider's configuration checks.

A role owns only a directory it created itself (statefile.py marks it); whatever the user asks, it
never owns a system directory, because deleting it would delete everything else in it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

MARKER = ".gpufabric-owner"
SYSTEM_DIRECTORIES = frozenset([
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt", "/proc",
    "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin", "/usr/lib", "/usr/lib64", "/usr/libexec",
    "/usr/local", "/usr/local/bin", "/usr/local/lib", "/usr/local/sbin", "/usr/local/share", "/usr/sbin", "/usr/share",
    "/var", "/var/cache", "/var/lib", "/var/local", "/var/log", "/var/opt", "/var/spool", "/var/tmp", "/var/run",
    "/etc/systemd", "/etc/systemd/system", "/etc/slurm", "/etc/default"
])


def refused_directory(path):
    """Why ``path`` may not be a directory a role owns, or None."""
    if not isinstance(path, str) or not path.startswith("/") or any(c in path for c in "\n\r\x00"):
        return "%r is not an absolute path" % (path,)
    normal = posixpath.normpath(path)
    if normal != (path.rstrip("/") or "/"):
        return "%s is not a normalised path (it means %s)" % (path, normal)
    if normal in SYSTEM_DIRECTORIES:
        return "%s is a system directory (a role may own only a directory of its own inside it)" % normal
    return None
