# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Mellanox ``show_gids`` read: each port's GID table (index, address, IPv4, RoCE version, netdev), and the RoCE v2
IPv4 GID index it gives (NCCL_IB_GID_INDEX, ib_write_bw -x). show_gids against rdma_devices (sysfs) is judged in
judge/gid_table.py.

Pure functions, standard library only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError, integer as _int


_IPV4_RE = re.compile(r"^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$")


def gid_text(value):
    """A GID as show_gids prints it (exploded, lower case), or None when it is not an address."""
    try:
        return ipaddress.IPv6Address(value).exploded
    except (ValueError, ipaddress.AddressValueError):
        return None


def parse_show_gids(value):
    """Mellanox ``show_gids`` output -> list of GIDs.

    Each: ``device``, ``port``, ``index``, ``gid`` (as printed, lower case), ``ipv4`` (or None),
    ``version`` ('v1' or 'v2') and ``netdev``. The header, the dashes and ``n_gids_found=`` are
    skipped; a line cut off before its version is dropped (it says nothing sure).
    """
    gids = []
    for raw in _text.clean_lines(value, "show_gids output"):
        words = raw.split()
        if len(words) < 5 or words[0] in ("DEV", "---"):
            continue
        port, index = _int(words[1]), _int(words[2])
        gid = gid_text(words[3])
        if port is None or index is None or gid is None:
            continue
        rest = words[4:]
        ipv4 = None
        if rest and _IPV4_RE.match(rest[0]):
            try:
                ipv4 = str(ipaddress.IPv4Address(rest[0]))
            except ValueError:
                continue
            rest = rest[1:]
        if not rest or rest[0] not in ("v1", "v2"):
            continue
        gids.append({"device": words[0], "port": port, "index": index, "gid": gid, "ipv4": ipv4,
                     "version": rest[0], "netdev": rest[1] if len(rest) > 1 else None})
    return gids


def show_gids_found(value):
    """The ``n_gids_found=`` count show_gids printed, or None (cut off before it)."""
    for raw in _text.clean_lines(value, "show_gids output"):
        line = raw.strip()
        if line.startswith("n_gids_found="):
            return _int(line.split("=", 1)[1])
    return None


def check_gid_list(gids, what="gids"):
    """gids when it is parse_show_gids' list (of mappings), else a ToolTextError naming ``what``."""
    if not isinstance(gids, (list, tuple)):
        raise ToolTextError("%s must be parse_show_gids' list, got %s" % (what, type(gids).__name__))
    for number, gid in enumerate(gids):
        if not isinstance(gid, dict):
            raise ToolTextError("%s[%d] must be a mapping, got %s" % (what, number, type(gid).__name__))
    return gids


def roce_v2_gid_index(gids, netdev=None, ipv4=None, device=None):
    """The GID index to give NCCL_IB_GID_INDEX / ib_write_bw -x: the lowest RoCE v2 GID with an IPv4
    address, on ``netdev`` / with address ``ipv4`` / of ``device`` where those are given; None when none."""
    check_gid_list(gids)
    candidates = []
    for gid in gids:
        if gid.get("version") != "v2" or not gid.get("ipv4"):
            continue
        if netdev and gid.get("netdev") != netdev:
            continue
        if ipv4 and gid.get("ipv4") != ipv4:
            continue
        if device and gid.get("device") != device:
            continue
        if isinstance(gid.get("index"), int) and not isinstance(gid.get("index"), bool):
            candidates.append(gid["index"])
    return min(candidates) if candidates else None
