"""A fabric-wide incident through the real Alertmanager: how many messages reach a DingTalk robot per minute.

    python tests/bench/bench_alert_scale.py [--nodes 1000] [--seconds 130]

Starts Debian's Alertmanager (build/tools/bin/alertmanager, `make prometheus-tools`) with the routes of
alerts.alertmanager_config, the alert relay and the test receiver (which checks DingTalk's signature), posts
every node's alert at once - the same port fault on every node, and a second fault on a tenth of them, with host
names that compress (gpu0001...) and, in a second round, names that do not - and counts what the receiver gets
in each minute. Today's direct posts are one message per node and finding (the health monitor's own webhooks):
the same incident is that many posts. Exits 1 when a minute holds more than the relay's 20 messages or a node
is not named.
"""

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import alerts

SECRET = "SECbench-dingtalk-secret-0001"


def _load(name, *path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _post(url, data):
    request = urllib.request.Request(url, json.dumps(data).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status


def run(nodes, seconds, names, work):
    receiver_module = _load("receiver", "tests", "lab", "webhook-receiver", "receiver.py")
    relay = _load("relay", "roles", "fleet_monitoring", "files", "gpufabric_alert_relay.py")
    log = os.path.join(work, "received.jsonl")
    receiver = receiver_module.serve({"bind": "127.0.0.1", "port": 0, "log": log, "secrets": {"dingtalk": SECRET}})
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook = {"name": "ding", "type": "dingtalk", "insecure_http": True, "secret": SECRET,
            "url": "http://127.0.0.1:%d/dingtalk/robot/send?access_token=bench" % receiver.server_address[1]}
    os.makedirs(os.path.join(work, "relay"))
    config = alerts.check_relay_config({"cluster": "bench", "port": 0, "state_dir": os.path.join(work, "relay"),
                                        "webhooks": [hook], "deliver_interval": 1})
    server, stop, threads = relay.serve(config, log=lambda line: None)
    relay_url = "http://127.0.0.1:%d" % server.server_address[1]
    am_config = alerts.alertmanager_config(["ding"], relay_url, "bench", group_wait="30s", group_interval="5m")
    with open(os.path.join(work, "alertmanager.yml"), "w") as handle:
        yaml.safe_dump(am_config, handle)
    argv = [os.path.join(ROOT, "build", "tools", "bin", "alertmanager"),
            "--config.file=" + os.path.join(work, "alertmanager.yml"),
            "--storage.path=" + os.path.join(work, "am"), "--web.listen-address=127.0.0.1:19093", "--cluster.listen-address="]
    if not os.path.exists("/usr/share/prometheus/alertmanager/default.tmpl"):
        # Debian's build reads its templates from there: mount our copy (fetch-tools.sh) for this process alone.
        share = os.path.join(ROOT, "build", "tools", "share")
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                'mount --bind "$0" /usr/share && exec "$@"', share] + argv
    am = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "alertmanager.log"), "w"))
    try:
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:19093/-/ready", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit("alertmanager did not start")
                time.sleep(0.3)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        batch = []
        for index, name in enumerate(names):
            checks = ["rdma_port_state"] + (["gpu_xid"] if index % 10 == 0 else [])
            for check in checks:
                batch.append({"labels": {"alertname": "GpufabricFinding", "source": "gpufabric", "cluster": "bench",
                                         "check": check, "severity": "critical", "Hostname": name,
                                         "target": "%s/mlx5_%d/1" % (name, index % 8) if check != "gpu_xid"
                                         else "%s/GPU 0000:18:00" % name},
                              "annotations": {"summary": "%s (critical)" % check}, "startsAt": now})
        started = time.time()
        assert _post("http://127.0.0.1:19093/api/v2/alerts", batch) == 200
        time.sleep(seconds)
        got = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
        minutes = {}
        named = set()
        for record in got:
            minute = int((record["at"] - started) // 60)
            minutes[minute] = minutes.get(minute, 0) + 1
            for line in record["json"]["text"]["content"].splitlines():
                if line.startswith("- "):
                    named |= set(slurm_jobs.expand_hostlist(line[2:].split(": ", 1)[0]))
        return {"alerts": len(batch), "nodes": nodes, "direct_posts_today": len(batch), "messages": len(got),
                "per_minute": [minutes.get(m, 0) for m in range(max(minutes) + 1)] if minutes else [],
                "first_after_s": round(min(r["at"] for r in got) - started, 1) if got else None,
                "all_signed": all(r["verified"] for r in got),
                "largest_message_bytes": max(len(r["json"]["text"]["content"].encode()) for r in got) if got else 0,
                "every_node_named": named == set(names)}
    finally:
        am.terminate()
        am.wait(10)
        stop.set()
        server.shutdown()
        server.server_close()
        receiver.shutdown()
        receiver.server_close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=130)
    args = parser.parse_args()
    failed = False
    for kind, names in (("compressible names (gpu0001...)", ["gpu%04d" % i for i in range(1, args.nodes + 1)]),
                        ("names that do not compress", ["node-%s" % hashlib.sha256(str(i).encode()).hexdigest()[:8]
                                                        for i in range(args.nodes)])):
        work = tempfile.mkdtemp(prefix="gpufabric-alert-scale-")
        try:
            result = run(args.nodes, args.seconds, names, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print("%s: %s" % (kind, json.dumps(result, sort_keys=True)))
        failed |= not result["every_node_named"] or not result["all_signed"] or max(result["per_minute"] or [99]) > 20
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
