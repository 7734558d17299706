# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The kernel log (dmesg, dmesg -T, journalctl -k) as the NVIDIA and mlx5 drivers write to it: Xid events of the GPUs,
NVSwitch SXids, NVLinks that did not come up at driver load, NICs on a limited PCIe link. Repeats are folded; the
findings are judge/health.py's. Standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.gpu import short_pci

# Both driver formats: "NVRM: Xid (PCI:0000:01:00): 79, ..." and, before ~R340, "NVRM: Xid (0000:01:00): 16, ...".
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f][0-9A-Fa-f:.]{3,31})\): ([0-9]{1,5}),? ?(.*)")
# "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"; the names vary by driver
# ("OS Reboot", "PF FLR"), the number does not.
_RECOVERY = re.compile(r"recovery action changed from (0x[0-9A-Fa-f]{1,8})(?: \(([^()]{0,60})\))? "
                       r"to (0x[0-9A-Fa-f]{1,8})(?: \(([^()]{0,60})\))?")
_CAUSE = re.compile(r"caused by previous Xid (\d+)")
_PROCESS = re.compile(r"pid=([^,]{1,32}), name=([^,]{1,256}),")
# "The NVIDIA GPU 0000:b3:00.0 ... has fallen off the bus" over several NVRM lines (R570), or
# "GPU at 0000:01:00.0 has fallen off the bus." (older drivers); never across a new log line.
_FALLEN = re.compile(r"GPU (?:at )?(?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)"
                     r"((?:(?!\n\S).){0,400}?)fallen off the bus", re.S)


def parse_xid_events(text):
    """Kernel log text (dmesg, dmesg -T, journalctl -k) -> Xid events, repeats folded.

    Each event: pci, xid, count, first, last (the lines), detail (first line's text),
    processes, caused_by (for Xid 45), and for Xid 154 recovery_action (code, name, from_code, from_name
    of its last line: what the GPU needs now). Both driver formats are read, "Xid (PCI:0000:01:00)" and
    the older "Xid (0000:01:00)". A GPU that fell off the bus without an Xid line counts as Xid 79.
    """
    text = _text.clean(text, "kernel log")
    events = {}
    order = []
    for line in text.split("\n"):
        match = _XID.search(line)
        if not match:
            continue
        key = (short_pci(match.group(1)), int(match.group(2)))
        if key not in events:
            events[key] = {"pci": key[0], "xid": key[1], "count": 0, "first": line.strip(), "last": None,
                           "detail": match.group(3).strip(), "processes": [], "caused_by": []}
            order.append(key)
        event = events[key]
        event["count"] += 1
        event["last"] = line.strip()
        process = _PROCESS.search(match.group(3))
        if process and process.group(2).strip("'<>") != "unknown":
            name = "%s (%s)" % (process.group(2), process.group(1))
            if name not in event["processes"]:
                event["processes"].append(name)
        cause = _CAUSE.search(match.group(3))
        if cause and int(cause.group(1)) not in event["caused_by"]:
            event["caused_by"].append(int(cause.group(1)))
        action = _RECOVERY.search(match.group(3)) if key[1] == 154 else None
        if action:  # the last line says what the GPU needs now
            event["recovery_action"] = {"code": int(action.group(3), 16), "name": (action.group(4) or "").strip(),
                                        "from_code": int(action.group(1), 16),
                                        "from_name": (action.group(2) or "").strip()}
    for match in _FALLEN.finditer(text):
        key = (short_pci(match.group(1)), 79)
        if key in events:
            continue
        events[key] = {"pci": key[0], "xid": 79, "count": 1, "first": " ".join(match.group(0).split()),
                       "last": None, "detail": "GPU has fallen off the bus (no Xid line)", "processes": [],
                       "caused_by": []}
        order.append(key)
    return [events[key] for key in order]


# "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up"; an error's further
# lines ("Severity 1 Engine instance ...", "Data {...}") carry the same SXid without a class.
_SXID = re.compile(r"(nvidia-nvswitch[0-9]{0,3}): SXid \(PCI:([0-9A-Fa-f][0-9A-Fa-f:.]{3,31})\): ([0-9]{1,6}), ?(.*)")
_SXID_CLASS = re.compile(r"^(Fatal|Non-fatal)\b", re.I)
_LINK = re.compile(r"\bLink ([0-9]{1,4})\b")
# NVLink links the driver could not bring up at load (GH100 and later print these, with no Xid):
# "NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!" and
# "NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to update Rx Detect Link mask!".
_NVLINK_TRAINING = re.compile(r"NVRM: (?:knvlinkUpdatePostRxDetectLinkMask_[A-Za-z0-9_]{1,40}: Failed to update Rx Detect "
                              r"Link mask!|knvlinkDiscoverPostRxDetLinks_[A-Za-z0-9_]{1,40}: Getting peer([0-9]{1,3})(?:'s)? "
                              r"postRxDetLinkMask failed!)")
# The PCI core's __pcie_print_link_status as the NIC driver prints it at probe:
# "mlx5_core 0000:b3:00.1: 63.008 Gb/s available PCIe bandwidth, limited by 8 GT/s x8 link at 0000:b2:00.0
# (capable of 252.048 Gb/s with 16 GT/s x16 link)" (kernels from 5.x add "PCIe" and print "8.0 GT/s").
_NIC_PCIE_LIMITED = re.compile(
    r"\b(mlx5_core|mlx4_core) ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): ([0-9]{1,5}\.[0-9]{1,3}) Gb/s "
    r"available PCIe bandwidth, limited by ([0-9]{1,3}(?:\.[0-9]{1,2})? GT/s)(?: PCIe)? x([0-9]{1,2}) link at "
    r"([^ ()]{1,40}) \(capable of ([0-9]{1,5}\.[0-9]{1,3}) Gb/s with ([0-9]{1,3}(?:\.[0-9]{1,2})? GT/s)(?: PCIe)? "
    r"x([0-9]{1,2}) link\)")


def parse_fabric_events(text):
    """Kernel log text -> {'sxid': [...], 'nvlink_training': [...], 'nic_pcie': [...]}, repeats folded.

    sxid: switch (nvidia-nvswitchN), pci, sxid, fatal (True, False, or None when no line says), count (errors
    reported, not their continuation lines), links, first, last, detail. nvlink_training: count, peers, first,
    last. nic_pcie: pci, driver, available_gbps, capable_gbps, limited_by (speed, width), limiting_device,
    capable (speed, width), count, first.
    """
    text = _text.clean(text, "kernel log")
    sxids, order = {}, []
    training = None
    nics, nic_order = {}, []
    for line in text.split("\n"):
        match = _SXID.search(line)
        if match:
            key = (match.group(2).lower(), int(match.group(3)))
            rest = match.group(4).strip()
            if key not in sxids:
                sxids[key] = {"switch": match.group(1), "pci": key[0], "sxid": key[1], "fatal": None, "count": 0,
                              "links": [], "first": line.strip(), "last": None, "detail": rest}
                order.append(key)
            event = sxids[key]
            event["last"] = line.strip()
            klass = _SXID_CLASS.match(rest)
            if klass:
                event["count"] += 1
                fatal = klass.group(1).lower() == "fatal"
                if event["fatal"] is None:
                    event["detail"] = rest  # the first line that says what happened
                event["fatal"] = bool(event["fatal"]) or fatal
            link = _LINK.search(rest)
            if link and int(link.group(1)) not in event["links"]:
                event["links"].append(int(link.group(1)))
            continue
        match = _NVLINK_TRAINING.search(line)
        if match:
            if training is None:
                training = {"count": 0, "peers": [], "first": line.strip(), "last": None}
            training["count"] += 1
            training["last"] = line.strip()
            if match.group(1) is not None and int(match.group(1)) not in training["peers"]:
                training["peers"].append(int(match.group(1)))
            continue
        match = _NIC_PCIE_LIMITED.search(line)
        if match:
            pci = match.group(2).lower()
            if pci not in nics:
                nics[pci] = {"pci": pci, "driver": match.group(1), "available_gbps": float(match.group(3)),
                             "limited_by": {"speed": match.group(4), "width": int(match.group(5))},
                             "limiting_device": match.group(6),
                             "capable_gbps": float(match.group(7)),
                             "capable": {"speed": match.group(8), "width": int(match.group(9))},
                             "count": 0, "first": line.strip()}
                nic_order.append(pci)
            nics[pci]["count"] += 1
    for event in sxids.values():
        event["count"] = event["count"] or 1  # only continuation lines survived (a cut log): still one error
    return {"sxid": [sxids[key] for key in order], "nvlink_training": [training] if training else [],
            "nic_pcie": [nics[pci] for pci in nic_order]}
