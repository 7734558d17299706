# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A PCI device's link attributes as sysfs prints them (``/sys/bus/pci/devices/<address>/current_link_speed``,
``max_link_speed``, ``current_link_width``, ``max_link_width``): speeds in GT/s, widths in lanes. node/sysfs.py reads
the files; judge/rates.py judges the links. Pure, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import clean


def parse_link_speed(text):
    """'32.0 GT/s PCIe' / '8 GT/s' / '2.5 GT/s' -> 32.0; 'Unknown' or garbage -> None."""
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*GT/s", clean(text or ""))
    return float(match.group(1)) if match else None


def parse_link_width(text):
    """'16' / 'x16' -> 16; garbage -> None."""
    match = re.match(r"^\s*x?(\d{1,2})\s*$", clean(text or ""))
    return int(match.group(1)) if match else None
