# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""NIC firmware settings on the node: ``mlxconfig`` (MFT) or ``mstconfig`` (mstflint) ``q`` per device, the plan
against the profiles (plan/nic_firmware.py), the health check's finding, and - only on a node out of service, as the
nic_firmware module is told - ``set`` and the firmware reset (``mlxfwreset``/``mstfwreset``) that makes it take effect.

Every command runs through a ``commands.Runner`` (a time limit, killed with its children). A device whose query
fails, or shows no setting, is a problem named with the tool's own words: unknown is neither right nor wrong.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import one_line
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import mlxconfig
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nic_firmware as firmware_wanted
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nic_firmware as firmware_plan


def devices_from_sysfs(rdma_devices):
    """The PCI address of each NVIDIA (Mellanox) card among read_rdma_devices' entries, one per card: its settings are
    the card's, so the lowest function of each bus:device stands for it."""
    cards = {}
    for device in rdma_devices:
        address = device.get("pci_address") or ""
        if not str(device.get("driver") or "").startswith(("mlx4", "mlx5")) or not firmware_wanted.DEVICE_RE.match(address):
            continue
        card = address.rsplit(".", 1)[0]
        cards[card] = min(cards.get(card, address), address)
    return sorted(cards.values())


def no_card(sysfs_root="/sys"):
    """Why nothing was compared on a node whose sysfs shows no NVIDIA (Mellanox) card and where none was named: the
    module's and the health check's "not run" - never an empty, healthy-looking result."""
    return "not run: no NVIDIA (Mellanox) card under %s/class/infiniband and none named in devices: nothing was " \
           "compared" % sysfs_root.rstrip("/")


def query(runner, tool, devices):
    """``<tool> -d <device> q`` for each device -> {devices: [parsed device, with 'queried'], problems: [text]}."""
    found, problems = [], []
    path = runner.which(tool)
    if path is None:
        return {"devices": [], "problems": ["%s is not installed" % tool]}
    for address in devices:
        result = runner.run([path, "-d", address, "q"])
        where = "%s -d %s q" % (os.path.basename(tool), address)
        try:
            parsed = mlxconfig.parse_mlxconfig(result.stdout + ("\n" + result.stderr if result.stderr else ""))
        except mlxconfig.MlxconfigError:
            problems.append("%s: %s" % (where, result.describe() if not result.ok else "not mlxconfig output"))
            continue
        errors = mlxconfig.errors(parsed)
        shown = [d for d in parsed["devices"] if d["settings"]]
        if errors or not shown or not result.ok:
            problems.append("%s: %s" % (where, one_line("; ".join(errors) or result.describe() if not result.ok
                                                        else "; ".join(errors) or "no setting shown", 200)))
            continue
        for device in shown:
            found.append(dict(device, queried=address))
    return {"devices": found, "problems": problems}


def plans(queried, wanted):
    """Each queried device's plan (plan/nic_firmware.plan), addressed as it was queried."""
    return [firmware_plan.plan(dict(device, device=device.get("queried") or device.get("device")), wanted)
            for device in queried]


def read(runner, wanted, addresses):
    """Query ``addresses`` with the tool firmware_wanted.check_options named and plan them -> {plans, problems}: the
    one read of the health check and of the nic_firmware module (before a change, and after it to confirm)."""
    queried = query(runner, wanted["tool"], addresses)
    return {"plans": plans(queried["devices"], wanted["wanted"]), "problems": queried["problems"]}


def apply(runner, tool, reset_tool, planned, reset=True):
    """``<tool> -y -d <device> set ...`` for each plan with changes, then (``reset``) the firmware reset of each device set
    or pending -> [{device, set: parsed-or-None, set_output, applied, reset_output, reset_ok, error}]. Stops at the first
    device that fails: nothing else is changed after an error."""
    done = []
    set_path = runner.which(tool)
    reset_path = runner.which(reset_tool) if reset else None
    for item in planned:
        if not item["changes"] and not item.get("pending"):
            continue
        entry = {"device": item["device"], "set_output": None, "applied": None, "reset_output": None, "reset_ok": None,
                 "error": None}
        done.append(entry)
        if item["changes"]:
            if set_path is None:
                entry["error"] = "%s is not installed" % tool
                break
            result = runner.run([set_path] + item["argv"])
            entry["set_output"] = result.stdout[-4000:]
            try:
                parsed = mlxconfig.parse_mlxconfig(result.stdout + "\n" + result.stderr)
                entry["applied"] = bool(parsed["devices"]) and all(d["applied"] for d in parsed["devices"])
                errors = mlxconfig.errors(parsed)
            except mlxconfig.MlxconfigError:
                entry["applied"], errors = False, []
            if not result.ok or not entry["applied"]:
                entry["error"] = "%s set on %s: %s" % (os.path.basename(tool), item["device"], one_line(
                    "; ".join(errors) or result.describe() if not result.ok else "; ".join(errors) or "not applied", 300))
                break
        if reset:
            if reset_path is None:
                entry["error"] = "%s is not installed: the settings wait for a reboot" % reset_tool
                break
            result = runner.run([reset_path, "-d", item["device"], "-y", "reset"])
            entry["reset_output"] = result.stdout[-4000:]
            entry["reset_ok"] = result.ok and "-E-" not in result.stdout
            if not entry["reset_ok"]:
                entry["error"] = "%s on %s: %s" % (os.path.basename(reset_tool), item["device"], one_line(
                    result.describe() if not result.ok else "an -E- line in its output", 300))
                break
    return done
