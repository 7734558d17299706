# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The NCCL Inspector's dumps of a running job on this node, read in bounded memory, and the GPU each of the job's
processes computes on (nvidia-smi), for the straggler judge (parse/nccl_inspector.py, judge/stragglers.py).

The plugin writes into its dump directory one ``<host>-pid<pid>.log`` per process (JSON lines, growing for the whole
job) or one ``nccl_inspector_metrics_<uuid>.prom`` per GPU (rewritten at each dump). Each file is read from its end,
at most ``max_bytes`` of it (the latest collectives are what a running job is judged by; the first line of a cut is
left out whole), at most ``max_files`` files, newest first. Host access: files and commands, every command with a
time limit (node/commands.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import files as _files
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as _gpu
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_inspector

_JSON_NAME_RE = re.compile(r"^(.{1,255})-pid([0-9]{1,10})\.(?:log|jsonl)$")
_PROM_NAME_RE = re.compile(r"^nccl_inspector_metrics_.{1,128}\.prom$")
MAX_BYTES = 8 << 20
MAX_FILES = 256


def dump_files(path, pids=None, max_files=MAX_FILES):
    """The Inspector's files in ``path``: ([{name, path, size, mtime, pid}] newest first, how many were left out by
    max_files). ``pids``: only the JSON files of those processes. OSError when the directory cannot be listed."""
    found = []
    wanted = set(int(p) for p in pids) if pids else None
    for entry in os.listdir(path):
        json_name = _JSON_NAME_RE.match(entry)
        if not json_name and not _PROM_NAME_RE.match(entry):
            continue
        pid = int(json_name.group(2)) if json_name else None
        if wanted is not None and json_name and pid not in wanted:
            continue
        full = os.path.join(path, entry)
        try:
            info = os.stat(full)
        except OSError:
            continue   # gone since listed: the plugin unlinks its textfiles when a job ends
        found.append({"name": entry, "path": full, "size": info.st_size, "mtime": int(info.st_mtime), "pid": pid})
    found.sort(key=lambda f: (-f["mtime"], f["name"]))
    return found[:max_files], max(0, len(found) - max_files)


def read_dumps(found, collector, max_bytes=MAX_BYTES, job=None):
    """Each file's last max_bytes (a cut first line dropped) into the collector, one file in memory at a time ->
    a row per file {name, size, read_bytes, cut, error}."""
    rows = []
    for item in found:
        row = {"name": item["name"], "size": item["size"], "read_bytes": 0, "cut": False}
        try:
            raw, size, cut = _files.read_tail(item["path"], max_bytes)
        except (IOError, OSError, _files.Refused) as exc:
            row["error"] = str(getattr(exc, "strerror", None) or exc)
            rows.append(row)
            continue
        if cut:
            newline = raw.find(b"\n")
            raw = raw[newline + 1:] if newline >= 0 else b""
        row.update(size=size, read_bytes=len(raw), cut=cut)
        rows.append(row)
        nccl_inspector.read_file(collector, item["name"], raw, job)
    return rows


def process_gpus(runner, nvidia_smi="nvidia-smi"):
    """({pid: {index, bus_id}}, None) from nvidia-smi, or ({}, why not): the GPU each process of the node computes
    on. In a container the Inspector writes the container's pid, nvidia-smi the host's: then none match, said by
    the caller."""
    binary = runner.which(nvidia_smi)
    if binary is None:
        return {}, "%s not found: the GPU of each process is unknown" % nvidia_smi
    apps = runner.run([binary, "--query-compute-apps=pid,gpu_bus_id", "--format=csv,noheader"])
    if apps.rc != 0 or apps.timed_out:
        return {}, apps.describe()
    gpus = runner.run([binary, "--query-gpu=index,pci.bus_id", "--format=csv,noheader"])
    if gpus.rc != 0 or gpus.timed_out:
        return {}, gpus.describe()
    return _gpu.parse_process_gpus(apps.stdout, gpus.stdout), None


def read_job(path, runner=None, job=None, pids=None, max_bytes=MAX_BYTES, max_files=MAX_FILES, limits=None,
             nvidia_smi="nvidia-smi"):
    """Everything the module returns: {read, msg, path, files, files_left_out, hostnames, parsed, processes,
    placement_problem}. Not read (read false, why in msg) when the directory is missing or cannot be listed."""
    result = {"read": False, "path": path, "files": [], "files_left_out": 0, "hostnames": [], "parsed": None,
              "processes": {}, "placement_problem": None}
    if not os.path.isdir(path):
        result["msg"] = ("no Inspector dump directory %s: the job did not run with the Inspector on this node "
                         "(NCCL_INSPECTOR_DUMP_DIR), or it is written elsewhere" % path)
        return result
    try:
        found, result["files_left_out"] = dump_files(path, pids, max_files)
    except OSError as exc:
        result["msg"] = "cannot list %s: %s" % (path, exc.strerror or exc)
        return result
    collector = nccl_inspector.Collector(limits)
    result["files"] = read_dumps(found, collector, max_bytes, job)
    contents = [row for row in result["files"] if "error" not in row]
    if found and not contents:
        result["msg"] = "none of the %d Inspector file(s) in %s could be read: %s" % (len(found), path, "; ".join(
            "%s: %s" % (row["name"], row["error"]) for row in result["files"][:3]))
        return result
    try:
        parsed = nccl_inspector.finish(collector) if found else collector.result()
    except nccl_inspector.InspectorError as exc:
        result["msg"] = "the files in %s are not the Inspector's: %s" % (path, exc)
        return result
    result.update(read=True, parsed=parsed, hostnames=sorted(set(
        r.get("host") for c in parsed["communicators"] for r in c["ranks"] if r.get("host")) | set(
        b.get("node") for b in parsed["buckets"] if b.get("node"))))
    records = parsed["counts"]["records"] + parsed["counts"]["prom_samples"]
    result["msg"] = "%d file(s) read in %s: %d record(s)%s" % (
        len(contents), path, records, "" if records else " (no dump yet)")
    if runner is not None and contents:
        processes, result["placement_problem"] = process_gpus(runner, nvidia_smi)
        result["processes"] = dict((str(pid), gpu) for pid, gpu in processes.items())
        pids_seen = set(r.get("pid") for c in parsed["communicators"] for r in c["ranks"] if r.get("pid"))
        if pids_seen and processes and not pids_seen & set(processes):
            result["placement_problem"] = ("none of the job's processes (%s) is one nvidia-smi lists: in a container "
                                           "the Inspector writes the container's pid" % ", ".join(
                                               str(p) for p in sorted(pids_seen)[:4]))
    return result
