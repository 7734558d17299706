# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA and NVLink tools operators run by hand, read: ibstat, ibstatus, ibdev2netdev, show_gids,
``rdma link``, Alibaba eRDMA's ``eadm stat``, ``nvidia-smi nvlink --status`` and ``-e``; and the checks
made from them: the RoCE v2 IPv4 GID index, show_gids against rdma_devices, NVLink links down or
erring, and which RDMA ports carried the bytes of a run.

States use the vocabulary of rdma_devices whatever the tool printed: port state ACTIVE, DOWN, INIT,
ARMED; physical state LinkUp, Disabled, Polling, ... (sysfs spelling). Pure functions, standard library
only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding


class ToolTextError(ValueError):
    """The text is not what the tool prints, or an argument is not what a helper reads; the message says which."""


_STATES = {"ACTIVE": "ACTIVE", "DOWN": "DOWN", "INIT": "INIT", "INITIALIZING": "INIT", "ARMED": "ARMED",
           "ACTIVE_DEFER": "ACTIVE_DEFER", "NOP": "NOP"}
_PHYS_STATES = {"LINKUP": "LinkUp", "LINK_UP": "LinkUp", "DISABLED": "Disabled", "POLLING": "Polling",
                "SLEEP": "Sleep", "PORTCONFIGURATIONTRAINING": "PortConfigurationTraining",
                "PORT_CONFIGURATION_TRAINING": "PortConfigurationTraining", "LINKERRORRECOVERY": "LinkErrorRecovery",
                "LINK_ERROR_RECOVERY": "LinkErrorRecovery", "PHYTEST": "PhyTest", "PHY_TEST": "PhyTest", "NOP": "Nop"}
_INT_RE = re.compile(r"^(?:[0-9]{1,20}|0[xX][0-9A-Fa-f]{1,16})$")
_NUMBER_RE = re.compile(r"^([0-9]{1,7}(?:\.[0-9]{1,6})?)")
_REDACTED = ("...", "", "N/A", "unknown")


def _state(value):
    """'Active', '4: ACTIVE', 'ACTIVE' -> 'ACTIVE'; 'Initializing' -> 'INIT'; None for nothing."""
    if value is None:
        return None
    word = value.split(":", 1)[-1].strip() if ":" in value else value.strip()
    if not word or word in _REDACTED:
        return None
    return _STATES.get(word.upper(), word.upper())


def _phys_state(value):
    """'LinkUp', '5: LinkUp', 'LINK_UP', 'DISABLED' -> 'LinkUp' / 'Disabled' (sysfs spelling)."""
    if value is None:
        return None
    word = value.split(":", 1)[-1].strip() if ":" in value else value.strip()
    if not word or word in _REDACTED:
        return None
    return _PHYS_STATES.get(word.upper(), word)


def _int(value):
    """'287', '0x30' -> int; None for '...', '' or anything else."""
    if value is None:
        return None
    value = value.strip()
    if not _INT_RE.match(value):
        return None
    return int(value, 16) if value[:2] in ("0x", "0X") else int(value)


def _number(value):
    """'400' -> 400, '2.5' -> 2.5, '100 Gb/sec (4X EDR)' -> 100; None otherwise."""
    match = _NUMBER_RE.match((value or "").strip())
    if not match:
        return None
    number = float(match.group(1))
    return int(number) if number.is_integer() else number


def _value(value):
    value = (value or "").strip()
    return None if value in _REDACTED else value


# ----------------------------------------------------------------------------- ibstat / ibstatus

_CA_RE = re.compile(r"^CA '([^']{1,64})'")
_IBSTAT_PORT_RE = re.compile(r"^Port ([0-9]{1,3}):$")
_IBSTATUS_RE = re.compile(r"^Infiniband device '([^']{1,64})' port ([0-9]{1,3}) status:")
_RATE_TEXT_RE = re.compile(r"\(([0-9]{1,2}X) ?([A-Za-z]{0,8})\)")
_CA_KEYS = {"CA type": "ca_type", "Number of ports": "number_of_ports", "Firmware version": "firmware",
            "Hardware version": "hardware_version", "Node GUID": "node_guid", "System image GUID": "system_image_guid"}
_PORT_KEYS = {"State": "state", "Physical state": "physical_state", "Rate": "rate", "Base lid": "base_lid",
              "LMC": "lmc", "SM lid": "sm_lid", "Capability mask": "capability_mask", "Port GUID": "port_guid",
              "Link layer": "link_layer"}


def _empty_port(number):
    return {"port": number, "state": None, "physical_state": None, "rate": None, "link_layer": None,
            "base_lid": None, "sm_lid": None, "lmc": None, "port_guid": None, "capability_mask": None,
            "default_gid": None, "width": None, "speed": None}


def _empty_ca(name):
    return {"name": name, "ca_type": None, "number_of_ports": None, "firmware": None, "hardware_version": None,
            "node_guid": None, "system_image_guid": None, "ports": []}


def _set_port_value(port, key, raw):
    if key == "state":
        port["state"] = _state(raw)
    elif key == "physical_state":
        port["physical_state"] = _phys_state(raw)
    elif key == "rate":
        port["rate"] = _number(raw)
        match = _RATE_TEXT_RE.search(raw)
        if match:
            port["width"], port["speed"] = match.group(1), match.group(2) or None
    elif key in ("base_lid", "sm_lid", "lmc"):
        port[key] = _int(raw)
    elif key == "link_layer":
        port["link_layer"] = _value(raw)
    else:
        port[key] = _value(raw)


def is_ibstatus(value):
    """True when the text is ibstatus' (``Infiniband device 'mlx5_0' port 1 status:``), not ibstat's."""
    for line in _text.clean_lines(value, "ibstat output"):
        stripped = line.strip()
        if _IBSTATUS_RE.match(stripped):
            return True
        if _CA_RE.match(stripped):
            return False
    return False


def parse_ibstat(value):
    """``ibstat`` output (or ``ibstatus``', detected) -> list of CAs.

    Each CA: ``name``, ``ca_type``, ``number_of_ports``, ``firmware``, ``hardware_version``,
    ``node_guid``, ``system_image_guid`` and ``ports``; each port: ``port``, ``state``,
    ``physical_state``, ``rate`` (Gb/s, a number), ``link_layer``, ``base_lid``, ``sm_lid``, ``lmc``,
    ``port_guid``, ``capability_mask``. Values the tool redacts or does not print ('...') are None;
    ``ibwarn``/``ibpanic`` lines and a CA cut off mid-way are tolerated (see ``ibstat_errors``).
    """
    if is_ibstatus(value):
        return parse_ibstatus(value)
    cas = []
    ca = port = None
    for raw in _text.clean_lines(value, "ibstat output"):
        line = raw.strip()
        if not line:
            continue
        match = _CA_RE.match(line)
        if match:
            ca, port = _empty_ca(match.group(1)), None
            cas.append(ca)
            continue
        if ca is None:
            continue
        match = _IBSTAT_PORT_RE.match(line)
        if match:
            port = _empty_port(int(match.group(1)))
            ca["ports"].append(port)
            continue
        key, sep, raw_value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if port is not None and key in _PORT_KEYS:
            _set_port_value(port, _PORT_KEYS[key], raw_value)
        elif key in _CA_KEYS:
            name = _CA_KEYS[key]
            ca[name] = _int(raw_value) if name == "number_of_ports" else _value(raw_value)
    return cas


def ibstat_errors(value):
    """The ``ibpanic:``, ``ibwarn:`` and ``ibstat:`` lines of an ibstat run (a device that could not be read)."""
    found = []
    for raw in _text.clean_lines(value, "ibstat output"):
        line = raw.strip()
        if line.startswith(("ibpanic:", "ibwarn:", "ibstat:", "ibstatus:")) or line.startswith("Fatal error"):
            found.append(line)
    return found


def parse_ibstatus(value):
    """``ibstatus`` output -> the list of CAs of ``parse_ibstat`` (CA attributes None, ibstatus does not print them).

    Each port adds ``default_gid``, ``width`` ('4X') and ``speed`` ('EDR') from ``rate: 100 Gb/sec (4X EDR)``;
    ``state: 4: ACTIVE`` reads ACTIVE and ``phys state: 5: LinkUp`` LinkUp.
    """
    cas = []
    by_name = {}
    port = None
    keys = {"default gid": "default_gid", "base lid": "base_lid", "sm lid": "sm_lid", "state": "state",
            "phys state": "physical_state", "rate": "rate", "link_layer": "link_layer"}
    for raw in _text.clean_lines(value, "ibstatus output"):
        line = raw.strip()
        if not line:
            continue
        match = _IBSTATUS_RE.match(line)
        if match:
            name = match.group(1)
            ca = by_name.get(name)
            if ca is None:
                ca = by_name[name] = _empty_ca(name)
                cas.append(ca)
            port = _empty_port(int(match.group(2)))
            ca["ports"].append(port)
            continue
        if port is None:
            continue
        key, sep, raw_value = line.partition(":")
        if sep and key.strip() in keys:
            name = keys[key.strip()]
            if name == "default_gid":
                port["default_gid"] = _value(raw_value)
            else:
                _set_port_value(port, name, raw_value)
    return cas


# ----------------------------------------------------------------------------- ibdev2netdev

_PCI_RE = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def parse_ibdev2netdev(value):
    """``ibdev2netdev`` or ``ibdev2netdev -v`` output -> list of ports.

    Each: ``device``, ``port``, ``netdev``, ``state`` ('Up' or 'Down', the netdev's state as the tool
    prints it). With ``-v`` also ``pci_address``, ``hca_type`` ('MT4123'), ``part`` (PSID or serial as
    printed), ``description``, ``firmware`` and ``port_state`` (the RDMA port: ACTIVE, DOWN).
    ``| column -t`` alignment and ``# comments`` after the line are ignored.
    """
    ports = []
    for raw in _text.clean_lines(value, "ibdev2netdev output"):
        line = raw.split("#", 1)[0].strip() if "==>" in raw else ""
        if not line:
            continue
        left, dummy, right = line.partition("==>")
        right_words = right.split()
        netdev = right_words[0] if right_words else None
        state = None
        if len(right_words) > 1 and right_words[1].startswith("(") and right_words[1].endswith(")"):
            state = right_words[1][1:-1] or None
        record = {"device": None, "port": None, "netdev": netdev, "state": state, "pci_address": None,
                  "hca_type": None, "part": None, "description": None, "firmware": None, "port_state": None}
        words = left.split()
        if words and _PCI_RE.match(words[0]):
            _verbose_left(left, record)
        elif len(words) >= 3 and words[1] == "port":
            record["device"], record["port"] = words[0], _int(words[2])
        else:
            continue
        if record["device"]:
            ports.append(record)
    return ports


def _verbose_left(left, record):
    """'0000:02:00.0 mlx5_0 (MT4115 - MT1523X04353) CX456A - ConnectX-4 QSFP fw 12.23.1020 port 1 (ACTIVE) '."""
    words = left.split(None, 2)
    record["pci_address"] = words[0]
    record["device"] = words[1] if len(words) > 1 else None
    rest = " " + (words[2] if len(words) > 2 else "")
    at = rest.rfind(" port ")   # the last one: descriptions say 'single port QSFP112'
    if at >= 0:
        tail = rest[at + 6:]
        state_text = tail.split("(", 1)[1].split(")", 1)[0] if "(" in tail else None
        record["port"], record["port_state"] = _int(tail.split("(", 1)[0]), _state(state_text)
        rest = rest[:at]
    rest = rest.strip()
    if rest.startswith("("):
        inside, dummy, rest = rest[1:].partition(")")
        hca, dummy, part = inside.partition(" - ")
        record["hca_type"] = hca.strip() or None
        record["part"] = None if part.strip() in ("", "NA") else part.strip()
    rest = " " + rest
    at = rest.rfind(" fw ")
    if at >= 0:
        record["firmware"] = (rest[at + 4:].split() or [None])[0]
        rest = rest[:at]
    record["description"] = " ".join(rest.split()) or None


# ----------------------------------------------------------------------------- show_gids

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


# ----------------------------------------------------------------------------- rdma link

_OLD_LINK_RE = re.compile(r"^([0-9]{1,5})/([0-9]{1,3}): ([^\s/]{1,64})/([0-9]{1,3}):?(?:\s|$)")
_NEW_LINK_RE = re.compile(r"^link ([^\s/]{1,64})/([0-9]{1,3}|-)(?:\s|$)")
_LINK_KEYS = ("subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev", "netdev_index")


def _empty_link(device, port, ifindex=None):
    return {"device": device, "port": port, "state": None, "physical_state": None, "netdev": None,
            "netdev_index": None, "subnet_prefix": None, "lid": None, "sm_lid": None, "lmc": None, "caps": [],
            "ifindex": ifindex}


def _link_words(link, words, in_caps=False):
    """Read 'key value' pairs and a 'caps: <A, B, ...>' list (which may go on over lines) into link;
    True while the caps list is still open."""
    position = 0
    while position < len(words):
        word = words[position]
        if in_caps or word.startswith("caps:") or word.startswith("<"):
            tail = word.split("caps:", 1)[-1] if word.startswith("caps:") else word
            in_caps = True
            for cap in tail.replace("<", " ").replace(">", " ").replace(",", " ").split():
                link["caps"].append(cap)
            if ">" in word:
                in_caps = False
            position += 1
            continue
        if word in _LINK_KEYS and position + 1 < len(words):
            raw = words[position + 1]
            if word == "state":
                link["state"] = _state(raw)
            elif word == "physical_state":
                link["physical_state"] = _phys_state(raw)
            elif word in ("lid", "sm_lid", "lmc", "netdev_index"):
                link[word] = _int(raw)
            else:
                link[word] = raw
            position += 2
            continue
        position += 1
    return in_caps


def parse_rdma_link(value):
    """iproute2 ``rdma link [show]`` output -> list of ports.

    Each: ``device``, ``port``, ``state``, ``physical_state``, ``netdev`` (None on InfiniBand), and where
    printed ``subnet_prefix``, ``lid``, ``sm_lid``, ``lmc``, ``netdev_index``, ``caps``, ``ifindex``.
    Reads the old form (``1/1: mlx5_0/1: state ACTIVE ...``, with ``-d`` continuation lines), the
    current one (``link mlx5_0/1 state ACTIVE ...``) and ``-j`` / ``-p -j`` JSON.
    """
    lines = _text.clean_lines(value, "rdma link output")
    for number, raw in enumerate(lines):
        stripped = raw.strip()
        if stripped.startswith("[") and (stripped == "[" or stripped[1:2] in ("{", "]", " ", "\t", "")):
            return _rdma_link_json("\n".join(lines[number:]))
    links = []
    link = None
    in_caps = False
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        match = _NEW_LINK_RE.match(line) or _OLD_LINK_RE.match(line)
        if match:
            groups = match.groups()
            if len(groups) == 4:
                link = _empty_link(groups[2], _int(groups[3]), ifindex=_int(groups[0]))
            else:
                link = _empty_link(groups[0], _int(groups[1]))
            links.append(link)
            in_caps = _link_words(link, line[match.end():].split())
            continue
        if link is not None and (raw[:1] in (" ", "\t") or line.startswith("caps:") or in_caps):
            in_caps = _link_words(link, line.split(), in_caps)
        else:
            link, in_caps = None, False
    return links


def _rdma_link_json(document):
    # A JSON array may be followed by the next prompt: decode the first value only.
    try:
        data, dummy = json.JSONDecoder().raw_decode(document.strip())
    except ValueError as exc:
        raise ToolTextError("rdma -j link output is not valid JSON: %s" % str(exc)[:120])
    if not isinstance(data, list):
        raise ToolTextError("rdma -j link output must be a JSON list, got %s" % type(data).__name__)
    links = []
    for number, item in enumerate(data):
        if not isinstance(item, dict):
            raise ToolTextError("rdma -j link item %d is not an object" % number)
        name = str(item.get("ifname") or item.get("dev") or "")
        port = item.get("port")
        if "/" in name:   # iproute2 of 2017 printed "ifname": "mlx5_0/1"
            name, dummy, port_text = name.partition("/")
            port = _int(port_text) if port is None else port
        link = _empty_link(name or None, port if isinstance(port, int) and not isinstance(port, bool) else _int(str(port)),
                           ifindex=item.get("ifindex") if isinstance(item.get("ifindex"), int) else None)
        link["state"] = _state(str(item["state"])) if item.get("state") is not None else None
        link["physical_state"] = _phys_state(str(item["physical_state"])) if item.get("physical_state") is not None else None
        for key in ("netdev", "subnet_prefix"):
            link[key] = str(item[key]) if item.get(key) is not None else None
        for key in ("lid", "sm_lid", "lmc", "netdev_index"):
            raw = item.get(key)
            link[key] = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
        caps = item.get("caps")
        link["caps"] = [str(c) for c in caps] if isinstance(caps, list) else []
        links.append(link)
    return links


# ----------------------------------------------------------------------------- eadm stat

_SIZE_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4, "PiB": 1024 ** 5,
               "kB": 1000, "KB": 1024, "MB": 1000 ** 2, "GB": 1000 ** 3, "TB": 1000 ** 4, "PB": 1000 ** 5}
_TIME_UNITS = {"second": 1, "seconds": 1, "sec": 1, "s": 1, "minute": 60, "minutes": 60, "min": 60,
               "hour": 3600, "hours": 3600, "h": 3600, "day": 86400, "days": 86400}
_AMOUNT_RE = re.compile(r"^([0-9]{1,15}(?:\.[0-9]{1,6})?) ?([A-Za-z]{0,3})(/s)?$")
_MONITOR_RE = re.compile(r"^Monitoring ([^\s.]{1,64})\.\.\.")
_TRAFFIC_RE = re.compile(r"^([^\s/]{1,64}) +/ +traffic statistics")
_COMMAND_DEV_RE = re.compile(r"(?:^|\s)-d\s+([^\s]{1,64})")
_LIVE_RE = re.compile(r"^([0-9]{2}:[0-9]{2}:[0-9]{2}) +rx: +([0-9.]{1,20} [A-Za-z]{0,3}/s) +([0-9]{1,15}) p/s +"
                      r"tx: +([0-9.]{1,20} [A-Za-z]{0,3}/s) +([0-9]{1,15}) p/s")
_COUNTER_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]{0,63})\s*[:=]\s*([0-9]{1,20})$")


def _amount(text):
    """'11.06 GiB' -> (11875584246, True: rounded); '0 B/s' -> (0, False); '8406769' -> (8406769, False)."""
    match = _AMOUNT_RE.match(text.strip())
    if not match:
        return None, False
    number, unit = match.group(1), match.group(2) or ""
    if unit in ("", "p"):
        return (int(float(number)) if "." in number else int(number)), "." in number
    if unit not in _SIZE_UNITS:
        return None, False
    scaled = float(number) * _SIZE_UNITS[unit]
    return int(round(scaled)), ("." in number and unit != "B")


def parse_eadm_stat(value):
    """Alibaba Cloud eRDMA ``eadm stat -d <dev> [-l]`` output -> the device's traffic.

    Returns ``device``, ``rx_bytes``, ``tx_bytes`` (bytes), ``rx_packets``, ``tx_packets``, ``counters``
    (every figure printed, by name: ``rx_bytes_max_per_s``, ``tx_packets_average_per_s``, ...),
    ``duration_seconds``, ``samples`` (the live ``rx: ... tx: ...`` lines) and ``approximate`` (True when
    a byte total was printed rounded, e.g. ``11.06 GiB``: accurate to the printed digits only).
    Counter lines ``name: value`` are kept in ``counters`` too.
    """
    result = {"device": None, "rx_bytes": None, "tx_bytes": None, "rx_packets": None, "tx_packets": None,
              "counters": {}, "duration_seconds": None, "samples": [], "approximate": False}
    counters = result["counters"]
    section = None
    for raw in _text.clean_lines(value, "eadm stat output"):
        line = raw.strip()
        if not line or set(line) <= set("-+| "):
            continue
        if result["device"] is None:
            match = _MONITOR_RE.match(line) or _TRAFFIC_RE.match(line)
            if match:
                result["device"] = match.group(1)
            elif "eadm" in line:
                match = _COMMAND_DEV_RE.search(line)
                if match:
                    result["device"] = match.group(1)
        match = _LIVE_RE.match(line)
        if match:
            sample = {"time": match.group(1)}
            for key, group in (("rx_bytes_per_s", 2), ("rx_packets_per_s", 3), ("tx_bytes_per_s", 4),
                               ("tx_packets_per_s", 5)):
                sample[key] = _amount(match.group(group).replace("/s", ""))[0]
            result["samples"].append(sample)
            continue
        if "|" in line:
            left, dummy, right = line.partition("|")
            words = left.split(None, 1)
            if len(words) < 2:
                continue
            label, rx_text = words[0].lower(), words[1]
            if label in ("bytes", "packets"):
                section = label
                names = ("rx_%s" % label, "tx_%s" % label)
            elif label in ("max", "average", "min") and section:
                names = ("rx_%s_%s_per_s" % (section, label), "tx_%s_%s_per_s" % (section, label))
            else:
                continue
            for name, text in zip(names, (rx_text, right)):
                text = text.strip().replace(" p/s", "").replace("/s", "")
                number, rounded = _amount(text)
                if number is not None:
                    counters[name] = number
                    if name in ("rx_bytes", "tx_bytes") and rounded:
                        result["approximate"] = True
            continue
        words = line.split()
        if words[0] == "time" and len(words) >= 3 and words[2] in _TIME_UNITS:
            seconds = _number(words[1])
            if seconds is not None:
                result["duration_seconds"] = round(seconds * _TIME_UNITS[words[2]], 3)
                counters["time_seconds"] = result["duration_seconds"]
            continue
        match = _COUNTER_RE.match(line)
        if match:
            counters[match.group(1)] = int(match.group(2))
    for key in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
        result[key] = counters.get(key)
    return result


# ----------------------------------------------------------------------------- nvidia-smi nvlink

_GPU_RE = re.compile(r"^GPU ([0-9]{1,3}):\s*(.*)$")
_LINK_RE = re.compile(r"^Link ([0-9]{1,3}): (.*)$")
_SPEED_RE = re.compile(r"^([0-9]{1,6}(?:\.[0-9]{1,6})?) ?GB/s")
_ELISION = ("...", "[...]")


def _gpu_header(match):
    rest = match.group(2).strip()
    name, uuid = rest, None
    at = rest.rfind("(UUID:")
    if at >= 0:
        name = rest[:at].strip()
        uuid = rest[at + 6:].rstrip(")").strip() or None
        if uuid in ("...",):
            uuid = None
    return {"index": int(match.group(1)), "name": name or None, "uuid": uuid, "links": [], "elided": False}


def _elision(line):
    return line.startswith(_ELISION) or (line and set(line) == {"."})


def parse_nvlink_status(value):
    """``nvidia-smi nvlink --status`` (``-s``) output -> list of GPUs.

    Each: ``index``, ``name``, ``uuid``, ``links`` and ``elided`` (the listing skipped some links: '[...]',
    '....'); each link: ``link``, ``speed_gbps`` (the GB/s figure nvidia-smi prints, per direction; None
    when the link is ``<inactive>``) and ``active``. A GPU without NVLink (or a VM given one GPU) prints
    nothing: the list is empty.
    """
    gpus = []
    gpu = None
    for raw in _text.clean_lines(value, "nvidia-smi nvlink output"):
        line = raw.strip()
        if not line:
            continue
        match = _GPU_RE.match(line)
        if match:
            gpu = _gpu_header(match)
            gpus.append(gpu)
            continue
        if gpu is None:
            continue
        if _elision(line):
            gpu["elided"] = True
            continue
        match = _LINK_RE.match(line)
        if not match:
            continue
        state = match.group(2).strip()
        speed = _SPEED_RE.match(state)
        inactive = "inactive" in state.lower()
        gpu["links"].append({"link": int(match.group(1)),
                             "speed_gbps": (float(speed.group(1)) if "." in speed.group(1) else int(speed.group(1)))
                             if speed and not inactive else None,
                             "active": bool(speed) and not inactive})
    return gpus


def _counter_name(text):
    return "_".join(text.strip().lower().replace("-", " ").split())


def parse_nvlink_errors(value):
    """``nvidia-smi nvlink -e`` (``--errorcounters``) output -> list of GPUs.

    Each: ``index``, ``name``, ``uuid``, ``links``, ``elided``; each link: ``link``, ``replay_errors``,
    ``recovery_errors``, ``crc_errors`` (None when not printed) and ``counters`` (every counter the
    driver printed for it, by snake_case name). Lines before any ``GPU n:`` header (some containers
    print none) go to a GPU whose index is None.
    """
    gpus = []
    gpu = None
    for raw in _text.clean_lines(value, "nvidia-smi nvlink output"):
        line = raw.strip()
        if not line:
            continue
        match = _GPU_RE.match(line)
        if match:
            gpu = _gpu_header(match)
            gpus.append(gpu)
            continue
        if _elision(line):
            if gpu is not None:
                gpu["elided"] = True
            continue
        match = _LINK_RE.match(line)
        if not match:
            continue
        name, sep, count = match.group(2).rpartition(":")
        number = _int(count)
        if not sep or number is None:
            continue
        if gpu is None:
            gpu = {"index": None, "name": None, "uuid": None, "links": [], "elided": False}
            gpus.append(gpu)
        link_number = int(match.group(1))
        link = next((l for l in gpu["links"] if l["link"] == link_number), None)
        if link is None:
            link = {"link": link_number, "replay_errors": None, "recovery_errors": None, "crc_errors": None,
                    "counters": {}}
            gpu["links"].append(link)
        key = _counter_name(name)
        link["counters"][key] = number
        if key in ("replay_errors", "recovery_errors", "crc_errors"):
            link[key] = number
    return gpus


def _check_gpus(gpus, what):
    if not isinstance(gpus, (list, tuple)):
        raise ToolTextError("%s must be a parsed nvidia-smi nvlink list, got %s" % (what, type(gpus).__name__))
    for number, gpu in enumerate(gpus):
        if not isinstance(gpu, dict) or not isinstance(gpu.get("links"), list):
            raise ToolTextError("%s[%d] is not a GPU of parse_nvlink_status / parse_nvlink_errors" % (what, number))
    return gpus


def nvlink_down_findings(status):
    """Findings for NVLinks down where the machine shows they should be up.

    critical: a GPU with no active link while its peers have some (its traffic goes over PCIe);
    warning: a link ``<inactive>`` while other links of the same GPU are active. A machine whose
    GPUs all have no NVLink (or a listing that printed nothing) gives no finding.
    """
    _check_gpus(status, "status")
    found = []
    peers_active = [g for g in status if any(l.get("active") for l in g["links"])]
    for gpu in status:
        target = "GPU %s" % gpu.get("index")
        active = [l for l in gpu["links"] if l.get("active")]
        down = [l for l in gpu["links"] if not l.get("active")]
        if not active and peers_active and gpu["links"]:
            found.append(finding("nvlink_down", "critical", target,
                                 "all %d NVLinks of %s (%s) are inactive while %d other GPU(s) have active links" % (
                                     len(gpu["links"]), target, gpu.get("name") or "GPU", len(peers_active)),
                                 "check the GPU's NVLink/NVSwitch (nvidia-smi nvlink -e, fabric manager); drain and reset or reboot"))
        elif not active and peers_active and not gpu["links"] and not gpu.get("elided"):
            found.append(finding("nvlink_down", "critical", target,
                                 "%s lists no NVLink while %d other GPU(s) have active links" % (target, len(peers_active)),
                                 "check the GPU's NVLink/NVSwitch and the fabric manager; drain and reset or reboot"))
        elif active and down:
            found.append(finding("nvlink_down", "warning", target,
                                 "%s link(s) %s inactive while %d of its links are active" % (
                                     target, ", ".join(str(l["link"]) for l in down), len(active)),
                                 "NCCL loses that share of NVLink bandwidth: check nvidia-smi nvlink -e and the cabling or baseboard"))
    return found


ERROR_COUNTER_SEVERITY = {"recovery_errors": "critical", "replay_errors": "warning", "crc_errors": "warning"}


def nvlink_error_findings(before, after, min_increase=1):
    """Findings for NVLink error counters that rose from ``before`` to ``after`` (two parse_nvlink_errors
    snapshots). Recovery errors are critical (the link retrained), replay and CRC errors a warning; a
    counter that went down was reset (info). ``before`` None: every non-zero counter is reported as info."""
    _check_gpus(after, "after")
    if before is not None:
        _check_gpus(before, "before")
    if isinstance(min_increase, bool) or not isinstance(min_increase, int) or min_increase < 1:
        raise ToolTextError("min_increase must be a whole number of 1 or more, got %r" % (min_increase,))
    old = {}
    for gpu in before or []:
        for link in gpu["links"]:
            for name, count in (link.get("counters") or {}).items():
                old[(gpu.get("uuid") or gpu.get("index"), link.get("link"), name)] = count
    found = []
    for gpu in after:
        for link in gpu["links"]:
            for name, count in sorted((link.get("counters") or {}).items()):
                target = "GPU %s link %s" % (gpu.get("index"), link.get("link"))
                label = name.replace("_", " ")
                if before is None:
                    if count:
                        found.append(finding("nvlink_errors", "info", target, "%s: %d" % (label, count),
                                             "take a second reading under load to see whether it rises"))
                    continue
                previous = old.get((gpu.get("uuid") or gpu.get("index"), link.get("link"), name))
                if previous is None or not isinstance(count, int):
                    continue
                if count < previous:
                    found.append(finding("nvlink_errors", "info", target,
                                         "%s went from %d to %d: the counters were reset" % (label, previous, count),
                                         "compare with a reading taken after the reset"))
                elif count - previous >= min_increase:
                    found.append(finding("nvlink_errors", ERROR_COUNTER_SEVERITY.get(name, "warning"), target,
                                         "%s rose by %d (%d -> %d)" % (label, count - previous, previous, count),
                                         "check the link under load (nvidia-smi nvlink -e); a steady rise needs the baseboard or GPU looked at"))
    return found


# ----------------------------------------------------------------------------- which ports carried the bytes

# sysfs ports/N/counters/port_xmit_data and port_rcv_data count octets divided by 4 (kernel
# Documentation/ABI/stable/sysfs-class-infiniband: "Total number of data octets, divided by 4 (lanes)").
WORD_COUNTERS = {"port_xmit_data": "tx", "port_rcv_data": "rx"}
# Counters in plain bytes: eadm stat, EFA and erdma hw_counters, ethtool-style names.
BYTE_COUNTERS = {"tx_bytes": "tx", "rx_bytes": "rx", "send_bytes": "tx", "recv_bytes": "rx",
                 "tx_bytes_phy": "tx", "rx_bytes_phy": "rx"}


def _bytes_of(counters):
    """{'tx': bytes or None, 'rx': bytes or None} from one port's counters."""
    out = {"tx": None, "rx": None}
    for name, direction in WORD_COUNTERS.items():
        value = counters.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            out[direction] = value * 4
    for name, direction in BYTE_COUNTERS.items():
        value = counters.get(name)
        if out[direction] is None and isinstance(value, int) and not isinstance(value, bool):
            out[direction] = value
    return out


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def port_counter_deltas(before, after, gpu_for_port=None, low_fraction=0.1):
    """Bytes each RDMA port carried between two counter snapshots, and the ports that carried too little.

    ``before``/``after``: {port: {counter: value}} with sysfs ``port_xmit_data``/``port_rcv_data`` (32-bit
    words: bytes = value x 4) or byte counters (``tx_bytes``/``rx_bytes``: eadm stat, hw_counters);
    ``gpu_for_port``: {port: GPU closest to it} (nvidia-smi topo -m) to name in the findings.
    A port is flagged when it carried nothing, or less than ``low_fraction`` of the median of the ports
    that carried traffic. A counter that went down was reset: its new value is the increment.
    Returns ``{'ports': [...], 'median_bytes', 'flagged': [port, ...], 'findings': [...]}``.
    """
    for what, snapshot in (("before", before), ("after", after)):
        if not isinstance(snapshot, dict):
            raise ToolTextError("%s must map each port to its counters, got %s" % (what, type(snapshot).__name__))
    if gpu_for_port is not None and not isinstance(gpu_for_port, dict):
        raise ToolTextError("gpu_for_port must map port to GPU, got %s" % type(gpu_for_port).__name__)
    if isinstance(low_fraction, bool) or not isinstance(low_fraction, (int, float)) or not 0 <= low_fraction <= 1:
        raise ToolTextError("low_fraction must be a number between 0 and 1, got %r" % (low_fraction,))
    ports = []
    for port in sorted(after, key=str):
        now = after[port]
        then = before.get(port)
        if not isinstance(now, dict) or not isinstance(then, dict):
            continue
        new, old = _bytes_of(now), _bytes_of(then)
        entry = {"port": port, "tx_bytes": None, "rx_bytes": None, "bytes": None, "reset": False,
                 "gpu": (gpu_for_port or {}).get(port), "low": False, "reason": None}
        for direction in ("tx", "rx"):
            if new[direction] is None or old[direction] is None:
                continue
            delta = new[direction] - old[direction]
            if delta < 0:
                delta, entry["reset"] = new[direction], True
            entry["%s_bytes" % direction] = delta
        if entry["tx_bytes"] is None and entry["rx_bytes"] is None:
            continue
        entry["bytes"] = (entry["tx_bytes"] or 0) + (entry["rx_bytes"] or 0)
        ports.append(entry)
    carried = [p["bytes"] for p in ports if p["bytes"]]
    median = _median(carried) if carried else None
    found = []
    for entry in ports:
        if not carried:
            break
        gpu = (" (closest to GPU %s)" % entry["gpu"]) if entry["gpu"] is not None else ""
        if entry["bytes"] == 0:
            entry["low"], entry["reason"] = True, "carried no bytes while %d port(s) carried traffic" % len(carried)
        elif median and entry["bytes"] < low_fraction * median:
            entry["low"], entry["reason"] = True, "carried %d bytes, %.1f %% of the median %d of the ports that carried traffic" % (
                entry["bytes"], 100.0 * entry["bytes"] / median, median)
        if entry["low"]:
            found.append(finding("rdma_port_idle", "warning", str(entry["port"]), "%s%s %s" % (entry["port"], gpu, entry["reason"]),
                                 "check that NCCL_IB_HCA names this port and that its link is ACTIVE; "
                                 "a GPU whose closest NIC is idle sends across the PCIe/SMP fabric"))
    return {"ports": ports, "median_bytes": median, "flagged": [p["port"] for p in ports if p["low"]], "findings": found}
