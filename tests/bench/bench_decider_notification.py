"""make bench: a 10,000-node Alertmanager notification through the real decider service.

Target (issue 35): Alertmanager's notification of a fleet-wide alarm - 10,000 critical alerts, each with the labels,
annotations and generatorURL gpufabric's rules give it, about 6.3 MB - reaches the decider (the remediator program
over HTTP on loopback, with the stand-in slurmctld of the unit tests), is decided within the rate limit (max_nodes
20: exactly 20 drains) and is answered in under 20 s (the decider's answer_within). Prints the body size and the
median and worst of 3 runs; a run that misses the target fails the bench.
"""

from __future__ import print_function

import json
import os
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "module_utils"))

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider_settings  # noqa: E402

NODES = 10000
MAX_NODES = 20
TARGET_SECONDS = 20.0
TOKEN = "alertmanager-token-0123456789"


def _load(name, path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notification(names):
    return json.dumps({"version": "4", "status": "firing", "groupKey": "{}:{check=\"gpu_xid\"}",
                       "receiver": "gpufabric-decider", "groupLabels": {"check": "gpu_xid"}, "commonLabels": {},
                       "alerts": [{"status": "firing",
                                   "labels": {"alertname": "GpufabricFinding", "check": "gpu_xid", "severity": "critical",
                                              "Hostname": n, "target": "%s/GPU 0000:18:00" % n, "cluster": "lab",
                                              "instance": "%s:9100" % n, "job": "node", "policy": "drain",
                                              "detail": "Xid 79: GPU has fallen off the bus"},
                                   "annotations": {"summary": "gpu_xid (critical)",
                                                   "description": "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
                                                                  "GPU has fallen off the bus.",
                                                   "fix_hint": "drain the node; reseat or replace the GPU if it stays "
                                                               "missing after a reboot"},
                                   "generatorURL": "http://prometheus:9090/graph?g0.expr=gpufabric_finding%7Bseverity%3D"
                                                   "%22critical%22%7D+%3D%3D+1&g0.tab=1",
                                   "startsAt": "2026-11-24T10:00:00Z", "endsAt": "", "fingerprint": n}
                                  for n in names]}).encode()


def run_once(service, names, body):
    tmp = tempfile.mkdtemp(prefix="gpufabric-bench-decider-")
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    for tool in ("sinfo", "sdiag", "scontrol"):
        os.symlink(os.path.join(ROOT, "tests", "stubs", "fake_slurmctld.py"), os.path.join(bindir, tool))
    nodes_file = os.path.join(tmp, "slurm-nodes.json")
    with open(nodes_file, "w") as handle:
        json.dump(dict((n, {"partitions": ["gpu"], "state": "IDLE", "reason": None, "reason_time": None}) for n in names),
                  handle)
    os.environ.update(STUB_SLURM_NODES=nodes_file, STUB_LOG=os.path.join(tmp, "stub.jsonl"))
    os.mkdir(os.path.join(tmp, "decider"))
    config = decider_settings.check_config({
        "cluster": "lab", "name": "decider@bench", "listen": "127.0.0.1", "port": 0, "secret": "s" * 32,
        "state_dir": os.path.join(tmp, "decider"), "webhooks": [], "batch_window": 0.2, "command_timeout": 30,
        "answer_within": TARGET_SECONDS, "alertmanager_token": TOKEN,
        "remediation": {"mode": "enforce", "policy": [{"severity": "critical", "action": "drain"}],
                        "rate_limit": {"max_nodes": MAX_NODES, "max_percent": 100, "interval": 3600},
                        "circuit_breaker": {"max_percent": 100},
                        "slurm": {"enabled": True, "sinfo": os.path.join(bindir, "sinfo"),
                                  "sdiag": os.path.join(bindir, "sdiag"), "scontrol": os.path.join(bindir, "scontrol")}}})
    server, stop, ignored = service.serve(config, log=lambda line: None)
    try:
        url = "http://127.0.0.1:%d/v1/alertmanager" % server.server_address[1]
        started = time.time()
        request = urllib.request.Request(url, body, {"Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(request, timeout=120) as answer:
            status, reply = answer.status, json.loads(answer.read())
        seconds = time.time() - started
        with open(nodes_file) as handle:
            drained = sum(1 for node in json.load(handle).values() if "DRAIN" in node["state"])
        return seconds, status, reply.get("reports"), drained
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def main():
    service = _load("gpufabric_remediator", os.path.join(ROOT, "roles", "remediator", "files", "gpufabric_remediator.py"))
    names = ["gpu%05d" % n for n in range(NODES)]
    body = notification(names)
    print("decider: one Alertmanager notification of %d critical alerts, %.1f MB, max_nodes %d"
          % (NODES, len(body) / 1e6, MAX_NODES))
    times, ok = [], True
    for attempt in range(3):
        seconds, status, reports, drained = run_once(service, names, body)
        times.append(seconds)
        print("  run %d: HTTP %s, %s reports decided, %d drained, %.2f s" % (attempt + 1, status, reports, drained, seconds))
        ok = ok and status == 200 and reports == NODES and drained == MAX_NODES and seconds < TARGET_SECONDS
    times.sort()
    print("  median %.2f s, worst %.2f s (target: under %.0f s, exactly %d drains): %s"
          % (times[1], times[-1], TARGET_SECONDS, MAX_NODES, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())
