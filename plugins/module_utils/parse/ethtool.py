# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``ethtool -i <netdev>`` (the driver's information) to a dictionary: ``driver``, ``version``,
``firmware_version`` and, where mlx5_core appends it (``28.39.1002 (MT_0000000838)``), the board id ``psid``,
``expansion_rom_version``, ``bus_info`` and the ``supports_*`` flags as booleans. A prompt line is skipped; text with
no ``driver:`` line is refused. ``ethtool -S <netdev>`` (the NIC's statistics) to {counter: number}. Pure, one pass.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_LINE_RE = re.compile(r"^([a-z][a-z-]{0,40}):\s*(.*?)\s*$")
_FW_RE = re.compile(r"^(\S+)\s+\(([^()\s]{1,40})\)$")
_STAT_RE = re.compile(r"^\s*([A-Za-z0-9_.\[\]-]{1,96}):\s+(-?\d{1,20})\s*$")


def parse_ethtool_info(text):
    """-> {driver, version, firmware_version, psid, expansion_rom_version, bus_info, supports: {statistics: bool, ...}};
    ValueError when there is no ``driver:`` line."""
    out = {"supports": {}}
    for line in _text.launcher_lines(text, "ethtool -i output"):
        match = _LINE_RE.match(line.strip())
        if not match:
            continue
        key, value = match.group(1).replace("-", "_"), match.group(2)
        if key.startswith("supports_"):
            out["supports"][key[len("supports_"):]] = value.lower() == "yes"
        else:
            out.setdefault(key, value or None)
    if not out.get("driver"):
        raise ValueError("no 'driver:' line: not ethtool -i output")
    firmware = out.get("firmware_version") or ""
    match = _FW_RE.match(firmware)
    out["firmware_version"], out["psid"] = (match.group(1), match.group(2)) if match else (firmware or None, None)
    return out


def parse_ethtool_stats(text):
    """`ethtool -S IFACE` -> {counter: int}; lines that are not 'name: number' are skipped."""
    stats = {}
    for line in _text.clean(text).splitlines():
        match = _STAT_RE.match(line)
        if match:
            stats[match.group(1)] = int(match.group(2))
    return stats
