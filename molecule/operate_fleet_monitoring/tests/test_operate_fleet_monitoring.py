"""Fleet monitoring end to end with the real engines: the health monitor on two nodes writes metrics, Debian's
node_exporter serves them, Debian's Prometheus evaluates gpufabric's rules, Debian's Alertmanager groups and routes
them, the relay signs them like a DingTalk robot's client and a real receiver checks the signature.

The tests run in order; each waits (bounded) for the engines' own intervals: scrape and evaluation 5 s, group_wait
15 s (more than the skew of two targets' scrapes and evaluations), group_interval 20 s, the monitor's timer
15 s (both monitors are also started at once after each change).
"""

import json
import os
import subprocess
import sys
import time

import yaml

testinfra_hosts = ["gpufabric-fm-monitor"]

MONITOR = "gpufabric-fm-monitor"
NODES = ["gpufabric-fm-node1", "gpufabric-fm-node2"]
SCENARIO = os.environ.get("MOLECULE_SCENARIO_DIRECTORY", os.path.dirname(os.path.dirname(__file__)))
ROOT = os.path.abspath(os.path.join(SCENARIO, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs  # noqa: E402

with open(os.path.join(SCENARIO, "vars", "fleet.yml")) as handle:
    SETTINGS = yaml.safe_load(handle)
XID_79 = ("2026-11-24T10:00:00+00:00 {node} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
          "GPU has fallen off the bus.\n")
GET = ("import json, sys, urllib.request, urllib.parse\n"
       "url = sys.argv[1] + ('?' + urllib.parse.urlencode({'query': sys.argv[2]}) if len(sys.argv) > 2 else '')\n"
       "print(urllib.request.urlopen(url, timeout=20).read().decode())\n")
SEEN = {"count": 0}


def _exec(container, *argv, **kw):
    return subprocess.run(["docker", "exec", "-i", container] + list(argv), capture_output=True, text=True,
                          timeout=120, check=False, **kw)


def _get(url, query=None):
    result = _exec(MONITOR, "python3", "-c", GET, url, *([query] if query is not None else []))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _query(expr):
    answer = _get("http://127.0.0.1:9090/api/v1/query", expr)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def _received():
    out = _exec(MONITOR, "cat", "/var/lib/receiver/received.jsonl").stdout
    return [json.loads(line) for line in out.splitlines()]


def _new():
    everything = _received()
    new = everything[SEEN["count"]:]
    SEEN["count"] = len(everything)
    return new


def _until(what, probe, seconds=120):
    deadline = time.time() + seconds
    while True:
        value = probe()
        if value:
            return value
        assert time.time() < deadline, "waited %d s for %s" % (seconds, what)
        time.sleep(2)


def _text(record):
    return record["json"]["text"]["content"]


def _set_kernel_log(text):
    """The same change on both nodes, then both monitors run at once (as a fabric-wide fault arrives)."""
    for node in NODES:
        result = _exec(node, "sh", "-c", "cat > /var/log/gpufabric-test/kern.log", input=text.format(node=node))
        assert result.returncode == 0
    runs = [subprocess.Popen(["docker", "exec", node, "systemctl", "start", "gpufabric-health-monitor.service"])
            for node in NODES]
    for run in runs:
        run.wait(120)


def _messages_about(check):
    return [r for r in _new() if r["kind"] == "dingtalk" and ": %s (" % check in _text(r).splitlines()[0]]


def test_the_engines_run_our_configuration(host):
    rules = _get("http://127.0.0.1:9090/api/v1/rules")["data"]["groups"]
    assert sorted(g["name"] for g in rules) == ["gpufabric.alerts", "gpufabric.records", "gpufabric.validation"]
    targets = _get("http://127.0.0.1:9090/api/v1/targets")["data"]["activeTargets"]
    _until("both node_exporters up", lambda: len(_query('up{job="node"} == 1')) == 2, 60)
    assert sorted(t["labels"]["instance"] for t in targets) == ["gpufabric-fm-node1:9100", "gpufabric-fm-node2:9100"]
    status = _get("http://127.0.0.1:9093/api/v2/status")
    assert "gpufabric-chat" in status["config"]["original"] and "GpufabricNodeDown" in status["config"]["original"]
    # The relay listens on loopback only, and nobody else has the webhook's URL or secret.
    assert host.socket("tcp://127.0.0.1:9095").is_listening and not host.socket("tcp://0.0.0.0:9095").is_listening
    assert "tok-dingtalk" not in host.file("/etc/prometheus/alertmanager.yml").content_string
    assert host.file("/etc/gpufabric-alert-relay/config.json").mode == 0o600
    _new()


def test_each_node_serves_its_checks_health_through_node_exporter(host):
    up = _until("both monitors' metrics", lambda: [r for r in _query("gpufabric_health_check_up") if r["value"][1] == "1"]
                if len(_query("gpufabric_health_check_up")) == 2 else None, 90)
    assert sorted(r["metric"]["Hostname"] for r in up) == NODES
    assert {r["metric"]["cluster"] for r in up} == {SETTINGS["fleet_cluster"]}
    interval = _query("gpufabric_health_check_interval_seconds")
    assert {r["value"][1] for r in interval} == {str(SETTINGS["fleet_interval"])}
    assert len(_query('node_textfile_mtime_seconds{file=~".*gpufabric_health[.]prom"}')) == 2
    assert _query("gpufabric_finding") == []


def test_a_fault_on_both_nodes_is_one_series_each_one_alert_group_and_one_signed_message(host):
    _set_kernel_log(XID_79)

    def both():
        found = _query('gpufabric_finding{check="gpu_xid"} == 1')
        return found if len(found) == 2 else None
    series = _until("a gpu_xid series per node", both, 90)
    assert sorted(r["metric"]["Hostname"] for r in series) == NODES
    assert {r["metric"]["pci_bus_id"] for r in series} == {"00000000:18:00.0"}
    assert len(_query('gpufabric_finding == 1')) == 2  # nothing else is wrong on them
    message = _until("the grouped message", lambda: _messages_about("gpu_xid") or None, 120)
    time.sleep(25)  # more than a group_interval (20 s): nothing else may come
    message += _messages_about("gpu_xid")
    assert len(message) == 1, [_text(r) for r in message]
    assert message[0]["verified"] is True and message[0]["status"] == 200
    lines = _text(message[0]).splitlines()
    assert lines[0] == "[gpufabric] FIRING: gpu_xid (critical) on gpufabric-fm-node[1-2] in cluster %s" % SETTINGS["fleet_cluster"]
    assert "- gpufabric-fm-node[1-2]: GPU 0000:18:00: gpu_xid (critical)" in lines
    groups = _get("http://127.0.0.1:9093/api/v2/alerts/groups")
    ours = [g for g in groups if g["labels"].get("check") == "gpu_xid"]
    assert len(ours) == 1 and len(ours[0]["alerts"]) == 2


def test_every_dashboard_panel_query_returns_series(host):
    with open(os.path.join(ROOT, "roles", "fleet_monitoring", "files", "gpufabric-dashboard.json")) as handle:
        dashboard = json.load(handle)
    empty = []
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$cluster", ".*")
            if not _until("panel %r" % panel["title"], lambda: _query(expr) or None, 60):
                empty.append(panel["title"])
    assert empty == []


def test_clearing_the_fault_sends_one_resolved_message(host):
    """The group turns resolved once: one RESOLVED message. When Prometheus sees the two nodes clear in different
    evaluations and Alertmanager's group_interval falls between them, the first is an update (still FIRING, its
    node under "Resolved"); every node is named resolved either way."""
    _set_kernel_log("")
    got = []

    def resolved():
        got.extend(_messages_about("gpu_xid"))
        return [r for r in got if _text(r).startswith("[gpufabric] RESOLVED: ")] or None
    _until("the resolved message", resolved, 120)
    time.sleep(25)
    got.extend(_messages_about("gpu_xid"))
    finals = [r for r in got if _text(r).startswith("[gpufabric] RESOLVED: gpu_xid (critical) on ")]
    assert len(finals) == 1 and len(got) <= 2, [_text(r) for r in got]
    assert all(r["verified"] is True for r in got)
    named = set()
    for record in got:
        section = _text(record).split("Resolved (", 1)[1].split("\nSince:", 1)[0] if "Resolved (" in _text(record) else ""
        for line in section.splitlines()[1:]:
            if line.startswith("- "):
                named |= set(slurm_jobs.expand_hostlist(line[2:].split(": ", 1)[0]))
    assert named == set(NODES)
    assert _query('gpufabric_finding == 1') == []


def test_a_stopped_monitor_becomes_a_stale_exporter_alert(host):
    assert _exec(NODES[0], "systemctl", "stop", "gpufabric-health-monitor.timer").returncode == 0
    try:
        firing = _until("the stale alert", lambda: _query('ALERTS{alertname="GpufabricHealthCheckStale",alertstate="firing"}'),
                        150)
        assert [r["metric"]["Hostname"] for r in firing] == [NODES[0]]  # the other monitor runs on
        message = _until("the stale message", lambda: _messages_about("exporter_stale") or None, 90)
        assert _text(message[0]).splitlines()[0].startswith(
            "[gpufabric] FIRING: exporter_stale (warning) on gpufabric-fm-node1")
    finally:
        _exec(NODES[0], "systemctl", "start", "gpufabric-health-monitor.timer")


POST_1000 = """
import json, sys, urllib.request, datetime
cluster = sys.argv[1]
now = datetime.datetime.utcnow()
ends = (now + datetime.timedelta(minutes=15)).strftime('%Y-%m-%dT%H:%M:%SZ')
alerts = [{"labels": {"alertname": "GpufabricFinding", "source": "gpufabric", "cluster": cluster,
                      "check": "scale_port_down", "severity": "critical", "Hostname": "scale-node%04d" % i,
                      "target": "scale-node%04d/mlx5_0/1" % i},
           "annotations": {"summary": "scale_port_down (critical)"}, "startsAt": now.strftime('%Y-%m-%dT%H:%M:%SZ'),
           "endsAt": ends} for i in range(1, 1001)]
request = urllib.request.Request("http://127.0.0.1:9093/api/v2/alerts", json.dumps(alerts).encode(),
                                 {"Content-Type": "application/json"})
print(urllib.request.urlopen(request, timeout=30).status)
"""


def test_a_fabric_wide_incident_of_1000_nodes_stays_within_a_dingtalk_robots_20_a_minute(host):
    """1,000 nodes' alerts into the real Alertmanager at once; what reaches the receiver in the next 45 s (a new
    group: group_wait 15 s; tests/bench/bench_alert_scale.py watches two minutes)."""
    _new()
    started = time.time()
    cluster = "scale-%d" % started  # a new alert group, whatever an earlier run left in Alertmanager
    assert _exec(MONITOR, "python3", "-c", POST_1000, cluster).stdout.strip() == "200"
    arrivals = []
    while time.time() - started < 45:
        for record in _new():
            if record["kind"] == "dingtalk" and "scale_port_down" in _text(record):
                arrivals.append((time.time() - started, record))
        time.sleep(1)
    assert arrivals, "no message within 45 s"
    per_minute = max(sum(1 for t, r in arrivals if start <= t < start + 60) for start, ignored in arrivals)
    named = set()
    for ignored, record in arrivals:
        for line in _text(record).splitlines():
            if line.startswith("- "):
                named |= set(slurm_jobs.expand_hostlist(line[2:].split(": ", 1)[0]))
    assert all(r["verified"] for t, r in arrivals)
    assert named == set("scale-node%04d" % i for i in range(1, 1001))
    assert per_minute <= SETTINGS.get("max_per_minute", 20)
    report = {"alerts": 1000, "messages": len(arrivals), "max_per_minute": per_minute,
              "first_after_s": round(arrivals[0][0], 1), "bytes": [len(_text(r).encode()) for t, r in arrivals],
              "direct_posts_today": 1000}
    out = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/tmp"), "alert-scale.json")
    with open(out, "w") as handle:
        json.dump(report, handle)
    print("alert scale: %s" % json.dumps(report))
