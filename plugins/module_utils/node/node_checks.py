# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""One health check of a node: what the node_health module returns and the health monitor sends.

Both call ``check_node`` with the same options, so a finding reported by an Ansible run and a finding posted by the
systemd timer are the same finding. ``check_node`` runs every check of the registry (node/checks/all.py) in one loop:
each reads through ``Node`` - the node as the checks see it: commands through a ``commands.Runner`` (``which(name)``,
``run(argv) -> CommandResult``), every one with ``command_timeout`` (a hung nvidia-smi is a finding, not a hung
check), bounded file reads, sysfs, and the readings several checks share, each taken once - and judges what it read;
what a check could not read, or why it could not run, is reported the same way for all.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, dcgmi, files, imex, nic_firmware, sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import all as registry, link_health as link_check
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu, nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import topology_names
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink
# finding stays importable from here: node-side code takes the one shape of a finding with this module.
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import counts as count_findings, finding  # noqa: F401 pylint: disable=unused-import

# The options and their checks are the registry's (pure), so the monitor's configuration check on the controller and
# the module use the same rules; these names stay for callers of this module.
DEFAULTS = registry.DEFAULTS
CheckOptionError = registry.CheckOptionError
options = registry.check_options
# What to do when nvidia-smi does not give an answer (judge/health.py), and the link_health module's read of the ports.
NVIDIA_SMI_FIXES = health.NVIDIA_SMI_FIXES
LINK_FIELDS = link_check.LINK_FIELDS
read_links = link_check.read_links

KERNEL_LOG_READERS = (["journalctl", "-k", "-b", "--no-pager", "-o", "short-iso"], ["dmesg", "-T"], ["dmesg"])


class Node(object):
    """The node as the checks read it (node/checks/check.py): ``host``, the checked ``opts``, the runner's ``which``,
    ``run`` and ``timeout``, bounded file reads, sysfs under ``sysfs_root``, the readings several checks share (taken
    once), the clock, and what this run was given: ``history``, ``previous_counters``, ``dcgm_level``."""

    def __init__(self, opts, runner, host, sleep=time.sleep, history=None, previous_counters=None, dcgm_level=None):
        self.opts, self.runner, self.host = opts, runner, host
        self.sleep, self.history, self.previous_counters, self.dcgm_level = sleep, history, previous_counters, dcgm_level
        self._shared = {}

    def _once(self, name, read):
        if name not in self._shared:
            self._shared[name] = read()
        return self._shared[name]

    # commands and files
    @property
    def timeout(self):
        return self.runner.timeout

    def which(self, name):
        return self.runner.which(name)

    def run(self, argv, timeout=None):
        return self.runner.run(argv, timeout) if timeout else self.runner.run(argv)

    def now(self):
        return time.time()

    def read_text(self, path):
        return files.read_text(path)

    def proc_text(self, name):
        return files.read_text(os.path.join(self.opts["procfs_root"], name))

    # sysfs
    def rdma_devices(self):
        return self._once("rdma_devices", lambda: sysfs.read_rdma_devices(self.opts["sysfs_root"]))

    def netdevs(self):
        return self._once("netdevs", lambda: sorted(set(
            port["netdev"] for d in self.rdma_devices() for port in d.get("ports") or [] if port.get("netdev"))))

    def netdev_mtus(self, netdevs):
        return sysfs.netdev_mtus(self.opts["sysfs_root"], netdevs)

    def pcie_links(self):
        return sysfs.read_pcie_links(self.opts["sysfs_root"])

    def pci_gpus(self):
        return sysfs.read_pci_gpus(self.opts["sysfs_root"])

    def port_counters(self):
        return sysfs.read_port_counters(self.opts["sysfs_root"])

    def grey_counters(self, netdevs):
        return sysfs.read_grey_counters(self.opts["sysfs_root"], netdevs)

    # tools with readers of their own in node/
    def dcgmi_diagnose(self, args, timeout):
        """(parsed, why it did not run) of ``dcgmi <args>`` (node/dcgmi.py) within ``timeout``."""
        name = self.opts["dcgmi_path"] or "dcgmi"
        parsed, not_run, dummy = dcgmi.diagnose(self.which(name), args, timeout, name, run=self.runner.run)
        return parsed, not_run

    def imex_ctl(self):
        """The nvidia-imex-ctl to run (imex_ctl_path, else the one on PATH), or None when there is none."""
        return imex.find_ctl(self.which, self.opts["imex_ctl_path"])

    def read_imex(self, ctl):
        """(parse_nvidia_imex_ctl's result of `nvidia-imex-ctl -N -j`, None) or (None, why it could not be read)."""
        return imex.read_ctl(self.run, ctl)

    def firmware_cards(self):
        return nic_firmware.devices_from_sysfs(self.rdma_devices())

    def no_firmware_card(self):
        return nic_firmware.no_card(self.opts["sysfs_root"])

    def read_firmware(self, wanted, addresses):
        return nic_firmware.read(self.runner, wanted, addresses)

    # the readings several checks share
    def nvidia_smi(self):
        """The nvidia-smi to run (nvidia_smi_path, else the one on PATH), or None when there is none."""
        def find():
            smi = self.opts["nvidia_smi_path"] or self.which("nvidia-smi")
            return smi if smi and os.path.exists(smi) else None
        return self._once("nvidia_smi", find)

    def gpus(self):
        """`nvidia-smi -q -x` read once: {count (None when unknown), memory, clocks, problem: None or (how, detail)}."""
        return self._once("gpus", self._read_gpus)

    def _read_gpus(self):
        smi = self.nvidia_smi()
        unread = {"count": None, "memory": [], "clocks": []}
        if not smi:
            return dict(unread, problem=("missing", "nvidia-smi not found"))
        result = self.run([smi, "-q", "-x"])
        if result.timed_out:
            return dict(unread, problem=("hung", "nvidia-smi did not answer within %s s" % result.timeout))
        if not result.ok:
            return dict(unread, problem=("failed", result.describe()))
        try:
            root = gpu.nvidia_smi_root(result.stdout)  # parsed once, read four times (fabric() below)
            self._shared["smi_root"] = root
            return {"count": gpu.attached_gpu_count(root), "memory": gpu.parse_gpu_memory_health(root),
                    "clocks": gpu.parse_clock_events(root), "problem": None}
        except ValueError as exc:
            return dict(unread, problem=("failed", "nvidia-smi -q -x printed no usable XML: %s" % exc))

    def fabric(self):
        """The NVLink fabric of the same `nvidia-smi -q -x` reading (gpus(): nvidia-smi is not run again):
        {parsed: parse_nvidia_smi_fabric's result or None, problem: why it could not be read, or None}."""
        return self._once("fabric", self._read_fabric)

    def _read_fabric(self):
        problem = self.gpus()["problem"]
        if problem:
            return {"parsed": None, "problem": problem[1]}
        try:
            return {"parsed": nvidia_smi_fabric.parse_nvidia_smi_fabric(self._shared["smi_root"]), "problem": None}
        except ValueError as exc:   # TopologyError: no <gpu> element
            return {"parsed": None, "problem": str(exc)}

    def domain(self):
        """This node's place in its NVLink rack as its report to the decider carries it (common/topology_names'
        report_domain of topology/nvlink.node_domain), from the fabric read already; None when the GPUs name no domain
        and no chassis (an HGX board, a PCIe card), or when nvidia-smi was not read."""
        if "gpus" not in self._shared or not self.fabric()["parsed"]:
            return None
        return topology_names.report_domain(nvlink.node_domain(self.fabric()["parsed"]))

    def kernel_log(self):
        """(text, source, None) of the kernel log since boot, or (None, why none of the readers answered, whether
        none could be started: the file given cannot be read, or neither journalctl nor dmesg is installed)."""
        return self._once("kernel_log", self._read_kernel_log)

    def _read_kernel_log(self):
        if self.opts["kernel_log"]:
            text = files.read_text(self.opts["kernel_log"])
            if text is None:
                return None, "kernel_log %s cannot be read" % self.opts["kernel_log"], True
            return text, self.opts["kernel_log"], None
        why = []
        for command in KERNEL_LOG_READERS:
            binary = self.which(command[0])
            if not binary:
                continue
            result = self.run([binary] + command[1:])
            if result.ok and result.stdout.strip():
                return result.stdout, " ".join(command), None
            why.append(result.describe() if not result.ok else "%s printed nothing" % " ".join(command[:3]))
        return None, "; ".join(why) or "neither journalctl nor dmesg is installed", not why


def check_node(given, runner=None, host=None, previous_counters=None, sleep=time.sleep, history=None, dcgm_level=None):
    """Every check of the registry on this node -> {findings (worst first), counts, healthy, complete, unreadable,
    not_run, observed, domain}.

    ``domain`` is the node's place in its NVLink rack (Node.domain: from the `nvidia-smi -q -x` the checks read, not
    run again), which the health monitor's report and node_health's result carry to the decider; None without one.

    ``runner`` defaults to a ``commands.Runner`` with the options' ``command_timeout``.
    ``previous_counters`` (a port counter reading saved by an earlier run, with its ``at`` time)
    makes the counter check compare against it instead of sleeping ``counter_interval``.
    ``history`` (the grey-failure samples an earlier run returned as observed["history"], [] for the
    first run) turns the counter check into rates over ``rate_window`` (rates.py): the monitor's way.
    ``dcgm_level`` (1 or 2) runs that DCGM level whatever the options say, within its own time limit: the Slurm epilog
    runs level 2 between jobs; a periodic check never goes above level 1.
    """
    opts = options(given)
    if dcgm_level is not None and dcgm_level not in (1, 2):
        raise CheckOptionError("the DCGM level between jobs must be 1 or 2, got %r" % (dcgm_level,))
    node = Node(opts, runner or commands.Runner(opts["command_timeout"]), host or os.uname()[1], sleep=sleep,
                history=history, previous_counters=previous_counters, dcgm_level=dcgm_level)
    found, observed = [], {"host": node.host}
    # Every source a check could not read: a report with any is incomplete, and an incomplete report never puts a
    # node back into service (unknown is not healthy). A check that could not run at all says why in not_run too.
    unreadable, not_run = [], {}
    for check in registry.CHECKS:
        observed.update(dict.fromkeys(check.observed))
        if not check.asked(node):
            continue
        readings = check.read(node)
        found += check.judge(node, readings)
        unreadable += ["%s: %s" % (source, why) for source, why in readings.get("unread") or ()]
        if readings.get("not_run"):
            not_run[check.name] = readings["not_run"]
        observed.update((key, readings.get(key)) for key in check.observed)
    found = health.sort_findings(found)
    counts = count_findings(found)
    return {"findings": found, "counts": counts, "healthy": counts["critical"] == 0 and counts["warning"] == 0,
            "complete": not unreadable, "unreadable": unreadable, "not_run": not_run, "observed": observed,
            "domain": node.domain()}
