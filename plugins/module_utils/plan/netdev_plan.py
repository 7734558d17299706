# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What the rdma_netdev module changes on one interface, decided from a snapshot of the host.

Pure functions, standard library only. netdev_host.snapshot() reads the host (sysfs, procfs,
/etc, the network managers, the QoS tools) into a plain dict; the planners here turn that dict and
the module's options into a Plan: commands to run, files to write (with their old and new text),
settings left alone and why, and the steps a boot unit replays. The module applies the plan; it
decides nothing itself.

The snapshot (every key is read by netdev_host):

- ``ifname``, ``link`` (mtu, max_mtu, address, kind, operstate from ``ip -d -j link``);
- ``roots``: sys, proc, etc (the trees every path is under, so a captured host plans like a live one);
- ``tools``: the paths of ip, nmcli, networkctl, mlnx_qos, dcb (None when absent);
- ``managers``: netplan_files, nm_connection, nm_mtu, networkd_file, ifupdown ([path, text] or None),
  nm_running (None without nmcli, False when NetworkManager is installed but not running) and nm_conf
  ([(path, text)] of NetworkManager.conf and conf.d/*.conf, read when it is not running);
- ``files``: {path: current text or None} for every file the MTU plan may write;
- ``qos``: tool (mlnx_qos, dcb or None), current ({trust, pfc}), error (why QoS cannot be read);
- ``paths``: {path: {exists, writable, value}} for every sysfs, configfs and procfs target;
- ``sriov``: total, current (texts of sriov_totalvfs and sriov_numvfs);
- ``numa``: node and cpulist texts of the NIC's NUMA node; ``irqs``: the NIC's IRQ numbers;
  ``rx_queues``: the receive queue directories.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import netconf

SKIP_REASONS = {
    "ecn": "%s does not exist: the interface has no ECN controls (mlx5 interfaces have them)",
    "rdma_cm": "%s cannot be created: rdma_cm's configfs is not mounted or the module is not loaded",
    "sriov": "%s does not exist",
    "irq_affinity": "%s does not exist",
    "rps_cpus": "%s does not exist",
}
_CPULIST_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


class PlanError(ValueError):
    """An option that cannot be applied to this host; the message names it and the value."""


class Plan(object):
    """What to change, collected before anything is changed."""

    def __init__(self):
        self.steps = []        # (description, step) to apply now: {"argv"}, {"path", "value"} or {"mkdir"}
        self.files = []        # (path, before, after, mode)
        self.skipped = []      # [{"setting", "reason"}], one per setting
        self.boot = []         # steps a boot unit replays (the kernel forgets them)
        self.warnings = []     # what the user must know although nothing fails
        self.mtu = None

    def skip(self, setting, reason):
        # One reason per setting: the first missing ECN file says it for all sixteen.
        if setting not in [item["setting"] for item in self.skipped]:
            self.skipped.append(dict(setting=setting, reason=reason))


# -- inputs ----------------------------------------------------------------------------------------

def check_inputs(params):
    """The module's options checked before the host is read, so bad input changes nothing.

    Returns {"mtu", "pfc", "ecn"} normalized (None where not given); PlanError naming the value.
    """
    checked = {"mtu": None, "pfc": None, "ecn": None}
    if params.get("mtu") is not None:
        checked["mtu"], error = netconf.check_mtu(params["mtu"])
        if error:
            raise PlanError(error)
    for key, name in (("pfc", "pfc_priorities"), ("ecn", "ecn_priorities")):
        if params.get(name) is not None:
            checked[key], error = netconf.check_priorities(params[name], name)
            if error:
                raise PlanError(error)
    if params.get("roce_tos") is not None and not 0 <= params["roce_tos"] <= 255:
        raise PlanError("roce_tos %d is outside 0-255" % params["roce_tos"])
    if params.get("sriov_numvfs") is not None and params["sriov_numvfs"] < 0:
        raise PlanError("sriov_numvfs %d is negative" % params["sriov_numvfs"])
    for key in ("irq_affinity", "rps_cpus"):
        value = params.get(key)
        if value and value != "numa" and not _CPULIST_RE.match(value):
            raise PlanError("%s %r is neither 'numa' nor a CPU list such as 0-15,32-47" % (key, value))
    return checked


# -- paths (the host reads them, the planners look them up) -----------------------------------------

def netplan_path(roots, ifname):
    return roots["etc"] + (netconf.NETPLAN_FILE % ifname)[len("/etc"):]


def udev_rules_path(roots):
    return roots["etc"] + netconf.UDEV_RULES[len("/etc"):]


def networkd_dropin_path(roots, network_file):
    return "%s/systemd/network/%s.d/%s" % (roots["etc"], network_file.rsplit("/", 1)[-1], netconf.NETWORKD_DROPIN)


def qos_steps(host, tool, pfc, trust, ecn, rdma_device, port, roce_mode, roce_tos):
    """netconf.qos_commands with the tool's real path and every path under the sysfs root."""
    steps = netconf.qos_commands(host["ifname"], tool, pfc, trust, ecn, rdma_device, port, roce_mode, roce_tos,
                                 sysfs_root=host["roots"]["sys"])
    binary = (host.get("tools") or {}).get(tool)
    for step in steps:
        if "argv" in step and binary and step["argv"][0] == tool:
            step["argv"] = [binary] + step["argv"][1:]
    return steps


def sriov_paths(roots, ifname):
    device = "%s/class/net/%s/device" % (roots["sys"], ifname)
    return device + "/sriov_totalvfs", device + "/sriov_numvfs"


def irq_path(roots, irq):
    return "%s/irq/%d/smp_affinity_list" % (roots["proc"], irq)


# -- NetworkManager's configuration (read when it is installed but not running) ---------------------

_MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5,19}$")
_FALSE = ("0", "false", "no", "off")


def _nm_glob(pattern, name):
    """NetworkManager's "simple globbing": * and ?, case-sensitive, no ranges or escapes."""
    regex = "".join(".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return re.match("(?:%s)\\Z" % regex, name, re.DOTALL) is not None


def _nm_spec_matches(spec, ifname, address, nm_type):
    """One entry of NetworkManager's device list format (NetworkManager.conf(5), "Device List Format")."""
    if spec == "*":
        return True
    if spec.startswith("interface-name:"):
        pattern = spec[len("interface-name:"):]
        if pattern.startswith("="):
            return pattern[1:] == ifname
        return _nm_glob(pattern[1:] if pattern.startswith("~") else pattern, ifname)
    if spec.startswith("mac:"):
        return bool(address) and spec[len("mac:"):].lower() == address.lower()
    if spec.startswith("type:"):
        return spec[len("type:"):] == nm_type
    if re.match(r"^(?:s390-subchannels|driver|dhcp-plugin):", spec):
        return False   # not known here, so not taken as a match
    if _MAC_RE.match(spec):
        return bool(address) and spec.lower() == address.lower()
    return spec == ifname   # a bare name: the interface name, literally


def _nm_list_matches(value, ifname, address, nm_type):
    """A device list: no "except:" entry may match, and a plain entry must (or there are only "except:" ones)."""
    specs = [spec.strip() for spec in re.split(r"[,;]", value or "") if spec.strip()]
    matched = has_except = False
    for spec in specs:
        if spec.startswith("except:"):
            has_except = True
            if _nm_spec_matches(spec[len("except:"):], ifname, address, nm_type):
                return False
        elif _nm_spec_matches(spec, ifname, address, nm_type):
            matched = True
    return matched or has_except


def nm_unmanaged(conf_files, ifname, address="", kind=""):
    """Where NetworkManager's configuration leaves the interface unmanaged ("<path>: [keyfile] unmanaged-devices"
    or "<path>: [device-x] managed=false"), or None when it would manage it.

    ``conf_files``: [(path, text)] in the order NetworkManager reads them (NetworkManager.conf, then conf.d/*.conf
    by name; a later setting overrides, "key+=" appends, "key-=" removes). ``kind`` is ip's link kind
    ("" for a NIC, NetworkManager's type "ethernet"). Files under /usr/lib and /run are not read.
    """
    nm_type = kind or "ethernet"
    unmanaged, where = [], None
    devices = []    # [(path, section, {key: value})], later files first (they override earlier ones)
    for path, text in conf_files or []:
        section, file_devices = None, []
        for raw in (text or "").splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1].strip()
                if section == "device" or section.startswith("device-"):
                    file_devices.append((path, section, {}))
                continue
            key, sep, value = line.partition("=")
            if not sep:
                continue
            key, value = key.strip(), value.strip()
            if section == "keyfile" and key.rstrip("+-").strip() == "unmanaged-devices":
                entries = [spec.strip() for spec in re.split(r"[,;]", value) if spec.strip()]
                if key.endswith("+"):
                    unmanaged += entries
                elif key.endswith("-"):
                    unmanaged = [spec for spec in unmanaged if spec not in entries]
                else:
                    unmanaged = entries
                where = "%s: [keyfile] unmanaged-devices=%s" % (path, ";".join(unmanaged))
            elif file_devices and section == file_devices[-1][1]:
                file_devices[-1][2][key] = value
        devices = file_devices + devices
    if unmanaged and _nm_list_matches(";".join(unmanaged), ifname, address, nm_type):
        return where
    for path, section, keys in devices:
        if "managed" in keys and _nm_list_matches(keys.get("match-device", "*"), ifname, address, nm_type):
            return "%s: [%s] managed=%s" % (path, section, keys["managed"]) \
                if keys["managed"].lower() in _FALSE else None
    return None


def _nm_will_take_over(host, mtu, path):
    """The warning for an MTU kept by the udev rule on a host where NetworkManager is installed, not running,
    and would manage the interface when it starts; None otherwise."""
    managers, link, ifname = host.get("managers") or {}, host["link"], host["ifname"]
    if managers.get("nm_running") is not False or \
            nm_unmanaged(managers.get("nm_conf"), ifname, link.get("address"), link.get("kind")):
        return None
    etc = host["roots"]["etc"]
    return ("%s: NetworkManager is installed but not running, and nothing in %s/NetworkManager/ leaves %s unmanaged: "
            "when NetworkManager starts it manages %s, and the MTU is then what the connection it activates there "
            "says (DHCP's, where the connection leaves it automatic) - the udev rule in %s keeps MTU %d only until "
            "then. To keep the MTU under NetworkManager, start it and run this again (the MTU then goes into the "
            "connection's 802-3-ethernet.mtu); to keep NetworkManager away from %s, add "
            "unmanaged-devices=interface-name:%s to [keyfile] in a file in %s/NetworkManager/conf.d/."
            % (ifname, etc, ifname, ifname, path, mtu, ifname, ifname, etc))


# -- planners --------------------------------------------------------------------------------------

def plan_write(plan, host, step, setting, compare=None):
    """A sysfs/configfs/procfs write: skipped with the reason when the file is not there or read-only,
    nothing when it already holds the value, else a step. Every write is also a boot step."""
    path = step["path"]
    paths = host.get("paths") or {}
    target = paths.get(path) or {"exists": False, "writable": False, "value": None}
    # rdma_cm's configfs item for a device exists only once created (mkdir), like every configfs item.
    cm_dir = path.rsplit("/", 3)[0] if setting == "rdma_cm" else None
    cm_parent = (paths.get(cm_dir.rsplit("/", 1)[0]) or {}) if cm_dir else {}
    if not target["exists"] and not (cm_dir and cm_parent.get("exists")):
        plan.skip(setting, SKIP_REASONS.get(setting, "%s does not exist") % path)
        return
    if target["exists"] and not target["writable"]:
        plan.skip(setting, "%s is read-only here (a container's sysfs?)" % path)
        return
    if cm_dir and not (paths.get(cm_dir) or {}).get("exists") and \
            ("create %s" % cm_dir) not in [desc for desc, dummy in plan.steps]:
        plan.steps.append(("create %s" % cm_dir, {"mkdir": cm_dir}))
    if cm_dir and {"mkdir": cm_dir} not in plan.boot:
        plan.boot.append({"mkdir": cm_dir})
    plan.boot.append(step)
    current = target.get("value")
    if current is not None and (compare or (lambda a, b: a == b))(current, step["value"]):
        return
    plan.steps.append(("%s: %s -> %s" % (path, current, step["value"]), step))


def plan_mtu(plan, host, mtu, persist=True, manager="auto"):
    """The runtime MTU, and its persistence in the configuration of the manager that owns the interface."""
    ifname, link = host["ifname"], host["link"]
    mtu, error = netconf.check_mtu(mtu, link.get("max_mtu"))
    if error:
        raise PlanError("%s: %s" % (ifname, error))
    before = link.get("mtu")
    plan.mtu = dict(before=before, after=mtu, manager=None, persisted_in=None)
    if before != mtu:
        plan.steps.append(("mtu %s -> %d" % (before, mtu),
                           {"argv": [host["tools"].get("ip") or "ip", "link", "set", "dev", ifname, "mtu", str(mtu)]}))
    if not persist:
        return
    managers, files = host.get("managers") or {}, host.get("files") or {}
    ifupdown = managers.get("ifupdown")
    if manager == "auto":
        claimed = netconf.claims(managers)
        if len(claimed) > 1:
            raise PlanError("%s is claimed by %s: the MTU would be persisted in one and overridden by the other; "
                            "remove it from all but one, or choose with manager=<name>"
                            % (ifname, " and ".join("%s (%s)" % c for c in claimed)))
        manager = netconf.pick_manager(managers.get("netplan_files"), managers.get("nm_connection"),
                                       managers.get("networkd_file"), ifupdown)
    plan.mtu["manager"] = manager
    roots = host["roots"]
    if manager == "netplan":
        path = netplan_path(roots, ifname)
        plan.files.append((path, files.get(path), netconf.render_netplan(ifname, mtu), 0o600))
    elif manager == "networkmanager":
        connection = managers.get("nm_connection")
        if not connection and managers.get("nm_running") is False:
            raise PlanError("manager networkmanager: NetworkManager is installed but not running, so it has no "
                            "connection on %s to keep the MTU in: start it and run this again" % ifname)
        if not connection:
            raise PlanError("manager networkmanager: NetworkManager has no connection on %s" % ifname)
        current = managers.get("nm_mtu") or ""
        path = "nmcli connection %s" % connection
        if current != str(mtu):
            nmcli = host["tools"].get("nmcli") or "nmcli"
            plan.steps.append(("%s 802-3-ethernet.mtu %s -> %d" % (path, current or "auto", mtu),
                               {"argv": [nmcli, "connection", "modify", connection, "802-3-ethernet.mtu", str(mtu)]}))
    elif manager == "networkd":
        if not managers.get("networkd_file"):
            raise PlanError("manager networkd: systemd-networkd does not manage %s (no .network file)" % ifname)
        path = networkd_dropin_path(roots, managers["networkd_file"])
        plan.files.append((path, files.get(path), netconf.render_networkd_dropin(mtu), 0o644))
    elif manager == "ifupdown":
        if not ifupdown:
            raise PlanError("manager ifupdown: no 'iface %s' stanza in %s/network/interfaces{,.d/*}"
                            % (ifname, roots["etc"]))
        path, text = ifupdown
        plan.files.append((path, text, netconf.ifupdown_set_mtu(text, ifname, mtu), None))
    else:
        path = udev_rules_path(roots)
        before_text = files.get(path)
        plan.files.append((path, before_text, netconf.udev_set_mtu(before_text, link.get("address"), ifname, mtu),
                           0o644))
        warning = _nm_will_take_over(host, mtu, path)
        if warning:
            plan.warnings.append(warning)
    plan.mtu["persisted_in"] = path


def plan_qos(plan, host, pfc=None, trust=None, ecn=None, rdma_device=None, port=1, roce_mode=None, roce_tos=None):
    """PFC and trust through the QoS tool the host has, ECN per priority and the rdma_cm defaults."""
    ifname = host["ifname"]
    qos = host.get("qos") or {}
    wants_dcb = pfc is not None or bool(trust)
    tool = qos.get("tool")
    if wants_dcb and (not tool or qos.get("error")):
        plan.skip("qos", qos.get("error")
                  or "%s: neither mlnx_qos (MLNX OFED / mlnx-tools) nor iproute2 dcb is installed" % ifname)
        wants_dcb = False
    current = qos.get("current") or {"trust": None, "pfc": None}
    for step in qos_steps(host, tool or "dcb", pfc if wants_dcb else None, trust if wants_dcb else None,
                          ecn, rdma_device, port, roce_mode, roce_tos):
        if "argv" in step:
            plan.boot.append(step)
            if not netconf.qos_step_in_place(step, current, pfc, trust):
                what = ("dcb %s" % " ".join(step["argv"][1:3])) if tool == "dcb" else "mlnx_qos"
                plan.steps.append(("%s on %s" % (what, ifname), step))
            continue
        plan_write(plan, host, step, "ecn" if "/ecn/" in step["path"] else "rdma_cm")


def plan_sriov(plan, host, numvfs):
    total_path, path = sriov_paths(host["roots"], host["ifname"])
    sriov = host.get("sriov") or {}
    total = sriov.get("total")
    if total is None:
        plan.skip("sriov", "%s has no SR-IOV (no sriov_totalvfs)" % host["ifname"])
        return
    if not total.isdigit() or numvfs > int(total):
        raise PlanError("sriov_numvfs %d is above %s's sriov_totalvfs %s" % (numvfs, host["ifname"], total))
    current = sriov.get("current")
    if current not in (None, "0", str(numvfs)):
        # The kernel refuses to change a non-zero VF count except through 0.
        plan.steps.append(("sriov_numvfs %s -> 0" % current, {"path": path, "value": "0"}))
    plan_write(plan, host, {"path": path, "value": str(numvfs)}, "sriov")


def numa_cpus(host, value):
    """CPUs for 'numa' (the NIC's NUMA node) or an explicit list: (cpus, None) or (None, why not)."""
    if value != "numa":
        return netconf.parse_cpulist(value), None
    numa = host.get("numa") or {}
    node = numa.get("node")
    if node is None or node == "-1":
        return None, "%s has no NUMA node (numa_node %s)" % (host["ifname"], node or "missing")
    if not numa.get("cpulist"):
        return None, "no CPU list for NUMA node %s" % node
    return netconf.parse_cpulist(numa["cpulist"]), None


def plan_irq_affinity(plan, host, value):
    cpus, reason = numa_cpus(host, value)
    if reason:
        plan.skip("irq_affinity", reason)
        return
    irqs = host.get("irqs") or []
    if not irqs:
        plan.skip("irq_affinity", "no interrupts of %s in /proc/interrupts" % host["ifname"])
    for irq in irqs:
        plan_write(plan, host, {"path": irq_path(host["roots"], irq), "value": ",".join(str(cpu) for cpu in cpus)},
                   "irq_affinity", lambda a, b: netconf.parse_cpulist(a) == netconf.parse_cpulist(b))


def plan_rps(plan, host, value):
    cpus, reason = numa_cpus(host, value)
    if reason:
        plan.skip("rps_cpus", reason)
        return
    for queue in host.get("rx_queues") or []:
        plan_write(plan, host, {"path": queue + "/rps_cpus", "value": netconf.cpu_mask(cpus)}, "rps_cpus",
                   netconf.same_mask)


def plan_all(host, params, checked):
    """Every planner the options ask for, in the order they are applied -> Plan."""
    plan = Plan()
    if checked["mtu"] is not None:
        plan_mtu(plan, host, checked["mtu"], params.get("persist", True), params.get("manager", "auto"))
    if checked["pfc"] is not None or checked["ecn"] is not None or params.get("trust") or params.get("roce_mode") \
            or params.get("roce_tos") is not None:
        plan_qos(plan, host, checked["pfc"], params.get("trust"), checked["ecn"], params.get("rdma_device"),
                 params.get("rdma_port", 1), params.get("roce_mode"), params.get("roce_tos"))
    if params.get("sriov_numvfs") is not None:
        plan_sriov(plan, host, params["sriov_numvfs"])
    if params.get("irq_affinity"):
        plan_irq_affinity(plan, host, params["irq_affinity"])
    if params.get("rps_cpus"):
        plan_rps(plan, host, params["rps_cpus"])
    return plan
