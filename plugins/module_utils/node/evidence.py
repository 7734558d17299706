# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Evidence at the drain, collected on the node the decider just drained, before anyone reboots it: a bounded
tar.gz of what a person (or NVIDIA support) asks for first.

- ``findings.json``: what the check found (the report the decider drained on);
- ``kernel-log.txt``: the last 512 KiB of the kernel log the checks read (else ``journalctl -k``, else ``dmesg``);
- ``nvidia-smi-q.txt``: ``nvidia-smi -q``;
- ``rdma-ports.json``: every RDMA port's state, physical state, rate and counters (sysfs);
- ``nvidia-imex-ctl-N.json``: ``nvidia-imex-ctl -N -j`` (the IMEX domain's nodes and connectivity matrix), where a
  finding is IMEX's;
- ``dcgm.json``: the last DCGM result the node's check saw (its level, status, failing GPUs in DCGM's words);
- ``monitor-state.json``: the health monitor's own record (its last run, open events, counter history);
- ``nvidia-bug-report.log.gz``: ``nvidia-bug-report.sh --safe-mode``, given what is left of the time budget;
- ``manifest.json``: each item ``ok``, ``cut`` (at its size limit), ``not run`` (the tool is not there),
  ``timed out`` or ``failed``, with the tool's words.

Every command runs under the one Runner (killed with its children at its limit); the whole collection stays within
``budget`` seconds and the bundle within ``max_bytes`` (the bug report is left out first, and the manifest says so).
The drain never waits for any of it: the decider drained the node before it asked. Host access, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import shutil
import tarfile
import tempfile
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import files

KERNEL_TAIL = 512 * 1024
MEMBER_MAX = 8 * 1024 * 1024
DEFAULT_BUDGET = 45
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_PORTS = 256


def _tail(path, limit):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read(limit), size > limit
    except (IOError, OSError):
        return None, False


def _ports(sysfs_root):
    """{device/port: {state, phys_state, rate, link_layer, counters: {...}}} from sysfs, bounded."""
    base = os.path.join(sysfs_root or "/sys", "class", "infiniband")
    out = {}
    try:
        devices = sorted(os.listdir(base))
    except OSError:
        return out
    for device in devices:
        ports_dir = os.path.join(base, device, "ports")
        try:
            ports = sorted(os.listdir(ports_dir))
        except OSError:
            continue
        for port in ports:
            if len(out) >= MAX_PORTS:
                return out
            where = os.path.join(ports_dir, port)
            entry = dict((name, (files.read_text(os.path.join(where, name)) or "").strip() or None)
                         for name in ("state", "phys_state", "rate", "link_layer"))
            counters = {}
            for group in ("counters", "hw_counters"):
                try:
                    names = sorted(os.listdir(os.path.join(where, group)))[:200]
                except OSError:
                    continue
                for name in names:
                    value = (files.read_text(os.path.join(where, group, name)) or "").strip()
                    counters["%s/%s" % (group, name)] = value[:40]
            entry["counters"] = counters
            out["%s/%s" % (device, port)] = entry
    return out


class _Bundle(object):
    def __init__(self, budget, clock):
        self.members, self.manifest, self.clock = [], [], clock
        self.deadline = clock() + budget

    def left(self):
        return max(0.0, self.deadline - self.clock())

    def add(self, name, data, status="ok", detail=None):
        if data is not None and len(data) > MEMBER_MAX:
            data, status, detail = data[-MEMBER_MAX:], "cut", "the last %d bytes kept" % MEMBER_MAX
        if data is not None:
            self.members.append((name, data))
        self.manifest.append({"name": name, "status": status, "detail": detail, "bytes": len(data) if data is not None else 0})

    def command(self, name, runner, argv, limit):
        """Run argv for at most ``limit`` s (and never past the budget); add its output as ``name``."""
        if argv[0] is None:
            return self.add(name, None, "not run", "not installed")
        seconds = int(min(limit, self.left()))
        if seconds < 1:
            return self.add(name, None, "not run", "no time left in the budget")
        result = runner.run(argv, timeout=seconds)
        text = (result.stdout or "") + (("\n--- stderr ---\n" + result.stderr) if result.stderr else "")
        status = "ok" if result.ok else ("timed out" if result.timed_out else "failed")
        self.add(name, text.encode("utf-8", "replace"), status, None if result.ok else result.describe())
        return result

    def tarball(self, max_bytes, order):
        """The tar.gz; members in ``order`` are left out (last first) while it is larger than max_bytes."""
        dropped = []
        while True:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as tar:
                for name, data in self.members + [("manifest.json", json.dumps(self.manifest, indent=1).encode("utf-8"))]:
                    info = tarfile.TarInfo(name)
                    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
                    tar.addfile(info, io.BytesIO(data))
            data = buf.getvalue()
            candidates = [n for n in order if n in dict(self.members) and n not in dropped]
            if len(data) <= max_bytes or not candidates:
                return data, dropped, len(data) <= max_bytes
            name = candidates[0]
            dropped.append(name)
            self.members = [(n, d) for n, d in self.members if n != name]
            for entry in self.manifest:
                if entry["name"] == name:
                    entry.update(status="cut", detail="left out: the bundle would pass its %d-byte limit" % max_bytes)


def collect(checks, findings, runner, budget=DEFAULT_BUDGET, max_bytes=DEFAULT_MAX_BYTES, state_file=None, clock=time.time,
            dcgm=None):
    """-> (tar.gz bytes or None when even the manifest cannot fit, manifest). ``checks``: the node checks' settings
    (kernel_log, nvidia_smi_path, sysfs_root); ``findings``: the report's; ``dcgm``: the check's DCGM result, if any."""
    checks = checks or {}
    bundle = _Bundle(budget, clock)
    bundle.add("findings.json", json.dumps(findings, indent=1, sort_keys=True).encode("utf-8"))
    if checks.get("kernel_log"):
        data, cut = _tail(checks["kernel_log"], KERNEL_TAIL)
        bundle.add("kernel-log.txt", data, "cut" if cut else ("ok" if data is not None else "failed"),
                   "the last %d bytes of %s" % (KERNEL_TAIL, checks["kernel_log"]) if cut else
                   (None if data is not None else "%s cannot be read" % checks["kernel_log"]))
    else:
        journal = runner.which("journalctl")
        argv = [journal, "-k", "-b", "-n", "5000", "--no-pager", "-o", "short-iso"] if journal else [runner.which("dmesg")]
        bundle.command("kernel-log.txt", runner, argv, 10)
    smi = checks.get("nvidia_smi_path") or runner.which("nvidia-smi")
    bundle.command("nvidia-smi-q.txt", runner, [smi, "-q"], 20)
    bundle.add("rdma-ports.json", json.dumps(_ports(checks.get("sysfs_root")), indent=1, sort_keys=True).encode("utf-8"))
    if any(str(f.get("check", "")).startswith("imex") for f in findings or ()):   # the IMEX domain's matrix
        bundle.command("nvidia-imex-ctl-N.json", runner,
                       [checks.get("imex_ctl_path") or runner.which("nvidia-imex-ctl"), "-N", "-j"], 20)
    if dcgm:
        bundle.add("dcgm.json", json.dumps(dcgm, indent=1, sort_keys=True).encode("utf-8"))
    else:
        bundle.add("dcgm.json", None, "not run", "the node's check runs no DCGM diagnostic (checks dcgm_level unset)")
    if state_file:
        data, cut = _tail(state_file, MEMBER_MAX)
        bundle.add("monitor-state.json", data, "ok" if data is not None else "failed",
                   None if data is not None else "%s cannot be read" % state_file)
    report = runner.which("nvidia-bug-report.sh")
    if report is None:
        bundle.add("nvidia-bug-report.log.gz", None, "not run", "nvidia-bug-report.sh is not installed (NVIDIA driver)")
    else:
        scratch = tempfile.mkdtemp(prefix="gpufabric-evidence-")
        try:
            result = bundle.command("nvidia-bug-report.out", runner, [report, "--safe-mode", "--output-file",
                                                                      os.path.join(scratch, "nvidia-bug-report.log")],
                                    bundle.left())
            made = os.path.join(scratch, "nvidia-bug-report.log.gz")
            if result is not None and os.path.exists(made):
                data, cut = _tail(made, MEMBER_MAX)
                bundle.add("nvidia-bug-report.log.gz", data, "cut" if cut else "ok",
                           "larger than %d bytes: its end kept, not a valid gzip" % MEMBER_MAX if cut else None)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    data, ignored, fits = bundle.tarball(max_bytes, ["nvidia-bug-report.log.gz", "monitor-state.json", "nvidia-smi-q.txt",
                                                     "kernel-log.txt", "nvidia-bug-report.out", "rdma-ports.json"])
    return (data if fits else None), bundle.manifest


def manifest_line(manifest):
    """'kernel-log.txt ok, nvidia-smi-q.txt timed out (...)' for the log."""
    return ", ".join("%s %s" % (e["name"], e["status"]) for e in manifest)
