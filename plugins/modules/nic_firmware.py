#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nic_firmware
short_description: Compare NVIDIA NIC firmware settings with profiles, and change them on a node out of service
version_added: 0.3.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Queries each NVIDIA (Mellanox) card with C(mlxconfig -d <device> q) (MFT) or C(mstconfig) (mstflint), reads it
    (P(gpufabric.rdma.parse_mlxconfig#filter)) and plans the settings the profiles want - per device each setting
    to change, from what to what, and what the card does not have.
  - Profiles - C(roce_lossless) (ECN congestion control on the host's ECN priorities, CNP priority and DSCP),
    C(sriov) (SRIOV_EN, NUM_OF_VFS), C(ats) (ATS_ENABLED, GPUDirect RDMA from virtual machines), C(ethernet) or
    C(infiniband) (LINK_TYPE of a VPI card); O(settings) adds any mlxconfig setting.
  - A change takes effect only at a firmware reset or a reboot, which takes the NIC away from running jobs. So with
    O(apply) false (the default) nothing is changed - the result is the plan - and with O(apply) true the module
    sets the values and resets the NIC (C(mlxfwreset)/C(mstfwreset) C(-d <device> -y reset)). Only
    the C(gpufabric.rdma.remediate) playbook sets O(apply), on a node the decider drained and that runs no job.
  - Check mode changes nothing and shows the per-device diff; the query itself only reads.
  - Every command has a time limit and is killed with its children. A device the tool cannot read fails the module,
    naming it, and nothing is set; the first device whose set or reset fails stops the run, saying which.
  - A node whose sysfs shows no NVIDIA card, with none named in O(devices), is "not run" - RV(not_run) says so, and
    discovery's readiness shows it as C(nic_firmware_unread) - never an empty plan that looks like a card as wanted.
options:
  profiles:
    description: The profiles to compare with.
    type: list
    elements: str
    choices: [roce_lossless, sriov, ats, ethernet, infiniband]
    default: []
  params:
    description:
      - The profiles' parameters - C(ecn_priorities) (list, default [3]), C(cnp_priority) (6), C(cnp_dscp) (48),
        C(num_vfs) (8).
    type: dict
    default: {}
  settings:
    description: More mlxconfig settings, C(NAME) to a number, true/false or a word; C(NAME_P*) means every port.
    type: dict
    default: {}
  tool:
    description: C(mlxconfig) or C(mstconfig), or a path to one; its reset tool is C(mlxfwreset) or C(mstfwreset) beside it.
    type: str
    default: mlxconfig
  devices:
    description: The devices (PCI addresses such as C(3b:00.0), C(mlx5_0) or C(/dev/mst) paths); empty, every NVIDIA card
      sysfs shows (one function per card).
    type: list
    elements: str
    default: []
  apply:
    description: Set what differs and reset the NIC. Only on a node out of service (remediate.yml does it on drained nodes).
    type: bool
    default: false
  reset:
    description: With O(apply), reset the NIC after the set; false leaves the new values for the next reboot.
    type: bool
    default: true
  timeout:
    description: Seconds each command may take (1 to 3600).
    type: int
    default: 300
  sysfs_root:
    description: Where sysfs is (a captured tree in tests).
    type: path
    default: /sys
seealso:
  - module: gpufabric.rdma.node_health
  - module: gpufabric.rdma.remediate
"""

EXAMPLES = r"""
- name: Show which cards differ from the RoCE lossless profile (nothing is changed)
  gpufabric.rdma.nic_firmware:
    profiles: [roce_lossless]
    params: {ecn_priorities: [3]}
  register: firmware

- name: Print the plan
  ansible.builtin.debug:
    msg: "{{ firmware.text.splitlines() }}"
"""

RETURN = r"""
devices:
  description: The devices queried.
  returned: always
  type: list
  elements: str
plans:
  description:
    - Per device - C(device), C(device_type), C(changes) (C(setting), C(now), C(wanted)), C(pending) (set for the next
      boot, the firmware still running the old value), C(missing) (settings the card does not show), C(argv) (the
      C(set) arguments), C(reset_needed).
  returned: always
  type: list
  elements: dict
text:
  description: The plan as a person reads it, one line per device and setting.
  returned: always
  type: str
applied:
  description: With O(apply) - per device changed, C(device), C(set_output), C(applied), C(reset_output), C(reset_ok), C(error).
  returned: always
  type: list
  elements: dict
not_run:
  description: Why nothing was compared (no NVIDIA card in sysfs and none named); null when the cards were queried.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, nic_firmware, sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nic_firmware as firmware_wanted
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nic_firmware as firmware_plan


def _lines(plans, key):
    """The diff's before (key 'now') or after ('wanted') text, one line per device and setting."""
    return "".join("%s %s=%s\n" % (p["device"], c["setting"], c[key])
                   for p in plans for c in p["changes"] + (p.get("pending") or []))


def main():
    module = AnsibleModule(
        argument_spec=dict(profiles=dict(type="list", elements="str", default=[], choices=list(firmware_wanted.PROFILES)),
                           params=dict(type="dict", default={}), settings=dict(type="dict", default={}),
                           tool=dict(type="str", default="mlxconfig"), devices=dict(type="list", elements="str", default=[]),
                           apply=dict(type="bool", default=False), reset=dict(type="bool", default=True),
                           timeout=dict(type="int", default=300), sysfs_root=dict(type="path", default="/sys")),
        supports_check_mode=True,
    )
    p = module.params
    try:
        wanted = firmware_wanted.check_options({"profiles": p["profiles"], "params": p["params"], "settings": p["settings"],
                                                "tool": p["tool"], "devices": p["devices"]})
        runner = commands.Runner(commands.check_timeout(p["timeout"], "timeout"))
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    devices = wanted["devices"] or nic_firmware.devices_from_sysfs(sysfs.read_rdma_devices(p["sysfs_root"]))
    out = {"changed": False, "devices": devices, "plans": [], "text": "", "applied": [], "not_run": None}
    if not devices:
        out["not_run"] = nic_firmware.no_card(p["sysfs_root"])
        out["text"] = out["not_run"] + "\n"
        module.exit_json(**out)
    read = nic_firmware.read(runner, wanted, devices)
    if read["problems"]:
        module.fail_json(msg="the firmware settings could not be read, so nothing is changed: %s"
                         % "; ".join(read["problems"]), **out)
    plans = read["plans"]
    out.update(plans=plans, text=firmware_plan.diff_text(plans))
    differs = [x for x in plans if x["changes"] or (p["reset"] and x.get("pending"))]
    if module._diff:
        out["diff"] = {"before": _lines(plans, "now"), "after": _lines(plans, "wanted"),
                       "before_header": "NIC firmware now", "after_header": "NIC firmware after the reset"}
    if not p["apply"] or not differs:
        module.exit_json(**out)
    out["changed"] = True
    if module.check_mode:
        module.exit_json(**out)
    out["applied"] = nic_firmware.apply(runner, wanted["tool"], wanted["reset_tool"], differs, reset=p["reset"])
    errors = [a["error"] for a in out["applied"] if a["error"]]
    if errors:
        module.fail_json(msg="NIC firmware change stopped: %s" % errors[0], **out)
    after = nic_firmware.read(runner, wanted, [x["device"] for x in differs])
    left = [x for x in after["plans"] if x["changes"]]
    if after["problems"] or left:
        module.fail_json(msg="the NIC firmware does not show the new settings after the set: %s" % (
            "; ".join(after["problems"]) or firmware_plan.diff_text(left).strip()), **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
