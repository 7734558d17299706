# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufabric.rdma maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Pure helpers for network interface configuration: MTU checks, the persistent configuration of
each network manager, and the commands that set RoCE v2 lossless QoS. No I/O here: the modules
read the host and apply what these functions return, so every rule is unit-tested."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.shell import shell_quote

# 1280: IPv6 needs at least this much. 9978: the largest Ethernet MTU ConnectX (mlx5) accepts;
# switches commonly stop at 9216, which the interface's own max_mtu check catches where it applies.
MTU_MIN = 1280
MTU_MAX = 9978

MANAGERS = ("netplan", "networkmanager", "networkd", "ifupdown", "udev")

UDEV_RULES = "/etc/udev/rules.d/70-gpufabric-mtu.rules"
NETPLAN_FILE = "/etc/netplan/60-gpufabric-%s.yaml"
NETWORKD_DROPIN = "60-gpufabric-mtu.conf"


def check_mtu(value, max_mtu=None):
    """Return (mtu, None) for an acceptable MTU, else (None, message naming the value)."""
    if isinstance(value, bool):
        return None, "mtu %r is not a number" % (value,)
    try:
        mtu = int(str(value).strip())
    except (TypeError, ValueError):
        return None, "mtu %r is not a number: give bytes, e.g. 9000" % (value,)
    if not MTU_MIN <= mtu <= MTU_MAX:
        return None, "mtu %d is outside %d-%d" % (mtu, MTU_MIN, MTU_MAX)
    if max_mtu and mtu > int(max_mtu):
        return None, "mtu %d is above what the interface accepts (max_mtu %d)" % (mtu, int(max_mtu))
    return mtu, None


def parse_ip_link_json(text):
    """`ip -d -j link show` -> {ifname: {mtu, max_mtu, address, kind, operstate}}; ValueError when it is not that."""
    try:
        items = json.loads(_text.clean(text, "ip -j output").strip() or "[]")
    except ValueError as exc:
        raise ValueError("ip -j printed no JSON (%s)" % exc)
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("ifname"), str) for i in items):
        raise ValueError("ip -j printed JSON without a list of links with an ifname")
    links = {}
    for item in items:
        links[item["ifname"]] = {
            "mtu": item.get("mtu"),
            "max_mtu": item.get("max_mtu"),
            "address": item.get("address", ""),
            "kind": (item.get("linkinfo") if isinstance(item.get("linkinfo"), dict) else {}).get("info_kind", ""),
            "operstate": item.get("operstate", ""),
        }
    return links


def pick_manager(netplan_files, networkmanager_active, networkd_active, ifupdown_stanza):
    """The manager whose configuration owns the interface, in the order a host consults them.

    netplan renders for networkd or NetworkManager, so its files win when present; an interface no
    manager knows keeps its MTU through a udev rule matched on its MAC address."""
    if netplan_files:
        return "netplan"
    if networkmanager_active:
        return "networkmanager"
    if networkd_active:
        return "networkd"
    if ifupdown_stanza:
        return "ifupdown"
    return "udev"


def netplan_mentions(text, ifname):
    """Whether a netplan file defines the interface (a key of its own under ethernets/bonds/... or a set-name)."""
    pattern = re.compile(r"^\s+(?:%s|set-name:\s*%s)\s*:?\s*(?:#.*)?$" % (re.escape(ifname), re.escape(ifname)), re.M)
    return bool(pattern.search(text or ""))


def claims(managers):
    """Which managers claim the interface, as (name, where) pairs. netplan's own renderings (a NetworkManager
    connection named netplan-*, a networkd file under /run/systemd/network/*netplan*) belong to netplan."""
    found = []
    netplan = managers.get("netplan_mentions") or []
    if netplan:
        found.append(("netplan", netplan[0]))
    nm = managers.get("nm_connection")
    if nm and not (netplan and nm.startswith("netplan-")):
        found.append(("NetworkManager", "connection %s" % nm))
    networkd = managers.get("networkd_file")
    if networkd and not (netplan and "netplan" in networkd):
        found.append(("systemd-networkd", networkd))
    ifupdown = managers.get("ifupdown")
    if ifupdown:
        found.append(("ifupdown", ifupdown[0]))
    return found


def render_netplan(ifname, mtu):
    """A netplan file that merges `mtu` into the interface's definition (netplan merges by id)."""
    return (
        "# Managed by gpufabric.rdma (rdma_network): MTU of %s.\n"
        "network:\n  version: 2\n  ethernets:\n    %s:\n      mtu: %d\n" % (ifname, ifname, mtu)
    )


def render_networkd_dropin(mtu):
    """A drop-in for the .network file that manages the interface."""
    return "# Managed by gpufabric.rdma (rdma_network).\n[Link]\nMTUBytes=%d\n" % mtu


_STANZA = re.compile(r"^\s*iface\s+(\S+)\s")


def ifupdown_has_stanza(text, ifname):
    return any(_STANZA.match(line) and _STANZA.match(line).group(1) == ifname for line in (text or "").splitlines())


def ifupdown_set_mtu(text, ifname, mtu):
    """Set `mtu` in every `iface <ifname> ...` stanza of an interfaces(5) text; None when there is none."""
    lines = (text or "").splitlines()
    out = []
    found = False
    in_stanza = False
    wrote = False
    for line in lines:
        match = _STANZA.match(line)
        starts_block = match or re.match(r"^\s*(auto|allow-\S+|mapping|source|source-directory|iface)\b", line)
        if starts_block and in_stanza and not wrote:
            _insert_before_blanks(out, "    mtu %d" % mtu)
        if starts_block:
            in_stanza = bool(match and match.group(1) == ifname)
            found = found or in_stanza
            wrote = False
            out.append(line)
            continue
        if in_stanza and re.match(r"^\s+mtu\s+\S+", line):
            if not wrote:
                out.append("    mtu %d" % mtu)
                wrote = True
            continue
        out.append(line)
    if in_stanza and not wrote:
        _insert_before_blanks(out, "    mtu %d" % mtu)
    if not found:
        return None
    return "\n".join(out) + "\n"


def _insert_before_blanks(lines, line):
    """Insert line after the last non-blank line (a stanza's options end before the blank lines)."""
    position = len(lines)
    while position > 0 and not lines[position - 1].strip():
        position -= 1
    lines.insert(position, line)


def udev_set_mtu(text, address, ifname, mtu):
    """The udev rules text with one rule for `address`, replaced where it stands (so re-applying
    any interface's rule leaves the file as it was) or appended."""
    address = address.lower()
    rule = 'ACTION=="add", SUBSYSTEM=="net", ATTR{address}=="%s", ATTR{mtu}="%d"  # %s' % (address, mtu, ifname)
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines or not lines[0].startswith("#"):
        lines.insert(0, "# Managed by gpufabric.rdma (rdma_network): MTU per interface, matched on its MAC address.")
    mine = [index for index, line in enumerate(lines) if 'ATTR{address}=="%s"' % address in line]
    if mine:
        lines[mine[0]] = rule
        lines = [line for index, line in enumerate(lines) if index not in mine[1:]]
    else:
        lines.append(rule)
    return "\n".join(lines) + "\n"


# RoCE v2 lossless QoS ------------------------------------------------------------------------

def check_priorities(values, name):
    """A list of 802.1p priorities (0-7); returns (sorted unique ints, error)."""
    out = []
    for value in values or []:
        try:
            prio = int(str(value))
        except ValueError:
            return None, "%s: %r is not a priority (0-7)" % (name, value)
        if isinstance(value, bool) or not 0 <= prio <= 7:
            return None, "%s: %r is not a priority (0-7)" % (name, value)
        if prio not in out:
            out.append(prio)
    return sorted(out), None


def pfc_vector(priorities):
    """[3] -> '0,0,0,1,0,0,0,0' (mlnx_qos --pfc)."""
    return ",".join("1" if prio in priorities else "0" for prio in range(8))


def qos_commands(ifname, tool, pfc_priorities, trust, ecn_priorities, rdma_device=None, port=1,
                 roce_mode=None, roce_tos=None, sysfs_root="/sys"):
    """What to run or write for the interface's lossless RoCE settings, as a list of steps:
    {"argv": [...]} for commands and {"path": ..., "value": ...} for sysfs/configfs writes.

    tool is "mlnx_qos" (NVIDIA/Mellanox OFED's tool) or "dcb" (iproute2). ECN is per priority in the
    mlx5 sysfs tree (roce_np: the receiver marks CNPs, roce_rp: the sender reacts). The rdma_cm
    defaults (RoCE mode, ToS) live in configfs under the RDMA device's port."""
    steps = []
    if tool == "mlnx_qos":
        argv = ["mlnx_qos", "-i", ifname]
        if trust:
            argv += ["--trust", trust]
        if pfc_priorities is not None:
            argv += ["--pfc", pfc_vector(pfc_priorities)]
        if len(argv) > 3:
            steps.append({"argv": argv})
    elif tool == "dcb":
        if pfc_priorities is not None:
            steps.append({"argv": ["dcb", "pfc", "set", "dev", ifname, "prio-pfc"]
                          + ["%d:%s" % (prio, "on" if prio in pfc_priorities else "off") for prio in range(8)]})
        if trust:
            steps.append({"argv": ["dcb", "apptrust", "set", "dev", ifname, "order", trust]})
    else:
        raise ValueError("unknown QoS tool %r" % (tool,))
    for prio in range(8) if ecn_priorities is not None else []:
        value = "1" if prio in ecn_priorities else "0"
        for side in ("roce_np", "roce_rp"):
            steps.append({"path": "%s/class/net/%s/ecn/%s/enable/%d" % (sysfs_root, ifname, side, prio), "value": value})
    if rdma_device and (roce_mode or roce_tos is not None):
        base = "%s/kernel/config/rdma_cm/%s/ports/%d" % (sysfs_root, rdma_device, int(port))
        if roce_mode:
            steps.append({"path": base + "/default_roce_mode", "value": roce_mode})
        if roce_tos is not None:
            steps.append({"path": base + "/default_roce_tos", "value": str(int(roce_tos))})
    return steps


def qos_step_in_place(step, current, pfc_priorities, trust):
    """Whether a QoS command of qos_commands() would change nothing: every setting it carries
    (PFC, trust) equals what was read back. A setting that could not be read (None) counts as
    different, so the command runs."""
    argv = step["argv"]
    carries_pfc = "--pfc" in argv or "prio-pfc" in argv
    carries_trust = "--trust" in argv or "apptrust" in argv
    return ((not carries_pfc or (current.get("pfc") is not None and current.get("pfc") == pfc_priorities))
            and (not carries_trust or (current.get("trust") is not None and current.get("trust") == trust)))


def parse_dcb_pfc_json(text):
    """`dcb -j pfc show dev X prio-pfc` -> sorted priorities with PFC on, or None if absent."""
    try:
        data = json.loads(_text.clean(text, "dcb -j output").strip() or "{}")
    except ValueError as exc:
        raise ValueError("dcb -j printed no JSON (%s)" % exc)
    prio = data.get("prio_pfc") if isinstance(data, dict) else None
    if not isinstance(prio, dict):
        return None
    return sorted(int(key) for key, enabled in prio.items() if enabled and str(key).isdigit())


def parse_mlnx_qos(text):
    """`mlnx_qos -i X` -> {"trust": "pcp"|"dscp"|None, "pfc": [priorities on] or None}."""
    trust = None
    pfc = None
    for line in _text.clean_lines(text, "mlnx_qos output"):
        match = re.match(r"^\s*Priority trust state:\s*(\S+)", line, re.I)
        if match:
            trust = match.group(1).lower()
        match = re.match(r"^\s*(?:PFC configuration:\s*)?enabled:?((?:\s+[01]){8})\s*$", line)
        if match and pfc is None:
            pfc = [prio for prio, flag in enumerate(match.group(1).split()) if flag == "1"]
    return {"trust": trust, "pfc": pfc}


def networkd_network_file(status_text):
    """The .network file `networkctl status <if>` names, or None ('n/a' or not printed)."""
    match = re.search(r"Network File:\s*(\S+)", _text.clean(status_text, "networkctl status output"))
    return match.group(1) if match and match.group(1) != "n/a" else None


def render_boot_script(steps):
    """A POSIX shell script that replays the steps at boot (sysfs and QoS settings do not persist)."""
    lines = ["#!/bin/sh", "# Managed by gpufabric.rdma (rdma_network): settings the kernel forgets at reboot.",
             "status=0"]
    for step in steps:
        if "argv" in step:
            lines.append(" ".join(shell_quote(arg) for arg in step["argv"]) + " || status=1")
        elif "mkdir" in step:
            lines.append("mkdir -p %s || status=1" % shell_quote(step["mkdir"]))
        else:
            lines.append("echo %s > %s || status=1" % (shell_quote(step["value"]), shell_quote(step["path"])))
    lines.append("exit $status")
    return "\n".join(lines) + "\n"


# CPU masks for IRQ affinity and RPS ---------------------------------------------------------

def parse_cpulist(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            cpus.extend(range(int(low), int(high) + 1))
        else:
            cpus.append(int(part))
    return sorted(set(cpus))


def cpu_mask(cpus):
    """[0, 1, 33] -> '00000002,00000003' (the comma-grouped hex of rps_cpus / smp_affinity)."""
    value = 0
    for cpu in cpus:
        value |= 1 << cpu
    digits = "%x" % value
    digits = digits.rjust(((len(digits) + 7) // 8) * 8, "0")
    return ",".join(digits[i:i + 8] for i in range(0, len(digits), 8))


def same_mask(left, right):
    """Compare two comma-grouped hex masks by value ('0000000f' == 'f' == '00000000,0000000f')."""
    return int((left or "0").replace(",", ""), 16) == int((right or "0").replace(",", ""), 16)


def device_irqs(proc_interrupts, pci_address, ifname):
    """IRQ numbers of /proc/interrupts whose action names the NIC (its PCI address or netdev name).

    mlx5 names its completion vectors `mlx5_comp3@pci:0000:3b:00.0`; most other drivers use
    `<ifname>-TxRx-3` or `<ifname>-rx-0`. Async (control) event queues are left out."""
    irqs = []
    for line in _text.clean_lines(proc_interrupts, "/proc/interrupts"):
        match = re.match(r"^\s*(\d+):", line)
        if not match:
            continue
        action = line.rsplit(None, 1)[-1]
        if "async" in action:
            # The control/async event queue is not a data path; mlnx-tools leaves it alone too.
            continue
        if (pci_address and action.endswith("@pci:" + pci_address)) or re.match(r"^%s[-@]" % re.escape(ifname), action):
            irqs.append(int(match.group(1)))
    return irqs


def mtu_mismatch(results_by_host):
    """{host: [rdma_netdev results]} -> '' when every configured MTU agrees, else one line naming
    each host:interface=mtu, grouped by MTU (largest group first)."""
    groups = {}
    for host in sorted(results_by_host):
        for result in results_by_host[host] or []:
            mtu = (result.get("mtu") or {}).get("after")
            if mtu is not None:
                groups.setdefault(mtu, []).append("%s:%s" % (host, result.get("name")))
    if len(groups) <= 1:
        return ""
    order = sorted(groups, key=lambda mtu: (-len(groups[mtu]), mtu))
    return "MTU differs across hosts: " + "; ".join(
        "%d on %s" % (mtu, ", ".join(groups[mtu])) for mtu in order)
