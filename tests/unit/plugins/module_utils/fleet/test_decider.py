"""The cluster's one decider, run for real: the remediator service (roles/remediator/files) over HTTP, the
nodes' health monitor reporting to it, a stand-in slurmctld (tests/stubs/fake_slurmctld.py: sinfo, sdiag and
scontrol over a nodes file) that can be slow, hang or print garbage, and the real webhook receiver."""

import json
import os
import threading
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider, decider_settings, k8s_nodes, protocol
from decider_world import ROOT, SECRET, STUBS, _load, kill_in_apply, node_monitor, receiver_module, service


def test_a_fleet_wide_alarm_at_the_same_second_drains_exactly_max_nodes(cluster):
    names = ["n%02d" % i for i in range(1, 17)]
    c = cluster(names)
    os.environ["STUB_SLURM_LATENCY"] = "0.5"  # slurmctld answers in 0.5 s, as in the issue
    for name in names:
        c.fault(name)
    out = c.all_at_once(names)
    assert len(c.drained()) == 1 and len(c.updates()) == 1
    drained = c.drained()[0]
    assert c.slurm()[drained]["reason"].startswith("gpufabric: gpu_xid %s/GPU 0000:18:00; policy policy-" % drained)
    assert c.slurm()[drained]["reason"].endswith("; via healthcheck")
    held = [n for n in names if any("held back" in line for line in out[n])]
    assert len(held) == 15, out
    assert all("rate limit: 1 node(s) of partition gpu already drained by gpufabric" in " ".join(out[n]) for n in held)
    # The second wave through the timer: still exactly one.
    c.all_at_once(names, mode="timer")
    assert len(c.updates()) == 1


def test_a_node_clock_an_hour_ahead_or_a_time_zone_east_changes_nothing(cluster):
    c = cluster(["n01", "n02", "n03"])
    os.environ["STUB_SLURM_CLOCK"] = "1795526184"  # slurmctld's clock
    for name in c.names:
        c.fault(name)
    c.run("n01", clock=lambda: time.time() + 3600)  # the node is an hour ahead
    os.environ["TZ"] = "Asia/Tokyo"
    try:
        time.tzset()
        c.run("n02")
        os.environ["STUB_SLURM_CLOCK"] = str(1795526184 + 1800)  # half an hour later by slurmctld
        c.run("n03", clock=lambda: time.time() + 7200)
    finally:
        os.environ.pop("TZ")
        time.tzset()
    assert c.drained() == ["n01"] and len(c.updates()) == 1
    # An hour and a second after the drain by slurmctld's clock, the next may go.
    os.environ["STUB_SLURM_CLOCK"] = str(1795526184 + 3601)
    c.run("n02")
    assert c.drained() == ["n01", "n02"]


def test_shadow_mode_acts_on_nothing_and_says_what_it_would_do(cluster):
    c = cluster(["n01", "n02", "n03"], mode="shadow")
    c.fault("n01")
    lines = c.run("n01", mode="timer")
    assert c.updates() == [] and c.drained() == []
    assert any("shadow mode, would have drained n01" in line for line in lines)
    (message,) = c.messages()
    assert (message["status"], message["host"], message["source"]) == ("shadow", "n01", "gpufabric.rdma.remediator")


def test_the_circuit_breaker_stops_every_action(cluster):
    c = cluster(["n01", "n02", "n03", "n04"], circuit_breaker={"max_percent": 50, "window": 300},
                rate_limit={"max_nodes": 4, "max_percent": 100})
    for name in ("n01", "n02", "n03"):
        c.fault(name)
    out = c.all_at_once(["n01", "n02", "n03"])
    assert c.updates() == []
    assert all("circuit breaker open: 75.0% of partition gpu unhealthy" in " ".join(out[n]) for n in out), out
    statuses = sorted(m["status"] for m in c.messages(2))
    assert statuses == ["breaker-open", "held"]


def test_a_drained_node_stays_drained_while_its_kernel_log_cannot_be_read(cluster):
    c = cluster(["n01", "n02", "n03"])
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"]
    log = c.tmp / "n01" / "kern.log"
    log.unlink()
    log.mkdir()  # the source cannot be read (journalctl hangs and dmesg is refused, the same: unknown)
    lines = c.run("n01")
    assert c.drained() == ["n01"]
    assert any("stays drained: the check could not read kernel log: kernel_log %s cannot be read" % log in line
               for line in lines), lines
    log.rmdir()
    log.write_text("")
    assert any("resumed n01" in line for line in c.run("n01"))
    assert c.drained() == []


def test_the_prolog_gate_refuses_only_a_node_the_decider_has_out_of_service(cluster):
    c = cluster(["n01", "n02", "n03"])
    c.fault("n01")
    c.fault("n02")
    errors = []
    assert node_monitor.gate(c.node_config("n01"), log=errors.append) == 1  # drained now, within the limit
    assert node_monitor.gate(c.node_config("n02"), log=errors.append) == 0  # held back: the job runs
    assert c.drained() == ["n01"] and "refusing the job" in errors[0]
    c.close()  # no decider: the job is not refused, and the log says why
    assert node_monitor.gate(c.node_config("n03"), log=errors.append) == 0
    assert "did not take the report" in errors[-1] and "the job is not refused" in errors[-1]


@pytest.mark.parametrize("mode, why", [
    ("hang", "sinfo: %s -h -N did not answer within 3 s"),
    ("garbage", "sinfo: sinfo line 1 is not 'node|partition|time|state|reason'"),
    ("fail:1:slurm_load_partitions: Unable to contact slurm controller (connect failure)",
     "sinfo: %s -h -N exited 1: slurm_load_partitions: Unable to contact slurm controller"),
])
def test_a_scheduler_that_hangs_or_prints_garbage_is_could_not_act(cluster, mode, why):
    c = cluster(["n01", "n02"])
    os.environ["STUB_SINFO_MODE"] = mode
    c.fault("n01")
    lines = c.run("n01")
    expected = why % os.path.join(str(c.tmp), "bin", "sinfo") if "%s" in why else why
    assert any(expected in line for line in lines), lines
    assert c.updates() == []
    c.run("n01")  # the same cause again: told once
    messages = [m for m in c.messages() if m["status"] == "could-not-act"]
    assert len(messages) == 1 and expected in messages[0]["detail"]
    os.environ.pop("STUB_SINFO_MODE")
    c.run("n01")
    assert c.drained() == ["n01"]  # the service lived on


def test_sdiag_refused_means_no_clock_and_no_action(cluster):
    c = cluster(["n01", "n02"])
    os.environ["STUB_SDIAG_MODE"] = "fail:1:sdiag: error: Access/permission denied"
    c.fault("n01")
    lines = c.run("n01")
    assert c.updates() == [] and any("sdiag gave no clock" in line for line in lines)


def test_escalation_keeps_a_flapping_node_out(cluster):
    c = cluster(["n01", "n02", "n03"], escalation={"max_remediations": 2, "days": 7},
                rate_limit={"max_nodes": 5, "max_percent": 100})
    for attempt in range(3):
        c.fault("n01")
        c.run("n01")
        assert c.drained() == ["n01"]
        c.fault("n01", False)
        c.run("n01")
    assert c.drained() == ["n01"]
    assert c.slurm()["n01"]["reason"].startswith("gpufabric: ESCALATED 3 drains in 7 d, a human must look")
    statuses = [m["status"] for m in c.messages(5)]
    assert statuses.count("escalated") == 1 and statuses.count("resumed") == 2


def test_reports_without_the_secret_or_replayed_are_refused(cluster):
    from ansible_collections.gpufabric.rdma.plugins.module_utils.node import webhook
    c = cluster(["n01", "n02"])
    c.fault("n01")
    assert webhook.send(c.url + "/v1/challenge", b"{}", {}).status == 401  # no nonce without the secret
    challenge = protocol.challenge_body("n01")
    nonce = json.loads(webhook.send(c.url + "/v1/challenge", challenge, protocol.report_headers(SECRET, challenge)).text)["nonce"]
    result = {"findings": [{"check": "gpu_xid", "severity": "critical", "target": "n01/GPU 0", "detail": "x",
                            "fix_hint": "x"}], "complete": True, "unreadable": []}
    body = protocol.report_body("n01", result, "timer", nonce)
    forged = webhook.send(c.url + "/v1/report", body, protocol.report_headers("another-secret-0123456789", body))
    assert forged.status == 401 and "signature does not match" in forged.text
    good = webhook.send(c.url + "/v1/report", body, protocol.report_headers(SECRET, body), deadline=20)
    assert good.status == 200 and json.loads(good.text)["decision"]["action"] == "drain"
    replay = webhook.send(c.url + "/v1/report", body, protocol.report_headers(SECRET, body))
    assert replay.status == 401 and "nonce is unknown, used, expired or another node's" in replay.text
    assert len(c.updates()) == 1
    # n02 cannot use a nonce issued to n01.
    nonce = json.loads(webhook.send(c.url + "/v1/challenge", challenge, protocol.report_headers(SECRET, challenge)).text)["nonce"]
    other = protocol.report_body("n02", result, "timer", nonce)
    assert webhook.send(c.url + "/v1/report", other, protocol.report_headers(SECRET, other)).status == 401


def test_a_batch_that_fails_is_answered_and_the_decider_lives_on(cluster, monkeypatch):
    from ansible_collections.gpufabric.rdma.plugins.module_utils.node import webhook
    from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation
    c = cluster(["n01", "n02"])
    real, calls = remediation.plan, []

    def broken_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise TypeError("'<' not supported between instances of 'str' and 'int'")
        return real(*args, **kwargs)
    monkeypatch.setattr(remediation, "plan", broken_once)
    c.fault("n01")
    lines = c.run("n01")
    assert any("could not act: the decider failed on this batch (TypeError" in line for line in lines), lines
    assert c.drained() == []
    health = webhook.send(c.url + "/v1/health", b"{}", {})  # POST is refused; the health endpoint is GET
    assert health.status == 404
    import urllib.request
    with urllib.request.urlopen(c.url + "/v1/health", timeout=5) as answer:
        state = json.loads(answer.read())
    assert state["ok"] and state["dead_threads"] == [] and "TypeError" in state["last_batch"]["error"]
    c.run("n01")
    assert c.drained() == ["n01"]  # the next batch is decided


def test_a_client_that_drips_its_request_is_cut_and_connections_are_bounded(cluster, monkeypatch):
    import socket
    monkeypatch.setattr(service, "READ_SECONDS", 2)
    c = cluster(["n01", "n02"])
    port = c.server.server_address[1]
    sock = socket.create_connection(("127.0.0.1", port))
    started = time.time()
    sock.sendall(b"POST /v1/report HTTP/1.1\r\nHost: x\r\n")
    sock.settimeout(30)
    try:
        while sock.recv(1):
            pass
    except OSError:
        pass
    assert time.time() - started < service.READ_SECONDS + 5  # cut by the watchdog, not held for ever
    sock.close()
    assert c.server.slots._value == service.MAX_CONNECTIONS or c.server.slots._value >= service.MAX_CONNECTIONS - 1


def test_a_fault_its_drain_and_its_resume_during_an_outage_are_all_delivered_afterwards_once_each(cluster):
    c = cluster(["n01", "n02", "n03"])
    port = c.receiver.server_address[1]
    c.receiver.shutdown()
    c.receiver.server_close()  # the webhook is down: connection refused

    def node_config():
        return c.node_config("n01", webhooks=[{"name": "events", "type": "generic", "url": c.base + "/generic/events"}])
    lines = []
    c.fault("n01")
    node_monitor.run_once(node_config(), log=lines.append, mode="timer")
    assert c.drained() == ["n01"]
    c.fault("n01", False)
    node_monitor.run_once(node_config(), log=lines.append, mode="timer")
    assert c.drained() == []
    assert any("could not send new" in line and "connection refused" in line for line in lines), lines
    time.sleep(1)  # the decider tried too, and failed
    assert any("webhook events (generic): could not send drained" in line for line in c.lines), c.lines

    c.receiver = receiver_module.serve({"bind": "127.0.0.1", "port": port, "log": str(c.received)})
    threading.Thread(target=c.receiver.serve_forever, daemon=True).start()
    node_monitor.run_once(node_config(), log=lines.append, mode="timer")
    got = c.messages(4)
    time.sleep(1)
    node_monitor.run_once(node_config(), log=lines.append, mode="timer")
    time.sleep(0.5)
    got = c.messages(4)
    assert sorted((m["source"].split(".")[-1], m["status"]) for m in got) == [
        ("health_monitor", "new"), ("health_monitor", "recovered"), ("remediator", "drained"), ("remediator", "resumed")]
    assert len(set(m["message_id"] for m in got)) == 4
    node_messages = [m for m in got if m["source"].endswith("health_monitor")]
    assert [m["status"] for m in node_messages] == ["new", "recovered"]  # in order
    assert all(m["queued_at"] and m["sent_at"] for m in got)


KUBE_SERVER = os.path.join(ROOT, "tests", "lab", "kube-api-standin", "server.py")


@pytest.fixture
def kube(tmp_path):
    """The Kubernetes API stand-in over the Nodes given, and a decider's configuration for it."""
    import subprocess
    import sys
    servers = []

    def start(nodes, **extra):
        (tmp_path / "nodes.json").write_text(json.dumps(nodes))
        portfile = tmp_path / "port"
        servers.append(subprocess.Popen([sys.executable, KUBE_SERVER, str(tmp_path / "nodes.json"),
                                         str(tmp_path / "requests.jsonl"), str(portfile)]))
        for attempt in range(100):
            if portfile.exists() and portfile.read_text():
                break
            time.sleep(0.05)
        (tmp_path / "kubeconfig").write_text(json.dumps({"clusters": [{"cluster": {
            "server": "http://127.0.0.1:%s" % portfile.read_text()}}]}))
        state_dir = tmp_path / "decider"
        state_dir.mkdir()
        return decider_settings.check_config(dict({
            "cluster": "lab", "name": "decider@k8s", "state_dir": str(state_dir), "secret": SECRET, "remediation": {
                "mode": "enforce", "policy": [{"severity": "critical", "action": "drain"}],
                "rate_limit": {"max_percent": 100}, "circuit_breaker": {"max_percent": 100},
                "certification": {"required": False},
                "kubernetes": {"enabled": True, "kubectl": os.path.join(STUBS, "fake_kubectl.py"),
                               "kubeconfig": str(tmp_path / "kubeconfig")}}}, **extra))
    yield start
    for server in servers:
        server.terminate()
        server.wait()


def test_on_kubernetes_the_decider_patches_only_what_is_ours_and_keeps_its_ledger_on_the_node(tmp_path, kube):
    other = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    config = kube([
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n01", "resourceVersion": "5", "annotations": {}},
         "spec": {"taints": [other]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n02", "resourceVersion": "5"}, "spec": {}}])
    report = {"node": "n01", "findings": [{"check": "gpu_xid", "severity": "critical", "target": "n01/GPU 0",
                                           "detail": "Xid 79", "fix_hint": "-"}], "complete": True,
              "unreadable": [], "source": "timer"}
    lines = []
    result = decider.decide({"n01": protocol.check_report(report)}, config, time.time, lines.append)
    assert result["decisions"][0]["done"] and result["decisions"][0]["out_of_service"], lines
    node = json.loads((tmp_path / "nodes.json").read_text())[0]
    assert node["spec"]["taints"] == [other, {"key": "gpufabric.io/unhealthy", "value": "gpu_xid",
                                              "effect": "NoSchedule"}]
    ledger = json.loads(node["metadata"]["annotations"]["gpufabric.io/remediation"])
    assert ledger["drains"][0]["by"] == "decider@k8s" and ledger["drains"][0]["findings"] == ["gpu_xid|n01/GPU 0"]
    # Another controller adds its taint before the recovery: only ours goes.
    stored = json.loads((tmp_path / "nodes.json").read_text())
    stored[0]["spec"]["taints"].insert(0, {"key": "example.com/maint", "effect": "NoExecute"})
    (tmp_path / "nodes.json").write_text(json.dumps(stored))
    clean = dict(report, findings=[])
    result = decider.decide({"n01": protocol.check_report(clean)}, config, time.time, lines.append)
    assert result["decisions"][0]["action"] == "resume" and result["decisions"][0]["done"], lines
    node = json.loads((tmp_path / "nodes.json").read_text())[0]
    assert node["spec"]["taints"] == [{"key": "example.com/maint", "effect": "NoExecute"}, other]
    assert node["spec"]["unschedulable"] is False
    # A reply of another shape from kubectl is 'could not act', never a traceback.
    (tmp_path / "nodes.json").write_text(json.dumps({"not": "a list"}))
    result = decider.decide({"n01": protocol.check_report(clean)}, config, time.time, lines.append)
    assert result["error"] and result["decisions"][0]["why"].startswith("could not act: kubectl get nodes")


def test_on_kubernetes_a_drain_patched_while_the_decider_died_is_told_after_the_restart(tmp_path, kube, monkeypatch):
    """Issue 53 fault 5 on Kubernetes: the patch (cordon, taint, and the ledger annotation without its open mark) went
    through and the decider died before it heard so. Before, the annotation's record replaced the open intent, so
    nothing confirmed it and the cordon was never told; now the intent stays open, is confirmed, and told once."""
    config = kube([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n01", "resourceVersion": "5"}, "spec": {}},
                   {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n02", "resourceVersion": "5"}, "spec": {}}],
                  webhooks=[{"name": "events", "type": "generic", "url": "http://127.0.0.1:9/events"}])
    report = {"node": "n01", "findings": [{"check": "gpu_xid", "severity": "critical", "target": "n01/GPU 0",
                                           "detail": "Xid 79", "fix_hint": "-"}], "complete": True,
              "unreadable": [], "source": "timer"}
    real_apply = kill_in_apply(monkeypatch, decider.Kubernetes, after=True)
    lines = []
    with pytest.raises(SystemExit):
        decider.decide({"n01": protocol.check_report(report)}, config, time.time, lines.append)
    assert json.loads((tmp_path / "nodes.json").read_text())[0]["spec"]["unschedulable"] is True
    monkeypatch.setattr(decider.Kubernetes, "apply", real_apply)
    for again in range(2):   # the next batches: told once
        decider.decide({"n02": protocol.check_report(dict(report, node="n02", findings=[]))}, config, time.time,
                       lines.append)
        with open(decider.outbox_path(config["state_dir"])) as handle:
            told = [m["body"] for m in json.load(handle)["outbox"].get("events", [])]
        assert [(m["status"], m["host"]) for m in told] == [("drained", "n01")], told
    assert told[0]["detail"].startswith("confirmed after the decider restarted: the API server cordoned and tainted n01 ")
    assert any("the drain of n01 recorded before the decider stopped was taken" in line for line in lines), lines


def test_on_kubernetes_a_resume_the_decider_died_in_is_told_if_patched_and_dropped_if_not(tmp_path, kube, monkeypatch):
    """Issue 53 on Kubernetes: a resume is an open intent like a drain. n01's patch (uncordon, taint removed, the
    annotation with the resume) went through and the decider died before it heard so; n02's decider died before the
    patch. Before, the annotation's record replaced the decider's own and a resume was never looked at again: n01 was
    back in service untold. Now n01's is confirmed and told once - even though the run that confirmed it (n02's) died
    too - and n02's is dropped, said, and spends nothing: n02 resumes on its next report."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"resourceVersion": "5"}, "spec": {}}
    config = kube([dict(node, metadata=dict(node["metadata"], name=n)) for n in ("n01", "n02", "n03")],
                  webhooks=[{"name": "events", "type": "generic", "url": "http://127.0.0.1:9/events"}])
    config["remediation"]["rate_limit"].update(max_nodes=5, max_resumes=2)
    lines = []

    def report(name, faulty):
        return {name: protocol.check_report({"node": name, "complete": True, "unreadable": [], "source": "timer",
                                             "findings": [{"check": "gpu_xid", "severity": "critical", "detail": "Xid 79",
                                                           "target": name + "/GPU 0", "fix_hint": "-"}] if faulty else []})}
    decider.decide(dict(report("n01", True), **report("n02", True)), config, time.time, lines.append)
    stored = dict((n["metadata"]["name"], n) for n in json.loads((tmp_path / "nodes.json").read_text()))
    assert stored["n01"]["spec"]["unschedulable"] and stored["n02"]["spec"]["unschedulable"], lines
    for name, patched in (("n01", True), ("n02", False)):   # n01 patched, then the decider dies; n02 dies first
        real_apply = kill_in_apply(monkeypatch, decider.Kubernetes, after=patched)
        with pytest.raises(SystemExit):
            decider.decide(report(name, False), config, time.time, lines.append)
        monkeypatch.setattr(decider.Kubernetes, "apply", real_apply)
    stored = dict((n["metadata"]["name"], n) for n in json.loads((tmp_path / "nodes.json").read_text()))
    assert stored["n01"]["spec"]["unschedulable"] is False and stored["n02"]["spec"]["unschedulable"] is True
    for again in range(2):   # the next batches: told once
        decider.decide(report("n03", False), config, time.time, lines.append)
        with open(decider.outbox_path(config["state_dir"])) as handle:
            told = [m["body"] for m in json.load(handle)["outbox"].get("events", []) if m["body"]["status"] == "resumed"]
        assert [m["host"] for m in told] == ["n01"], told
    assert told[0]["detail"].startswith("confirmed after the decider restarted: the API server uncordoned and untainted "
                                        "n01 (the resume was recorded")
    assert any("the resume of n02 recorded before the decider stopped never reached the scheduler" in line
               for line in lines), lines
    decision = decider.decide(report("n02", False), config, time.time, lines.append)["decisions"][0]
    assert decision["action"] == "resume" and decision["done"], (decision, lines)
    annotation = json.loads(json.loads((tmp_path / "nodes.json").read_text())[1]["metadata"]["annotations"][
        "gpufabric.io/remediation"])
    assert len(annotation["resumes"]) == 1 and "pending" not in annotation["resumes"][0], annotation


def test_a_json_patch_from_a_stale_read_fails_instead_of_removing_another_controllers_taint():
    """The race itself: our resume was planned from a read; another controller changed the taints since.
    The API server (its RFC 6902 semantics, as the stand-in applies them) refuses the whole patch."""
    from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import policy
    standin = _load("kube_api_standin", KUBE_SERVER)
    ours = {"key": "gpufabric.io/unhealthy", "value": "gpu_xid", "effect": "NoSchedule"}
    stale = {"metadata": {"name": "n01", "annotations": {policy.CORDON_ANNOTATION: "1"}},
             "spec": {"unschedulable": True, "taints": [{"key": "a"}, ours]}}
    decision = {"node": "n01", "action": "resume", "findings": [], "shadow": False}
    patch = k8s_nodes.k8s_json_patch(stale, decision, {"drains": [], "resumes": []}, 2)
    now = json.loads(json.dumps(stale))
    now["spec"]["taints"] = [ours, {"key": "b"}]  # our taint moved: index 1 is someone else's now
    with pytest.raises(standin.PatchFailed):
        standin.json_patch(now, patch)
    assert standin.json_patch(stale, patch)["spec"]["taints"] == [{"key": "a"}]


def _alertmanager(c, nodes, token, status="firing", full=False):
    """What Alertmanager posts to the decider's receiver: critical finding alerts of a group (``full``: with the labels,
    annotations and generatorURL a real alert of gpufabric's rules carries, about 630 bytes each)."""
    import urllib.request
    extra_labels = {"cluster": "lab", "instance": "%s:9100", "job": "node", "detail": "Xid 79: GPU has fallen off the bus",
                    "policy": "drain"} if full else {}
    extra = {"annotations": {"summary": "gpu_xid (critical)", "description": "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, "
                             "name=python, GPU has fallen off the bus.", "fix_hint": "drain the node; reseat or replace the "
                             "GPU if it stays missing after a reboot"},
             "generatorURL": "http://prometheus:9090/graph?g0.expr=gpufabric_finding%7Bseverity%3D%22critical%22%7D+%3D%3D+1"
                             "&g0.tab=1"} if full else {"annotations": {"summary": "gpu_xid (critical)"}}
    body = json.dumps({"version": "4", "status": status, "groupKey": "{}:{check=\"gpu_xid\"}", "receiver": "gpufabric-decider",
                       "groupLabels": {"check": "gpu_xid"}, "commonLabels": {},
                       "alerts": [dict({"status": status, "labels": dict({"alertname": "GpufabricFinding", "check": "gpu_xid",
                                                                          "severity": "critical", "Hostname": n,
                                                                          "target": "%s/GPU 0000:18:00" % n},
                                                                         **dict((k, v.replace("%s", n)) for k, v in extra_labels.items())),
                                        "startsAt": "2026-11-24T10:00:00Z", "endsAt": "", "fingerprint": n}, **extra)
                                  for n in nodes]}).encode()
    c.last_body_bytes = len(body)
    request = urllib.request.Request(c.url + "/v1/alertmanager", body, {"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_alertmanager_feeds_the_decider_within_the_same_limits_and_alerts_never_resume(cluster):
    c = cluster(["n01", "n02", "n03", "n04"])
    token = "alertmanager-token-0123456789"
    c.config["alertmanager_token"] = token  # the handler reads the live configuration
    assert _alertmanager(c, ["n01"], "wrong-token-0123456789")[0] == 401
    status, answer = _alertmanager(c, ["n01", "n02", "n03", "n04"], token)  # a fleet-wide alarm from Alertmanager
    assert status == 200 and answer["reports"] == 4
    assert len(c.drained()) == 1 and len(c.updates()) == 1  # rate limit max_nodes 1, as for the nodes' own reports
    drained = c.drained()[0]
    assert c.slurm()[drained]["reason"].endswith("; via alert")
    # The fault clears in Alertmanager: a resolved alert is no report; the drain holds until the node's own check.
    status, answer = _alertmanager(c, [drained], token, status="resolved")
    assert status == 200 and answer["reports"] == 0 and c.drained() == [drained]
    assert any("resumed %s" % drained in line for line in c.run(drained))
    assert c.drained() == []


def test_a_10000_node_notification_is_taken_and_decided_within_the_limits(cluster):
    """Alertmanager sends a group whole: 10,000 nodes' alerts are about 6.3 MB, over the 4 MiB a node's report may
    be (the decider used to refuse it mid-upload with 413 and log nothing). The rate limit still holds."""
    names = ["gpu%05d" % n for n in range(10000)]
    c = cluster(names[:4])
    token = "alertmanager-token-0123456789"
    c.config["alertmanager_token"] = token
    c.nodes_file.write_text(json.dumps(dict((n, {"partitions": ["gpu"], "state": "IDLE", "reason": None,
                                                 "reason_time": None}) for n in names)))
    status, answer = _alertmanager(c, names, token, full=True)
    assert c.last_body_bytes > 6000000   # over the 4 MiB a node's report may be
    assert status == 200 and answer["reports"] == 10000, answer
    assert len(c.drained()) == 1 and len(c.updates()) == 1   # max_nodes 1, as for the nodes' own reports


def test_json_nested_too_deep_is_refused_before_parsing_and_counted(cluster):
    import urllib.request
    c = cluster(["n01"])
    request = urllib.request.Request(c.url + "/v1/report", b"[" * 100000 + b"]" * 100000)
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=10)
    assert error.value.code == 400 and json.loads(error.value.read()) == {"error": "the JSON nests deeper than 64 levels"}
    with urllib.request.urlopen(c.url + "/v1/health", timeout=10) as answer:
        assert json.loads(answer.read())["refused"] == {"nesting": 1}
    assert any(line.startswith("refused /v1/report from 127.0.0.1: the JSON nests deeper") for line in c.lines)
