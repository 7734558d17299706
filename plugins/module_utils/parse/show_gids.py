# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mellanox ``show_gids`` read: each port's GID table (index, address, IPv4, RoCE version, netdev); and the
checks made from it: the RoCE v2 IPv4 GID index (NCCL_IB_GID_INDEX, ib_write_bw -x), show_gids against
rdma_devices (sysfs).

Pure functions, standard library only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError, integer as _int


_IPV4_RE = re.compile(r"^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$")


def _gid_text(value):
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
        gid = _gid_text(words[3])
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


def _check_gid_list(gids, what="gids"):
    if not isinstance(gids, (list, tuple)):
        raise ToolTextError("%s must be parse_show_gids' list, got %s" % (what, type(gids).__name__))
    for number, gid in enumerate(gids):
        if not isinstance(gid, dict):
            raise ToolTextError("%s[%d] must be a mapping, got %s" % (what, number, type(gid).__name__))
    return gids


def roce_v2_gid_index(gids, netdev=None, ipv4=None, device=None):
    """The GID index to give NCCL_IB_GID_INDEX / ib_write_bw -x: the lowest RoCE v2 GID with an IPv4
    address, on ``netdev`` / with address ``ipv4`` / of ``device`` where those are given; None when none."""
    _check_gid_list(gids)
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


_VERSION_TYPES = {"v1": ("RoCE v1", "IB"), "v2": ("RoCE v2",)}


def cross_check_gids(gids, rdma_devices):
    """Findings where show_gids and rdma_devices (sysfs) disagree on a port's GID table.

    A GID one lists and the other does not, a different address, RoCE version or netdev, and a port whose
    RoCE v2 IPv4 GID index differs between the two (NCCL_IB_GID_INDEX would be chosen differently).
    """
    _check_gid_list(gids)
    if not isinstance(rdma_devices, (list, tuple)):
        raise ToolTextError("rdma_devices must be the rdma_devices fact (a list), got %s" % type(rdma_devices).__name__)
    sysfs = {}
    ports = {}
    for device in rdma_devices:
        if not isinstance(device, dict):
            raise ToolTextError("rdma_devices items must be mappings, got %s" % type(device).__name__)
        for port in device.get("ports") or []:
            if not isinstance(port, dict):
                continue
            key = (device.get("name"), port.get("port"))
            ports[key] = port
            for gid in port.get("gids") or []:
                if isinstance(gid, dict):
                    sysfs[key + (gid.get("index"),)] = gid
    found = []
    listed = {}
    for gid in gids:
        key = (gid.get("device"), gid.get("port"), gid.get("index"))
        listed[key] = gid
        target = "%s/%s GID %s" % key
        if (key[0], key[1]) not in ports:
            found.append(finding("gid_table_mismatch", "warning", target,
                                 "show_gids lists %s/%s but rdma_devices has no such port" % key[:2],
                                 "compare with /sys/class/infiniband: the two were read from different hosts or times"))
            continue
        other = sysfs.get(key)
        if other is None:
            found.append(finding("gid_table_mismatch", "warning", target,
                                 "show_gids lists %s %s (%s) that rdma_devices does not have" % (
                                     gid.get("gid"), gid.get("version"), gid.get("netdev")),
                                 "re-read both: a GID added or removed in between (an address change) moves the indexes"))
            continue
        problems = []
        if _gid_text(str(other.get("gid") or "")) != gid.get("gid"):
            problems.append("address %s vs %s" % (gid.get("gid"), other.get("gid")))
        if other.get("type") and other.get("type") not in _VERSION_TYPES.get(gid.get("version"), ()):
            problems.append("type %s vs %s" % (gid.get("version"), other.get("type")))
        if gid.get("netdev") and other.get("netdev") and gid.get("netdev") != other.get("netdev"):
            problems.append("netdev %s vs %s" % (gid.get("netdev"), other.get("netdev")))
        if (gid.get("ipv4") or None) != (other.get("ipv4") or None):
            problems.append("IPv4 %s vs %s" % (gid.get("ipv4"), other.get("ipv4")))
        if problems:
            found.append(finding("gid_table_mismatch", "warning", target,
                                 "show_gids and rdma_devices differ: %s" % "; ".join(problems),
                                 "re-read both on the same host; trust sysfs (what NCCL reads)"))
    for key, other in sorted(sysfs.items(), key=lambda item: tuple(str(part) for part in item[0])):
        if key not in listed and any(k[:2] == key[:2] for k in listed):
            found.append(finding("gid_table_mismatch", "info", "%s/%s GID %s" % key,
                                 "rdma_devices has %s (%s) that show_gids did not list" % (other.get("gid"), other.get("type")),
                                 "show_gids may have been cut off; re-run it"))
    for (name, number), port in sorted(ports.items(), key=lambda item: (str(item[0][0]), str(item[0][1]))):
        mine = roce_v2_gid_index([g for g in gids if g.get("device") == name and g.get("port") == number])
        theirs = port.get("roce_v2_gid_index")
        if any(g.get("device") == name and g.get("port") == number for g in gids) and mine != theirs:
            found.append(finding("gid_index_mismatch", "warning", "%s/%s" % (name, number),
                                 "RoCE v2 IPv4 GID index: show_gids gives %s, rdma_devices %s" % (mine, theirs),
                                 "set NCCL_IB_GID_INDEX from sysfs (rdma_devices) after the addresses settle"))
    return found
