# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A port's GID table as show_gids printed it (parse/show_gids.py) against what rdma_devices read from sysfs: a GID one
lists and the other does not, or lists otherwise (``gid_table_mismatch``), and a RoCE v2 IPv4 GID index the two give
differently (``gid_index_mismatch``). The rdma_devices module and the ``show_gids_cross_check`` filter call it.

Pure functions, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import show_gids
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError


_VERSION_TYPES = {"v1": ("RoCE v1", "IB"), "v2": ("RoCE v2",)}


def cross_check_gids(gids, rdma_devices):
    """Findings where show_gids and rdma_devices (sysfs) disagree on a port's GID table.

    A GID one lists and the other does not, a different address, RoCE version or netdev, and a port whose
    RoCE v2 IPv4 GID index differs between the two (NCCL_IB_GID_INDEX would be chosen differently).
    """
    show_gids.check_gid_list(gids)
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
        if show_gids.gid_text(str(other.get("gid") or "")) != gid.get("gid"):
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
        mine = show_gids.roce_v2_gid_index([g for g in gids if g.get("device") == name and g.get("port") == number])
        theirs = port.get("roce_v2_gid_index")
        if any(g.get("device") == name and g.get("port") == number for g in gids) and mine != theirs:
            found.append(finding("gid_index_mismatch", "warning", "%s/%s" % (name, number),
                                 "RoCE v2 IPv4 GID index: show_gids gives %s, rdma_devices %s" % (mine, theirs),
                                 "set NCCL_IB_GID_INDEX from sysfs (rdma_devices) after the addresses settle"))
    return found
