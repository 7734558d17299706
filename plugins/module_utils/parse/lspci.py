# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``lspci -vvv`` read for the GPUDirect path: per device its address, class and name, the PCIe link it can train to
(``LnkCap``) and the one it runs at (``LnkSta``, with lspci's ``(downgraded)`` where it says so), ``MaxPayload`` and
``MaxReadReq`` (``DevCtl``), and Access Control Services (``ACSCap`` and ``ACSCtl`` flags: ``SrcValid+ ReqRedir+
CmpltRedir+`` on a bridge sends peer-to-peer traffic up to the root complex).

Raw lspci puts tabs after the labels, copies have spaces, older lspci prints no ``(ok)``/``(downgraded)``; a
``grep ACSCtl`` of it has lines and no device. Pure, standard library only, one pass over the lines.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_DEVICE_RE = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+([^:]+?):\s*(.*?)\s*$")
_SPEED_RE = re.compile(r"Speed\s+([0-9.]+)GT/s(\s*\((ok|downgraded)\))?", re.I)
_WIDTH_RE = re.compile(r"Width\s+x(\d+)(\s*\((ok|downgraded)\))?", re.I)
_FLAG_RE = re.compile(r"([A-Za-z][A-Za-z0-9]*)([+-])")
_LABEL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9 /_-]{0,40}):")
_PAYLOAD_RE = re.compile(r"MaxPayload\s+(\d+)\s+bytes,\s*MaxReadReq\s+(\d+)\s+bytes")
ACS_REDIRECT = ("SrcValid", "ReqRedir", "CmpltRedir")


class LspciError(ValueError):
    """The text is not lspci -vvv output; the message says what was expected."""


def _link(text):
    speed, width = _SPEED_RE.search(text), _WIDTH_RE.search(text)
    return {"speed_gts": float(speed.group(1)) if speed else None, "width": int(width.group(1)) if width else None,
            "speed_downgraded": bool(speed and (speed.group(3) or "").lower() == "downgraded"),
            "width_downgraded": bool(width and (width.group(3) or "").lower() == "downgraded")}


def _flags(text):
    return dict((name, sign == "+") for name, sign in _FLAG_RE.findall(text))


def _new(bdf, kind, name):
    return {"address": bdf.lower() if len(bdf) > 8 else "0000:" + bdf.lower(), "class": kind, "name": name,
            "bridge": "bridge" in kind.lower(), "lnk_cap": None, "lnk_sta": None, "max_payload": None,
            "max_read_req": None, "acs_cap": None, "acs_ctl": None, "iommu_group": None}


def parse_lspci(text):
    """-> {'devices': [...], 'acs_lines': [flags of ACSCtl lines outside any device (a grep)]}; LspciError when the
    text holds neither a device line nor an ACSCtl line."""
    out = {"devices": [], "acs_lines": []}
    device, pending = None, None
    for raw in _text.clean_lines(text, "lspci output"):
        if not raw.strip():
            continue
        match = _DEVICE_RE.match(raw) if not raw[:1].isspace() else None
        if match:
            device = _new(*match.groups())
            out["devices"].append(device)
            pending = None
            continue
        line = raw.strip()
        labelled = _LABEL_RE.match(line)
        if not labelled:   # a continuation: lspci wraps DevCtl's MaxPayload; copies wrap the ACS flags
            if pending == "devctl" and device is not None:
                payload = _PAYLOAD_RE.search(line)
                if payload:
                    device["max_payload"], device["max_read_req"] = int(payload.group(1)), int(payload.group(2))
            elif pending in ("acs_cap", "acs_ctl") and device is not None and device[pending] is not None:
                device[pending].update(_flags(line))
            continue
        label, rest = labelled.group(1).strip(), line[labelled.end():]
        pending = None
        if label == "ACSCtl" and device is None:
            out["acs_lines"].append(_flags(rest))
            continue
        if device is None:
            continue
        if label == "LnkCap":
            device["lnk_cap"] = _link(rest)
        elif label == "LnkSta":
            device["lnk_sta"] = _link(rest)
        elif label in ("ACSCap", "ACSCtl"):
            key = "acs_cap" if label == "ACSCap" else "acs_ctl"
            device[key], pending = _flags(rest), key
        elif label == "DevCtl":
            pending = "devctl"
            payload = _PAYLOAD_RE.search(rest)
            if payload:
                device["max_payload"], device["max_read_req"] = int(payload.group(1)), int(payload.group(2))
        elif label == "IOMMU group":
            device["iommu_group"] = rest.strip() or None
    if not out["devices"] and not out["acs_lines"]:
        raise LspciError("no device line ('17:00.0 3D controller: ...') and no ACSCtl line: not lspci -vvv output")
    return out


def acs_redirects(flags):
    """The ACS controls of ACS_REDIRECT that are on, in order ([] when none or unknown)."""
    return [name for name in ACS_REDIRECT if (flags or {}).get(name)]


def is_gpu(device):
    return "nvidia" in (device.get("name") or "").lower() and re.search(r"3d|vga|display", device.get("class") or "", re.I)


def is_nic(device):
    name = (device.get("name") or "").lower()
    return ("mellanox" in name or "connectx" in name) and re.search(r"ethernet|infiniband|network", device.get("class") or "", re.I)
