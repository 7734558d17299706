# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""NCCL's configuration file as the nccl_env role writes it (/etc/nccl.conf): the variables it sets. Standard library
only; the drift against the profile is judge/health.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text


def parse_nccl_conf(text):
    """/etc/nccl.conf (NAME=value lines, # comments) -> {NAME: value}."""
    env = {}
    for line in _text.clean_lines(text, "nccl.conf"):
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        env[name.strip()] = value.strip()
    return env
