# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node health: what went wrong on a GPU/RDMA node, from its kernel log, nvidia-smi, sysfs
counters and configuration. Pure functions, standard library only; every finding has
check, severity, target, detail and fix_hint (the readiness report's shape)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from xml.etree import ElementTree

from ansible_collections.gpufabric.rdma.plugins.module_utils import gpu as nvidia
from ansible_collections.gpufabric.rdma.plugins.module_utils import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.numbers import DEFAULT_COMMAND_TIMEOUT, check_seconds
from ansible_collections.gpufabric.rdma.plugins.module_utils.rates import RATE_RULES
from ansible_collections.gpufabric.rdma.plugins.module_utils.findings import finding, ordered

# NVIDIA's Xid catalog, reduced to what an operator does next. Application-caused Xids are
# info: the job failed, the GPU is fine. Unknown codes are warnings.
RESET_GPU = "drain the node, reset the GPU (nvidia-smi -r) or reboot; replace it if the Xid returns"
XID_CATALOG = {
    13: ("info", "graphics engine exception (usually the application)", "check the job's code and inputs"),
    31: ("info", "GPU memory page fault (usually the application)", "check the job's code and inputs"),
    32: ("info", "invalid or corrupted push buffer stream", "check the job and the driver version"),
    43: ("info", "GPU stopped processing (application fault)", "check the job's code and inputs"),
    45: ("info", "preemptive cleanup after an earlier error", "look at the Xid it names as its cause"),
    48: ("critical", "double-bit ECC error", RESET_GPU),
    61: ("critical", "internal micro-controller breakpoint", RESET_GPU),
    62: ("critical", "internal micro-controller halt", RESET_GPU),
    63: ("warning", "ECC page retirement or row remapping recorded", "reset the GPU at the next drain so the remap takes effect"),
    64: ("critical", "ECC page retirement or row remapping failed", "replace the GPU (RMA)"),
    74: ("critical", "NVLink error", "check NVLink/NVSwitch health (nvidia-smi nvlink -s); reset or reboot"),
    79: ("critical", "GPU has fallen off the bus", "drain the node and reboot; reseat or replace the GPU, check power and PCIe"),
    92: ("warning", "high single-bit ECC error rate", "watch it; replace the GPU if it keeps rising"),
    94: ("warning", "contained ECC error", "the job on that GPU failed; reset the GPU when the node is drained"),
    95: ("critical", "uncontained ECC error", RESET_GPU),
    109: ("warning", "context switch timeout", "check the job; reset the GPU if it repeats"),
    119: ("critical", "GSP RPC timeout", RESET_GPU),
    120: ("critical", "GSP error", RESET_GPU),
    140: ("critical", "unrecovered ECC error", RESET_GPU),
    144: ("warning", "NVLink SAW error", "check NVLink health (nvidia-smi nvlink -e)"),
    145: ("warning", "NVLink RLW error", "check NVLink health (nvidia-smi nvlink -e)"),
    146: ("warning", "NVLink TLW error", "check NVLink health (nvidia-smi nvlink -e)"),
    147: ("warning", "NVLink TREX error", "check NVLink health (nvidia-smi nvlink -e)"),
    148: ("warning", "NVLink NVLPW control error", "check NVLink health (nvidia-smi nvlink -e)"),
    149: ("critical", "NVLink NETIR error", "check the NVLink fabric and its peer; reset or reboot"),
    150: ("critical", "NVLink MSE error", "check the NVLink fabric; reset or reboot"),
}

_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+), ?(.*)")
_CAUSE = re.compile(r"caused by previous Xid (\d+)")
_PROCESS = re.compile(r"pid=([^,]{1,32}), name=([^,]{1,256}),")
# "The NVIDIA GPU 0000:b3:00.0 ... has fallen off the bus" over several NVRM lines (R570), or
# "GPU at 0000:01:00.0 has fallen off the bus." (older drivers); never across a new log line.
_FALLEN = re.compile(r"GPU (?:at )?(?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)"
                     r"((?:(?!\n\S).){0,400}?)fallen off the bus", re.S)


def short_pci(address):
    """'0000:3B:00.0' or '0000:3b:00' -> '0000:3b:00' (nvidia-smi and the kernel log disagree)."""
    parts = (address or "").lower().split(".")[0].split(":")
    if len(parts) == 3 and len(parts[0]) == 8:  # nvidia-smi's 00000000:3B:00.0
        parts[0] = parts[0][4:]
    return ":".join(parts)


def parse_xid_events(text):
    """Kernel log text (dmesg, dmesg -T, journalctl -k) -> Xid events, repeats folded.

    Each event: pci, xid, count, first, last (the lines), detail (first line's text),
    processes, caused_by (for Xid 45). A GPU that fell off the bus without an Xid line counts
    as Xid 79.
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
    for match in _FALLEN.finditer(text):
        key = (short_pci(match.group(1)), 79)
        if key in events:
            continue
        events[key] = {"pci": key[0], "xid": 79, "count": 1, "first": " ".join(match.group(0).split()),
                       "last": None, "detail": "GPU has fallen off the bus (no Xid line)", "processes": [],
                       "caused_by": []}
        order.append(key)
    return [events[key] for key in order]


def xid_findings(host, events, ignore=()):
    found = []
    for event in events:
        if event["xid"] in ignore:
            continue
        severity, meaning, fix = XID_CATALOG.get(event["xid"], ("warning", "Xid %d" % event["xid"],
                                                                "look the code up in NVIDIA's Xid catalog"))
        detail = "Xid %d (%s) x%d: %s" % (event["xid"], meaning, event["count"], event["detail"])
        if event["caused_by"]:
            detail += " [caused by Xid %s]" % ", ".join(str(x) for x in event["caused_by"])
        found.append(finding("gpu_xid", severity, "%s/GPU %s" % (host, event["pci"]), detail, fix))
    return found


def _count(text):
    return int(text) if text and text.isdigit() else None


def parse_gpu_memory_health(xml_text):
    """`nvidia-smi -q -x` (text, or its root from gpu.nvidia_smi_root) -> per GPU: pci,
    ecc_uncorrectable (volatile), remap pending/failure, uncorrectable remapped rows, retired
    pages (single, double) and retirement pending."""
    root = xml_text if hasattr(xml_text, "findall") else ElementTree.fromstring(xml_text)
    gpus = []
    for gpu in root.findall("gpu"):
        gpus.append({
            "pci": short_pci(nvidia.xml_text(gpu, "pci/pci_bus_id") or gpu.get("id")),
            "ecc_uncorrectable": nvidia.ecc_uncorrected_volatile(gpu),
            "remap_pending": nvidia.xml_text(gpu, "remapped_rows/remapped_row_pending") == "Yes",
            "remap_failure": nvidia.xml_text(gpu, "remapped_rows/remapped_row_failure") == "Yes",
            "remapped_uncorrectable": _count(nvidia.xml_text(gpu, "remapped_rows/remapped_row_unc")),
            "retired_single": _count(nvidia.xml_text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")),
            "retired_double": _count(nvidia.xml_text(gpu, "retired_pages/double_bit_retirement/retired_count")),
            "retirement_pending": nvidia.xml_text(gpu, "retired_pages/pending_retirement") == "Yes"
            or nvidia.xml_text(gpu, "retired_pages/pending_blacklist") == "Yes",
        })
    return gpus


def gpu_memory_findings(host, gpus, max_retired_pages=60):
    found = []
    for gpu in gpus:
        target = "%s/GPU %s" % (host, gpu["pci"])
        if gpu["ecc_uncorrectable"]:
            found.append(finding("gpu_ecc", "critical", target,
                                 "%d uncorrectable ECC errors since the driver loaded" % gpu["ecc_uncorrectable"],
                                 RESET_GPU))
        if gpu["remap_failure"]:
            found.append(finding("gpu_row_remap", "critical", target, "row remapping failed: no spare rows left",
                                 "replace the GPU (RMA)"))
        elif gpu["remap_pending"]:
            found.append(finding("gpu_row_remap", "warning", target,
                                 "a row remap is pending (%s uncorrectable remapped rows)" % gpu["remapped_uncorrectable"],
                                 "reset the GPU at the next drain so the remap takes effect"))
        if gpu["retirement_pending"]:
            found.append(finding("gpu_retired_pages", "warning", target, "a page retirement is pending",
                                 "reset the GPU at the next drain so the page is retired"))
        retired = (gpu["retired_single"] or 0) + (gpu["retired_double"] or 0)
        if retired > max_retired_pages:
            found.append(finding("gpu_retired_pages", "critical", target,
                                 "%d retired pages (more than %d)" % (retired, max_retired_pages),
                                 "replace the GPU (RMA)"))
    return found


def rising_counters(before, after):
    """Two readings -> [(port, counter, before, after)] for every error counter that rose."""
    rising = []
    for port in sorted(after):
        for name, value in sorted(after[port].items()):
            old = (before.get(port) or {}).get(name)
            if old is not None and value > old:
                rising.append((port, name, old, value))
    return rising


def counter_findings(host, rising, interval):
    fixes = {"link_downed": "the link went down and up: check the cable, transceiver and switch port",
             "symbol_error": "bit errors on the wire: reseat or replace the cable or transceiver"}
    return [finding("rdma_counter", "warning" if name != "link_downed" else "critical", "%s/%s" % (host, port),
                    "%s rose from %d to %d in %s s" % (name, old, new, interval),
                    fixes.get(name, "check the cable, transceiver and switch port (perfquery, ibdiagnet)"))
            for port, name, old, new in rising]


def parse_nccl_conf(text):
    """/etc/nccl.conf (NAME=value lines, # comments) -> {NAME: value}."""
    env = {}
    for line in _text.clean_lines(text, "nccl.conf"):
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        env[name.strip()] = value.strip()
    return env


def nccl_drift_findings(host, deployed, expected, path="/etc/nccl.conf"):
    found = []
    for name in sorted(expected):
        want = "" if expected[name] is None else str(expected[name])
        if name not in deployed:
            found.append(finding("nccl_env_drift", "warning", "%s:%s" % (host, path),
                                 "%s is missing (the profile sets %s=%s)" % (name, name, want),
                                 "re-run the nccl_env role, or change the profile if the file is right"))
        elif deployed[name] != want:
            found.append(finding("nccl_env_drift", "warning", "%s:%s" % (host, path),
                                 "%s=%s, the profile sets %s" % (name, deployed[name], want),
                                 "re-run the nccl_env role, or change the profile if the file is right"))
    extra = sorted(set(deployed) - set(expected))
    if extra:
        found.append(finding("nccl_env_drift", "info", "%s:%s" % (host, path),
                             "set by hand, not by the profile: %s" % ", ".join(extra),
                             "add them to the profile's overrides so every node gets them"))
    return found


def sort_findings(found):
    return ordered(found)


def inventory_findings(host, gpu_count, devices, peermem_loaded, netdev_mtus, expected):
    """What a node should have against what it has.

    ``expected``: gpu_count, rdma_devices (count), port_rate_gbps (minimum), mtu (of the RDMA
    netdevs), peermem (bool); a None or missing key is not checked. ``netdev_mtus``: {netdev: mtu}.
    """
    found = []
    want_gpus = expected.get("gpu_count")
    if want_gpus is not None and (gpu_count or 0) < want_gpus:
        found.append(finding("gpu_count", "critical", host, "%d of %d expected GPUs found" % (gpu_count or 0, want_gpus),
                             "a GPU fell off the bus or was lost: check `nvidia-smi -L` and the kernel log for Xid 79; "
                             "drain the node and reboot, reseat or replace the GPU"))
    want_devices = expected.get("rdma_devices")
    if want_devices is not None and len(devices) < want_devices:
        found.append(finding("rdma_device_count", "critical", host,
                             "%d of %d expected RDMA devices found (%s)" % (
                                 len(devices), want_devices, ", ".join(d.get("name") or "?" for d in devices) or "none"),
                             "check the NIC and its driver (lspci, dmesg, `eadm ver` for eRDMA); reload the driver or reboot"))
    minimum = expected.get("port_rate_gbps")
    for device in devices:
        for port in device.get("ports") or []:
            target = "%s/%s/%s" % (host, device.get("name"), port.get("port"))
            if port.get("state") != "ACTIVE":
                found.append(finding("rdma_port_state", "critical", target,
                                     "port is %s (physical state %s)" % (port.get("state"), port.get("phys_state")),
                                     "check the cable and switch port (`ibstat`, `ibv_devinfo`, `eadm stat` for eRDMA)"))
            elif minimum is not None and port.get("rate_gbps") is not None and port["rate_gbps"] < minimum:
                found.append(finding("rdma_port_rate", "warning", target,
                                     "port runs at %s Gb/s, expected at least %s" % (port["rate_gbps"], minimum),
                                     "a degraded link (fewer lanes or a lower speed): reseat or replace the cable"))
    want_mtu = expected.get("mtu")
    for netdev in sorted(netdev_mtus):
        if want_mtu is not None and netdev_mtus[netdev] != want_mtu:
            found.append(finding("mtu", "warning", "%s:%s" % (host, netdev),
                                 "MTU %s, expected %s" % (netdev_mtus[netdev], want_mtu),
                                 "re-run the rdma_network role (a reboot or a NIC reset may have lost it)"))
    if expected.get("peermem") and (gpu_count or 0) > 0 and not peermem_loaded:
        found.append(finding("peermem", "warning", host, "nvidia_peermem is not loaded: GPUDirect RDMA is off",
                             "modprobe nvidia_peermem (the peermem role persists it)"))
    return found


RATE_COUNTERS = sorted(RATE_RULES)

# Every option of a check with its default (node_health's argument_spec says the same).
CHECK_DEFAULTS = {
    "expected_gpu_count": None,
    "expected_rdma_devices": None,
    "min_port_rate_gbps": None,
    "expected_mtu": None,
    "require_peermem": False,
    "expected_nccl_env": None,
    "nccl_conf": "/etc/nccl.conf",
    "counter_interval": 0,
    "xid_ignore": [],
    "max_retired_pages": 60,
    "kernel_log": None,
    "nvidia_smi_path": None,
    "sysfs_root": "/sys",
    "procfs_root": "/proc",
    "command_timeout": DEFAULT_COMMAND_TIMEOUT,
    "rate_window": 3600,
    "rate_min_span": 300,
    "rate_thresholds": {},
    "ethtool": True,
}
_NON_NEGATIVE = ("expected_gpu_count", "expected_rdma_devices", "expected_mtu", "counter_interval", "max_retired_pages",
                 "command_timeout", "rate_window", "rate_min_span")
_INTEGERS = _NON_NEGATIVE
_MAX_COUNTER_INTERVAL = 600


class CheckOptionError(ValueError):
    """An option that cannot be checked with; the message names it and its value."""


def check_options(given):
    """The given options over CHECK_DEFAULTS; unknown names and bad values raise CheckOptionError.

    The result adds ``rate_rules`` (rate_thresholds as rules); checking a result again is allowed.
    """
    given = dict((k, v) for k, v in (given or {}).items() if k != "rate_rules")
    unknown = sorted(set(given or {}) - set(CHECK_DEFAULTS))
    if unknown:
        raise CheckOptionError("unknown check option(s): %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(CHECK_DEFAULTS))))
    merged = dict(CHECK_DEFAULTS)
    merged.update(dict((k, v) for k, v in (given or {}).items() if v is not None))
    for name in _INTEGERS:
        value = merged[name]
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise CheckOptionError("%s must be a whole number, got %r" % (name, value))
        if value < 0:
            raise CheckOptionError("%s must not be negative, got %d" % (name, value))
    try:
        check_seconds(merged["command_timeout"], "command_timeout")
    except ValueError as exc:
        raise CheckOptionError(str(exc))
    if merged["counter_interval"] > _MAX_COUNTER_INTERVAL:
        raise CheckOptionError("counter_interval is at most %d seconds, got %d"
                               % (_MAX_COUNTER_INTERVAL, merged["counter_interval"]))
    if merged["min_port_rate_gbps"] is not None and not isinstance(merged["min_port_rate_gbps"], (int, float)):
        raise CheckOptionError("min_port_rate_gbps must be a number, got %r" % (merged["min_port_rate_gbps"],))
    if not isinstance(merged["xid_ignore"], list) or not all(isinstance(x, int) for x in merged["xid_ignore"]):
        raise CheckOptionError("xid_ignore must be a list of Xid numbers, got %r" % (merged["xid_ignore"],))
    if merged["rate_window"] < 1:
        raise CheckOptionError("rate_window must be at least 1 second, got %d" % merged["rate_window"])
    thresholds = merged["rate_thresholds"]
    if not isinstance(thresholds, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
            for k, v in thresholds.items()):
        raise CheckOptionError("rate_thresholds must map counter names to non-negative numbers, got %r" % (thresholds,))
    unknown = sorted(k for k in thresholds if k not in RATE_COUNTERS)
    if unknown:
        raise CheckOptionError("rate_thresholds: unknown counter(s) %s (known: %s)" % (", ".join(unknown), ", ".join(RATE_COUNTERS)))
    merged["rate_rules"] = dict((name, RATE_RULES[name][:3] + (value,)) for name, value in thresholds.items())
    if not isinstance(merged["ethtool"], bool):
        raise CheckOptionError("ethtool must be true or false, got %r" % (merged["ethtool"],))
    if merged["expected_nccl_env"] is not None and not isinstance(merged["expected_nccl_env"], dict):
        raise CheckOptionError("expected_nccl_env must be a mapping of NCCL variables, got %r" % (merged["expected_nccl_env"],))
    return merged
