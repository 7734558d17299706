# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Node health: what went wrong on a GPU/RDMA node, judged from what the readers made of its kernel log
(parse/kernel_log.py), nvidia-smi (parse/gpu.py), sysfs counters and configuration (parse/nccl_conf.py). Pure
functions, standard library only; every finding has check, severity, target, detail and fix_hint (the readiness
report's shape)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding, ordered

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
    # R570 and later: the driver says what the GPU needs now. Rated by the action its last line names
    # (RECOVERY_ACTIONS below); this entry stands for a line whose action cannot be read.
    154: ("critical", "GPU recovery action changed", RESET_GPU),
    # Newer codes from NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)
    # whose immediate action is RESET_GPU.
    155: ("critical", "NVLink software-defined error", RESET_GPU),
    156: ("warning", "resource retirement event", "reset the GPU at the next drain so the retirement takes effect"),
    158: ("critical", "GPU fatal timeout", RESET_GPU),
}

# Xid 154 names the action in NVML's numbering (nvmlDeviceGpuRecoveryAction_t); what an operator does
# for each, after NVIDIA's "Error Recovery and Response Flags" (GPU memory error management guide).
RECOVERY_ACTIONS = {
    0: ("info", "none", "nothing: the driver needs no action any more and the GPU takes new work"),
    1: ("critical", "GPU reset", "the GPU is unusable until reset: drain the node, stop the GPU's processes and "
                                 "reset it (nvidia-smi -r -i <GPU>), or reboot"),
    2: ("critical", "node reboot", "the fault may have left the OS inconsistent: drain the node and reboot it"),
    3: ("critical", "drain P2P", "drain the node: stop the jobs using this GPU's peer-to-peer (NVLink) traffic; "
                                 "the GPU takes new work once they are gone"),
    4: ("critical", "drain P2P and reset", "drain the node, stop the GPU's processes, then reset the GPU "
                                           "(nvidia-smi -r -i <GPU>) or reboot"),
    5: ("critical", "IMEX domain recovery", "drain the node and recover its IMEX domain (restart nvidia-imex on "
                                            "the domain's nodes), or reboot"),
    6: ("critical", "PCIe bus reset", "drain the node and reset the GPU's PCIe bus, or reboot"),
    7: ("critical", "system reboot", "drain the node and reboot it"),
}


def xid_findings(host, events, ignore=()):
    found = []
    for event in events:
        if event["xid"] in ignore:
            continue
        severity, meaning, fix = XID_CATALOG.get(event["xid"], ("warning", "Xid %d" % event["xid"],
                                                                "look the code up in NVIDIA's Xid catalog"))
        detail = "Xid %d (%s) x%d: %s" % (event["xid"], meaning, event["count"], event["detail"])
        action = event.get("recovery_action")
        if action:
            known = RECOVERY_ACTIONS.get(action["code"])
            if known:
                severity, fix = known[0], known[2]
            detail = "Xid %d (%s) x%d: the GPU now needs: %s (0x%x)" % (
                event["xid"], meaning, event["count"], action["name"] or (known[1] if known else "unknown action"),
                action["code"])
            if event["count"] > 1 or action["from_code"]:
                detail += ", changed from %s (0x%x)" % (action["from_name"] or "?", action["from_code"])
        if event["caused_by"]:
            detail += " [caused by Xid %s]" % ", ".join(str(x) for x in event["caused_by"])
        found.append(finding("gpu_xid", severity, "%s/GPU %s" % (host, event["pci"]), detail, fix))
    return found


# --- NVSwitch, NVLink and NIC PCIe messages of the kernel log ---------------------------------------


SXID_FIXES = {
    True: "a fatal NVSwitch error (NVIDIA Fabric Manager user guide, 'Fatal NVSwitch SXid errors'): drain the node and "
          "reboot it to reset the GPUs and NVSwitches; if it returns on the same links, have the NVLink/NVSwitch "
          "hardware checked",
    False: "a non-fatal NVSwitch error: the fabric keeps working; watch it (nvidia-smi nvlink -e, the Fabric Manager "
           "log) and drain and reboot the node if it repeats",
}


def fabric_findings(host, events):
    """Findings of parse_fabric_events' result: nvswitch_sxid, nvlink_training, nic_pcie_bandwidth."""
    found = []
    for event in events.get("sxid") or []:
        fatal = event["fatal"]
        links = (", link%s %s" % ("s" if len(event["links"]) > 1 else "", ", ".join(str(x) for x in event["links"]))
                 if event["links"] else "")
        detail = "SXid %d (%s) x%d on %s%s: %s" % (
            event["sxid"], {True: "fatal", False: "non-fatal"}.get(fatal, "class not printed"), event["count"],
            event["switch"], links, event["detail"])
        found.append(finding("nvswitch_sxid", "critical" if fatal else "warning", "%s/NVSwitch %s" % (host, event["pci"]),
                             detail, SXID_FIXES[bool(fatal)]))
    for event in events.get("nvlink_training") or []:
        peers = " (peer %s)" % ", ".join(str(p) for p in event["peers"]) if event["peers"] else ""
        found.append(finding(
            "nvlink_training", "critical", host,
            "NVLink links failed to come up at driver load%s, x%d, no Xid: %s" % (peers, event["count"], event["first"]),
            "some NVLinks are down, so GPU-to-GPU traffic is slow or hangs: drain the node, check `nvidia-smi nvlink -s` "
            "and the Fabric Manager log, reboot; if it returns, have the GPU baseboard or NVSwitch checked"))
    for nic in events.get("nic_pcie") or []:
        found.append(finding(
            "nic_pcie_bandwidth", "warning", "%s/NIC %s" % (host, nic["pci"]),
            "%s %s gets %g of %g Gb/s PCIe bandwidth: limited by a %s x%d link at %s (capable of %s x%d)" % (
                nic["driver"], nic["pci"], nic["available_gbps"], nic["capable_gbps"], nic["limited_by"]["speed"],
                nic["limited_by"]["width"], nic["limiting_device"], nic["capable"]["speed"], nic["capable"]["width"]),
            "a slower or narrower PCIe link caps RDMA bandwidth: reseat the NIC or riser, check the slot, its BIOS "
            "bifurcation and PCIe generation (the link at %s is the bottleneck)" % nic["limiting_device"]))
    return found


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


# What to do when nvidia-smi does not give an answer, by how it failed. A GPU lost from the bus is the usual reason it hangs.
NVIDIA_SMI_FIXES = {
    "hung": "a GPU lost from the PCIe bus often hangs nvidia-smi: look for Xid 79 / 'fallen off the bus' in `dmesg`, "
            "drain the node and reboot it; reseat or replace the GPU if it happens again",
    "failed": "the NVIDIA driver does not answer: check `dmesg` for NVRM and Xid errors, that the nvidia module is "
              "loaded (`lsmod | grep nvidia`) and built for the running kernel; reboot if a GPU fell off the bus",
    "missing": "install the NVIDIA driver (it ships nvidia-smi), or give nvidia_smi_path",
}


def nvidia_smi_findings(host, problem, expected_gpu_count=None, pci_gpus=()):
    """(findings, what could not be read) when nvidia-smi gave no answer (``problem``: (how, detail) or None).

    A hung or failing nvidia-smi is critical and leaves the GPUs unread. A missing one matters where GPUs are expected:
    the site expects a count, or NVIDIA GPUs sit on the PCI bus (sysfs.read_pci_gpus) - then it is critical and the
    report is incomplete; on a node with neither, no nvidia-smi is what it should be.
    """
    if problem is None:
        return [], []
    how, detail = problem
    unread = ["nvidia-smi: %s" % detail]
    if how == "missing":
        if expected_gpu_count:
            detail = "%s: cannot count GPUs (%d expected)" % (detail, expected_gpu_count)
        elif pci_gpus:
            addresses = [g.get("address") or "?" for g in pci_gpus]
            detail = "%s: %d NVIDIA GPU(s) on the PCI bus cannot be read (%s%s)" % (
                detail, len(addresses), ", ".join(addresses[:4]), ", ..." if len(addresses) > 4 else "")
        else:
            return [], []
    return [finding("nvidia_smi", "critical", host, detail, NVIDIA_SMI_FIXES[how])], unread


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


def nccl_drift_findings(host, deployed, expected, path="/etc/nccl.conf"):
    """The deployed NCCL variables ({NAME: value}, None when the file is missing) against the profile's."""
    if deployed is None:
        return [finding("nccl_env_drift", "warning", "%s:%s" % (host, path), "the file is missing", "re-run the nccl_env role")]
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


def gpu_count_findings(host, gpu_count, expected):
    """Fewer GPUs than ``expected`` (None: not checked) is critical: one was lost or fell off the bus."""
    if expected is None or (gpu_count or 0) >= expected:
        return []
    return [finding("gpu_count", "critical", host, "%d of %d expected GPUs found" % (gpu_count or 0, expected),
                    "a GPU fell off the bus or was lost: check `nvidia-smi -L` and the kernel log for Xid 79; "
                    "drain the node and reboot, reseat or replace the GPU")]


def rdma_port_findings(host, devices, expected_devices=None, min_rate_gbps=None):
    """Fewer RDMA devices than expected, ports not ACTIVE, ACTIVE ports below ``min_rate_gbps``."""
    found = []
    if expected_devices is not None and len(devices) < expected_devices:
        found.append(finding("rdma_device_count", "critical", host,
                             "%d of %d expected RDMA devices found (%s)" % (
                                 len(devices), expected_devices, ", ".join(d.get("name") or "?" for d in devices) or "none"),
                             "check the NIC and its driver (lspci, dmesg, `eadm ver` for eRDMA); reload the driver or reboot"))
    for device in devices:
        for port in device.get("ports") or []:
            target = "%s/%s/%s" % (host, device.get("name"), port.get("port"))
            if port.get("state") != "ACTIVE":
                found.append(finding("rdma_port_state", "critical", target,
                                     "port is %s (physical state %s)" % (port.get("state"), port.get("phys_state")),
                                     "check the cable and switch port (`ibstat`, `ibv_devinfo`, `eadm stat` for eRDMA)"))
            elif min_rate_gbps is not None and port.get("rate_gbps") is not None and port["rate_gbps"] < min_rate_gbps:
                found.append(finding("rdma_port_rate", "warning", target,
                                     "port runs at %s Gb/s, expected at least %s" % (port["rate_gbps"], min_rate_gbps),
                                     "a degraded link (fewer lanes or a lower speed): reseat or replace the cable"))
    return found


def mtu_findings(host, netdev_mtus, expected_mtu):
    """RDMA netdevs ({netdev: mtu}) whose MTU is not ``expected_mtu`` (None: not checked)."""
    return [finding("mtu", "warning", "%s:%s" % (host, netdev), "MTU %s, expected %s" % (netdev_mtus[netdev], expected_mtu),
                    "re-run the rdma_network role (a reboot or a NIC reset may have lost it)")
            for netdev in sorted(netdev_mtus) if expected_mtu is not None and netdev_mtus[netdev] != expected_mtu]


def peermem_findings(host, gpu_count, loaded, required):
    """A GPU node without nvidia_peermem where it is ``required``: GPUDirect RDMA is off."""
    if not required or (gpu_count or 0) <= 0 or loaded:
        return []
    return [finding("peermem", "warning", host, "nvidia_peermem is not loaded: GPUDirect RDMA is off",
                    "modprobe nvidia_peermem (the peermem role persists it)")]


def inventory_findings(host, gpu_count, devices, peermem_loaded, netdev_mtus, expected):
    """What a node should have against what it has.

    ``expected``: gpu_count, rdma_devices (count), port_rate_gbps (minimum), mtu (of the RDMA
    netdevs), peermem (bool); a None or missing key is not checked. ``netdev_mtus``: {netdev: mtu}.
    """
    return (gpu_count_findings(host, gpu_count, expected.get("gpu_count"))
            + rdma_port_findings(host, devices, expected.get("rdma_devices"), expected.get("port_rate_gbps"))
            + mtu_findings(host, netdev_mtus, expected.get("mtu"))
            + peermem_findings(host, gpu_count, peermem_loaded, expected.get("peermem")))


def kernel_log_findings(host, why):
    """The kernel log could not be read (``why``; None: it was): Xid errors go unseen."""
    if why is None:
        return []
    return [finding("kernel_log", "warning", host, "the kernel log could not be read: %s" % why,
                    "run as root, or give kernel_log; until it can be read, Xid errors go unseen and a node "
                    "drained by gpufabric stays drained")]
