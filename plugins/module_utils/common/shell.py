# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Quoting for the shell scripts the collection renders (profile scripts, boot scripts)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


def shell_quote(value):
    """A POSIX shell word for value: as is when it is plainly safe, else single-quoted."""
    value = str(value)
    if value and re.match(r"^[A-Za-z0-9_./:,=+@%-]+$", value):
        return value
    return "'" + value.replace("'", "'\"'\"'") + "'"
