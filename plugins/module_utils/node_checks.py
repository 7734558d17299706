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

from ansible_collections.gpufabric.rdma.plugins.module_utils import commands, files, gpu, health, rdma
from ansible_collections.gpufabric.rdma.plugins.module_utils.readiness import finding

# Every option of a check with its default (node_health's argument_spec says the same).
DEFAULTS = {
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
    "command_timeout": commands.DEFAULT_TIMEOUT,
}
_NON_NEGATIVE = ("expected_gpu_count", "expected_rdma_devices", "expected_mtu", "counter_interval", "max_retired_pages",
                 "command_timeout")
_INTEGERS = _NON_NEGATIVE
_MAX_COUNTER_INTERVAL = 600


class CheckOptionError(ValueError):
    """An option that cannot be checked with; the message names it and its value."""


def options(given):
    """The given options over DEFAULTS; unknown names and bad values raise CheckOptionError."""
    unknown = sorted(set(given or {}) - set(DEFAULTS))
    if unknown:
        raise CheckOptionError("unknown check option(s): %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    merged = dict(DEFAULTS)
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
        commands.check_timeout(merged["command_timeout"])
    except ValueError as exc:
        raise CheckOptionError(str(exc))
    if merged["counter_interval"] > _MAX_COUNTER_INTERVAL:
        raise CheckOptionError("counter_interval is at most %d seconds, got %d"
                               % (_MAX_COUNTER_INTERVAL, merged["counter_interval"]))
    if merged["min_port_rate_gbps"] is not None and not isinstance(merged["min_port_rate_gbps"], (int, float)):
        raise CheckOptionError("min_port_rate_gbps must be a number, got %r" % (merged["min_port_rate_gbps"],))
    if not isinstance(merged["xid_ignore"], list) or not all(isinstance(x, int) for x in merged["xid_ignore"]):
        raise CheckOptionError("xid_ignore must be a list of Xid numbers, got %r" % (merged["xid_ignore"],))
    if merged["expected_nccl_env"] is not None and not isinstance(merged["expected_nccl_env"], dict):
        raise CheckOptionError("expected_nccl_env must be a mapping of NCCL variables, got %r" % (merged["expected_nccl_env"],))
    return merged


def _kernel_log(opts, runner):
    """(text, source) of the kernel log since boot, or (None, why none of the readers answered)."""
    if opts["kernel_log"]:
        text = files.read_text(opts["kernel_log"])
        if text is None:
            raise CheckOptionError("kernel_log %s cannot be read" % opts["kernel_log"])
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


# What to do when nvidia-smi does not give an answer, by how it failed. A GPU lost from the bus is
# the usual reason it hangs.
NVIDIA_SMI_FIXES = {
    "hung": "a GPU lost from the PCIe bus often hangs nvidia-smi: look for Xid 79 / 'fallen off the bus' in `dmesg`, "
            "drain the node and reboot it; reseat or replace the GPU if it happens again",
    "failed": "the NVIDIA driver does not answer: check `dmesg` for NVRM and Xid errors, that the nvidia module is "
              "loaded (`lsmod | grep nvidia`) and built for the running kernel; reboot if a GPU fell off the bus",
    "missing": "install the NVIDIA driver (it ships nvidia-smi), or give nvidia_smi_path",
}


def _gpus(opts, runner):
    """(GPU count or None when unknown, per-GPU memory health, None or (how, detail) when nvidia-smi gave no answer)."""
    smi = opts["nvidia_smi_path"] or runner.which("nvidia-smi")
    if not smi or not os.path.exists(smi):
        return None, [], ("missing", "nvidia-smi not found")
    result = runner.run([smi, "-q", "-x"])
    if result.timed_out:
        return None, [], ("hung", "nvidia-smi did not answer within %s s" % result.timeout)
    if not result.ok:
        return None, [], ("failed", result.describe())
    try:
        root = gpu.nvidia_smi_root(result.stdout)  # parsed once, read twice
        return gpu.attached_gpu_count(root), health.parse_gpu_memory_health(root), None
    except ValueError as exc:
        return None, [], ("failed", "nvidia-smi -q -x printed no usable XML: %s" % exc)


def _nvidia_smi_findings(host, problem, expected_gpu_count):
    """A hung or failing nvidia-smi is critical; a missing one only where GPUs are expected."""
    if problem is None:
        return []
    how, detail = problem
    if how == "missing":
        if not expected_gpu_count:
            return []
        detail = "%s: cannot count GPUs (%d expected)" % (detail, expected_gpu_count)
    return [finding("nvidia_smi", "critical", host, detail, NVIDIA_SMI_FIXES[how])]


def check_node(given, runner=None, host=None, previous_counters=None, sleep=time.sleep):
    """Every check on this node -> {findings (worst first), counts, healthy, observed}.

    ``runner`` defaults to a ``commands.Runner`` with the options' ``command_timeout``.
    ``previous_counters`` (a port counter reading saved by an earlier run, with its ``at`` time)
    makes the counter check compare against it instead of sleeping ``counter_interval``.
    """
    opts = options(given)
    runner = runner or commands.Runner(opts["command_timeout"])
    host = host or os.uname()[1]
    found = []

    gpu_count, memory, smi_problem = _gpus(opts, runner)
    found += _nvidia_smi_findings(host, smi_problem, opts["expected_gpu_count"])
    found += health.gpu_memory_findings(host, memory, opts["max_retired_pages"])

    log_text, log_source = _kernel_log(opts, runner)
    events = health.parse_xid_events(log_text) if log_text else []
    found += health.xid_findings(host, events, set(opts["xid_ignore"]))
    if log_text is None:
        found.append(finding("kernel_log", "info", host, "the kernel log could not be read: %s" % log_source,
                             "run as root, or give kernel_log"))
        log_source = None

    devices = rdma.read_sysfs(opts["sysfs_root"])
    netdevs = sorted(set(port["netdev"] for d in devices for port in d.get("ports") or [] if port.get("netdev")))
    mtus = {}
    for netdev in netdevs:
        value = files.read_attr(os.path.join(opts["sysfs_root"], "class", "net", netdev, "mtu"))
        if value and value.isdigit():
            mtus[netdev] = int(value)
    peermem = gpu.parse_peermem(files.read_text(os.path.join(opts["procfs_root"], "modules")) or "")
    # With nvidia-smi broken the GPUs cannot be counted: that finding says so, not "a GPU fell off".
    found += health.inventory_findings(host, gpu_count, devices, peermem["loaded"], mtus, {
        "gpu_count": opts["expected_gpu_count"] if gpu_count is not None else None, "rdma_devices": opts["expected_rdma_devices"],
        "port_rate_gbps": opts["min_port_rate_gbps"], "mtu": opts["expected_mtu"], "peermem": opts["require_peermem"]})

    now = time.time()
    after = health.read_port_counters(opts["sysfs_root"])
    if previous_counters and previous_counters.get("ports"):
        interval = int(round(now - previous_counters.get("at", now)))
        found += health.counter_findings(host, health.rising_counters(previous_counters["ports"], after), interval)
    elif opts["counter_interval"] and after:
        before = after
        sleep(opts["counter_interval"])
        now = time.time()
        after = health.read_port_counters(opts["sysfs_root"])
        found += health.counter_findings(host, health.rising_counters(before, after), opts["counter_interval"])

    if opts["expected_nccl_env"] is not None:
        deployed = files.read_text(opts["nccl_conf"])
        if deployed is None:
            found.append(finding("nccl_env_drift", "warning", "%s:%s" % (host, opts["nccl_conf"]), "the file is missing",
                                 "re-run the nccl_env role"))
        else:
            found += health.nccl_drift_findings(host, health.parse_nccl_conf(deployed), opts["expected_nccl_env"],
                                                opts["nccl_conf"])

    found = health.sort_findings(found)
    counts = dict((s, sum(1 for f in found if f["severity"] == s)) for s in ("critical", "warning", "info"))
    return {"findings": found, "counts": counts, "healthy": counts["critical"] == 0 and counts["warning"] == 0,
            "observed": {"host": host, "gpu_count": gpu_count, "gpu_error": smi_problem[1] if smi_problem else None,
                         "rdma_devices": [d["name"] for d in devices], "netdev_mtus": mtus,
                         "peermem": peermem, "xid_events": events, "kernel_log_source": log_source,
                         "port_counters": after, "counters_at": now}}
