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

import glob
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils import commands, netconf, text
from ansible_collections.gpufabric.rdma.plugins.module_utils.files import read_attr as _read, read_text, write_atomic


SKIP_REASONS = {
    "ecn": "%s does not exist: the interface has no ECN controls (mlx5 interfaces have them)",
    "rdma_cm": "%s cannot be created: rdma_cm's configfs is not mounted or the module is not loaded",
}


class Plan(object):
    """What to change, collected before anything is changed."""

    def __init__(self):
        self.steps = []        # (description, step) to apply now
        self.files = []        # (path, before, after, mode)
        self.skipped = []
        self.boot = []
        self.mtu = None

    def skip(self, setting, reason):
        # One reason per setting: the first missing ECN file says it for all sixteen.
        if setting not in [item["setting"] for item in self.skipped]:
            self.skipped.append(dict(setting=setting, reason=reason))


def _writable(path):
    return os.path.exists(path) and os.access(path, os.W_OK)


def _resolve_interface(module, sysfs):
    params = module.params
    if not os.path.isdir(os.path.join(sysfs, "class", "net")):
        module.fail_json(msg="sysfs_root %s has no class/net directory: is it the root of a sysfs tree?" % sysfs)
    if params["rdma_device"]:
        nets = sorted(os.listdir(os.path.join(sysfs, "class/infiniband", params["rdma_device"], "device/net"))) \
            if os.path.isdir(os.path.join(sysfs, "class/infiniband", params["rdma_device"], "device/net")) else []
        if not nets:
            known = sorted(os.listdir(os.path.join(sysfs, "class/infiniband"))) \
                if os.path.isdir(os.path.join(sysfs, "class/infiniband")) else []
            module.fail_json(msg="rdma_device %s has no network interface on this host (RDMA devices: %s)"
                             % (params["rdma_device"], ", ".join(known) or "none"))
        return nets[0]
    name = params["name"]
    if not os.path.exists(os.path.join(sysfs, "class/net", name)):
        known = sorted(os.listdir(os.path.join(sysfs, "class/net")))[:40]
        module.fail_json(msg="interface %s does not exist on this host (interfaces: %s)" % (name, ", ".join(known)))
    return name


def _cpus(value, sysfs, ifname):
    """CPU list for 'numa' or an explicit list; (cpus, None) or (None, skip reason)."""
    if value != "numa":
        return netconf.parse_cpulist(value), None
    node = _read(os.path.join(sysfs, "class/net", ifname, "device/numa_node"))
    if node is None or node == "-1":
        return None, "%s has no NUMA node (numa_node %s)" % (ifname, node or "missing")
    cpulist = _read(os.path.join(sysfs, "devices/system/node/node%s/cpulist" % node))
    if not cpulist:
        return None, "no CPU list for NUMA node %s" % node
    return netconf.parse_cpulist(cpulist), None


def _probe(module, runner, argv):
    """A read-only command; one that does not answer in time stops the module before anything changes."""
    result = runner.run(argv)
    if result.timed_out:
        module.fail_json(msg="%s; nothing was changed" % result.describe())
    return result


def _plan_mtu(module, runner, plan, ifname, link, mtu):
    params = module.params
    before = link["mtu"]
    plan.mtu = dict(before=before, after=mtu, manager=None, persisted_in=None)
    if before != mtu:
        plan.steps.append(("mtu %s -> %d" % (before, mtu), {"argv": ["ip", "link", "set", "dev", ifname, "mtu", str(mtu)]}))
    if not params["persist"]:
        return
    manager = params["manager"]
    netplan_files = [path for path in glob.glob("/etc/netplan/*.yaml") if "/60-gpufabric-" not in path]
    nm_connection = None
    networkd_file = None
    ifupdown = None
    nmcli, networkctl = runner.which("nmcli"), runner.which("networkctl")
    if manager in ("auto", "networkmanager") and nmcli:
        result = _probe(module, runner, [nmcli, "-g", "GENERAL.CONNECTION", "device", "show", ifname])
        out = result.stdout.strip()
        nm_connection = out if result.ok and out not in ("", "--") else None
    if manager in ("auto", "networkd") and networkctl:
        result = _probe(module, runner, [networkctl, "status", "--no-pager", ifname])
        networkd_file = netconf.networkd_network_file(result.stdout) if result.ok else None
    if manager in ("auto", "ifupdown"):
        for path in ["/etc/network/interfaces"] + sorted(glob.glob("/etc/network/interfaces.d/*")):
            text = read_text(path)
            if text is not None and netconf.ifupdown_has_stanza(text, ifname):
                ifupdown = (path, text)
                break
    if manager == "auto":
        manager = netconf.pick_manager(netplan_files, nm_connection, networkd_file, ifupdown)
    plan.mtu["manager"] = manager
    if manager == "netplan":
        path = netconf.NETPLAN_FILE % ifname
        plan.files.append((path, read_text(path), netconf.render_netplan(ifname, mtu), 0o600))
    elif manager == "networkmanager":
        if not nm_connection:
            module.fail_json(msg="manager networkmanager: NetworkManager has no connection on %s" % ifname)
        result = _probe(module, runner, [nmcli, "-g", "802-3-ethernet.mtu", "connection", "show", nm_connection])
        current = result.stdout.strip()
        path = "nmcli connection %s" % nm_connection
        if current != str(mtu):
            plan.steps.append(("%s 802-3-ethernet.mtu %s -> %d" % (path, current or "auto", mtu),
                               {"argv": [nmcli, "connection", "modify", nm_connection, "802-3-ethernet.mtu", str(mtu)]}))
        plan.mtu["persisted_in"] = path
        return
    elif manager == "networkd":
        if not networkd_file:
            module.fail_json(msg="manager networkd: systemd-networkd does not manage %s (no .network file)" % ifname)
        path = "/etc/systemd/network/%s.d/%s" % (os.path.basename(networkd_file), netconf.NETWORKD_DROPIN)
        plan.files.append((path, read_text(path), netconf.render_networkd_dropin(mtu), 0o644))
    elif manager == "ifupdown":
        if not ifupdown:
            module.fail_json(msg="manager ifupdown: no 'iface %s' stanza in /etc/network/interfaces{,.d/*}" % ifname)
        path, text = ifupdown
        plan.files.append((path, text, netconf.ifupdown_set_mtu(text, ifname, mtu), None))
    else:
        path = netconf.UDEV_RULES
        before_text = read_text(path)
        plan.files.append((path, before_text, netconf.udev_set_mtu(before_text, link["address"], ifname, mtu), 0o644))
    plan.mtu["persisted_in"] = path


def _plan_qos(module, runner, plan, ifname, link, pfc, ecn):
    params = module.params
    rdma_device = params["rdma_device"]
    tool = params["qos_tool"]
    current = {"trust": None, "pfc": None}
    wants_dcb = pfc is not None or params["trust"]
    if wants_dcb:
        mlnx_qos = runner.which("mlnx_qos")
        dcb = runner.which("dcb")
        if tool in ("auto", "mlnx_qos") and mlnx_qos:
            tool = "mlnx_qos"
            result = _probe(module, runner, [mlnx_qos, "-i", ifname])
            if not result.ok:
                plan.skip("qos", "%s: mlnx_qos -i %s said: %s" % (ifname, ifname, result.first_line()))
                wants_dcb = False
            else:
                current = netconf.parse_mlnx_qos(result.stdout)
        elif tool in ("auto", "dcb") and dcb:
            tool = "dcb"
            result = _probe(module, runner, [dcb, "-j", "pfc", "show", "dev", ifname, "prio-pfc"])
            if not result.ok:
                plan.skip("qos", "%s (%s) has no DCB: %sdcb says: %s"
                          % (ifname, link["kind"] or "nic", "mlnx_qos is not installed and " if not mlnx_qos else "",
                             result.first_line()))
                wants_dcb = False
            else:
                current["pfc"] = netconf.parse_dcb_pfc_json(result.stdout)
        else:
            plan.skip("qos", "%s: neither mlnx_qos (MLNX OFED / mlnx-tools) nor iproute2 dcb is installed" % ifname)
            wants_dcb = False
    steps = netconf.qos_commands(ifname, tool if tool != "auto" else "dcb",
                                 pfc if wants_dcb else None, params["trust"] if wants_dcb else None,
                                 ecn, rdma_device, params["rdma_port"], params["roce_mode"], params["roce_tos"])
    for step in steps:
        if "argv" in step:
            argv = step["argv"]
            plan.boot.append(step)
            if not netconf.qos_step_in_place(step, current, pfc, params["trust"]):
                plan.steps.append(("%s on %s" % (" ".join(argv[:3]) if tool == "dcb" else "mlnx_qos", ifname), step))
            continue
        _plan_write(plan, step, "ecn" if "/ecn/" in step["path"] else "rdma_cm")


def _plan_write(plan, step, setting, compare=None):
    path = step["path"]
    # rdma_cm's configfs directory for a device exists only once created (mkdir), like every configfs item.
    cm_dir = os.path.dirname(os.path.dirname(os.path.dirname(path))) if setting == "rdma_cm" else None
    if not os.path.exists(path) and not (cm_dir and os.path.isdir(os.path.dirname(cm_dir))):
        plan.skip(setting, SKIP_REASONS.get(setting, "%s does not exist") % path)
        return
    if os.path.exists(path) and not _writable(path):
        plan.skip(setting, "%s is read-only here (a container's sysfs?)" % path)
        return
    if cm_dir and not os.path.isdir(cm_dir) and ("create %s" % cm_dir) not in [desc for desc, dummy in plan.steps]:
        plan.steps.append(("create %s" % cm_dir, {"mkdir": cm_dir}))
    if cm_dir and {"mkdir": cm_dir} not in plan.boot:
        plan.boot.append({"mkdir": cm_dir})
    plan.boot.append(step)
    current = _read(path)
    if current is not None and (compare or (lambda a, b: a == b))(current, step["value"]):
        return
    plan.steps.append(("%s: %s -> %s" % (path, current, step["value"]), step))


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
            **commands.ARGUMENT_SPEC
        ),
        required_one_of=[("name", "rdma_device")],
        mutually_exclusive=[("name", "rdma_device")],
        supports_check_mode=True,
    )
    params = module.params
    sysfs = params["sysfs_root"]

    # Every input is checked before the host is read for changes, so bad input changes nothing.
    try:
        runner = commands.Runner(params["command_timeout"])
        if params["name"] is not None:
            text.check_ifname("name", params["name"])
        if params["rdma_device"] is not None:
            text.check_ifname("rdma_device", params["rdma_device"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    mtu = None
    if params["mtu"] is not None:
        mtu, error = netconf.check_mtu(params["mtu"])
        if error:
            module.fail_json(msg=error)
    pfc, error = netconf.check_priorities(params["pfc_priorities"], "pfc_priorities")
    if error:
        module.fail_json(msg=error)
    ecn, error = netconf.check_priorities(params["ecn_priorities"], "ecn_priorities")
    if error:
        module.fail_json(msg=error)
    if params["pfc_priorities"] is None:
        pfc = None
    if params["ecn_priorities"] is None:
        ecn = None
    if params["roce_tos"] is not None and not 0 <= params["roce_tos"] <= 255:
        module.fail_json(msg="roce_tos %d is outside 0-255" % params["roce_tos"])
    if params["sriov_numvfs"] is not None and params["sriov_numvfs"] < 0:
        module.fail_json(msg="sriov_numvfs %d is negative" % params["sriov_numvfs"])
    for key in ("irq_affinity", "rps_cpus"):
        value = params[key]
        if value and value != "numa" and not re.match(r"^\d+(-\d+)?(,\d+(-\d+)?)*$", value):
            module.fail_json(msg="%s %r is neither 'numa' nor a CPU list such as 0-15,32-47" % (key, value))

    ifname = _resolve_interface(module, sysfs)
    ip = runner.which("ip")
    if not ip:
        module.fail_json(msg="the ip command (iproute2) is not installed on this host")
    result = _probe(module, runner, [ip, "-d", "-j", "link", "show", "dev", ifname])
    if not result.ok:
        module.fail_json(msg="ip link show dev %s failed: %s" % (ifname, result.describe()))
    try:
        link = netconf.parse_ip_link_json(result.stdout)[ifname]
    except (ValueError, KeyError) as exc:
        module.fail_json(msg="cannot read ip -d -j link show dev %s: %s" % (ifname, exc))

    plan = Plan()
    if mtu is not None:
        mtu, error = netconf.check_mtu(mtu, link["max_mtu"])
        if error:
            module.fail_json(msg="%s: %s" % (ifname, error))
        _plan_mtu(module, runner, plan, ifname, link, mtu)
    if pfc is not None or ecn is not None or params["trust"] or params["roce_mode"] or params["roce_tos"] is not None:
        _plan_qos(module, runner, plan, ifname, link, pfc, ecn)
    device = os.path.join(sysfs, "class/net", ifname, "device")
    if params["sriov_numvfs"] is not None:
        total = _read(os.path.join(device, "sriov_totalvfs"))
        if total is None:
            plan.skip("sriov", "%s has no SR-IOV (no sriov_totalvfs)" % ifname)
        elif params["sriov_numvfs"] > int(total):
            module.fail_json(msg="sriov_numvfs %d is above %s's sriov_totalvfs %s" % (params["sriov_numvfs"], ifname, total))
        else:
            path = os.path.join(device, "sriov_numvfs")
            current = _read(path)
            if current not in (None, "0", str(params["sriov_numvfs"])):
                # The kernel refuses to change a non-zero VF count except through 0.
                plan.steps.append(("sriov_numvfs %s -> 0" % current, {"path": path, "value": "0"}))
            _plan_write(plan, {"path": path, "value": str(params["sriov_numvfs"])}, "sriov")
    if params["irq_affinity"]:
        cpus, reason = _cpus(params["irq_affinity"], sysfs, ifname)
        pci = os.path.basename(os.path.realpath(device)) if os.path.exists(device) else ""
        irqs = netconf.device_irqs(read_text(os.path.join(params["procfs_root"], "interrupts")), pci, ifname) if cpus else []
        if reason:
            plan.skip("irq_affinity", reason)
        elif not irqs:
            plan.skip("irq_affinity", "no interrupts of %s in /proc/interrupts" % ifname)
        for irq in irqs:
            _plan_write(plan, {"path": os.path.join(params["procfs_root"], "irq/%d/smp_affinity_list" % irq),
                               "value": ",".join(str(cpu) for cpu in cpus)}, "irq_affinity",
                        lambda a, b: netconf.parse_cpulist(a) == netconf.parse_cpulist(b))
    if params["rps_cpus"]:
        cpus, reason = _cpus(params["rps_cpus"], sysfs, ifname)
        if reason:
            plan.skip("rps_cpus", reason)
        for queue in sorted(glob.glob(os.path.join(sysfs, "class/net", ifname, "queues/rx-*"))) if cpus else []:
            _plan_write(plan, {"path": os.path.join(queue, "rps_cpus"), "value": netconf.cpu_mask(cpus)}, "rps_cpus",
                        netconf.same_mask)

    changed = False
    diffs = []
    applied = []
    for description, step in plan.steps:
        changed = True
        applied.append(description)
        if not module.check_mode:
            _apply(module, runner, step)
    if plan.mtu and plan.mtu["before"] != plan.mtu["after"]:
        diffs.append(dict(before="mtu %s\n" % plan.mtu["before"], after="mtu %s\n" % plan.mtu["after"],
                          before_header="%s (runtime)" % ifname, after_header="%s (runtime)" % ifname))
    for path, before, after, mode in plan.files:
        if before != after:
            changed = True
            applied.append("%s: mtu %d" % (path, mtu))
            diffs.append(dict(before=before or "", after=after, before_header=path, after_header=path))
            if not module.check_mode:
                write_atomic(module, path, after, make_dirs=True)
                if mode is not None:
                    os.chmod(path, mode)
    result = dict(changed=changed, name=ifname, applied=applied, not_applied=plan.skipped, boot_steps=plan.boot)
    if plan.mtu:
        result["mtu"] = plan.mtu
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
