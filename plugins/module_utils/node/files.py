# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""File reading and atomic writing shared by the modules that manage configuration files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


def read_text(path):
    """The file's text, or None when it cannot be read."""
    try:
        with open(path, "r", errors="replace") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def read_attr(path):
    """Text of a sysfs/procfs attribute, stripped; None when absent or unreadable (a normal answer)."""
    try:
        with open(path, "r", errors="replace") as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def write_atomic(module, path, content, make_dirs=False):
    """Write content to path through a temporary file and AnsibleModule.atomic_move."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        if not make_dirs:
            module.fail_json(msg="cannot write %s: directory %s does not exist" % (path, directory))
        os.makedirs(directory, 0o755)
    tmp = "%s.gpufabric.tmp" % path
    with open(tmp, "w") as handle:
        handle.write(content)
    module.atomic_move(tmp, path)
