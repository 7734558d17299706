# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""RDMA devices: what sysfs holds for them, and ibv_devinfo's text, to plain dictionaries.

Pure functions, standard library only: they take attribute texts (read by sysfs.py on the node)
or tool output, and run on managed nodes (rdma_devices module) and on the controller
(parse_ibv_devinfo filter) alike.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import leading_number, whole

TRANSPORTS = ("InfiniBand", "RoCE", "iWARP", "eRDMA", "EFA", "unknown")

# Kernel driver of the device -> transport, where the driver alone decides it.
_DRIVER_TRANSPORT = {
    "erdma": "eRDMA",
    "efa": "EFA",
    "rdma_rxe": "RoCE",
    "rxe": "RoCE",
    "siw": "iWARP",
    "iw_cxgb4": "iWARP",
    "i40iw": "iWARP",
}
# PCI vendor ids whose devices are known by their vendor alone (Alibaba eRDMA prints 0x1ded).
_VENDOR_TRANSPORT = {"0x1ded": "eRDMA", "0x1d0f": "EFA"}

_STATE_RE = re.compile(r"^\s*(?:(\d+)\s*:\s*)?(?:PORT_(?!CONFIGURATION))?([A-Za-z_]+)\s*(?:\((\d+)\)\s*)?$")
_RATE_RE = re.compile(r"^\s*([0-9]{1,6}(?:\.[0-9]{1,6})?)\s*Gb/sec")
# Integers as sysfs and the verbs tools print them: decimal (numa_node may be -1) or 0x-hex, ASCII digits
# only (int() also reads '٣', '1_0' and a 4,000-digit number, which then cannot even be printed), and no
# more digits than a 64-bit value has.
_INT_RE = re.compile(r"^(?:[+-]?[0-9]{1,20}|0[xX][0-9A-Fa-f]{1,16})\Z")
_PORT_NAME_RE = re.compile(r"^[1-9][0-9]{0,2}\Z")
# A LID is 16 bits (IBTA: unicast 0x0001-0xbfff, multicast 0xc000-0xfffe, permissive 0xffff); 0 means none.
MAX_LID = 0xffff


# verbs prints physical states in upper case ('LINK_UP (5)'); sysfs as '5: LinkUp'. Report the
# sysfs spelling whichever source it came from.
_PHYS_STATES = {
    "SLEEP": "Sleep", "POLLING": "Polling", "DISABLED": "Disabled",
    "PORT_CONFIGURATION_TRAINING": "PortConfigurationTraining", "LINK_UP": "LinkUp",
    "LINK_ERROR_RECOVERY": "LinkErrorRecovery", "PHY_TEST": "PhyTest", "NOP": "Nop",
}


def parse_state(text):
    """'4: ACTIVE', 'PORT_ACTIVE (4)' or 'ACTIVE' -> 'ACTIVE'; '5: LinkUp' or 'LINK_UP (5)' -> 'LinkUp'."""
    if text is None:
        return None
    match = _STATE_RE.match(text)
    if not match:
        return text.strip() or None
    word = match.group(2)
    return _PHYS_STATES.get(word, word)


def parse_rate_gbps(text):
    """'100 Gb/sec (4X EDR)' -> 100; '2.5 Gb/sec (1X SDR)' -> 2.5; None when unknown."""
    return leading_number(text, _RATE_RE)


def parse_int(text, low=None, high=None):
    """Decimal or 0x-hex integer text -> int; None when empty, not a number (ASCII digits, at most a 64-bit
    value's) or outside [low, high] where they are given."""
    if text is None:
        return None
    text = text.strip()
    if not _INT_RE.match(text):
        return None
    value = int(text, 16) if text[:2] in ("0x", "0X") else int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    return value


def _port_number(name):
    """A port directory's name ('1') -> its number; None for any other name."""
    return parse_int(name, 1, 255) if _PORT_NAME_RE.match(name or "") else None


def parse_lid(text):
    """A port's LID ('0x12' in sysfs, '18' in ibv_devinfo) -> int; None for text that is not a LID
    (not a number, or not 16 bits: a 4,000-digit value is garbage, not a LID)."""
    return parse_int(text, 0, MAX_LID)


def normalize_gid(text):
    """Any printed GID (sysfs hex groups or inet_ntop form) -> (exploded gid, ipv4 or None).

    Returns (None, None) for the all-zero GID or text that is not an address.
    """
    try:
        address = ipaddress.IPv6Address(text.strip())
    except (ValueError, AttributeError):
        return None, None
    if int(address) == 0:
        return None, None
    mapped = address.ipv4_mapped
    return address.exploded, (str(mapped) if mapped is not None else None)


def gid_type(raw_type, link_layer):
    """Kernel/verbs GID type text -> 'IB', 'RoCE v1' or 'RoCE v2' (None when unknown).

    The kernel prints 'IB/RoCE v1' for both: the link layer tells them apart.
    """
    if raw_type:
        text = raw_type.strip()
        if text.lower() == "roce v2":
            return "RoCE v2"
        if text.lower() in ("ib/roce v1", "roce v1", "ib"):
            if link_layer == "InfiniBand":
                return "IB"
            if link_layer is not None:
                return "RoCE v1"
            # link layer unknown: the kernel's 'IB/RoCE v1' names both, so it tells nothing
            return {"roce v1": "RoCE v1", "ib": "IB"}.get(text.lower())
    if link_layer == "InfiniBand":
        return "IB"
    return None


def transport_for(driver, node_type, link_layers, vendor_id=None, verbs_transport=None):
    """Decide the transport of a device from what is known about it."""
    if driver in _DRIVER_TRANSPORT:
        return _DRIVER_TRANSPORT[driver]
    if vendor_id and vendor_id.lower() in _VENDOR_TRANSPORT:
        return _VENDOR_TRANSPORT[vendor_id.lower()]
    if verbs_transport:
        word = verbs_transport.split()[0]
        if word in ("eRDMA", "EFA"):
            return word
        if word.lower() == "iwarp":
            return "iWARP"
    if node_type and "RNIC" in node_type:
        return "iWARP"
    if "Ethernet" in link_layers:
        return "RoCE"
    if "InfiniBand" in link_layers:
        return "InfiniBand"
    return "unknown"


def select_roce_v2_gid_index(gids, netdev_up=None):
    """The GID index NCCL_IB_GID_INDEX should name, or None.

    A RoCE v2 GID with an IPv4 address on a netdev that is up wins (lowest index); else the
    lowest RoCE v2 GID with IPv4; else any RoCE v2 GID. ``netdev_up`` maps netdev -> bool;
    netdevs missing from it count as up (ibv_devinfo alone cannot tell).
    """
    netdev_up = netdev_up or {}
    v2 = [g for g in gids if g.get("type") == "RoCE v2"]
    for candidates in (
        [g for g in v2 if g.get("ipv4") and netdev_up.get(g.get("netdev"), True)],
        [g for g in v2 if g.get("ipv4")],
        v2,
    ):
        if candidates:
            return min(g["index"] for g in candidates)
    return None


def port_netdev(port_num, gids, device_nets):
    """The netdev of a port: its GIDs' netdev, else (IPoIB, ports without GID netdevs) the device's net/
    child whose dev_port (0-based) matches, or the only one. ``device_nets``: {name: dev_port text}."""
    for gid in gids:
        if gid.get("netdev"):
            return gid["netdev"]
    for name in sorted(device_nets):
        dev_port = parse_int(device_nets[name])
        if dev_port is None or dev_port == port_num - 1:
            return name
    return None


def port_from_sysfs(port_name, attrs, device_nets, netdev_operstate):
    """A port from what sysfs holds for it -> the port dict of rdma_devices.

    ``attrs``: the port's attribute texts (link_layer, state, phys_state, rate, lid, sm_lid) and
    ``gids``: {index name: (gid text, type text, ndev text)}; ``netdev_operstate``: {netdev: operstate}.
    """
    link_layer = attrs.get("link_layer")
    gids = []
    for index_name, (gid_text, type_text, ndev_text) in (attrs.get("gids") or {}).items():
        index = parse_int(index_name)
        gid, ipv4 = normalize_gid(gid_text or "")
        if index is None or gid is None:
            continue
        gids.append({"index": index, "gid": gid, "type": gid_type(type_text, link_layer),
                     "netdev": ndev_text or None, "ipv4": ipv4})
    gids.sort(key=lambda g: g["index"])
    port_num = _port_number(port_name)
    if port_num is None:
        raise ValueError("RDMA port %r is not a port number (1-255)" % (port_name[:40] if port_name else port_name,))
    netdev_up = dict((name, state.lower() in ("up", "unknown")) for name, state in netdev_operstate.items()
                     if state is not None)
    return {
        "port": port_num,
        "state": parse_state(attrs.get("state")),
        "phys_state": parse_state(attrs.get("phys_state")),
        "link_layer": link_layer,
        "rate_gbps": parse_rate_gbps(attrs.get("rate")),
        "lid": parse_lid(attrs.get("lid")),
        "sm_lid": parse_lid(attrs.get("sm_lid")),
        "active_mtu": None,
        "netdev": port_netdev(port_num, gids, device_nets),
        "gids": gids,
        "roce_v2_gid_index": select_roce_v2_gid_index(gids, netdev_up),
    }


def parse_uevent(text):
    """A sysfs uevent file (KEY=value lines) -> {KEY: value}."""
    values = {}
    for line in _text.clean_lines(text, "uevent"):
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def device_from_sysfs(name, attrs):
    """A device from what sysfs holds for it -> the device dict of rdma_devices.

    ``attrs``: uevent (text), driver_link and pci_link (basenames of the device/driver and device
    links), has_parent (soft-RoCE), numa_node, node_type, vendor, fw_ver, hca_type, board_id,
    node_guid, sys_image_guid (texts), ports ({name: port attrs}), nets ({netdev: dev_port}) and
    netdev_operstate ({netdev: operstate}).
    """
    uevent = parse_uevent(attrs.get("uevent"))
    driver = uevent.get("DRIVER") or attrs.get("driver_link")
    if not driver and attrs.get("has_parent") and name.startswith("rxe"):
        driver = "rdma_rxe"   # soft-RoCE has no PCI device, only the parent netdev
    numa = parse_int(attrs.get("numa_node"))
    # Port directories are named 1, 2, ...; str.isdigit() would also take '²', which int() refuses.
    ports = [port_from_sysfs(port, port_attrs, attrs.get("nets") or {}, attrs.get("netdev_operstate") or {})
             for port, port_attrs in (attrs.get("ports") or {}).items() if _port_number(port) is not None]
    ports.sort(key=lambda p: p["port"])
    node_type = attrs.get("node_type")
    return {
        "name": name,
        "driver": driver,
        "transport": transport_for(driver, node_type, set(p["link_layer"] for p in ports), attrs.get("vendor")),
        "node_type": parse_state(node_type),
        "fw_ver": attrs.get("fw_ver"),
        "hca_type": attrs.get("hca_type"),
        "board_id": attrs.get("board_id"),
        "node_guid": attrs.get("node_guid"),
        "sys_image_guid": attrs.get("sys_image_guid"),
        "pci_address": uevent.get("PCI_SLOT_NAME") or attrs.get("pci_link"),
        "numa_node": numa if numa is not None and numa >= 0 else None,
        "ports": ports,
    }


# ----------------------------------------------------------------------------- ibv_devinfo

_HCA_RE = re.compile(r"^hca_id:\s*(\S+)")
# Numbers in tool text are ASCII digits, and few: \d also matches other scripts' digits, and int() of a
# 5,000-digit run raises (Python's int-from-string digit limit).
_PORT_RE = re.compile(r"^\s+port:\s*([0-9]{1,3})\s*$")
# Values run to the end of the line and are stripped in code: a trailing \s* after a lazy group
# backtracks quadratically on a line of spaces.
_KV_RE = re.compile(r"^\s+([A-Za-z_][A-Za-z0-9_ ]{0,63}?):(.*)$")
_GID_RE = re.compile(r"^\s+GID\[\s*([0-9]{1,6})\]:\s*([0-9A-Fa-f:.]+)(.*)$")
_MTU_RE = re.compile(r"^\s*([0-9]{1,6})(?![0-9])")


_WIDTH_RE = re.compile(r"^\s*([0-9]{1,3})X")
_SPEED_RE = re.compile(r"^\s*([0-9]{1,6}(?:\.[0-9]{1,6})?)\s*Gbps")


def _verbs_rate(width_text, speed_text):
    """active_width '4X (2)' x active_speed '25.0 Gbps (32)' -> 100 (Gb/s), as sysfs 'rate' says."""
    width = _WIDTH_RE.match(width_text or "")
    speed = _SPEED_RE.match(speed_text or "")
    if not (width and speed):
        return None
    return whole(round(int(width.group(1)) * float(speed.group(1)), 1))


def _mtu_bytes(text):
    match = _MTU_RE.match(text or "")
    return int(match.group(1)) if match else None


def _finish_port(port):
    # No link_layer line (a block cut by `head`, a partial paste): unknown, never a guess - a RoCE port
    # taken for InfiniBand gets the wrong GID type and transport.
    link_layer = port.pop("_link_layer", None) or None
    port["link_layer"] = link_layer
    for gid in port["gids"]:
        gid["type"] = gid_type(gid.pop("_type", None), link_layer)
    port["roce_v2_gid_index"] = select_roce_v2_gid_index(port["gids"])
    return port


def parse_ibv_devinfo(text):
    """`ibv_devinfo` or `ibv_devinfo -v` output -> list of devices with ports (and GIDs with -v).

    Keys follow rdma_devices where the tool prints them; values it does not print are None: a port
    block without its link_layer line (cut by `head`, or pasted in part) has link_layer None and the
    device's transport is 'unknown' unless the driver or vendor tells. Old rdma-core versions print no
    GID type; newer ones print 'RoCE v2' GIDs in inet_ntop form.
    """
    devices = []
    device = None
    port = None
    for raw in _text.clean_lines(text, "ibv_devinfo output"):
        line = raw.rstrip()
        if not line.strip():
            continue
        match = _HCA_RE.match(line.strip())
        if match:
            if port is not None:
                device["ports"].append(port)
            port = None
            device = {"name": match.group(1), "attributes": {}, "ports": []}
            devices.append(device)
            continue
        if device is None:
            continue
        match = _PORT_RE.match(line)
        if match:
            if port is not None:
                device["ports"].append(port)
            port = {"port": int(match.group(1)), "attributes": {}, "gids": []}
            continue
        match = _GID_RE.match(line)
        if match and port is not None:
            gid, ipv4 = normalize_gid(match.group(2))
            gid_type_text = match.group(3).strip().lstrip(",").strip() or None
            if gid is not None:
                port["gids"].append({"index": int(match.group(1)), "gid": gid, "_type": gid_type_text,
                                     "netdev": None, "ipv4": ipv4})
            continue
        match = _KV_RE.match(line)
        if match:
            target = port["attributes"] if port is not None else device["attributes"]
            target[match.group(1).strip()] = match.group(2).strip()
    if port is not None:
        device["ports"].append(port)
    return [_shape_verbs_device(d) for d in devices]


def _shape_verbs_device(device):
    attrs = device.pop("attributes")
    ports = []
    for port in device["ports"]:
        pattrs = port.pop("attributes")
        port.update({
            "state": parse_state(pattrs.get("state")),
            "phys_state": parse_state(pattrs.get("phys_state")),
            "_link_layer": pattrs.get("link_layer"),
            "rate_gbps": _verbs_rate(pattrs.get("active_width"), pattrs.get("active_speed")),
            "lid": parse_lid(pattrs.get("port_lid")),
            "sm_lid": parse_lid(pattrs.get("sm_lid")),
            "active_mtu": _mtu_bytes(pattrs.get("active_mtu")),
            "max_mtu": _mtu_bytes(pattrs.get("max_mtu")),
            "netdev": None,
        })
        ports.append(_finish_port(port))
    transport_text = attrs.get("transport")
    vendor_id = attrs.get("vendor_id")
    return {
        "name": device["name"],
        "driver": None,
        "transport": transport_for(None, None, set(p["link_layer"] for p in ports), vendor_id, transport_text),
        "node_type": None,
        "fw_ver": attrs.get("fw_ver"),
        "hca_type": None,
        "board_id": attrs.get("board_id"),
        "node_guid": attrs.get("node_guid"),
        "sys_image_guid": attrs.get("sys_image_guid"),
        "vendor_id": vendor_id,
        "vendor_part_id": parse_int(attrs.get("vendor_part_id")),
        "pci_address": None,
        "numa_node": None,
        "ports": ports,
    }


def merge_verbs(devices, verbs_devices):
    """Fill what only verbs knows (active_mtu; transport where sysfs could not tell) into sysfs devices."""
    by_name = dict((d["name"], d) for d in verbs_devices)
    for device in devices:
        verbs = by_name.get(device["name"])
        if not verbs:
            continue
        if device["transport"] == "unknown":
            device["transport"] = verbs["transport"]
        vports = dict((p["port"], p) for p in verbs["ports"])
        for port in device["ports"]:
            vport = vports.get(port["port"])
            if vport and vport.get("active_mtu") is not None:
                port["active_mtu"] = vport["active_mtu"]
    return devices


def summarize(devices):
    """rdma_summary: counts and names a person or a `when:` can use directly."""
    active_hcas = [d["name"] for d in devices if any(p.get("state") == "ACTIVE" for p in d["ports"])]
    return {
        "count": len(devices),
        "active_ports": sum(1 for d in devices for p in d["ports"] if p.get("state") == "ACTIVE"),
        "transports": sorted(set(d["transport"] for d in devices)),
        "link_layers": sorted(set(p["link_layer"] for d in devices for p in d["ports"] if p.get("link_layer"))),
        "active_hcas": active_hcas,
        "ports_not_active": ["%s/%s %s" % (d["name"], p.get("port"), p.get("state") or "unknown")
                             for d in devices for p in d["ports"] if p.get("state") != "ACTIVE"],
    }
