# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``mlxlink -d <dev>`` (and ``-c``, ``-m``, ``--show_ber_monitor``, ``--port_type PCIE``) text to dictionaries.

mlxlink prints sections - a title line, a line of dashes, then ``Key : Value`` lines padded to a column (32 or
35 wide, trailing spaces on some firmware) - and ``-E-`` lines for what it refused (an option the firmware does
not support). Several devices in one text (a loop over HCAs) are told apart by the command line of each
(``mlxlink -d mlx5_0 ...``), a header between runs of ``=`` (``=== mt4123_pciconf5 ===``, or the one an operator's
loop echoes, ``========== mlx5_0 FEC Counters ==========``: its device is the word that names one), or an
``Operational Info`` section seen a second time. Such a loop is often piped through ``grep -i ber``: the lines it
keeps have no section, and are read all the same. The loop's own command line (``mlxlink -d $d ...``) names no
device and starts none.

Per device: the fields users read (``state``, ``physical_state``, ``speed``, ``width``, ``fec``,
``status_opcode``, ``group_opcode``, ``recommendation``, ``firmware_version``), the enabled and cable-supported
speeds, the BER counters (``effective_ber``, ``raw_ber``, ``effective_errors``, ``raw_errors_per_lane``,
``link_down_counter``, ``link_error_recovery_counter``, ``time_since_clear_min``; a value mlxlink printed as N/A,
or that is not a finite number, is None, and ``unread_values`` keeps what was printed instead - ``{"raw_ber": "nan"}``
- so a judge can tell a BER that could not be read from one that was not asked for), the PCIe fields of
``--port_type PCIE``, every section as printed (``sections``), and ``errors``. One pass over the lines.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_RULE_RE = re.compile(r"^-{3,}$")
_PAIR_RE = re.compile(r"^(\S(?:[^:]*?\S)?)\s+:\s?(.*?)$")
_COMMAND_RE = re.compile(r"\bmlxlink\b.*?(?:-d|--device)\s+(\S+)")
# A device named in a header of several words: an RDMA device (mlx5_0, mlx5_bond_0, rocep1s0f0, ibp12s0), an mst
# device (mt4123_pciconf0, /dev/mst/...) or a PCI address.
_DEVICE_WORD_RE = re.compile(r"^(?:mlx[45]_\w{1,32}|(?:rocep|ibp)\w{1,32}|mt\d{3,6}_\w{1,32}|/dev/mst/[\w.:-]{1,64}|"
                             r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$")
# A command line's device that is a shell word still to be expanded (a loop's "mlxlink -d $d"), not a device.
_UNEXPANDED = ("$", "{", "`", "*")
_MASK_RE = re.compile(r"^0x[0-9a-fA-F]+\s*\(([^)]*)\)")
_ACTIVE_ENABLED_RE = re.compile(r"^(\S+(?:\s\S+)*?)\s*\(([^)]*)\)$")

FIELDS = {
    "State": "state", "Physical state": "physical_state", "Speed": "speed", "Width": "width", "FEC": "fec",
    "Loopback Mode": "loopback", "Auto Negotiation": "auto_negotiation", "Status Opcode": "status_opcode",
    "Group Opcode": "group_opcode", "Recommendation": "recommendation", "Firmware Version": "firmware_version",
    "MFT Version": "mft_version",
}
COUNTERS = {
    "Time Since Last Clear [Min]": ("time_since_clear_min", float), "Effective Physical Errors": ("effective_errors", int),
    "Effective Physical BER": ("effective_ber", float), "Raw Physical BER": ("raw_ber", float),
    "Link Down Counter": ("link_down_counter", int), "Link Error Recovery Counter": ("link_error_recovery_counter", int),
    "Symbol Errors": ("symbol_errors", int), "Symbol BER": ("symbol_ber", float),
}


class MlxlinkError(ValueError):
    """The text holds no mlxlink section and no -E- line; the message says what was expected."""


def _number(value, kind):
    value = (value or "").strip()
    try:
        number = kind(value) if kind is int else float(value)
    except ValueError:
        return None
    if kind is float and (math.isnan(number) or math.isinf(number)):
        return None
    return number


def _speeds(value):
    """'0x00000031 (EDR,FDR,SDR)' -> ['EDR', 'FDR', 'SDR']; N/A -> None."""
    match = _MASK_RE.match(value or "")
    return [s.strip() for s in match.group(1).split(",") if s.strip()] if match else None


def _device(name):
    return {"device": name, "sections": {}, "errors": [], "state": None, "physical_state": None, "speed": None,
            "width": None, "fec": None, "loopback": None, "auto_negotiation": None, "status_opcode": None,
            "group_opcode": None, "recommendation": None, "firmware_version": None, "mft_version": None,
            "enabled_speeds": None, "cable_speeds": None, "raw_errors_per_lane": None, "pcie": {},
            "time_since_clear_min": None, "effective_errors": None, "effective_ber": None, "raw_ber": None,
            "link_down_counter": None, "link_error_recovery_counter": None, "symbol_errors": None, "symbol_ber": None,
            "unread_values": {}}


def _field(device, section, key, value):
    device["sections"].setdefault(section or "", {})[key] = value
    na = value in ("", "N/A")
    if key in FIELDS:
        device[FIELDS[key]] = None if na else value.rstrip(".") if key == "Recommendation" else value
    elif key in COUNTERS:
        name, kind = COUNTERS[key]
        device[name] = None if na else _number(value, kind)
        if device[name] is None:
            device["unread_values"][name] = value or "(empty)"
        else:
            device["unread_values"].pop(name, None)
    elif key == "Raw Physical Errors Per Lane":
        lanes = [_number(v, int) for v in value.split(",")] if not na else None
        device["raw_errors_per_lane"] = lanes if lanes and None not in lanes else None
    elif key.startswith("Enabled Link Speed"):
        device["enabled_speeds"] = _speeds(value)
    elif key.startswith("Supported Cable Speed"):
        device["cable_speeds"] = _speeds(value)
    elif key.startswith(("Link Speed Active", "Link Width Active")):
        match = _ACTIVE_ENABLED_RE.match(value)
        what = "speed" if "Speed" in key else "width"
        device["pcie"][what + "_active"] = match.group(1) if match else value
        device["pcie"][what + "_enabled"] = match.group(2) if match else None


def _banner_device(line):
    """The device a header between runs of '=' names, or None: its one word, or the word of several that names a
    device ('========== mlx5_0 FEC Counters ==========' -> 'mlx5_0'; '=== GPU 0 NVLink Errors ===' -> None).
    Linear: no regular expression backtracks over a long run of '='."""
    if not (line.startswith("==") and line.endswith("==")):
        return None
    words = line.strip("=").split()
    if len(words) == 1:
        return words[0]
    return next((word for word in words if _DEVICE_WORD_RE.match(word)), None)


def _command_device(line):
    """The device of an mlxlink command line, '' for a loop's command whose device is still a shell word ('-d $d'),
    None for a line that is no mlxlink command."""
    match = _COMMAND_RE.search(line) if "mlxlink" in line else None
    if not match:
        return None
    return "" if any(mark in match.group(1) for mark in _UNEXPANDED) else match.group(1)


def parse_mlxlink(text):
    """-> {devices: [...], errors: [-E- lines before any device]}; see the module docstring."""
    devices, loose_errors = [], []
    device = section = None
    title = None
    for raw in _text.launcher_lines(text, "mlxlink output"):
        line = raw.strip()
        if not line:
            title = None
            continue
        named = _command_device(line)
        if named == "":
            continue   # the loop's own command line: the devices follow, each under its header
        named = named or _banner_device(line)
        if named:
            device, section, title = _device(named), None, None
            devices.append(device)
            continue
        if line.startswith("-E-"):
            (device["errors"] if device is not None else loose_errors).append(line[3:].strip())
            continue
        if _RULE_RE.match(line) and title is not None:
            if device is None or (title == "Operational Info" and "Operational Info" in device["sections"]):
                device = _device(None)   # a device without a command line or banner of its own
                devices.append(device)
            section, title = title, None
            device["sections"].setdefault(section, {})
            continue
        pair = _PAIR_RE.match(line) if " :" in line else None
        if pair and device is not None:
            _field(device, section, pair.group(1), pair.group(2).strip())
            title = None
        elif device is not None and section == "Errors":
            device["errors"].append(line)
        else:
            title = line
    if not devices and not loose_errors:
        raise MlxlinkError("no mlxlink section ('Operational Info' over a line of dashes) and no -E- line")
    for device in devices:
        if device["pcie"] == {}:
            device["pcie"] = None
    return {"devices": devices, "errors": loose_errors}
