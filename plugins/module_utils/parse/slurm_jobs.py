# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Slurm job state from what sbatch, scontrol and sacct print: job records, submit lines, job ids,
hostlist expressions and times; and the slurm_jobs role's jobs: the fields that cannot go into an sbatch
script, the runs the nccl-tests judge reads from finished jobs, and their report. Pure functions,
standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ddp
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.report import render_table

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
    text = _text.clean(text, "scontrol output").strip()
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


# Slurm job ids are uint32; 0, NO_VAL (0xfffffffe) and INFINITE (0xffffffff) are never a job's
# (a federated job's id carries its cluster in the top bits, so ids above MaxJobId are real).
MAX_JOB_ID = 0xfffffffd
_JOB_ID_RE = re.compile(r"^[0-9]{1,10}\Z")


def check_job_id(value, name="job_id"):
    """A Slurm job id as text ('4711'), or ValueError naming the value: ASCII digits only (str.isdigit()
    also takes '²' and int() takes '٤٧'), from 1 to MAX_JOB_ID."""
    if not isinstance(value, str) or not _JOB_ID_RE.match(value) or not 1 <= int(value) <= MAX_JOB_ID:
        raise ValueError("%s must be a Slurm job id, a whole number from 1 to %d in ASCII digits, got %r"
                         % (name, MAX_JOB_ID, value if not isinstance(value, str) else value[:40]))
    return value


def parse_submit(text):
    """``sbatch --parsable`` -> (job_id, cluster or None); a federation prints "id;cluster"."""
    line = _text.clean(text, "sbatch output").strip().splitlines()[-1:] or [""]
    match = re.match(r"^([0-9]{1,10})(?:;(\S+))?$", line[0].strip())
    if not match or not 1 <= int(match.group(1)) <= MAX_JOB_ID:
        raise SlurmParseError("sbatch --parsable printed no job id: %r" % (text or "")[:200])
    return match.group(1), match.group(2)


def _split_top(expression):
    """Split a hostlist on the commas that are outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(expression):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise SlurmParseError("unbalanced ']' in hostlist %r" % _short(expression))
        elif char == "," and depth == 0:
            parts.append(expression[start:index])
            start = index + 1
    if depth:
        raise SlurmParseError("unbalanced '[' in hostlist %r" % _short(expression))
    parts.append(expression[start:])
    return [p for p in parts if p]


# No cluster has more nodes than this; a hostlist naming more is a typo ("n[1-1000000]"), not a job.
MAX_HOSTS = 100000


def _short(expression):
    return expression if len(expression) <= 80 else expression[:77] + "..."


def _ranges(body, expression):
    """'01-03,7' -> [('01', 1, 3), ('7', 7, 7)]: (low as written, low, high)."""
    ranges = []
    for part in body.split(","):
        match = re.match(r"^([0-9]{1,18})(?:-([0-9]{1,18}))?$", part)
        if not match:
            raise SlurmParseError("bad range %r in hostlist %r" % (part[:40], _short(expression)))
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise SlurmParseError("range %r runs backwards in hostlist %r" % (part, _short(expression)))
        ranges.append((low, int(low), int(high)))
    return ranges


def _expand_ranges(ranges):
    """[('01', 1, 3), ('7', 7, 7)] -> ['01', '02', '03', '7'], keeping the zero padding of each range."""
    values = []
    for written, low, high in ranges:
        width = len(written) if written.startswith("0") else 0
        values.extend(str(n).zfill(width) for n in range(low, high + 1))
    return values


def expand_hostlist(expression):
    """Slurm hostlist -> host names, as ``scontrol show hostnames`` prints them.

    ``gpu-a[08-10],login`` -> gpu-a08, gpu-a09, gpu-a10, login; several bracket groups in one name
    (``rack[1-2]-n[1-2]``) expand to every combination, leftmost slowest.
    """
    expression = _text.clean(expression, "hostlist").strip()
    names = []
    total = 0
    for name in _split_top(expression):
        pieces = [(piece, _ranges(piece[1:-1], expression) if piece.startswith("[") else None)
                  for piece in re.split(r"(\[[^\]]*\])", name) if piece]
        count = 1
        for piece, ranges in pieces:
            if ranges is not None:
                count *= sum(high - low + 1 for written, low, high in ranges)
        total += count
        if total > MAX_HOSTS:
            raise SlurmParseError("hostlist %r names more than %d hosts: refusing to expand it"
                                  % (_short(expression), MAX_HOSTS))
        names.append(pieces)
    hosts = []
    for pieces in names:
        expanded = [""]
        for piece, ranges in pieces:
            if ranges is not None:
                choices = _expand_ranges(ranges)
                expanded = [prefix + choice for prefix in expanded for choice in choices]
            else:
                expanded = [prefix + piece for prefix in expanded]
        hosts.extend(expanded)
    return hosts


def _count(text):
    """A whole number as Slurm prints one ('4', '0') -> int; None for anything else: ASCII digits only
    (str.isdigit() also takes '²', which int() refuses) and few enough for int() (no 5,000-digit value)."""
    text = (text or "").strip()
    return int(text) if re.match(r"^[0-9]{1,18}\Z", text) else None


def duration_seconds(text):
    """Slurm time ("[D-]HH:MM:SS", "MM:SS", "UNLIMITED") -> seconds, or None."""
    match = re.match(r"^(?:([0-9]{1,9})-)?(?:([0-9]{1,9}):)?([0-9]{1,9}):([0-9]{1,9})$", (text or "").strip())
    if not match:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _none(value):
    # sacct prints "None assigned" as the NodeList of a job that never got nodes.
    return None if value in (None, "", "(null)", "None", "N/A", "Unknown", "None assigned") else value


def job_summary(record):
    """A parsed scontrol record -> the facts a playbook needs, with the reason a job never starts."""
    state = (record.get("JobState") or "UNKNOWN").split()[0]
    exit_code, signal = ((record.get("ExitCode") or "0:0") + ":0").split(":")[:2]
    node_list = _none(record.get("NodeList"))
    reason = _none(record.get("Reason"))
    try:
        nodes = expand_hostlist(node_list) if node_list else []
    except SlurmParseError as exc:
        raise SlurmParseError("job %s: NodeList is not a Slurm hostlist: %s" % (_short(str(record.get("JobId"))), exc))
    return {
        "job_id": record.get("JobId"),
        "name": record.get("JobName"),
        "state": state,
        "reason": reason,
        "terminal": state in TERMINAL_STATES,
        "succeeded": state == "COMPLETED" and exit_code == "0",
        "never_starts": NEVER_STARTS.get(reason) if state == "PENDING" else None,
        "exit_code": _count(exit_code),
        "signal": _count(signal),
        "partition": _none(record.get("Partition")),
        "node_list": node_list,
        "nodes": nodes,
        "batch_host": _none(record.get("BatchHost")),
        "num_nodes": _count(record.get("NumNodes")),
        "num_tasks": _count(record.get("NumTasks")),
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
    for line in _text.clean_lines(text, "sacct output"):
        values = line.split("|")
        if len(values) != len(SACCT_FIELDS) or values[0] != str(job_id):
            continue
        record = dict(zip(("JobId", "JobName", "JobState", "ExitCode", "NodeList", "RunTime", "Partition"), values))
        record["JobState"] = record["JobState"].split()[0] if record["JobState"] else "UNKNOWN"
        return record
    return None


# Job fields that land on one line of the sbatch script (an #SBATCH directive, an export, a command).
_ONE_LINE_FIELDS = ("partition", "time_limit", "output_dir", "cuda_home", "mpi_home", "nccl_home",
                    "nccl_tests_binary", "nccl_tests_args", "torchrun", "torchrun_script", "torchrun_args",
                    "cpus_per_task", "nodes", "gpus_per_node", "ntasks_per_node", "master_port")
_LIST_FIELDS = ("directives", "mpirun_args", "srun_args")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def job_problems(job):
    """Sentences naming each field of a slurm_jobs job that cannot be written into its sbatch script
    (a newline or a control character would start a second line; an env name must be a name)."""
    name = job.get("name") if isinstance(job.get("name"), str) else "(no name)"
    where = "job %s" % name[:60]
    problems = []

    def check(field, value):
        if value is None or isinstance(value, (bool, int, float)):
            return
        if not isinstance(value, str):
            problems.append("%s: %s must be text, got %s" % (where, field, type(value).__name__))
            return
        problem = _text.describe_unsafe(value)
        if problem:
            problems.append("%s: %s %s" % (where, field, problem))

    check("name", job.get("name"))
    for field in _ONE_LINE_FIELDS:
        check(field, job.get(field))
    for field in _LIST_FIELDS:
        values = job.get(field)
        if values is None:
            continue
        if not isinstance(values, list):
            problems.append("%s: %s must be a list, got %s" % (where, field, type(values).__name__))
            continue
        for index, value in enumerate(values):
            check("%s[%d]" % (field, index), value)
    env = job.get("env")
    if isinstance(env, dict):
        for key in sorted(env, key=str):
            if not isinstance(key, str) or not _ENV_NAME_RE.match(key):
                problems.append("%s: env name %r is not an environment variable name" % (where, key))
            elif isinstance(env[key], (dict, list)):
                problems.append("%s: env.%s must be a string or a number" % (where, key))
            else:
                check("env.%s" % key, env[key])
    return problems


def job_errors(jobs):
    """Every field of every slurm_jobs job that cannot go into an sbatch script, as sentences naming job and
    field (job_problems of each, in order); [] when all can be written."""
    return [problem for job in jobs for problem in job_problems(job)]


def _job_nodes(name, nodes):
    """A job's nodes as a list of names: slurm_job's list, or a Slurm hostlist (a NodeList) expanded;
    ValueError naming the job and the value for anything else."""
    if nodes is None:
        return []
    if isinstance(nodes, str):
        try:
            return expand_hostlist(nodes)
        except SlurmParseError as exc:
            raise SlurmParseError("slurm job %s: nodes is not a Slurm hostlist: %s" % (name, exc))
    if not isinstance(nodes, (list, tuple)) or not all(isinstance(node, str) for node in nodes):
        raise ValueError("slurm job %s: nodes must be a list of host names (slurm_job's nodes) or a Slurm "
                         "hostlist, got %s" % (name, _short(repr(nodes))))
    return list(nodes)


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
        if not isinstance(job, dict):
            raise ValueError("slurm job %s: job must be slurm_job's result (a mapping), got %r"
                             % (entry.get("name"), _short(str(job))))
        nodes = _job_nodes(entry.get("name"), job.get("nodes"))
        runs.append({
            "label": entry.get("label") or "slurm %s (job %s, %d nodes)" % (entry.get("name"), job.get("job_id"), len(nodes)),
            "host": ",".join(nodes),
            "mode": "slurm",
            "command": "sbatch %s" % (entry.get("script") or ""),
            "rc": job.get("exit_code"),
            "output": entry.get("output") or "",
            # A job that was never submitted (check mode, sbatch refused it) did not run: say why.
            "not_run": None if job.get("job_id") else (job.get("msg") or "not submitted"),
            "env": entry.get("env") if isinstance(entry.get("env"), dict) else {},
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
    """Finished jobs -> {'jobs' (without output), 'table', 'failures', 'files' {name: text}, 'ddp' {name: totals}}.

    A torchrun job that printed the DDP benchmark's lines (ddp_benchmark.py) gets its totals in 'ddp'.
    """
    rows, failures, jobs, files, ddp_totals = [], [], [], {}, {}
    for entry in finished or []:
        job = entry.get("job") or {}
        rows.append([entry.get("name"), job.get("job_id"), entry.get("template"), job.get("state"),
                     job.get("exit_code"), job.get("node_list"), job.get("run_time_s")])
        failure = _failure(entry, job)
        if failure:
            failures.append(failure)
        jobs.append(dict((k, v) for k, v in entry.items() if k != "output"))
        files["%s-%s.out" % (entry.get("name"), job.get("job_id") or "unsubmitted")] = entry.get("output") or ""
        if entry.get("template") == "torchrun" and "gpufabric-ddp" in (entry.get("output") or ""):
            try:
                parsed = ddp.parse(entry.get("output"))
                ddp_totals[entry.get("name")] = dict(parsed["total"], allreduce=parsed["allreduce"])
            except ddp.DdpParseError:
                pass
    return {"jobs": jobs, "table": render_table(JOBS_HEADER, rows), "failures": failures, "files": files,
            "ddp": ddp_totals}
