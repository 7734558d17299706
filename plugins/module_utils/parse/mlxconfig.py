# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""NVIDIA (Mellanox) NIC firmware settings as ``mlxconfig`` (MFT) and ``mstconfig`` (mstflint) print them, for ``q``
(query) and ``set``.

Each ``Device #N:`` block: ``Device type:``, ``Name:`` (part number, or ``N/A``), ``Description:``, ``Device:`` (a
PCI address, an ``mlx5_0``-style name or an ``/dev/mst`` path), then ``Configurations:`` and its columns - ``Next
Boot`` (older MFT and mstflint), ``Default Current Next Boot`` (newer MFT) or, for ``set``, ``Next Boot New`` - and a row
per setting. The header's words do not line up with the values (both layouts pad differently, and a value too wide
for its column runs into the next, one space apart), so a row is read by splitting on whitespace. A ``*`` in the
first column marks a setting whose next-boot value differs from its default or current one. Values print as
``NAME(n)`` (``True(1)``, ``ETH(2)``, ``_256KB(1)``) or as a number; each keeps its text and its number. ``set``
ends with the apply prompt and ``Applying... Done!`` (applied), ``Applying... Failed!`` or an ``-E-`` line (not
applied), and ``-I- Please reboot machine to load new configurations.`` ``-E-`` lines anywhere are the tool's errors.

Pure, standard library only, one pass over the lines.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_DEVICE_RE = re.compile(r"^Device\s*#\s*(\d+)\s*:\s*$")
_HEADER_RE = re.compile(r"^(Device type|Name|Description|Device|PCI device|Device ID)\s*:\s*(.*?)\s*$")
_CONFIG_RE = re.compile(r"^Configurations\s*:\s*(.*?)\s*$")
_ROW_RE = re.compile(r"^(\*)?\s+([A-Z][A-Za-z0-9_]*(?:\[\d+\])?)\s+(\S.*?)\s*$")
_VALUE_RE = re.compile(r"^(.*?)\((-?\d+)\)$")
_COLUMN_WORDS = (("default", "default"), ("current", "current"), ("next boot", "next_boot"), ("new", "new"))
_KEYS = {"Device type": "device_type", "Name": "name", "Description": "description", "Device": "device",
         "PCI device": "device", "Device ID": "device_id"}


class MlxconfigError(ValueError):
    """The text is not mlxconfig or mstconfig output; the message says what was expected."""


def value(text):
    """'True(1)' -> {'text': 'True(1)', 'label': 'True', 'number': 1}; '8' -> number 8; 'Array[0..7]' -> no number."""
    match = _VALUE_RE.match(text)
    if match:
        return {"text": text, "label": match.group(1) or None, "number": int(match.group(2))}
    if re.match(r"^-?\d+$", text):
        return {"text": text, "label": None, "number": int(text)}
    return {"text": text, "label": text, "number": None}


def _columns(header):
    found, rest = [], header.lower()
    while rest.strip():
        rest = rest.strip()
        for words, key in _COLUMN_WORDS:
            if rest.startswith(words):
                found.append(key)
                rest = rest[len(words):]
                break
        else:
            return found   # a word we do not know: the columns read so far
    return found


def _new_device(number):
    return {"index": number, "device_type": None, "name": None, "description": None, "device": None, "columns": [],
            "settings": {}, "changed": [], "errors": [], "unparsed": [], "applied": None, "reboot_needed": False}


def parse_mlxconfig(text):
    """Tool output -> {'tool_errors': [-E- lines before any device], 'devices': [{index, device_type, name, description,
    device, columns, settings: {NAME: {default, current, next_boot, new: value() each where shown, changed}}, changed,
    errors, unparsed, applied (None: no set), reboot_needed}]}. MlxconfigError when it holds neither a device block
    nor an ``-E-`` line."""
    out = {"tool_errors": [], "devices": []}
    device = None
    for raw in _text.launcher_lines(text, "mlxconfig output"):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or set(stripped) == {"-"}:
            continue
        match = _DEVICE_RE.match(stripped)
        if match:
            device = _new_device(int(match.group(1)))
            out["devices"].append(device)
            continue
        if stripped.startswith("-E-"):
            (device["errors"] if device is not None else out["tool_errors"]).append(stripped[3:].strip())
            if device is not None and device["applied"] is None and device["columns"][-1:] == ["new"]:
                device["applied"] = False
            continue
        if device is None:
            continue
        if stripped.startswith("-I-"):
            device["reboot_needed"] = device["reboot_needed"] or "reboot" in stripped.lower()
            continue
        if stripped.startswith("Applying"):
            device["applied"] = stripped.lower().endswith("done!")
            continue
        if "Apply new Configuration" in stripped or stripped.startswith("The '*'") or stripped.startswith("The 'RO'"):
            continue
        match = _CONFIG_RE.match(stripped)
        if match:
            device["columns"] = _columns(match.group(1))
            continue
        if not device["columns"]:
            match = _HEADER_RE.match(stripped)
            if match:
                given = match.group(2).strip()
                device[_KEYS[match.group(1)]] = None if given in ("", "N/A") else given
            continue
        match = _ROW_RE.match(line)
        if not match or stripped == "...":
            if stripped != "...":
                device["unparsed"].append(stripped[:200])
            continue
        values = match.group(3).split()
        columns = device["columns"]
        if len(values) != len(columns):
            device["unparsed"].append(stripped[:200])
            continue
        setting = dict((column, value(v)) for column, v in zip(columns, values))
        setting["changed"] = bool(match.group(1))
        device["settings"][match.group(2)] = setting
        if setting["changed"]:
            device["changed"].append(match.group(2))
    if not out["devices"] and not out["tool_errors"]:
        raise MlxconfigError("no 'Device #1:' block and no '-E-' line: not mlxconfig or mstconfig q/set output")
    return out


def errors(parsed):
    """Every ``-E-`` line of parse_mlxconfig's result: the tool's own, then each device's."""
    return parsed["tool_errors"] + [e for d in parsed["devices"] for e in d["errors"]]


def effective(setting):
    """What a setting will be after the next reset: its 'new' value (set), else 'next_boot', else 'current'."""
    for column in ("new", "next_boot", "current"):
        if setting.get(column):
            return setting[column]
    return None


def matches(given, wanted):
    """Whether a value() matches what a profile wants: a number, a label ('ETH', 'True') or 'LABEL(n)'."""
    if given is None:
        return False
    if isinstance(wanted, bool):
        return given["number"] == int(wanted)
    if isinstance(wanted, int):
        return given["number"] == wanted
    want = value(str(wanted).strip())
    if want["number"] is not None and given["number"] is not None:
        return want["number"] == given["number"]
    return (given["label"] or "").lower() == (want["label"] or "").lower()
