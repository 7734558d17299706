# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm job state from what sbatch and scontrol print: pure functions, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.report import render_table

# A job in one of these states will not change again (slurm.h job_states, plus the
# completing/requeue states left out on purpose: they still move).
TERMINAL_STATES = frozenset([
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT", "SPECIAL_EXIT",
])

# Pending reasons that no amount of waiting resolves: the request does not fit the partition or
# the account. Waiting for these until a timeout only hides the mistake.
NEVER_STARTS = {
    "PartitionNodeLimit": "the job asks for more (or fewer) nodes than the partition allows",
    "PartitionTimeLimit": "the job's time limit is above the partition's MaxTime",
    "PartitionConfig": ("the request does not fit the partition's configuration (more nodes than it has, "
                        "or an account, QOS or group it does not allow)"),
    "BadConstraints": "no node has the requested features or GRES",
    "InvalidAccount": "the job's account does not exist",
    "InvalidQOS": "the job's QOS does not exist or is not allowed",
    "PartitionDown": "the partition is DOWN",
    "PartitionInactive": "the partition is INACTIVE",
}

# "Key=" where Key starts a whitespace-separated field; values may hold "=" (TRES=cpu=4,...,
# paths such as /runs/A=900/job.slurm) and "Key" may hold ":" or "/" (AllocNode:Sid, CPUs/Task).
_FIELD = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_:/]*)=")


class SlurmParseError(ValueError):
    """The text is not what the Slurm command prints."""


def parse_job_record(text):
    """``scontrol show job [-o] <id>`` (one job, one line or many) -> {field: value}."""
    text = (text or "").strip()
    if not text.startswith("JobId="):
        raise SlurmParseError("not a scontrol job record: %r" % text[:120])
    # A record that spans lines is the same fields separated by newlines and indentation.
    flat = " ".join(line.strip() for line in text.splitlines() if line.strip())
    matches = list(_FIELD.finditer(flat))
    record = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(flat)
        record[match.group(1)] = flat[match.end():end].strip()
    return record


def parse_submit(text):
    """``sbatch --parsable`` -> (job_id, cluster or None); a federation prints "id;cluster"."""
    line = (text or "").strip().splitlines()[-1:] or [""]
    match = re.match(r"^(\d+)(?:;(\S+))?$", line[0].strip())
    if not match:
        raise SlurmParseError("sbatch --parsable printed no job id: %r" % (text or "")[:200])
    return match.group(1), match.group(2)


def _split_top(expression):
    """Split a hostlist on the commas that are outside brackets."""
    parts, depth, current = [], 0, ""
    for char in expression:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise SlurmParseError("unbalanced ']' in hostlist %r" % expression)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth:
        raise SlurmParseError("unbalanced '[' in hostlist %r" % expression)
    parts.append(current)
    return [p for p in parts if p]


def _expand_range(body, expression):
    """'01-03,7' -> ['01', '02', '03', '7'] keeping the zero padding of each range."""
    values = []
    for part in body.split(","):
        match = re.match(r"^(\d+)(?:-(\d+))?$", part)
        if not match:
            raise SlurmParseError("bad range %r in hostlist %r" % (part, expression))
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise SlurmParseError("range %r runs backwards in hostlist %r" % (part, expression))
        width = len(low) if low.startswith("0") else 0
        values.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return values


def expand_hostlist(expression):
    """Slurm hostlist -> host names, as ``scontrol show hostnames`` prints them.

    ``gpu-a[08-10],login`` -> gpu-a08, gpu-a09, gpu-a10, login; several bracket groups in one name
    (``rack[1-2]-n[1-2]``) expand to every combination, leftmost slowest.
    """
    hosts = []
    for name in _split_top((expression or "").strip()):
        expanded = [""]
        for piece in re.split(r"(\[[^\]]*\])", name):
            if piece.startswith("["):
                choices = _expand_range(piece[1:-1], expression)
                expanded = [prefix + choice for prefix in expanded for choice in choices]
            elif piece:
                expanded = [prefix + piece for prefix in expanded]
        hosts.extend(expanded)
    return hosts


def duration_seconds(text):
    """Slurm time ("[D-]HH:MM:SS", "MM:SS", "UNLIMITED") -> seconds, or None."""
    match = re.match(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$", (text or "").strip())
    if not match:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _none(value):
    return None if value in (None, "", "(null)", "None", "N/A", "Unknown") else value


def job_summary(record):
    """A parsed scontrol record -> the facts a playbook needs, with the reason a job never starts."""
    state = (record.get("JobState") or "UNKNOWN").split()[0]
    exit_code, signal = ((record.get("ExitCode") or "0:0") + ":0").split(":")[:2]
    node_list = _none(record.get("NodeList"))
    reason = _none(record.get("Reason"))
    return {
        "job_id": record.get("JobId"),
        "name": record.get("JobName"),
        "state": state,
        "reason": reason,
        "terminal": state in TERMINAL_STATES,
        "succeeded": state == "COMPLETED" and exit_code == "0",
        "never_starts": NEVER_STARTS.get(reason) if state == "PENDING" else None,
        "exit_code": int(exit_code) if exit_code.isdigit() else None,
        "signal": int(signal) if signal.isdigit() else None,
        "partition": _none(record.get("Partition")),
        "node_list": node_list,
        "nodes": expand_hostlist(node_list) if node_list else [],
        "batch_host": _none(record.get("BatchHost")),
        "num_nodes": int(record["NumNodes"]) if (record.get("NumNodes") or "").isdigit() else None,
        "num_tasks": int(record["NumTasks"]) if (record.get("NumTasks") or "").isdigit() else None,
        "run_time_s": duration_seconds(record.get("RunTime")),
        "time_limit": _none(record.get("TimeLimit")),
        "std_out": _none(record.get("StdOut")),
        "std_err": _none(record.get("StdErr")),
        "work_dir": _none(record.get("WorkDir")),
        "command": _none(record.get("Command")),
    }


SACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "NodeList", "Elapsed", "Partition")


def parse_sacct(text, job_id):
    """``sacct -j ID -X -n -P -o <SACCT_FIELDS>`` -> a record shaped like scontrol's, or None.

    For a job slurmctld has already forgotten (older than MinJobAge); "CANCELLED by 0" keeps
    its first word as the state.
    """
    for line in (text or "").splitlines():
        values = line.split("|")
        if len(values) != len(SACCT_FIELDS) or values[0] != str(job_id):
            continue
        record = dict(zip(("JobId", "JobName", "JobState", "ExitCode", "NodeList", "RunTime", "Partition"), values))
        record["JobState"] = record["JobState"].split()[0] if record["JobState"] else "UNKNOWN"
        return record
    return None


def job_runs(jobs):
    """Finished slurm_jobs entries -> runs for the nccl-tests judge.

    Each entry: {'name', 'job' (slurm_job's return), 'output'}; only jobs whose template is
    nccl_tests become runs (a torchrun job's output is not nccl-tests text).
    """
    runs = []
    for entry in jobs or []:
        if (entry.get("template") or "nccl_tests") != "nccl_tests":
            continue
        job = entry.get("job") or {}
        nodes = job.get("nodes") or []
        runs.append({
            "label": entry.get("label") or "slurm %s (job %s, %d nodes)" % (entry.get("name"), job.get("job_id"), len(nodes)),
            "host": ",".join(nodes),
            "mode": "slurm",
            "command": "sbatch %s" % (entry.get("script") or ""),
            "rc": job.get("exit_code"),
            "output": entry.get("output") or job.get("msg") or "",
        })
    return runs


JOBS_HEADER = ["job", "id", "template", "state", "exit", "nodes", "ran (s)"]


def _failure(entry, job):
    name = entry.get("name")
    if not job.get("job_id"):
        return "%s: not submitted: %s" % (name, job.get("msg") or "no reason given")
    if job.get("succeeded"):
        return None
    if job.get("msg"):
        return "%s: %s" % (name, job["msg"])
    return "%s: job %s ended %s (exit code %s, reason %s)" % (
        name, job["job_id"], job.get("state"), job.get("exit_code"), job.get("reason"))


def jobs_report(finished):
    """Finished jobs -> {'jobs' (without output), 'table', 'failures', 'files' {name: text}}."""
    rows, failures, jobs, files = [], [], [], {}
    for entry in finished or []:
        job = entry.get("job") or {}
        rows.append([entry.get("name"), job.get("job_id"), entry.get("template"), job.get("state"),
                     job.get("exit_code"), job.get("node_list"), job.get("run_time_s")])
        failure = _failure(entry, job)
        if failure:
            failures.append(failure)
        jobs.append(dict((k, v) for k, v in entry.items() if k != "output"))
        files["%s-%s.out" % (entry.get("name"), job.get("job_id") or "unsubmitted")] = entry.get("output") or ""
    return {"jobs": jobs, "table": render_table(JOBS_HEADER, rows), "failures": failures, "files": files}
