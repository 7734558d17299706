# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""NIC firmware settings planned against what ``mlxconfig q`` shows (parse/mlxconfig.py): per device each setting to
change, from what to what, and the one ``mlxconfig set`` line that makes it, for the settings judge/nic_firmware.py's
``desired`` wants.

A setting the device does not show is ``missing`` (that card or firmware has no such setting), never guessed. The
values of a change take effect at the next firmware reset or reboot: the plan says so, and a node in service is never
changed (the decider drains it first). Pure, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import mlxconfig


def _word(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def plan(device, wanted):
    """One parsed device (parse_mlxconfig's) and desired() -> {device, changes: [{setting, now, wanted}], missing,
    pending (set for the next boot, while the current value the tool shows is still the old one: only a reset is
    missing), argv (the mlxconfig set arguments after the tool's name, or None), reset_needed}."""
    settings = device.get("settings") or {}
    changes, missing, pending = [], [], []
    for name, value in sorted(wanted.items()):
        if name.endswith("_P*"):
            names = sorted(n for n in settings if re.match(r"^%s\d+$" % re.escape(name[:-1]), n))
        else:
            names = [name] if name in settings else []
        if not names:
            missing.append(name)
            continue
        for setting in names:
            now = mlxconfig.effective(settings[setting])
            current = settings[setting].get("current")
            if not mlxconfig.matches(now, value):
                changes.append({"setting": setting, "now": now["text"] if now else None, "wanted": _word(value)})
            elif current is not None and not mlxconfig.matches(current, value):
                # set already, and the firmware still runs the old value: only a reset is missing
                pending.append({"setting": setting, "now": current["text"], "wanted": _word(value)})
    where = device.get("device")
    argv = None
    if changes and where:
        argv = ["-y", "-d", where, "set"] + ["%s=%s" % (c["setting"], c["wanted"]) for c in changes]
    return {"device": where, "device_type": device.get("device_type"), "changes": changes, "missing": missing,
            "pending": pending, "argv": argv, "reset_needed": bool(changes or pending)}


def diff_text(plans):
    """The per-device diff check mode shows: '<device> (<type>): NAME now -> wanted' lines, and what is missing."""
    lines = []
    for item in plans:
        head = "%s (%s)" % (item["device"], item["device_type"] or "?")
        if not item["changes"] and not item["missing"] and not item.get("pending"):
            lines.append("%s: as the profile wants" % head)
        for change in item["changes"]:
            lines.append("%s: %s %s -> %s" % (head, change["setting"], change["now"], change["wanted"]))
        for change in item.get("pending") or []:
            lines.append("%s: %s %s -> %s at the next firmware reset (set already)" % (
                head, change["setting"], change["now"], change["wanted"]))
        if item["missing"]:
            lines.append("%s: not shown by this device (no such setting on it): %s" % (head, ", ".join(item["missing"])))
    return "\n".join(lines) + ("\n" if lines else "")
