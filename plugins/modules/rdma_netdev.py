#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_netdev
short_description: MTU, lossless RoCE v2 QoS, SR-IOV, IRQ affinity and RPS of one RDMA network interface
version_added: 0.1.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Configures one network interface, chosen by O(name) or by the RDMA device behind it
    (O(rdma_device)). Every input is checked before anything changes; an unknown interface, an MTU
    outside 1280-9978 or above the interface's C(max_mtu), a priority outside 0-7 or a VF count
    above C(sriov_totalvfs) fails naming the value.
  - B(MTU) is set at runtime (C(ip link set dev X mtu N)) and, with O(persist), in the configuration
    of the network manager that owns the interface - netplan (a C(/etc/netplan/60-gpufabric-<if>.yaml)
    merged into the interface's definition), NetworkManager (the active connection's
    C(802-3-ethernet.mtu)), systemd-networkd (a drop-in for the interface's C(.network) file) or
    ifupdown (C(mtu) in its C(iface) stanza). An interface none of them manages keeps its MTU through
    a udev rule matched on its MAC address (C(/etc/udev/rules.d/70-gpufabric-mtu.rules)).
  - When NetworkManager is installed but not running, and nothing in C(NetworkManager.conf) or C(conf.d/) under
    O(etc_root) leaves the interface unmanaged, the udev rule is still written, with a warning naming the interface
    - NetworkManager takes it over when it starts, and the MTU is then its connection's. Start NetworkManager and
    run the module again to keep the MTU in the connection, or mark the interface unmanaged there.
  - B(RoCE v2 lossless QoS) - PFC priorities, trust mode (C(pcp) or C(dscp)) through C(mlnx_qos) when
    installed, else iproute2 C(dcb); ECN per priority in the mlx5 sysfs tree (C(ecn/roce_np) and
    C(ecn/roce_rp)); the rdma_cm default RoCE mode and ToS in configfs. Interfaces without DCB
    (veth, most virtual NICs) are reported in RV(not_applied) with the reason, not failed.
  - B(SR-IOV) VF count, B(IRQ affinity) of the NIC's interrupts and B(RPS) masks of its receive
    queues, each to the CPUs of the NIC's NUMA node (V(numa)) or an explicit CPU list (seed 001).
  - QoS, SR-IOV, IRQ and RPS settings do not survive a reboot; RV(boot_steps) lists them so a boot
    unit can replay them (the R(gpufabric.rdma.rdma_network,ansible_collections.gpufabric.rdma.rdma_network_role) role installs one).
options:
  name:
    description: Interface name. Exactly one of O(name) and O(rdma_device).
    type: str
  rdma_device:
    description: RDMA device (e.g. C(mlx5_0)) whose network interface to configure.
    type: str
  rdma_port:
    description: Port of O(rdma_device) for the rdma_cm settings.
    type: int
    default: 1
  mtu:
    description: MTU in bytes (1280-9978). Unset leaves the MTU alone.
    type: raw
  persist:
    description: Keep the MTU across reboots in the network manager's configuration.
    type: bool
    default: true
  manager:
    description: Which configuration keeps the MTU; V(auto) finds the manager that owns the interface.
    type: str
    default: auto
    choices: [auto, netplan, networkmanager, networkd, ifupdown, udev]
  pfc_priorities:
    description: Priorities (0-7) with PFC on; all others off. Unset leaves PFC alone; V([]) turns it off.
    type: list
    elements: raw
  trust:
    description: What the NIC trusts to classify traffic.
    type: str
    choices: [pcp, dscp]
  ecn_priorities:
    description: Priorities (0-7) with ECN (DCQCN) on at both reaction and notification points.
    type: list
    elements: raw
  roce_mode:
    description: Default RoCE mode of rdma_cm connections on O(rdma_device).
    type: str
    choices: ["RoCE v2", "IB/RoCE v1"]
  roce_tos:
    description: Default ToS (0-255) of rdma_cm connections on O(rdma_device), e.g. 106 for DSCP 26 with ECN.
    type: int
  qos_tool:
    description: Tool for PFC and trust; V(auto) prefers C(mlnx_qos).
    type: str
    default: auto
    choices: [auto, mlnx_qos, dcb]
  sriov_numvfs:
    description: Number of SR-IOV virtual functions.
    type: int
  irq_affinity:
    description: Pin the NIC's interrupts to V(numa) (its NUMA node's CPUs) or a CPU list such as C(0-15,32-47).
    type: str
  rps_cpus:
    description: RPS CPUs of every receive queue, V(numa) or a CPU list.
    type: str
  sysfs_root:
    description: Root of the sysfs tree.
    type: path
    default: /sys
  procfs_root:
    description: Root of the proc tree (C(interrupts), C(irq/)).
    type: path
    default: /proc
    aliases: [proc_root]
  etc_root:
    description:
      - Root of the configuration tree the network managers read (C(netplan/), C(network/interfaces), C(systemd/network/),
        C(udev/rules.d/)); a copy of a host's C(/etc) plans like the host.
    type: path
    default: /etc
attributes:
  check_mode:
    support: full
    description: Everything is read and compared; nothing is set or written.
  diff_mode:
    support: full
    description: Shows the MTU change and the persistent configuration file's old and new content.
extends_documentation_fragment:
  - gpufabric.rdma.command_timeout
seealso:
  - module: gpufabric.rdma.rdma_devices
  - name: NVIDIA - RoCE configuration for ConnectX (PFC, trust, ECN)
    description: What the QoS settings mean.
    link: https://docs.nvidia.com/networking/display/mlnxofedv24010331/quality+of+service
"""

EXAMPLES = r"""
- name: Jumbo frames on the RoCE interface, kept across reboots
  gpufabric.rdma.rdma_netdev:
    name: ens1f0np0
    mtu: 9000

- name: Lossless RoCE v2 on the interface of mlx5_0 (PFC and ECN on priority 3, DSCP trust)
  gpufabric.rdma.rdma_netdev:
    rdma_device: mlx5_0
    mtu: 9000
    pfc_priorities: [3]
    ecn_priorities: [3]
    trust: dscp
    roce_mode: RoCE v2
    roce_tos: 106

- name: SR-IOV VFs and interrupts on the NIC's NUMA node
  gpufabric.rdma.rdma_netdev:
    name: ens1f0np0
    sriov_numvfs: 8
    irq_affinity: numa
    rps_cpus: numa
"""

RETURN = r"""
name:
  description: The interface configured.
  returned: always
  type: str
  sample: ens1f0np0
mtu:
  description: MTU before and after, the manager that keeps it and the file (or connection) changed.
  returned: when O(mtu) is set
  type: dict
  sample: {"before": 1500, "after": 9000, "manager": "netplan", "persisted_in": "/etc/netplan/60-gpufabric-ens1f0np0.yaml"}
applied:
  description: One line per setting that was (or in check mode would be) changed.
  returned: always
  type: list
  elements: str
  sample: ["mtu 1500 -> 9000", "pfc priorities [] -> [3] (mlnx_qos)"]
not_applied:
  description: Settings not applied, each with the reason.
  returned: always
  type: list
  elements: dict
  sample: [{"setting": "qos", "reason": "eth0 (veth) has no DCB: mlnx_qos is not installed and dcb says: Operation not supported"}]
boot_steps:
  description: The QoS, SR-IOV, IRQ and RPS settings as steps to replay at boot (C(argv) or C(path)/C(value)).
  returned: always
  type: list
  elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, netdev_host
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import netconf
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.files import write_atomic


def _apply(module, runner, step):
    if "argv" in step:
        result = runner.run(step["argv"])
        if not result.ok:
            module.fail_json(msg="%s failed: %s" % (" ".join(step["argv"]), result.describe()))
    elif "mkdir" in step:
        os.mkdir(step["mkdir"])
    else:
        try:
            with open(step["path"], "w") as handle:
                handle.write(step["value"] + "\n")
        except (IOError, OSError) as exc:
            module.fail_json(msg="writing %s to %s failed: %s" % (step["value"], step["path"], exc))


def _write_configuration(module, runner, plan, ifname, diffs, applied):
    """The network manager's files the plan changes, written (not in check mode) and checked by netplan generate
    where netplan manages the interface; the old files put back when it refuses them. -> whether any changes."""
    changed = False
    written = []
    for path, before, after, mode in plan.files:
        if before != after:
            changed = True
            applied.append("%s: mtu %d" % (path, plan.mtu["after"]))
            diffs.append(dict(before=before or "", after=after, before_header=path, after_header=path))
            if not module.check_mode:
                written.append((path, before))
                write_atomic(module, path, after, make_dirs=True)
                if mode is not None:
                    os.chmod(path, mode)
    netplan = runner.which("netplan") if written and plan.mtu and plan.mtu.get("manager") == "netplan" else None
    if netplan:
        result = runner.run([netplan, "generate"])
        if not result.ok:
            for path, before in written:
                if before is None:
                    os.remove(path)
                else:
                    write_atomic(module, path, before)
            module.fail_json(msg="netplan rejected the configuration for %s (netplan generate: %s); the previous "
                                 "configuration is back in place and nothing else was changed" % (ifname, result.describe()))
    return changed


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str"),
            rdma_device=dict(type="str"),
            rdma_port=dict(type="int", default=1),
            mtu=dict(type="raw"),
            persist=dict(type="bool", default=True),
            manager=dict(type="str", default="auto", choices=["auto"] + list(netconf.MANAGERS)),
            pfc_priorities=dict(type="list", elements="raw"),
            trust=dict(type="str", choices=["pcp", "dscp"]),
            ecn_priorities=dict(type="list", elements="raw"),
            roce_mode=dict(type="str", choices=["RoCE v2", "IB/RoCE v1"]),
            roce_tos=dict(type="int"),
            qos_tool=dict(type="str", default="auto", choices=["auto", "mlnx_qos", "dcb"]),
            sriov_numvfs=dict(type="int"),
            irq_affinity=dict(type="str"),
            rps_cpus=dict(type="str"),
            sysfs_root=dict(type="path", default="/sys"),
            procfs_root=dict(type="path", default="/proc", aliases=["proc_root"]),
            etc_root=dict(type="path", default="/etc"),
            **commands.ARGUMENT_SPEC
        ),
        required_one_of=[("name", "rdma_device")],
        mutually_exclusive=[("name", "rdma_device")],
        supports_check_mode=True,
    )
    params = module.params
    roots = netdev_host.roots_of(params)
    # Every input is checked before the host is read, and the host is read whole before anything
    # changes: bad input, a missing interface or a tool that does not answer change nothing.
    try:
        runner = commands.Runner(params["command_timeout"])
        ifname, plan = netdev_host.plan_for(params, runner, roots)
    except (ValueError, netdev_host.HostError) as exc:
        module.fail_json(msg=str(exc))
    for warning in plan.warnings:
        module.warn(warning)

    diffs = []
    applied = []
    if plan.mtu and plan.mtu["before"] != plan.mtu["after"]:
        diffs.append(dict(before="mtu %s\n" % plan.mtu["before"], after="mtu %s\n" % plan.mtu["after"],
                          before_header="%s (runtime)" % ifname, after_header="%s (runtime)" % ifname))
    # Configuration first, checked by its manager where it can check (netplan generate), and put back
    # as it was when the manager rejects it; only then the runtime steps: nothing is half-applied.
    changed = _write_configuration(module, runner, plan, ifname, diffs, applied)
    for description, step in plan.steps:
        changed = True
        applied.append(description)
        if not module.check_mode:
            _apply(module, runner, step)
    result = dict(changed=changed, name=ifname, applied=applied, not_applied=plan.skipped, boot_steps=plan.boot)
    if plan.mtu:
        result["mtu"] = plan.mtu
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
