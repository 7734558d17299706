# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Reading one network interface's host for the rdma_netdev module: the snapshot netdev_plan plans from.

Host access, standard library only. Every path is under the module's sysfs_root, procfs_root and
etc_root, so a captured tree is read like the live host; every command runs through
commands.Runner with its time limit. Nothing here decides anything or changes the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import netconf, netdev_plan
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.files import read_attr, read_text
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.sysfs import listdir

TOOLS = ("ip", "nmcli", "networkctl", "mlnx_qos", "dcb")
# nmcli's exit status when NetworkManager is installed but not running (nmcli(1), EXIT STATUS).
NMCLI_NOT_RUNNING = 8


class HostError(Exception):
    """The host cannot be read for this interface (no such interface, a command that did not answer)."""


def resolve_interface(sysfs_root, name=None, rdma_device=None):
    """The interface to configure, by name or through the RDMA device; HostError saying what exists."""
    if not os.path.isdir(os.path.join(sysfs_root, "class", "net")):
        raise HostError("sysfs_root %s has no class/net directory: is it the root of a sysfs tree?" % sysfs_root)
    if rdma_device:
        nets = listdir(os.path.join(sysfs_root, "class", "infiniband", rdma_device, "device", "net"))
        if not nets:
            known = listdir(os.path.join(sysfs_root, "class", "infiniband"))
            raise HostError("rdma_device %s has no network interface on this host (RDMA devices: %s)"
                            % (rdma_device, ", ".join(known) or "none"))
        return nets[0]
    if not os.path.exists(os.path.join(sysfs_root, "class", "net", name)):
        known = listdir(os.path.join(sysfs_root, "class", "net"))[:40]
        raise HostError("interface %s does not exist on this host (interfaces: %s)" % (name, ", ".join(known)))
    return name


def _probe(runner, argv):
    """A read-only command; one that does not answer in time stops everything before any change."""
    result = runner.run(argv)
    if result.timed_out:
        raise HostError("%s; nothing was changed" % result.describe())
    return result


def _path_state(path):
    exists = os.path.exists(path)
    return {"exists": exists, "writable": exists and os.access(path, os.W_OK),
            "value": read_attr(path) if exists and not os.path.isdir(path) else None}


def _managers(host, runner, manager):
    roots, tools, ifname = host["roots"], host["tools"], host["ifname"]
    etc = roots["etc"]
    netplan_files = [p for p in sorted(glob.glob(os.path.join(etc, "netplan", "*.yaml"))) if "/60-gpufabric-" not in p]
    managers = {"netplan_files": netplan_files,
                "netplan_mentions": [p for p in netplan_files if netconf.netplan_mentions(read_text(p) or "", ifname)],
                "nm_connection": None, "nm_mtu": None, "networkd_file": None, "ifupdown": None,
                "nm_running": None, "nm_conf": []}
    if manager in ("auto", "networkmanager") and tools["nmcli"]:
        result = _probe(runner, [tools["nmcli"], "-g", "GENERAL.CONNECTION", "device", "show", ifname])
        out = result.stdout.strip()
        managers["nm_connection"] = out if result.ok and out not in ("", "--") else None
        # Installed but not running: it takes the interface over when it starts, unless its configuration
        # leaves it unmanaged (the planner reads NetworkManager.conf and conf.d/ in the order NetworkManager does).
        managers["nm_running"] = not (result.rc == NMCLI_NOT_RUNNING or
                                      "NetworkManager is not running" in (result.stderr or "") + (result.stdout or ""))
        if not managers["nm_running"]:
            conf = [os.path.join(etc, "NetworkManager", "NetworkManager.conf")] + \
                sorted(glob.glob(os.path.join(etc, "NetworkManager", "conf.d", "*.conf")))
            texts = [(path, read_text(path)) for path in conf]
            managers["nm_conf"] = [(path, text) for path, text in texts if text is not None]
        if managers["nm_connection"]:
            result = _probe(runner, [tools["nmcli"], "-g", "802-3-ethernet.mtu", "connection", "show",
                                     managers["nm_connection"]])
            managers["nm_mtu"] = result.stdout.strip() if result.ok else None
    if manager in ("auto", "networkd") and tools["networkctl"]:
        result = _probe(runner, [tools["networkctl"], "status", "--no-pager", ifname])
        managers["networkd_file"] = netconf.networkd_network_file(result.stdout) if result.ok else None
    if manager in ("auto", "ifupdown"):
        for path in [os.path.join(etc, "network", "interfaces")] + \
                sorted(glob.glob(os.path.join(etc, "network", "interfaces.d", "*"))):
            text = read_text(path)
            if text is not None and netconf.ifupdown_has_stanza(text, ifname):
                managers["ifupdown"] = [path, text]
                break
    files = [netdev_plan.netplan_path(roots, ifname), netdev_plan.udev_rules_path(roots)]
    if managers["networkd_file"]:
        files.append(netdev_plan.networkd_dropin_path(roots, managers["networkd_file"]))
    return managers, dict((path, read_text(path)) for path in files)


def _qos(host, runner, qos_tool):
    """Which QoS tool to use and what PFC and trust read back as; error says why QoS cannot be set."""
    ifname, tools = host["ifname"], host["tools"]
    qos = {"tool": None, "current": {"trust": None, "pfc": None}, "error": None}
    if qos_tool in ("auto", "mlnx_qos") and tools["mlnx_qos"]:
        qos["tool"] = "mlnx_qos"
        result = _probe(runner, [tools["mlnx_qos"], "-i", ifname])
        if result.ok:
            qos["current"] = netconf.parse_mlnx_qos(result.stdout)
        else:
            qos["error"] = "%s: mlnx_qos -i %s said: %s" % (ifname, ifname, result.first_line())
    elif qos_tool in ("auto", "dcb") and tools["dcb"]:
        qos["tool"] = "dcb"
        result = _probe(runner, [tools["dcb"], "-j", "pfc", "show", "dev", ifname, "prio-pfc"])
        try:
            pfc = netconf.parse_dcb_pfc_json(result.stdout) if result.ok else None
        except ValueError as exc:
            result, pfc = None, str(exc)
        if result is not None and result.ok:
            qos["current"]["pfc"] = pfc
        else:
            qos["error"] = "%s (%s) has no DCB: %sdcb says: %s" % (
                ifname, host["link"].get("kind") or "nic", "" if tools["mlnx_qos"] else "mlnx_qos is not installed and ",
                result.first_line() if result is not None else pfc)
    return qos


def snapshot(params, ifname, runner, roots):
    """Everything the planners of netdev_plan read about this interface (see that module's docstring)."""
    tools = dict((tool, runner.which(tool)) for tool in TOOLS)
    if not tools["ip"]:
        raise HostError("the ip command (iproute2) is not installed on this host")
    result = _probe(runner, [tools["ip"], "-d", "-j", "link", "show", "dev", ifname])
    if not result.ok:
        raise HostError("ip link show dev %s failed: %s" % (ifname, result.describe()))
    try:
        link = netconf.parse_ip_link_json(result.stdout)[ifname]
    except (ValueError, KeyError) as exc:
        raise HostError("cannot read ip -d -j link show dev %s: %s" % (ifname, exc))
    host = {"ifname": ifname, "link": link, "roots": roots, "tools": tools, "managers": {}, "files": {},
            "qos": {}, "paths": {}, "sriov": {}, "numa": {}, "irqs": [], "rx_queues": []}
    if params.get("mtu") is not None and params.get("persist", True):
        host["managers"], host["files"] = _managers(host, runner, params.get("manager", "auto"))
    wants_qos = params.get("pfc_priorities") is not None or bool(params.get("trust"))
    if wants_qos:
        host["qos"] = _qos(host, runner, params.get("qos_tool", "auto"))
    targets = []
    if wants_qos or params.get("ecn_priorities") is not None or params.get("roce_mode") or \
            params.get("roce_tos") is not None:
        steps = netdev_plan.qos_steps(host, host["qos"].get("tool") or "dcb", None, None,
                                      list(range(8)) if params.get("ecn_priorities") is not None else None,
                                      params.get("rdma_device"), params.get("rdma_port", 1), params.get("roce_mode"),
                                      params.get("roce_tos"))
        for step in steps:
            if "path" in step:
                targets.append(step["path"])
                if "/rdma_cm/" in step["path"]:
                    cm_dir = step["path"].rsplit("/", 3)[0]
                    targets += [cm_dir, cm_dir.rsplit("/", 1)[0]]
    sys_net = os.path.join(roots["sys"], "class", "net", ifname)
    if params.get("sriov_numvfs") is not None:
        total, current = netdev_plan.sriov_paths(roots, ifname)
        host["sriov"] = {"total": read_attr(total), "current": read_attr(current)}
        targets.append(current)
    if params.get("irq_affinity") or params.get("rps_cpus"):
        node = read_attr(os.path.join(sys_net, "device", "numa_node"))
        host["numa"] = {"node": node, "cpulist": read_attr(os.path.join(
            roots["sys"], "devices", "system", "node", "node%s" % node, "cpulist")) if node not in (None, "-1") else None}
    if params.get("irq_affinity"):
        device = os.path.join(sys_net, "device")
        pci = os.path.basename(os.path.realpath(device)) if os.path.exists(device) else ""
        host["irqs"] = netconf.device_irqs(read_text(os.path.join(roots["proc"], "interrupts")), pci, ifname)
        targets += [netdev_plan.irq_path(roots, irq) for irq in host["irqs"]]
    if params.get("rps_cpus"):
        host["rx_queues"] = sorted(glob.glob(os.path.join(sys_net, "queues", "rx-*")))
        targets += [queue + "/rps_cpus" for queue in host["rx_queues"]]
    host["paths"] = dict((path, _path_state(path)) for path in targets)
    return host


def roots_of(params):
    """The trees rdma_netdev reads under, from its sysfs_root, procfs_root and etc_root arguments (defaults when unset)."""
    return {"sys": params.get("sysfs_root") or "/sys", "proc": params.get("procfs_root") or "/proc",
            "etc": params.get("etc_root") or "/etc"}


def plan_for(params, runner, roots):
    """rdma_netdev's whole read: inputs checked, the interface found and read, the plan made -> (ifname, plan).
    ValueError for bad input, HostError for a host that cannot be read; nothing is changed. The applied module
    calls it with the arguments rdma_netdev ran with, to find drift by the same reading."""
    for key in ("name", "rdma_device"):
        if params.get(key) is not None:
            text.check_ifname(key, params[key])
    checked = netdev_plan.check_inputs(params)
    ifname = resolve_interface(roots["sys"], params.get("name"), params.get("rdma_device"))
    host = snapshot(params, ifname, runner, roots)
    return ifname, netdev_plan.plan_all(host, params, checked)


def pending(plan):
    """What the plan would change, one phrase each ([] when the interface is as asked)."""
    changes = []
    if plan.mtu and plan.mtu["before"] != plan.mtu["after"]:
        changes.append("mtu %s -> %s" % (plan.mtu["before"], plan.mtu["after"]))
    changes += ["%s differs" % path for path, before, after, _mode in plan.files if before != after]
    changes += [description for description, _step in plan.steps]
    return [change for index, change in enumerate(changes) if change not in changes[:index]]
