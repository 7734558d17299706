#!/usr/bin/env python
"""A stand-in slurmctld for the remediation decider's tests: run as sinfo, sdiag or scontrol (a link with
that name). It keeps the nodes in $STUB_SLURM_NODES (JSON {name: {partitions, state, reason, reason_time}})
and answers as Slurm 22.05 does with SLURM_TIME_FORMAT=%s (the shapes captured from a real slurmctld,
tests/unit/fixtures/slurm/README.md):

  sinfo -h -N -o '%N|%P|%H|%T|%E'    one line per node and partition
  sdiag                              'sdiag output at <date> (<epoch>)' - the controller's clock
  scontrol show node -o NAME         the one-line node record
  scontrol update NodeName=N State=DRAIN Reason=R | State=RESUME

The controller's clock is $STUB_SLURM_CLOCK (epoch seconds; default the real clock). Misbehaviour, per
tool (NAME upper-cased): STUB_<NAME>_MODE=hang (never answers, with a child), garbage (plausible nonsense,
exit 0), fail:RC:TEXT; STUB_SLURM_LATENCY=SECONDS delays every answer (a slow slurmctld);
STUB_SCONTROL_UPDATE_FAIL=TEXT makes only `scontrol update` fail (exit 1, TEXT on stderr), as slurmctld refusing it.
Every call is appended to $STUB_LOG as one JSON line {"tool", "argv", "at"}.
"""

import fcntl
import json
import os
import subprocess
import sys
import time


def _clock():
    return int(os.environ.get("STUB_SLURM_CLOCK") or time.time())


def _load(handle):
    handle.seek(0)
    return json.loads(handle.read() or "{}")


def _save(handle, nodes):
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(nodes, sort_keys=True))


def _show(name, node):
    reason = " Reason=%s [root@%s]" % (node["reason"], node["reason_time"]) if node.get("reason") else ""
    return ("NodeName=%s Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=2 CPUTot=2 State=%s ThreadsPerCore=1 "
            "Partitions=%s BootTime=1795520885%s" % (name, node["state"], ",".join(node["partitions"]), reason))


def main():
    tool = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    if os.environ.get("STUB_LOG"):
        with open(os.environ["STUB_LOG"], "a") as log:
            log.write(json.dumps({"tool": tool, "argv": args, "at": time.time()}) + "\n")
    mode = os.environ.get("STUB_%s_MODE" % tool.upper(), "")
    if mode == "hang":
        subprocess.Popen(["sleep", "3600"])
        time.sleep(3600)
    if mode == "garbage":
        sys.stdout.write("slurm_load_node: Zero Bytes were transmitted or received\n|||\n\x1b[31mnode?\n")
        return 0
    if mode.startswith("fail:"):
        rc, _sep, text = mode[5:].partition(":")
        sys.stderr.write(text + "\n")
        return int(rc)
    time.sleep(float(os.environ.get("STUB_SLURM_LATENCY") or 0))
    with open(os.environ["STUB_SLURM_NODES"], "r+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # slurmctld serialises updates
        nodes = _load(handle)
        if tool == "sdiag":
            now = _clock()
            sys.stdout.write("*******************************************************\n"
                             "sdiag output at %s (%d)\nData since      %s (%d)\n"
                             "*******************************************************\nServer thread count:  3\n"
                             % (time.ctime(now), now, time.ctime(now - 100), now - 100))
            return 0
        if tool == "sinfo":
            for name in sorted(nodes):
                node = nodes[name]
                state = "drained" if "DRAIN" in node["state"] else node["state"].split("+")[0].lower()
                for index, partition in enumerate(node["partitions"]):
                    sys.stdout.write("%s|%s|%s|%s|%s\n" % (name, partition + ("*" if index == 0 else ""),
                                                           node.get("reason_time") or "Unknown", state,
                                                           node.get("reason") or "none"))
            return 0
        if tool == "scontrol" and args[:2] == ["show", "node"]:
            name = args[-1]
            if name not in nodes:
                sys.stderr.write("Node %s not found\n" % name)
                return 1
            sys.stdout.write(_show(name, nodes[name]) + "\n")
            return 0
        if tool == "scontrol" and args[:1] == ["update"] and os.environ.get("STUB_SCONTROL_UPDATE_FAIL"):
            sys.stderr.write(os.environ["STUB_SCONTROL_UPDATE_FAIL"] + "\n")
            return 1
        if tool == "scontrol" and args[:1] == ["update"]:
            fields = dict(arg.split("=", 1) for arg in args[1:])
            node = nodes.get(fields.get("NodeName"))
            if node is None:
                sys.stderr.write("scontrol: error: Invalid node name specified\n")
                return 1
            if fields.get("State") == "DRAIN":
                node.update(state="IDLE+DRAIN", reason=fields.get("Reason"), reason_time=_clock())
            elif fields.get("State") == "RESUME":
                node.update(state="IDLE", reason=None, reason_time=None)
            _save(handle, nodes)
            return 0
    sys.stderr.write("%s: not simulated: %s\n" % (tool, " ".join(args)))
    return 2


if __name__ == "__main__":
    sys.exit(main())
