"""Alertmanager's notifications: one grouped message naming every node, queued once, signed by the relay like the
health monitor signs (a real relay, a real receiver), and reports for the decider that can drain, never resume."""

import importlib.util
import json
import os
import threading
import time
import urllib.request

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import alerts, messages, settings
from paths import ROOT


def _load(name, *path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


relay = _load("gpufabric_alert_relay", "roles", "fleet_monitoring", "files", "gpufabric_alert_relay.py")


def alert(node, status="firing", check="rdma_port_state", severity="critical", target=None, ends="0001-01-01T00:00:00Z"):
    return {"status": status, "labels": {"alertname": "GpufabricFinding", "cluster": "c1", "Hostname": node, "check": check,
                                         "severity": severity, "target": target or "%s/mlx5_0/1" % node, "source": "gpufabric"},
            "annotations": {"summary": "%s (%s)" % (check, severity), "fix_hint": "check the cable"},
            "startsAt": "2026-11-24T10:00:00Z", "endsAt": ends, "fingerprint": "fp-%s-%s" % (node, check)}


def notification(alert_list, status=None, check="rdma_port_state"):
    return {"version": "4", "status": status or ("firing" if any(a["status"] == "firing" for a in alert_list) else "resolved"),
            "receiver": "gpufabric-chat", "groupKey": '{}/{source="gpufabric"}:{check="%s", cluster="c1"}' % check,
            "groupLabels": {"check": check, "cluster": "c1"}, "commonLabels": {}, "alerts": alert_list}


NODES = ["gpu%04d" % i for i in range(1, 1001)]


def test_with_names_that_do_not_compress_every_message_stays_within_a_dingtalk_robots_20000_bytes():
    import hashlib
    names = ["node-%s" % hashlib.sha256(str(i).encode()).hexdigest()[:8] for i in range(1000)]
    payload = alerts.check_payload(notification([alert(n, target="%s/mlx5_%d/1" % (n, i % 8)) for i, n in enumerate(names)]))
    bodies = alerts.group_bodies(payload, "c1", 1800000000.0)
    assert [len(messages.text_message(b).encode()) <= alerts.MAX_TEXT_BYTES for b in bodies] == [True] * len(bodies)
    assert set().union(*[set(b["nodes"]) for b in bodies]) == set(names) and len(bodies) == 2


def test_a_fabric_wide_fault_on_1000_nodes_is_one_message_naming_every_node():
    payload = alerts.check_payload(notification([alert(n) for n in NODES]))
    bodies = alerts.group_bodies(payload, "fallback", 1800000000.0)
    assert len(bodies) == 1
    text = messages.text_message(bodies[0])
    assert text.splitlines()[0] == "[gpufabric] FIRING: rdma_port_state (critical) on gpu[0001-1000] in cluster c1"
    assert "- gpu[0001-1000]: mlx5_0/1: rdma_port_state (critical)" in text.splitlines()
    assert sorted(slurm_jobs.expand_hostlist(bodies[0]["host"])) == NODES


def test_nodes_with_different_ports_are_listed_by_port_and_parts_name_every_node():
    import hashlib
    names = ["node-%s" % hashlib.sha256(str(i).encode()).hexdigest()[:10] for i in range(600)]  # names that do not compress
    payload = alerts.check_payload(notification([alert(n, target="%s/mlx5_%d/1" % (n, i % 3)) for i, n in enumerate(names)]))
    bodies = alerts.group_bodies(payload, "c1", 1800000000.0, max_text=3000)
    assert len(bodies) > 1 and [b["part"] for b in bodies] == list(range(1, len(bodies) + 1))
    named = set()
    for body in bodies:
        text = messages.text_message(body)
        assert len(body["lines"]) and "part %d of %d" % (body["part"], len(bodies)) in text.splitlines()[0]
        assert len(text.encode()) <= 3000  # the whole message, heading and ids included
        assert text.splitlines()[0].startswith("[gpufabric] FIRING: rdma_port_state (critical) on %d nodes (named below)"
                                               % len(body["nodes"]))
        named |= set(slurm_jobs.expand_hostlist(body["host"]))
    assert named == set(names)
    assert len(set(b["event_id"] for b in bodies)) == 1 and len(set(b["message_id"] for b in bodies)) == len(bodies)


def test_the_same_notification_sent_again_is_queued_once_and_a_resolve_is_new():
    state = alerts.empty_state()
    firing = alerts.check_payload(notification([alert("n1"), alert("n2")]))
    assert alerts.accept(state, firing, ["ding"], "c1", 1000.0) == 1
    assert alerts.accept(state, firing, ["ding"], "c1", 1010.0) == 0
    resolved = alerts.check_payload(notification([alert("n1", "resolved", ends="2026-11-24T10:05:00Z"),
                                                  alert("n2", "resolved", ends="2026-11-24T10:06:00Z")]))
    assert alerts.accept(state, resolved, ["ding"], "c1", 1020.0) == 1
    waiting = state["outbox"]["ding"]
    assert [m["body"]["status"] for m in waiting] == ["firing", "resolved"]
    assert waiting[1]["body"]["cleared_at"] == "2026-11-24T10:06:00Z"
    assert waiting[0]["body"]["event_id"] == waiting[1]["body"]["event_id"]
    assert messages.text_message(waiting[1]["body"]).startswith("[gpufabric] RESOLVED: rdma_port_state (critical) on n[1-2]")


@pytest.mark.parametrize("data, message", [
    ([], "the notification must be a JSON object"),
    ({"alerts": []}, "alerts must be a list of 1 to 100000 alerts"),
    ({"alerts": [{"status": "pending"}]}, "alerts[0] needs a status of firing or resolved"),
    ({"alerts": [{"status": "firing", "labels": {"a": 1}}]}, "alerts[0].labels must be an object of strings"),
])
def test_what_is_not_alertmanagers_payload_is_refused_naming_it(data, message):
    with pytest.raises(alerts.AlertError) as error:
        alerts.check_payload(data)
    assert str(error.value) == message


def test_alerts_feed_the_decider_reports_that_can_drain_and_never_resume():
    payload = alerts.check_payload(notification([
        alert("n1"), alert("n1", check="gpu_xid", target="n1/GPU 0000:3b:00"), alert("n2", "resolved"),
        {"status": "firing", "labels": {"alertname": "GpufabricHealthCheckStale", "check": "exporter_stale"},
         "annotations": {}, "startsAt": "", "endsAt": "", "fingerprint": "x"}]))
    reports = alerts.decider_reports(payload)
    assert sorted(reports) == ["n1"]  # a resolved alert is no finding; an alert without a node or severity is none
    report = reports["n1"]
    assert report["complete"] is False and report["source"] == "alert"
    assert sorted(f["check"] for f in report["findings"]) == ["gpu_xid", "rdma_port_state"]
    from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import ledger, remediation
    from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import check_config
    policy = check_config({"mode": "enforce", "slurm": {"enabled": True},
                           "policy": [{"severity": "critical", "action": "drain"}]})
    fleet = {"n1": {"state": "idle", "partitions": ["p"]}, "n2": {"state": "idle", "partitions": ["p"]}}
    result = remediation.plan(reports, fleet, ledger.empty_ledger(), policy, 1000.0, "d")
    assert [(d["node"], d["action"]) for d in result["decisions"]] == [("n1", "drain")]


def test_alertmanager_routes_group_by_cluster_and_check_and_a_down_node_silences_its_alerts():
    config = alerts.alertmanager_config(["ding", "slack"], "http://127.0.0.1:9095", "c1", "http://ctl:8740",
                                        "t" * 20)
    assert config["route"]["group_by"] == ["cluster", "check"]
    chat = next(r for r in config["receivers"] if r["name"] == "gpufabric-chat")
    assert [w["url"] for w in chat["webhook_configs"]] == ["http://127.0.0.1:9095/v1/alerts/ding",
                                                           "http://127.0.0.1:9095/v1/alerts/slack"]
    assert config["route"]["routes"][0]["continue"] is True
    decider = next(r for r in config["receivers"] if r["name"] == "gpufabric-decider")["webhook_configs"][0]
    assert decider["url"] == "http://ctl:8740/v1/alertmanager" and decider["send_resolved"] is False
    # a group's notification is bounded by what the relay and the decider take (it was unbounded: max_alerts 0)
    assert decider["max_alerts"] == alerts.MAX_ALERTS == 100000
    assert all(w["max_alerts"] == alerts.MAX_ALERTS for w in chat["webhook_configs"])
    assert config["inhibit_rules"] == [{"source_matchers": ['alertname="GpufabricNodeDown"'],
                                        "target_matchers": ['alertname=~"%s"' % alerts.FINDING_ALERTS],
                                        "equal": ["cluster", "Hostname"]}]
    for bad, message in (({"group_wait": "30 s"}, "group_wait must be a duration such as 30s or 5m, got '30 s'"),
                         ({"decider_token": "short"}, "decider_token must be a one-line secret of at least 16 characters")):
        with pytest.raises(settings.ConfigError) as error:
            alerts.alertmanager_config(["ding"], "http://127.0.0.1:9095", "c1", "http://ctl:8740",
                                       **dict({"decider_token": "t" * 20}, **bad))
        assert str(error.value) == message


# --- the relay, for real: Alertmanager's POST in, signed messages out to a real receiver ---

SECRETS = {"dingtalk": "SECdingtalk-relay-secret-1", "lark": "lark-relay-secret-2", "generic": "generic-relay-3"}


@pytest.fixture
def receiver(tmp_path):
    module = _load("receiver", "tests", "lab", "webhook-receiver", "receiver.py")
    log = tmp_path / "received.jsonl"
    server = module.serve({"bind": "127.0.0.1", "port": 0, "log": str(log), "secrets": SECRETS})
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def received():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    yield "http://127.0.0.1:%d" % server.server_address[1], received
    server.shutdown()
    server.server_close()


def _relay(tmp_path, base, **extra):
    state_dir = tmp_path / "relay"
    state_dir.mkdir(exist_ok=True)
    config = alerts.check_relay_config(dict({
        "cluster": "c1", "port": 0, "state_dir": str(state_dir), "deliver_interval": 0.2,
        "webhooks": [{"name": "ding", "type": "dingtalk", "url": base + "/dingtalk/robot/send?access_token=tok-d-1",
                      "secret": SECRETS["dingtalk"], "insecure_http": True},
                     {"name": "events", "type": "generic", "url": base + "/generic/events", "secret": SECRETS["generic"],
                      "insecure_http": True}]}, **extra))
    lines = []
    server, stop, threads = relay.serve(config, log=lines.append)
    return config, "http://127.0.0.1:%d" % server.server_address[1], server, stop, lines


def _post(url, data):
    request = urllib.request.Request(url, json.dumps(data).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _wait(predicate, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_the_relay_sends_one_signed_message_per_group_once_even_when_alertmanager_retries(tmp_path, receiver):
    base, received = receiver
    config, url, server, stop, lines = _relay(tmp_path, base)
    try:
        firing = notification([alert(n) for n in NODES[:40]])
        assert _post(url + "/v1/alerts/ding", firing) == (200, {"queued": 1})
        assert _post(url + "/v1/alerts/ding", firing) == (200, {"queued": 0})  # Alertmanager's retry
        assert _wait(lambda: len(received()) == 1)
        time.sleep(0.5)
        got = received()
        assert len(got) == 1 and got[0]["kind"] == "dingtalk" and got[0]["verified"] is True
        content = got[0]["json"]["text"]["content"]
        assert content.splitlines()[0] == "[gpufabric] FIRING: rdma_port_state (critical) on gpu[0001-0040] in cluster c1"
        resolved = notification([alert(n, "resolved", ends="2026-11-24T11:00:00Z") for n in NODES[:40]])
        assert _post(url + "/v1/alerts", resolved) == (200, {"queued": 1})  # every webhook
        assert _wait(lambda: len(received()) == 3)
        generic = next(r for r in received() if r["kind"] == "generic")
        assert generic["verified"] is True and generic["json"]["status"] == "resolved"
        assert generic["json"]["cleared_at"] == "2026-11-24T11:00:00Z" and len(generic["json"]["nodes"]) == 40
        assert _post(url + "/v1/alerts/nobody", firing)[0] == 404
        assert _post(url + "/v1/alerts/ding", {"alerts": "x"}) == (400, {"error": "alerts must be a list of 1 to 100000 alerts"})
        assert not any("tok-d-1" in line or SECRETS["dingtalk"] in line for line in lines)
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def test_the_relay_keeps_a_webhook_within_its_messages_per_minute_and_sends_the_rest_later(tmp_path, receiver):
    base, received = receiver
    clock = {"now": 1800000000.0}
    pacer = relay.Pacer(2, lambda: clock["now"])
    config, url, server, stop, lines = _relay(tmp_path, base, deliver_interval=3600)
    stop.set()  # the relay's own delivery thread ends; this test delivers with its own clock
    try:
        time.sleep(0.3)
        for check in ("a", "b", "c", "d", "e"):
            assert _post(url + "/v1/alerts/ding", notification([alert("n1", check=check)], check=check))[0] == 200
        assert relay.deliver_once(config, pacer, lines.append)["sent"] == 2
        assert relay.deliver_once(config, pacer, lines.append)["sent"] == 0  # the same minute
        clock["now"] += 61
        assert relay.deliver_once(config, pacer, lines.append)["sent"] == 2
        assert [r["json"]["text"]["content"].split(" ")[2] for r in received()] == ["a", "b", "c", "d"]  # in order
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def test_a_notification_the_relay_cannot_save_is_refused_so_alertmanager_sends_it_again(tmp_path, receiver):
    base, received = receiver
    config, url, server, stop, lines = _relay(tmp_path, base)
    try:
        os.rmdir(config["state_dir"])
        with open(config["state_dir"], "w") as handle:  # not a directory any more: nothing can be saved
            handle.write("x")
        status, answer = _post(url + "/v1/alerts/ding", notification([alert("n1")]))
        assert status == 500 and answer["error"].endswith("/relay/lock: Not a directory")
        assert received() == []
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("config, message", [
    ({"webhooks": []}, "webhooks must name at least one webhook: the relay has nothing to send to"),
    ({"max_per_minute": 0}, "max_per_minute must be a whole number from 1 to 10000, got 0"),
    ({"listen": "0.0.0.0 x"}, "listen must be a one-line string without spaces, got '0.0.0.0 x'"),
    ({"surprise": 1}, "unknown configuration key(s): surprise"),
])
def test_a_bad_relay_configuration_names_the_entry(config, message):
    base = {"webhooks": [{"name": "d", "type": "dingtalk", "url": "https://oapi.dingtalk.com/robot/send?access_token=x"}]}
    with pytest.raises(settings.ConfigError) as error:
        alerts.check_relay_config(dict(base, **config))
    assert str(error.value) == message


def test_the_relay_program_refuses_a_configuration_it_cannot_use_naming_why(tmp_path, capsys):
    assert relay.main(["--config", str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err == "cannot read the configuration %s: No such file or directory\n" % (tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"port": "x", "webhooks": []}')
    assert relay.main(["--config", str(tmp_path / "bad.json")]) == 2
    assert capsys.readouterr().err == "configuration %s: port must be a whole number from 0 to 65535, got 'x'\n" % (tmp_path / "bad.json")
    assert relay.main(["--config"]) == 2 and capsys.readouterr().err == relay.USAGE + "\n"


def _health(url):
    with urllib.request.urlopen(url + "/v1/health", timeout=10) as answer:
        return json.loads(answer.read())


def test_the_relay_serves_alertmanager_while_a_client_drips_and_refuses_deep_json_saying_so(tmp_path, receiver, monkeypatch):
    """Before, the relay served one client at a time: a notification waited 38 s behind a local client dripping a
    40-byte body, and JSON nested 100,000 deep got no answer. Every refusal is logged and counted."""
    import socket
    base, received = receiver
    monkeypatch.setattr(relay, "READ_SECONDS", 3)
    config, url, server, stop, lines = _relay(tmp_path, base)
    try:
        drip = socket.create_connection(("127.0.0.1", server.server_address[1]))
        drip.sendall(b"POST /v1/alerts/ding HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{")
        started = time.time()
        assert _post(url + "/v1/alerts/ding", notification([alert(n) for n in NODES[:3]])) == (200, {"queued": 1})
        assert time.time() - started < 2, "the notification waited behind the dripping client"
        deep = b"[" * 100000 + b"]" * 100000
        request = urllib.request.Request(url + "/v1/alerts/ding", deep, {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=10)
        assert error.value.code == 400 and json.loads(error.value.read()) == {"error": "the JSON nests deeper than 64 levels"}
        assert _health(url)["refused"] == {"notification": 1}
        assert any(line.startswith("refused /v1/alerts/ding from 127.0.0.1: the JSON nests deeper") for line in lines)
        assert _wait(lambda: server.slots._value == relay.MAX_CONNECTIONS, 10)   # the dripping connection's slot is back
        drip.close()
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
