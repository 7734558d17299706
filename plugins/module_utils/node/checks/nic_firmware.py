# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""nic_firmware: each NVIDIA (Mellanox) card's firmware settings (`mlxconfig -d <device> q`, or mstconfig) against
profiles, as the nic_firmware module takes them: a warning per card that differs, naming each setting from what to
what; a card the tool cannot read, or no card at all, makes the report incomplete (a node never returns to service
on settings nobody read). Nothing is changed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nic_firmware as firmware_wanted
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, refused_by

SOURCE = "NIC firmware settings"


def read(node):
    wanted = firmware_wanted.check_options(node.opts["nic_firmware"])
    addresses = wanted["devices"] or node.firmware_cards()
    if not addresses:
        why = node.no_firmware_card()   # "not run: no NVIDIA (Mellanox) card under ..."
        return {"nic_firmware": [], "problems": [why], "profiles": wanted["profiles"], "unread": [(SOURCE, why)],
                "not_run": why.split(": ", 1)[-1]}
    found = node.read_firmware(wanted, addresses)
    return {"nic_firmware": found["plans"], "problems": found["problems"], "profiles": wanted["profiles"],
            "unread": [(SOURCE, problem) for problem in found["problems"]]}


def judge(node, readings):
    return firmware_wanted.findings(node.host, readings["nic_firmware"], readings["profiles"], readings["problems"])


CHECK = Check(
    "nic_firmware", "NIC firmware settings against profiles",
    reads=("mlxconfig (or mstconfig) -d <device> q per card (command_timeout each)",), read=read, judge=judge,
    options=(Option("nic_firmware", "dict", rules=(refused_by(firmware_wanted.check_options, firmware_wanted.FirmwareError),),
                    description=[
                        "Compare each NVIDIA (Mellanox) card's firmware settings (C(mlxconfig -d <device> q), or "
                        "C(mstconfig)) with profiles, as M(gpufabric.rdma.nic_firmware) takes them - C(profiles), "
                        "C(params), C(settings), C(tool), C(devices) (default every card sysfs shows). Each card that "
                        "differs is a warning C(nic_firmware_settings) naming each setting from what to what; a card the "
                        "tool cannot read is C(nic_firmware_unread) and makes the report incomplete. Nothing is changed - "
                        "a policy rule that drains on C(nic_firmware_settings) lets the decider carry the change out "
                        "(C(gpufabric.rdma.remediate) playbook)."]),),
    findings=("nic_firmware_settings", "nic_firmware_unread"), observed=("nic_firmware",),
    asked=lambda node: bool(node.opts["nic_firmware"]))
