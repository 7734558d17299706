"""Runs the nccl_tune role's measurements on a node: NCCL's defaults and each candidate setting,
interleaved (default, candidate, default, candidate, ...), repeated, per collective, within a time
budget. Every run is one nccl-tests process with a timeout (its process group is killed when it runs
out). Standard library only.

    python3 nccl_tune_runner.py PLAN.json RESULT.json

PLAN: {"bin_dir", "mode": "single"|"mpirun", "gpus", "mpirun": [argv prefix up to the binary, mpirun
mode], "collectives": [...], "args": [...], "base_env": {...}, "candidates": [{"name", "env"}],
"repeats", "budget_s", "timeout_s", "progress": path}. RESULT: {"runs": [{collective, candidate,
repeat, rc, seconds, stdout, stderr, env}], "skipped": n, "elapsed_s"}. Progress lines go to the
progress file and to stdout as each run ends.
"""

import json
import os
import signal
import subprocess
import sys
import time


def run_one(argv, env, timeout):
    started = time.time()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = 124
        err = (err or b"") + (b"\nnccl_tune_runner: killed after %d s" % timeout)
    return rc, time.time() - started, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def order(plan):
    """(collective, candidate name, env, repeat) in the order they run: each candidate next to a default."""
    for repeat in range(plan["repeats"]):
        for collective in plan["collectives"]:
            for candidate in plan["candidates"]:
                yield collective, "default", {}, repeat
                yield collective, candidate["name"], candidate["env"], repeat


def main(argv):
    with open(argv[0]) as handle:
        plan = json.load(handle)
    deadline = time.time() + plan["budget_s"]
    started = time.time()
    steps = list(order(plan))
    runs, skipped = [], 0
    progress = open(plan["progress"], "a") if plan.get("progress") else None
    for index, (collective, name, extra, repeat) in enumerate(steps):
        if time.time() > deadline:
            skipped = len(steps) - index
            break
        env = dict(os.environ)
        env.update(plan.get("base_env") or {})
        env.update(extra)
        binary = os.path.join(plan["bin_dir"], collective + "_perf")
        if plan["mode"] == "mpirun":
            argv_run = list(plan["mpirun"]) + [a for k in sorted(set(plan.get("base_env") or {}) | set(extra))
                                               for a in ("-x", k)] + [binary] + plan["args"] + ["-g", "1"]
        else:
            argv_run = [binary] + plan["args"] + ["-g", str(plan["gpus"])]
        rc, seconds, out, err = run_one(argv_run, env, plan["timeout_s"])
        runs.append({"collective": collective, "candidate": name, "repeat": repeat, "rc": rc, "seconds": round(seconds, 2),
                     "stdout": out, "stderr": err[-4000:], "env": extra})
        line = "%d/%d %s %s repeat %d: rc %d in %.1f s" % (index + 1, len(steps), collective, name, repeat + 1, rc, seconds)
        print(line, flush=True)
        if progress:
            progress.write(line + "\n")
            progress.flush()
    with open(argv[1], "w") as handle:
        json.dump({"runs": runs, "skipped": skipped, "elapsed_s": round(time.time() - started, 1)}, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
