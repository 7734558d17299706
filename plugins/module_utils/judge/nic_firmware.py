# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""NIC firmware settings a node should have, and the finding when a card has others: the profiles and their
parameters turned into the settings they want (``desired``), the health check's and discovery's ``nic_firmware``
option checked (``check_options``), and the finding per card from its plan (plan/nic_firmware.py): a warning
``nic_firmware_settings`` naming each setting from what to what, ``nic_firmware_unread`` for a card the tool could
not read (its own check: a policy that drains on wrong settings never drains on unknown ones).

Profiles (each names mlxconfig settings; ``_P*`` stands for every port the device shows):

- ``roce_lossless``: congestion control (ECN) on the priorities the host marks ECN on (``ecn_priorities``, the
  rdma_network role's), CNPs on ``cnp_priority`` (6) with DSCP ``cnp_dscp`` (48): ``ROCE_CC_ALGORITHM_P*``,
  ``ROCE_CC_PRIO_MASK_P*``, ``CNP_802P_PRIO_P*``, ``CNP_DSCP_P*``;
- ``sriov``: ``SRIOV_EN`` and ``NUM_OF_VFS`` (``num_vfs``) for an SR-IOV device plugin;
- ``ats``: ``ATS_ENABLED`` (GPUDirect RDMA from virtual machines);
- ``ethernet`` / ``infiniband``: ``LINK_TYPE_P*`` of a VPI card.

Pure, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding

PROFILES = ("roce_lossless", "sriov", "ats", "ethernet", "infiniband")
DEFAULTS = {"ecn_priorities": [3], "cnp_priority": 6, "cnp_dscp": 48, "num_vfs": 8}
_SETTING = re.compile(r"^[A-Z][A-Za-z0-9_]{0,63}$")
_VALUE = re.compile(r"^[A-Za-z0-9_]{1,32}$")


class FirmwareError(ValueError):
    """A profile, a parameter or a setting that cannot be planned; the message names it."""


def _whole(params, name, low, high):
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise FirmwareError("nic firmware %s must be a whole number from %d to %d, got %r" % (name, low, high, value))
    return value


def desired(profiles, params=None, extra=None):
    """Profile names (and ``extra`` settings, {NAME: value}) -> {setting or pattern: value}."""
    if not isinstance(profiles, (list, tuple)) or not all(p in PROFILES for p in profiles):
        raise FirmwareError("nic firmware profiles must be a list of %s, got %r" % (", ".join(PROFILES), profiles))
    if "ethernet" in profiles and "infiniband" in profiles:
        raise FirmwareError("nic firmware profiles: ethernet and infiniband set the same LINK_TYPE; choose one")
    unknown = sorted(set(params or {}) - set(DEFAULTS))
    if unknown:
        raise FirmwareError("nic firmware parameters: unknown %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    params = dict(DEFAULTS, **dict((k, v) for k, v in (params or {}).items() if v is not None))
    priorities = params["ecn_priorities"]
    if not isinstance(priorities, list) or not priorities or not all(
            isinstance(p, int) and not isinstance(p, bool) and 0 <= p <= 7 for p in priorities):
        raise FirmwareError("nic firmware ecn_priorities must be a list of priorities 0 to 7, got %r" % (priorities,))
    wanted = {}
    if "roce_lossless" in profiles:
        wanted.update({"ROCE_CC_ALGORITHM_P*": "ECN", "ROCE_CC_PRIO_MASK_P*": sum(1 << p for p in set(priorities)),
                       "CNP_802P_PRIO_P*": _whole(params, "cnp_priority", 0, 7),
                       "CNP_DSCP_P*": _whole(params, "cnp_dscp", 0, 63)})
    if "sriov" in profiles:
        wanted.update({"SRIOV_EN": True, "NUM_OF_VFS": _whole(params, "num_vfs", 1, 1024)})
    if "ats" in profiles:
        wanted["ATS_ENABLED"] = True
    if "ethernet" in profiles or "infiniband" in profiles:
        wanted["LINK_TYPE_P*"] = "ETH" if "ethernet" in profiles else "IB"
    for name, value in (extra or {}).items():
        if not isinstance(name, str) or not _SETTING.match(name.rstrip("*")):
            raise FirmwareError("nic firmware setting %r is not an mlxconfig setting name" % (name,))
        if isinstance(value, bool) or isinstance(value, int):
            wanted[name] = value
        elif isinstance(value, str) and _VALUE.match(value):
            wanted[name] = value
        else:
            raise FirmwareError("nic firmware setting %s: the value must be a number, true/false or a word, got %r" % (name, value))
    return wanted


TOOLS = {"mlxconfig": "mlxfwreset", "mstconfig": "mstfwreset"}
KEYS = ("profiles", "params", "settings", "tool", "devices")
# A PCI address (0000:3b:00.0 or 3b:00.0), an mlx5_0-style name or an /dev/mst path: what -d takes.
DEVICE_RE = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$|^mlx[45]_\d{1,3}$|^/dev/mst/[A-Za-z0-9_.]{1,64}$")


def check_options(given):
    """The health check's (and the nic_firmware module's) ``nic_firmware`` option -> {profiles, params, settings, tool, reset_tool, devices, wanted};
    FirmwareError naming what is wrong."""
    if not isinstance(given, dict):
        raise FirmwareError("nic_firmware must be a mapping with profiles (and params, settings, tool, devices), got %r"
                            % (given,))
    unknown = sorted(set(given) - set(KEYS))
    if unknown:
        raise FirmwareError("nic_firmware: unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(KEYS)))
    profiles = given.get("profiles") or []
    settings = given.get("settings") or {}
    wanted = desired(profiles, given.get("params"), settings)
    if not wanted:
        raise FirmwareError("nic_firmware names no profile and no setting: nothing to check")
    tool = given.get("tool") or "mlxconfig"
    if posixpath.basename(str(tool)) not in TOOLS or "\n" in str(tool):
        raise FirmwareError("nic_firmware tool must be mlxconfig or mstconfig (or a path to one), got %r" % (tool,))
    devices = given.get("devices") or []
    if not isinstance(devices, list) or not all(isinstance(d, str) and DEVICE_RE.match(d) for d in devices):
        raise FirmwareError("nic_firmware devices must be PCI addresses (3b:00.0), mlx5_N names or /dev/mst paths, got %r"
                            % (devices,))
    reset = posixpath.join(posixpath.dirname(str(tool)), TOOLS[posixpath.basename(str(tool))])
    return {"profiles": list(profiles), "params": dict(given.get("params") or {}), "settings": dict(settings),
            "tool": str(tool), "reset_tool": reset, "devices": list(devices), "wanted": wanted}


def _changes_text(planned):
    parts = ["%s %s -> %s" % (c["setting"], c["now"], c["wanted"]) for c in planned["changes"]]
    parts += ["%s %s -> %s (set, waits for a firmware reset)" % (c["setting"], c["now"], c["wanted"])
              for c in planned.get("pending") or []]
    return ", ".join(parts)


def findings(host, planned, profiles, problems=None):
    """A warning per device whose firmware settings differ from the profiles (target host/device), one per device the
    tool could not read (its own check, nic_firmware_unread: unknown is not wrong); the fix says how the change is
    carried out: by the decider, never on a node in service."""
    out = []
    named = ", ".join(profiles) or "the site's settings"
    for item in planned:
        if not item["changes"] and not item.get("pending"):
            continue
        out.append(finding("nic_firmware_settings", "warning", "%s/%s" % (host, item["device"]),
                           "%s (%s): %s (%s)" % (item["device"], item["device_type"] or "?", _changes_text(item), named),
                           "the change needs a firmware reset: let the decider drain the node (a policy rule for "
                           "nic_firmware_settings), and remediate.yml sets it, resets the NIC, certifies the node and "
                           "resumes it"))
    for problem in problems or []:
        out.append(finding("nic_firmware_unread", "warning", "%s/nic-firmware" % host,
                           "the firmware settings could not be read: %s" % problem,
                           "install MFT (mlxconfig) or mstflint (mstconfig) and run the check as root"))
    return out
