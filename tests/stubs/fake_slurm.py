#!/usr/bin/env python
"""A stand-in Slurm for unit tests: run as sbatch, scontrol, sacct or scancel (a link with that name).

Every call is appended to $STUB_LOG as one JSON line {"tool", "argv"}, so a test can prove that check
mode submitted and cancelled nothing. Jobs live in $STUB_SLURM_DIR/jobs.json. sbatch gives each job
the state in $STUB_SLURM_STATE (default RUNNING) and its reason in $STUB_SLURM_REASON; scancel makes
it CANCELLED. STUB_<TOOL>_MODE=hang makes that tool hang (with a child), like slurmctld not answering.
The records are shaped like the real `scontrol show job -o` of Slurm 22.05 (fixtures/slurm/).
"""

import json
import os
import subprocess
import sys
import time

RECORD = ("JobId={id} JobName={name} UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 Account=(null) "
          "QOS=(null) JobState={state} Reason={reason} Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
          "ExitCode={exit} RunTime=00:00:05 TimeLimit=01:00:00 TimeMin=N/A Partition=comp NodeList={nodes} "
          "BatchHost={batch} NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 Command={script} WorkDir=/tmp "
          "StdErr=/tmp/{name}-{id}.out StdIn=/dev/null StdOut=/tmp/{name}-{id}.out")


def _jobs_path():
    return os.path.join(os.environ["STUB_SLURM_DIR"], "jobs.json")


def _load():
    try:
        with open(_jobs_path()) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return {}


def _save(jobs):
    with open(_jobs_path(), "w") as handle:
        json.dump(jobs, handle)


def main():
    tool = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    if os.environ.get("STUB_LOG"):
        with open(os.environ["STUB_LOG"], "a") as log:
            log.write(json.dumps({"tool": tool, "argv": args}) + "\n")
    if os.environ.get("STUB_%s_MODE" % tool.upper()) == "hang":
        subprocess.Popen(["sleep", "3600"])
        time.sleep(3600)
    jobs = _load()
    if tool == "sbatch":
        script = args[-1]
        job_id = str(1000 + len(jobs))
        jobs[job_id] = {"name": os.path.basename(script).split(".")[0], "script": script,
                        "state": os.environ.get("STUB_SLURM_STATE", "RUNNING"),
                        "reason": os.environ.get("STUB_SLURM_REASON", "None")}
        _save(jobs)
        print(job_id)
        return 0
    if tool == "scontrol" and args[:2] == ["show", "job"]:
        job = jobs.get(args[-1])
        if job is None:
            sys.stderr.write("slurm_load_jobs error: Invalid job id specified\n")
            return 1
        print(RECORD.format(id=args[-1], name=job["name"], state=job["state"], reason=job["reason"],
                            exit="0:15" if job["state"] == "CANCELLED" else "0:0", script=job["script"],
                            nodes="node[1-2]" if job["state"] != "PENDING" else "(null)",
                            batch="node1" if job["state"] != "PENDING" else "(null)"))
        return 0
    if tool == "scancel":
        for job_id in args:
            if job_id in jobs:
                jobs[job_id]["state"] = "CANCELLED"
        _save(jobs)
        return 0
    if tool == "sacct":
        sys.stderr.write("sacct: error: Slurm accounting storage is disabled\n")
        return 1
    sys.stderr.write("%s: not simulated: %s\n" % (tool, " ".join(args)))
    return 2


if __name__ == "__main__":
    sys.exit(main())
