# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``ibstat`` and ``ibstatus`` read: each CA and its ports (state, physical state, rate, link layer, LIDs,
GUIDs), and the error lines of a device that could not be read.

States use the vocabulary of rdma_devices whatever the tool printed (parse/rdma_common.py).
Pure functions, standard library only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import (
    integer as _int, leading_number as _number, physical_state as _phys_state, port_state as _state, printed_value as _value)


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
