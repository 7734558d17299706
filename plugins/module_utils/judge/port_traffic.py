# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Which RDMA ports carried the bytes of a run, judged from two readings of their counters (sysfs
``port_xmit_data``/``port_rcv_data``, or byte counters: eadm stat, EFA and erdma hw_counters): the bytes each
port moved, and the ports that carried too little. Pure functions, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError


# sysfs ports/N/counters/port_xmit_data and port_rcv_data count octets divided by 4 (kernel
# Documentation/ABI/stable/sysfs-class-infiniband: "Total number of data octets, divided by 4 (lanes)").
WORD_COUNTERS = {"port_xmit_data": "tx", "port_rcv_data": "rx"}
# Counters in plain bytes: eadm stat, EFA and erdma hw_counters, ethtool-style names.
BYTE_COUNTERS = {"tx_bytes": "tx", "rx_bytes": "rx", "send_bytes": "tx", "recv_bytes": "rx",
                 "tx_bytes_phy": "tx", "rx_bytes_phy": "rx"}


def _bytes_of(counters):
    """{'tx': bytes or None, 'rx': bytes or None} from one port's counters."""
    out = {"tx": None, "rx": None}
    for name, direction in WORD_COUNTERS.items():
        value = counters.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            out[direction] = value * 4
    for name, direction in BYTE_COUNTERS.items():
        value = counters.get(name)
        if out[direction] is None and isinstance(value, int) and not isinstance(value, bool):
            out[direction] = value
    return out


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def port_counter_deltas(before, after, gpu_for_port=None, low_fraction=0.1):
    """Bytes each RDMA port carried between two counter snapshots, and the ports that carried too little.

    ``before``/``after``: {port: {counter: value}} with sysfs ``port_xmit_data``/``port_rcv_data`` (32-bit
    words: bytes = value x 4) or byte counters (``tx_bytes``/``rx_bytes``: eadm stat, hw_counters);
    ``gpu_for_port``: {port: GPU closest to it} (nvidia-smi topo -m) to name in the findings.
    A port is flagged when it carried nothing, or less than ``low_fraction`` of the median of the ports
    that carried traffic. A counter that went down was reset: its new value is the increment.
    Returns ``{'ports': [...], 'median_bytes', 'flagged': [port, ...], 'findings': [...]}``.
    """
    for what, snapshot in (("before", before), ("after", after)):
        if not isinstance(snapshot, dict):
            raise ToolTextError("%s must map each port to its counters, got %s" % (what, type(snapshot).__name__))
    if gpu_for_port is not None and not isinstance(gpu_for_port, dict):
        raise ToolTextError("gpu_for_port must map port to GPU, got %s" % type(gpu_for_port).__name__)
    if isinstance(low_fraction, bool) or not isinstance(low_fraction, (int, float)) or not 0 <= low_fraction <= 1:
        raise ToolTextError("low_fraction must be a number between 0 and 1, got %r" % (low_fraction,))
    ports = []
    for port in sorted(after, key=str):
        now = after[port]
        then = before.get(port)
        if not isinstance(now, dict) or not isinstance(then, dict):
            continue
        new, old = _bytes_of(now), _bytes_of(then)
        entry = {"port": port, "tx_bytes": None, "rx_bytes": None, "bytes": None, "reset": False,
                 "gpu": (gpu_for_port or {}).get(port), "low": False, "reason": None}
        for direction in ("tx", "rx"):
            if new[direction] is None or old[direction] is None:
                continue
            delta = new[direction] - old[direction]
            if delta < 0:
                delta, entry["reset"] = new[direction], True
            entry["%s_bytes" % direction] = delta
        if entry["tx_bytes"] is None and entry["rx_bytes"] is None:
            continue
        entry["bytes"] = (entry["tx_bytes"] or 0) + (entry["rx_bytes"] or 0)
        ports.append(entry)
    carried = [p["bytes"] for p in ports if p["bytes"]]
    median = _median(carried) if carried else None
    found = []
    for entry in ports:
        if not carried:
            break
        gpu = (" (closest to GPU %s)" % entry["gpu"]) if entry["gpu"] is not None else ""
        if entry["bytes"] == 0:
            entry["low"], entry["reason"] = True, "carried no bytes while %d port(s) carried traffic" % len(carried)
        elif median and entry["bytes"] < low_fraction * median:
            entry["low"], entry["reason"] = True, "carried %d bytes, %.1f %% of the median %d of the ports that carried traffic" % (
                entry["bytes"], 100.0 * entry["bytes"] / median, median)
        if entry["low"]:
            found.append(finding("rdma_port_idle", "warning", str(entry["port"]), "%s%s %s" % (entry["port"], gpu, entry["reason"]),
                                 "check that NCCL_IB_HCA names this port and that its link is ACTIVE; "
                                 "a GPU whose closest NIC is idle sends across the PCIe/SMP fabric"))
    return {"ports": ports, "median_bytes": median, "flagged": [p["port"] for p in ports if p["low"]], "findings": found}
