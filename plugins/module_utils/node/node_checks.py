# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One health check of a node: what the node_health module returns and the health monitor sends.

Both call ``check_node`` with the same options, so a finding reported by an Ansible run and a
finding posted by the systemd timer are the same finding. Commands run through a ``commands.Runner`` (``which(name)``, ``run(argv) ->
CommandResult``), every one with ``command_timeout``: a hung nvidia-smi is a finding, not a hung check.
The parsing is in health.py, gpu.py and rdma.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import dcgm_diag, health, link_health, nvlink_links, rates
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nic_firmware as firmware_wanted
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, dcgmi, files, nic_firmware, sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ethtool, gpu, kernel_log as kernel_log_text, mlxlink, nccl_conf, nvlink
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import counts as count_findings, finding

# The options and their checks are pure (health.py), so the monitor's configuration check on the
# controller and the module use the same rules; these names stay for callers of this module.
DEFAULTS = health.CHECK_DEFAULTS
CheckOptionError = health.CheckOptionError
options = health.check_options


def _kernel_log(opts, runner):
    """(text, source) of the kernel log since boot, or (None, why none of the readers answered)."""
    if opts["kernel_log"]:
        text = files.read_text(opts["kernel_log"])
        if text is None:
            return None, "kernel_log %s cannot be read" % opts["kernel_log"]
        return text, opts["kernel_log"]
    why = []
    for command in (["journalctl", "-k", "-b", "--no-pager", "-o", "short-iso"], ["dmesg", "-T"], ["dmesg"]):
        binary = runner.which(command[0])
        if not binary:
            continue
        result = runner.run([binary] + command[1:])
        if result.ok and result.stdout.strip():
            return result.stdout, " ".join(command)
        why.append(result.describe() if not result.ok else "%s printed nothing" % " ".join(command[:3]))
    return None, "; ".join(why) or "neither journalctl nor dmesg is installed"


# What to do when nvidia-smi does not give an answer (judge/health.py); the name stays for callers of this module.
NVIDIA_SMI_FIXES = health.NVIDIA_SMI_FIXES


def _nvidia_smi(opts, runner):
    """The nvidia-smi to run (nvidia_smi_path, else the one on PATH), or None when there is none."""
    smi = opts["nvidia_smi_path"] or runner.which("nvidia-smi")
    return smi if smi and os.path.exists(smi) else None


def _gpus(smi, runner):
    """(GPU count or None when unknown, per-GPU memory health, per-GPU clock events,
    None or (how, detail) when nvidia-smi gave no answer)."""
    if not smi:
        return None, [], [], ("missing", "nvidia-smi not found")
    result = runner.run([smi, "-q", "-x"])
    if result.timed_out:
        return None, [], [], ("hung", "nvidia-smi did not answer within %s s" % result.timeout)
    if not result.ok:
        return None, [], [], ("failed", result.describe())
    try:
        root = gpu.nvidia_smi_root(result.stdout)  # parsed once, read three times
        return (gpu.attached_gpu_count(root), gpu.parse_gpu_memory_health(root), gpu.parse_clock_events(root),
                None)
    except ValueError as exc:
        return None, [], [], ("failed", "nvidia-smi -q -x printed no usable XML: %s" % exc)


def _nvlink_findings(host, smi, runner, gpu_count, unreadable):
    """NVLinks down (`nvidia-smi nvlink --status`) where the GPUs were counted: a GPU with none of its links
    active while its peers have theirs, or some links of a GPU inactive. A listing that cannot be read is a
    source that could not be read; a machine without NVLink prints nothing and gives nothing."""
    if not gpu_count or not smi:
        return []
    result = runner.run([smi, "nvlink", "--status"])
    if not result.ok:
        unreadable.append("nvidia-smi nvlink --status: %s" % result.describe())
        return [finding("nvlink_status", "warning", host, "nvidia-smi nvlink --status gave no answer: %s" % result.describe(),
                        "run it by hand; until it answers, an NVLink that went down goes unseen")]
    try:
        status = nvlink.parse_nvlink_status(result.stdout)
    except ValueError as exc:   # ToolTextError, TextError
        unreadable.append("nvidia-smi nvlink --status: %s" % exc)
        return []
    found = nvlink_links.nvlink_down_findings(status)
    for item in found:
        item["target"] = "%s/%s" % (host, item["target"])
    return found


def _pause_counters(opts, runner, netdevs, unreadable):
    """{'eth2|tx_pause_storm_error_events': 0, ...} from `ethtool -S` of each RDMA netdev (when ethtool is
    there); an ethtool that fails or hangs is a source that could not be read."""
    counters = {}
    binary = runner.which("ethtool") if opts["ethtool"] else None
    if not binary:
        return counters
    for netdev in netdevs:
        result = runner.run([binary, "-S", netdev])
        if result.ok:
            for name, value in rates.pause_counters(ethtool.parse_ethtool_stats(result.stdout)).items():
                counters["%s|%s" % (netdev, name)] = value
        else:
            unreadable.append("pause counters of %s: %s" % (netdev, result.describe()))
    return counters


def _dcgm_findings(host, opts, runner, unreadable, level, timeout):
    """DCGM's diagnostic (dcgmi diag -r 1, or 2 from the Slurm epilog), judged (judge/dcgm_diag.py). One that could
    not run makes the report incomplete: its warning says why, and such a report never puts a node back into service."""
    parsed, not_run, dummy = dcgmi.diagnose(runner.which(opts["dcgmi_path"] or "dcgmi"), ["diag", "-r", str(level)],
                                            timeout, opts["dcgmi_path"] or "dcgmi", run=runner.run)
    judged = dcgm_diag.verdict(parsed, level, not_run, host=host)
    if judged["status"] == "not run":
        unreadable.append("dcgmi diag -r %d: %s" % (level, judged["reason"]))
    judged["findings"] = [f for f in judged["findings"] if f["severity"] != "info"]
    return judged


def _firmware_findings(host, opts, runner, devices, unreadable):
    """NIC firmware settings against the profiles (node/nic_firmware.py): a warning per card that differs; a card the
    tool could not read makes the report incomplete (a node never returns to service on settings nobody read)."""
    wanted = firmware_wanted.check_options(opts["nic_firmware"])
    addresses = wanted["devices"] or nic_firmware.devices_from_sysfs(devices)
    if not addresses:
        unreadable.append("NIC firmware settings: %s" % nic_firmware.no_card(opts["sysfs_root"]))
        return {"findings": firmware_wanted.findings(host, [], wanted["profiles"], [nic_firmware.no_card(opts["sysfs_root"])]),
                "plans": []}
    read = nic_firmware.read(runner, wanted, addresses)
    for problem in read["problems"]:
        unreadable.append("NIC firmware settings: %s" % problem)
    return {"findings": firmware_wanted.findings(host, read["plans"], wanted["profiles"], read["problems"]),
            "plans": read["plans"]}


LINK_FIELDS = ("state", "physical_state", "speed", "width", "fec", "recommendation", "effective_ber", "raw_ber",
               "effective_errors", "link_down_counter", "raw_errors_per_lane")


def read_links(host, option, runner, devices, unreadable):
    """Each HCA port's physical layer (mlxlink -d <dev> -p <port> -c, parse/mlxlink.py, judge/link_health.py); a port
    mlxlink could not read, or whose BER it could not give, makes the report incomplete (link_unread), never a healthy
    port; so does a node with no NVIDIA HCA to read or no mlxlink ({not_run: why}). ``option`` is the ``link_health``
    option (true or a mapping); the health check and the link_health module (discovery) share this."""
    wanted = link_health.check_options(option)
    names = wanted["devices"] or [d["name"] for d in devices if d.get("name", "").startswith(("mlx4_", "mlx5_"))]
    tool = runner.which(wanted["tool"])
    found, read = [], []
    not_run = None if names else "no NVIDIA HCA (an mlx4_ or mlx5_ RDMA device) on this node: no link was read"
    if not_run:
        unreadable.append("mlxlink: %s" % not_run)
        found.append(finding("link_unread", "warning", host, "not run: %s" % not_run, link_health.NOT_RUN_FIX))
    elif not tool:
        not_run = "%s is not installed: no link was read" % wanted["tool"]
    for name in names:
        label = "%s/%d" % (name, wanted["port"])
        if not tool:
            problem = "%s is not installed" % wanted["tool"]
        else:
            result = runner.run([tool, "-d", name, "-p", str(wanted["port"]), "-c"])
            problem = None if result.ok else result.describe()
            if problem is None:
                try:
                    parsed = mlxlink.parse_mlxlink(result.stdout)["devices"]
                except mlxlink.MlxlinkError as exc:
                    parsed, problem = [], str(exc)
                if parsed:
                    parsed[0]["device"] = label
                    read.append(parsed[0])
                elif problem is None:
                    problem = "no device in its output"
        if problem:
            unreadable.append("mlxlink %s: %s" % (label, problem))
            found.append(finding("link_unread", "warning", "%s/%s" % (host, label),
                                 "the link's physical layer could not be read: %s" % problem,
                                 "install MFT or mstflint's mlxlink and run the check as root; until then BER, FEC "
                                 "and the recommendation of this port go unseen"))
    judged = link_health.mlxlink_findings(host, read, wanted["max_effective_ber"], wanted["max_raw_ber"], ber_expected=True)
    unreadable += ["mlxlink %s: %s" % (f["target"].split("/", 1)[-1], f["detail"]) for f in judged if f["check"] == "link_unread"]
    return {"findings": found + judged, "links": [dict((k, d.get(k)) for k in ("device",) + LINK_FIELDS) for d in read],
            "not_run": not_run}


def check_node(given, runner=None, host=None, previous_counters=None, sleep=time.sleep, history=None, dcgm_level=None):
    """Every check on this node -> {findings (worst first), counts, healthy, observed}.

    ``runner`` defaults to a ``commands.Runner`` with the options' ``command_timeout``.
    ``previous_counters`` (a port counter reading saved by an earlier run, with its ``at`` time)
    makes the counter check compare against it instead of sleeping ``counter_interval``.
    ``history`` (the grey-failure samples an earlier run returned as observed["history"], [] for the
    first run) turns the counter check into rates over ``rate_window`` (rates.py): the monitor's way.
    ``dcgm_level`` (1 or 2) runs that DCGM level whatever the options say, within its own time limit: the Slurm epilog
    runs level 2 between jobs; a periodic check never goes above level 1.
    """
    opts = options(given)
    runner = runner or commands.Runner(opts["command_timeout"])
    host = host or os.uname()[1]
    found = []
    # Every source a check could not read: a report with any is incomplete, and an incomplete report
    # never puts a node back into service (unknown is not healthy).
    unreadable = []

    smi = _nvidia_smi(opts, runner)     # found once, for the GPUs and their NVLinks
    gpu_count, memory, clocks, smi_problem = _gpus(smi, runner)
    # Without nvidia-smi, GPUs are expected where the site expects a count or NVIDIA GPUs sit on the PCI bus.
    pci_gpus = sysfs.read_pci_gpus(opts["sysfs_root"]) if smi_problem and smi_problem[0] == "missing" else []
    smi_findings, smi_unread = health.nvidia_smi_findings(host, smi_problem, opts["expected_gpu_count"], pci_gpus)
    found += smi_findings
    unreadable += smi_unread
    found += health.gpu_memory_findings(host, memory, opts["max_retired_pages"])
    found += rates.clock_findings(host, clocks)

    found += _nvlink_findings(host, smi, runner, gpu_count, unreadable)

    log_text, log_source = _kernel_log(opts, runner)
    events = kernel_log_text.parse_xid_events(log_text) if log_text else []
    found += health.xid_findings(host, events, set(opts["xid_ignore"]))
    # NVSwitch SXids, NVLinks that did not come up and NICs on a slow PCIe link: the same log, no Xid.
    fabric = kernel_log_text.parse_fabric_events(log_text) if log_text else {"sxid": [], "nvlink_training": [], "nic_pcie": []}
    found += health.fabric_findings(host, fabric)
    if log_text is None:
        found.append(finding("kernel_log", "warning", host, "the kernel log could not be read: %s" % log_source,
                             "run as root, or give kernel_log; until it can be read, Xid errors go unseen and a node "
                             "drained by gpufabric stays drained"))
        unreadable.append("kernel log: %s" % log_source)
        log_source = None

    devices = sysfs.read_rdma_devices(opts["sysfs_root"])
    netdevs = sorted(set(port["netdev"] for d in devices for port in d.get("ports") or [] if port.get("netdev")))
    mtus = sysfs.netdev_mtus(opts["sysfs_root"], netdevs)
    peermem = gpu.parse_peermem(files.read_text(os.path.join(opts["procfs_root"], "modules")) or "")
    # With nvidia-smi broken the GPUs cannot be counted: that finding says so, not "a GPU fell off".
    found += health.inventory_findings(host, gpu_count, devices, peermem["loaded"], mtus, {
        "gpu_count": opts["expected_gpu_count"] if gpu_count is not None else None, "rdma_devices": opts["expected_rdma_devices"],
        "port_rate_gbps": opts["min_port_rate_gbps"], "mtu": opts["expected_mtu"], "peermem": opts["require_peermem"]})

    found += rates.pcie_findings(host, sysfs.read_pcie_links(opts["sysfs_root"]))
    firmware = _firmware_findings(host, opts, runner, devices, unreadable) if opts["nic_firmware"] else None
    found += (firmware or {}).get("findings") or []
    links = read_links(host, opts["link_health"], runner, devices, unreadable) if opts["link_health"] else None
    found += (links or {}).get("findings") or []

    now = time.time()
    after = sysfs.read_port_counters(opts["sysfs_root"])
    if history is not None:
        counters = sysfs.read_grey_counters(opts["sysfs_root"], netdevs)
        counters.update(_pause_counters(opts, runner, netdevs, unreadable))
        history = rates.add_sample(history, {"at": now, "counters": counters}, opts["rate_window"])
        found += rates.rate_findings(host, history, opts["rate_min_span"], opts["rate_rules"])
    elif previous_counters and previous_counters.get("ports"):
        interval = int(round(now - previous_counters.get("at", now)))
        found += health.counter_findings(host, health.rising_counters(previous_counters["ports"], after), interval)
    elif opts["counter_interval"] and after:
        before = after
        sleep(opts["counter_interval"])
        now = time.time()
        after = sysfs.read_port_counters(opts["sysfs_root"])
        found += health.counter_findings(host, health.rising_counters(before, after), opts["counter_interval"])

    if opts["expected_nccl_env"] is not None:
        deployed = files.read_text(opts["nccl_conf"])
        if deployed is None:
            found.append(finding("nccl_env_drift", "warning", "%s:%s" % (host, opts["nccl_conf"]), "the file is missing",
                                 "re-run the nccl_env role"))
        else:
            found += health.nccl_drift_findings(host, nccl_conf.parse_nccl_conf(deployed), opts["expected_nccl_env"],
                                                opts["nccl_conf"])

    if dcgm_level is not None and dcgm_level not in (1, 2):
        raise health.CheckOptionError("the DCGM level between jobs must be 1 or 2, got %r" % (dcgm_level,))
    level = dcgm_level or opts["dcgm_level"]
    dcgm = _dcgm_findings(host, opts, runner, unreadable, level,
                          dcgm_diag.TIMEOUTS[level] if dcgm_level else runner.timeout) if level else None
    found += (dcgm or {}).get("findings") or []

    found = health.sort_findings(found)
    counts = count_findings(found)
    return {"findings": found, "counts": counts, "healthy": counts["critical"] == 0 and counts["warning"] == 0,
            "complete": not unreadable, "unreadable": unreadable,
            "observed": {"host": host, "gpu_count": gpu_count, "gpu_error": smi_problem[1] if smi_problem else None,
                         "rdma_devices": [d["name"] for d in devices], "netdev_mtus": mtus,
                         "peermem": peermem, "xid_events": events, "fabric_events": fabric,
                         "kernel_log_source": log_source,
                         "port_counters": after, "counters_at": now, "history": history,
                         "dcgm": dict((k, dcgm[k]) for k in ("status", "level", "failures", "reason")) if dcgm else None,
                         "nic_firmware": firmware["plans"] if firmware else None,
                         "links": links["links"] if links else None}}
