# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``ofed_info -s``: which NVIDIA RDMA stack a node runs - ``MLNX_OFED_LINUX-23.07-0.5.1.2:`` (MLNX_OFED) or
``OFED-internal-24.10-1.1.4.0.200:`` (DOCA-OFED, the DOCA host packages) - as {stack, version, text}. None when the
text holds neither (no ofed_info: the inbox rdma-core). Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_OFED_RE = re.compile(r"^(MLNX_OFED_LINUX|OFED-internal|MLNX_EN)-(\d+\.\d+[0-9.\-]*?)(?:-\w+)?:?\s*$")
_STACKS = {"MLNX_OFED_LINUX": "MLNX_OFED", "OFED-internal": "DOCA-OFED", "MLNX_EN": "MLNX_EN"}


def parse_ofed_info(text):
    """-> {'stack': 'MLNX_OFED'|'DOCA-OFED'|'MLNX_EN', 'version': '23.07-0.5.1.2', 'text': the line} or None."""
    for line in _text.launcher_lines(text or "", "ofed_info output"):
        match = _OFED_RE.match(line.strip())
        if match:
            return {"stack": _STACKS[match.group(1)], "version": match.group(2), "text": line.strip().rstrip(":")}
    return None
