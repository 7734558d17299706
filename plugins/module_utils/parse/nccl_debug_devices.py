# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What an NCCL_DEBUG=INFO log says about the network devices NCCL found, for parse/nccl_debug.py: NCCL 2.27's
per-port and 'Made virtual device' lines (and the IB devices of a log cut before its 'NET/IB : Using' line),
the GPUDirect RDMA lines of each HCA and the verdict they give, the family of a net plugin.

Pure functions, standard library only; no regular expression here has two repetitions that can match the same
characters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# 'NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)', 'NET/IB : GPU Direct RDMA (DMABUF) enabled for
# HCA 0 'x'', 'NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA 0 'x'' (HPC-X's plugin), 'NET/Socket : GPU
# Direct RDMA Disabled for HCA 0 'eth0''. NCCL prints the two 'enabled' forms without the closing quote.
_GDR_HCA_RE = re.compile(r"^NET/([^:]{1,60}?) ?: GPU Direct RDMA (?:\((DMABUF|nvidia-peermem)\) )?"
                         r"(Enabled|Disabled|enabled|disabled) for ")
_GDR_TARGET_RE = re.compile(r"(?:GPU ([0-9a-fA-Fx\[\]]{1,24}) / )?HCA ([0-9]{1,3})(?: '([^'\s]{1,64})'?)?(?: \(([^)]{0,80})\))?")
# NCCL 2.27 and later print each HCA port they found on its own line, then the virtual devices they made:
# 'NET/IB: [1] rocep1s0f1:uverbs1:1/RoCE provider=Mlx5 speed=200000 context=0x.. pciPath=/sys/.. ar=0',
# 'NET/IB : Made virtual device [0] name=rocep1s0f1 speed=200000 ndevs=1'.
_PHYSICAL_RE = re.compile(r"^NET/IB ?: \[([0-9]{1,3})\] ([^\s:\[\]]{1,64}):(uverbs[0-9]{1,4}):([0-9]{1,3})/([A-Za-z]{1,8})(.*)$")
_VIRTUAL_RE = re.compile(r"^NET/IB ?: Made virtual device \[([0-9]{1,3})\] name=([^\s]{1,200})")
_KEY_VALUE_RE = re.compile(r"\b([A-Za-z]{1,16})=([^\s]{1,300})")


def net_family(name):
    """A net plugin or transport name -> 'IB', 'Socket' or the name itself ('IBext_v8' is IB, 'FastSocket' a socket)."""
    if not name:
        return None
    lowered = name.lower()
    # 'IBext', 'IBext_v8' (SHARP plugin) and 'NCCL RDMA Plugin v10' drive the same verbs devices as NET/IB
    if lowered.startswith("ib") or "rdma" in lowered:
        return "IB"
    if lowered in ("socket", "fastsocket"):
        return "Socket"
    return name


def gdr_entry(host, message, line):
    """One GPU Direct RDMA line as an entry of ``gdr_hcas``, None when it is not one NCCL prints.

    ``checked_by_plugin`` is True for the net plugin's own check of a registration path ('(DMABUF) enabled',
    '(nvidia-peermem) enabled', 'Disabled ... (no module)'), False for NCCL's word on the HCA ('Enabled for HCA',
    'Disabled for HCA', per GPU in NCCL 2.7-2.18), which follows them and decides."""
    match = _GDR_HCA_RE.match(message)
    if not match:
        return None
    target = _GDR_TARGET_RE.search(message, match.end())
    entry = {"host": host, "plugin": match.group(1).strip(), "enabled": match.group(3).lower() == "enabled",
             "dmabuf": match.group(2) == "DMABUF", "hca_index": None, "hca": None, "gpu": None, "reason": None,
             "checked_by_plugin": bool(match.group(2)), "line": line}
    if target:
        entry.update(gpu=target.group(1), hca_index=int(target.group(2)), hca=target.group(3),
                     reason=target.group(4))
        entry["checked_by_plugin"] = entry["checked_by_plugin"] or entry["reason"] == "no module"
    return entry


def gdr_from_hcas(entries, network):
    """GPUDirect RDMA as the HCA lines of the network NCCL used say it: True when every HCA (or GPU/HCA pair) has it,
    False when one has not, None when no line says. NCCL's own word on an HCA decides; without it, the plugin's checks
    do (one registration path enabled is enough: peermem 'Disabled (no module)' then '(DMABUF) enabled' is enabled).
    Sockets have no GPUDirect RDMA: NCCL says 'Disabled' for each interface, and that is False."""
    family = net_family(network)
    states = {}
    for entry in entries:
        if family and net_family(entry["plugin"]) != family:
            continue
        key = (entry["host"], entry["gpu"], entry["hca_index"] if entry["hca_index"] is not None else entry["hca"])
        state = states.setdefault(key, {"decided": None, "offered": False})
        if entry["checked_by_plugin"]:
            state["offered"] = state["offered"] or entry["enabled"]
        else:
            state["decided"] = entry["enabled"]
    verdicts = [s["decided"] if s["decided"] is not None else s["offered"] for s in states.values()]
    return all(verdicts) if verdicts else None


def physical_line(result, host, message, device_lists):
    """Read NCCL 2.27's per-port line or its 'Made virtual device' line; True when it was one of them."""
    match = _PHYSICAL_RE.match(message)
    if match:
        values = dict(_KEY_VALUE_RE.findall(match.group(6)))
        speed = values.get("speed", "")
        ports = device_lists.setdefault(("IB-physical", host), [])
        if any(p["index"] == int(match.group(1)) for p in ports):
            return True
        ports.append({"index": int(match.group(1)), "device": match.group(2), "uverbs": match.group(3),
                      "port": int(match.group(4)), "link_type": match.group(5), "provider": values.get("provider"),
                      "speed_mbps": int(speed) if speed.isdigit() else None, "pci_path": values.get("pciPath"),
                      "adaptive_routing": {"0": False, "1": True}.get(values.get("ar")), "host": host})
        result["ib_device_found"] = True
        return True
    match = _VIRTUAL_RE.match(message)
    if match:
        device_lists.setdefault(("IB-virtual", host), {})[int(match.group(1))] = match.group(2)
        return True
    return False


def _virtual_indexes(ports, virtual):
    """Each port's device name by the index NCCL numbers it with in connections ('NET/IB/3'). NCCL makes one virtual
    device per port it keeps, in the order it found them (the per-port index, which skips the ports it dropped); a
    port whose 'Made virtual device' line is not in the log (cut, or filtered) is numbered after the one before it."""
    named = dict((name, index) for index, name in virtual.items())
    numbered = dict(virtual)
    last = -1
    for port in sorted(ports, key=lambda p: p["index"]):
        index = named.get(port["device"])
        if index is None:
            index = last + 1
            if index in numbered:
                continue   # taken by a device the log names: this port's number cannot be told
            numbered[index] = port["device"]
        last = index
    return numbered


def devices_from_ports(device_lists):
    """Per host that printed NCCL 2.27's per-port lines but no 'NET/IB : Using' line (a log cut or filtered):
    its IB devices, numbered as NCCL numbers them in connections."""
    for (family, host), ports in list(device_lists.items()):
        if family != "IB-physical" or ("IB", host) in device_lists:
            continue
        numbered = _virtual_indexes(ports, device_lists.get(("IB-virtual", host)) or {})
        devices = []
        for index, name in sorted(numbered.items()):
            port = next((p for p in ports if p["device"] == name), None)
            if port is None:
                continue   # a merged device ('mlx5_0+mlx5_1') needs the Using line to name its members
            devices.append({"index": index, "device": name, "port": port["port"],
                            "name": "%s:%d" % (name, port["port"]), "address": None, "link_type": port["link_type"],
                            "sharp": False, "members": [], "host": host})
        device_lists[("IB", host)] = devices
