"""The health monitor: what it sends when, how each webhook is signed, and runs against a real HTTP receiver."""

import importlib.util
import json
import os
import shutil
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import chat, messages, monitor, outbox, settings
from paths import ROOT

# The program the role installs (the clock, the state file, HTTP); the decisions are module_utils/fleet/monitor.py.
PROGRAM = os.path.join(ROOT, "roles", "health_monitor", "files", "gpufabric_health_monitor.py")
_SPEC = importlib.util.spec_from_file_location("gpufabric_health_monitor", PROGRAM)
program = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(program)


def fixture_path(*parts):
    return os.path.join(ROOT, "tests", "unit", "fixtures", *parts)


GPU_LOST = {"check": "gpu_count", "severity": "critical", "target": "n1", "detail": "0 of 8 expected GPUs found",
            "fix_hint": "reboot"}
PORT_DOWN = {"check": "rdma_port_state", "severity": "critical", "target": "n1/erdma_0/1",
             "detail": "port is DOWN", "fix_hint": "check the cable"}
MTU = {"check": "mtu", "severity": "warning", "target": "n1:eth1", "detail": "MTU 1500, expected 9000",
       "fix_hint": "re-run rdma_network"}
XID13 = {"check": "gpu_xid", "severity": "info", "target": "n1/GPU 0000:b3:00", "detail": "Xid 13", "fix_hint": "-"}
HOOKS = ["chat", "pager"]


def _plan(state, findings, now, **kw):
    kw.setdefault("quiet_period", 3600)
    return monitor.plan(state, findings, HOOKS, now, kw.pop("quiet_period"), "c1", "n1", **kw)


def _deliver(state, name=None, only=None):
    """What a webhook accepted: take it off the outbox (all webhooks, or one)."""
    for hook in [name] if name else HOOKS:
        for message in list(state["outbox"].get(hook) or []):
            if only is None or only(message["body"]):
                outbox.sent(state["outbox"], hook, message["id"])
    return state


def _waiting(state, hook):
    return [(m["body"]["fault_type"], m["body"]["status"]) for m in state["outbox"].get(hook) or []]


def test_new_finding_is_queued_once_per_webhook_then_kept_quiet():
    state, queued = _plan(None, [GPU_LOST, XID13], 1000.0)
    # info findings are not events at the default min_severity (warning)
    assert queued == [("gpu_count|n1", "chat", "new"), ("gpu_count|n1", "pager", "new")]
    assert _waiting(state, "chat") == [("gpu_count", "new")]
    state = _deliver(state)
    event_id = state["events"]["gpu_count|n1"]["event_id"]
    assert event_id.startswith("gf-") and len(event_id) == 19
    state, queued = _plan(state, [dict(GPU_LOST, detail="still 0 of 8")], 1300.0)
    assert queued == []
    # the quiet period over, the fault is sent again; the event keeps its id and first time
    state, queued = _plan(state, [GPU_LOST], 4600.0)
    assert queued == [("gpu_count|n1", "chat", "repeat"), ("gpu_count|n1", "pager", "repeat")]
    assert state["events"]["gpu_count|n1"]["event_id"] == event_id
    assert state["events"]["gpu_count|n1"]["first_seen"] == 1000.0


def test_worse_severity_is_queued_at_once():
    state, queued = _plan(None, [MTU], 10.0)
    state = _deliver(state)
    state, queued = _plan(state, [dict(MTU, severity="critical")], 20.0)
    assert [m[2] for m in queued] == ["worse", "worse"]
    state = _deliver(state)
    # back to warning is not worse, and within the quiet period nothing is sent
    state, queued = _plan(state, [MTU], 30.0)
    assert queued == []


def test_a_fault_that_clears_during_an_outage_is_still_told_then_its_recovery_in_order():
    state, queued = _plan(None, [GPU_LOST, PORT_DOWN], 10.0)
    state = _deliver(state, "chat")  # the pager is down
    state, queued = _plan(state, [GPU_LOST], 30.0)  # the port is fixed before the pager heard of it
    assert queued == [("rdma_port_state|n1/erdma_0/1", "chat", "recovered"),
                      ("rdma_port_state|n1/erdma_0/1", "pager", "recovered")]
    assert _waiting(state, "pager") == [("gpu_count", "new"), ("rdma_port_state", "new"),
                                        ("rdma_port_state", "recovered")]
    assert list(state["events"]) == ["gpu_count|n1"]  # the port event is done: its messages wait in the outbox
    # Hours of outage: no repeat piles up behind a message of the same event that still waits.
    state, queued = _plan(state, [GPU_LOST], 30.0 + 7200)
    assert queued == [("gpu_count|n1", "chat", "repeat")]
    state = _deliver(state, "pager")
    assert _waiting(state, "pager") == []


def test_a_fault_back_after_its_recovery_is_a_new_event():
    state, queued = _plan(None, [GPU_LOST], 10.0)
    state = _deliver(state)
    first = state["events"]["gpu_count|n1"]["event_id"]
    state, queued = _plan(state, [], 20.0)
    state = _deliver(state)
    state, queued = _plan(state, [GPU_LOST], 30.0)
    assert [m[2] for m in queued] == ["new", "new"]
    assert state["events"]["gpu_count|n1"]["event_id"] != first


def test_min_severity_and_no_recovery():
    state, queued = _plan(None, [GPU_LOST, MTU, XID13], 10.0, min_severity="critical", send_recovery=False)
    assert [m[0] for m in queued] == ["gpu_count|n1", "gpu_count|n1"]
    state = _deliver(state)
    state, queued = _plan(state, [], 20.0, send_recovery=False)
    assert queued == [] and state["events"] == {}
    ignored, queued = _plan(None, [XID13], 10.0, min_severity="info")
    assert len(queued) == 2


def test_queues_are_bounded_and_say_what_fell_off():
    state = None
    for i in range(outbox.MAX_PENDING + 5):
        state, queued = _plan(state, [dict(GPU_LOST, target="n1/%d" % i)], float(i), send_recovery=False)
    assert len(state["outbox"]["chat"]) == outbox.MAX_PENDING and state["dropped"] == 10


def test_damaged_states_are_refused_by_shape():
    for bad in ({"version": 1, "events": {}}, {"version": 2, "events": []},
                {"version": 2, "events": {"k": {"event_id": 5}}}, {"version": 2, "events": {}, "outbox": []}):
        with pytest.raises(ValueError):
            monitor.check_state(bad)


def test_signatures_match_openssl():
    # printf '1700000000000\nSECexample' | openssl dgst -sha256 -hmac SECexample -binary | base64
    assert chat.dingtalk_sign("SECexample", "1700000000000") == "uroalHrWHORz59talE1o26b8HuX2kOp8WlAN91F9Pj0="
    # printf '' | openssl dgst -sha256 -hmac "$(printf '1700000000\nlarksecret')" -binary | base64
    assert chat.lark_sign("larksecret", "1700000000") == "9tAorv8A/4Mb2NzIxVauBMTDHC2MjRxDs/a0kZWnTWE="


def _event():
    state, ignored = _plan(None, [PORT_DOWN], 1700000000.0)
    return state["events"]["rdma_port_state|n1/erdma_0/1"]


def test_requests_per_webhook_type_carry_the_seed_fields_and_no_secret():
    body = messages.payload("prod-a", "n1", _event(), "new", 1700000000.5, message_id="m-1")
    assert body["fault_type"] == "rdma_port_state" and body["detected_at"] == "2023-11-14T22:13:20Z"
    assert body["cleared_at"] is None and body["status"] == "new"
    url, data, headers = chat.build_request(
        {"type": "dingtalk", "url": "https://oapi.dingtalk.com/robot/send?access_token=tok", "secret": "SECexample"},
        body, 1700000000.0)
    query = parse_qs(urlsplit(url).query)
    assert query == {"access_token": ["tok"], "timestamp": ["1700000000000"],
                     "sign": ["uroalHrWHORz59talE1o26b8HuX2kOp8WlAN91F9Pj0="]}
    text = json.loads(data)["text"]["content"]
    for line in ("Cluster: prod-a", "Host: n1", "Fault type: rdma_port_state", "Fault target: n1/erdma_0/1",
                 "Severity: critical", "Detail: port is DOWN", "Fix hint: check the cable",
                 "Detected at: 2023-11-14T22:13:20Z", "Message ID: m-1", "Event ID: %s" % body["event_id"]):
        assert line in text.splitlines() or text.splitlines()[-1].startswith(line)
    assert b"SECexample" not in data
    lark_hook = {"type": "lark", "url": "https://open.feishu.cn/open-apis/bot/v2/hook/x", "secret": "larksecret"}
    url, data, ignored = chat.build_request(lark_hook, body, 1700000000.9)
    lark = json.loads(data)
    assert (lark["msg_type"], lark["timestamp"]) == ("text", "1700000000")
    assert lark["sign"] == "9tAorv8A/4Mb2NzIxVauBMTDHC2MjRxDs/a0kZWnTWE="
    assert lark["content"]["text"].startswith("[gpufabric] FAULT: node n1 in cluster prod-a has a critical fault")
    ignored, data, headers = chat.build_request({"type": "generic", "url": "http://r/generic", "secret": "s3"}, body, 5.0)
    assert json.loads(data) == body
    assert headers["X-Gpufabric-Signature"] == "sha256=" + chat.generic_sign("s3", "5", data)
    ignored, data, headers = chat.build_request({"type": "slack", "url": "http://r/slack"}, body, 5.0)
    assert set(json.loads(data)) == {"text"} and "X-Gpufabric-Signature" not in headers


def test_recovery_text():
    event = dict(_event(), status="cleared", cleared_at=1700000600.0)
    text = messages.text_message(messages.payload("c", "n1", event, "recovered", 1700000600.0))
    assert text.startswith("[gpufabric] RECOVERED: rdma_port_state on n1 (cluster c) is gone since 2023-11-14T22:23:20Z")
    assert "Cleared at: 2023-11-14T22:23:20Z" in text


@pytest.mark.parametrize("kind,status,text,error", [
    ("dingtalk", 200, '{"errcode":0,"errmsg":"ok"}', None),
    ("dingtalk", 200, '{"errcode":310000,"errmsg":"sign not match"}', "dingtalk answered code 310000: sign not match"),
    ("lark", 200, '{"StatusCode":0,"StatusMessage":"success","code":0,"data":{},"msg":"success"}', None),
    ("feishu", 200, '{"code":19021,"data":{},"msg":"sign match fail"}', "feishu answered code 19021: sign match fail"),
    ("lark", 200, "<html>", "HTTP 200 with a body that is not JSON: <html>"),
    ("slack", 200, "ok", None),
    ("slack", 403, "invalid_token", "HTTP 403 invalid_token"),
    ("slack", 200, "no_text", "slack answered 'no_text'"),
    ("generic", 204, "", None),
    ("generic", 500, "boom", "HTTP 500 boom"),
])
def test_response_errors(kind, status, text, error):
    assert chat.response_error(kind, status, text) == error


def test_redact_removes_url_parts_and_secret():
    hook = {"url": "https://oapi.dingtalk.com/robot/send?access_token=abcdef123456", "secret": "SECxyz"}
    assert chat.redact("failed https://oapi.dingtalk.com/robot/send?access_token=abcdef123456 SECxyz "
                       "abcdef123456 dingtalk", hook) == "failed *** *** *** dingtalk"
    slack = {"url": "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/XyZ123abcDEF456ghiJKL789"}
    assert chat.redact("no answer from XyZ123abcDEF456ghiJKL789 in services", slack) == "no answer from *** in services"


def test_redact_covers_tokens_without_digits_and_tokens_cut_short():
    lark = {"url": "https://open.feishu.cn/open-apis/bot/v2/hook/onlyLettersTokenHereNoDigits"}
    assert "onlyLetters" not in chat.redact("hook onlyLettersTokenHereNoDigits invalid", lark)
    # The service echoed the URL and the text is longer than the cut: replaced first, then cut.
    echoed = "error: " + "x" * 190 + " https://open.feishu.cn/open-apis/bot/v2/hook/onlyLettersTokenHereNoDigits"
    cut = chat.redact(echoed, lark, limit=200)
    assert len(cut) <= 200 and "onlyLett" not in cut and "TokenHere" not in cut
    # The other side cut the token itself: the start of it goes too, at the end of the text or anywhere.
    assert chat.redact("bad token onlyLettersToken", lark) == "bad token ***"
    uuid_hook = {"url": "https://open.feishu.cn/open-apis/bot/v2/hook/0f3a9c1e-77b2-4d1e-9a6b-5c2d8e7f1a3b"}
    assert chat.redact("bad hook 0f3a9c1e-77b2-4d1e-9a6b... (truncated by proxy)", uuid_hook) == \
        "bad hook ***... (truncated by proxy)"
    userinfo = {"url": "https://user:pa55word@example.com/hook"}
    assert "pa55word" not in chat.redact("auth failed for user:pa55word", userinfo)


@pytest.mark.parametrize("config,message", [
    ({"webhooks": [{"name": "a", "type": "teams", "url": "https://x"}]},
     "webhooks[0] (a): type must be one of lark, feishu, dingtalk, slack, generic, got 'teams'"),
    ({"webhooks": [{"name": "a", "type": "slack", "url": "ftp://secret-host"}]},
     "webhooks[0] (a): url must start with http:// or https://"),
    ({"webhooks": [{"name": "a", "type": "slack", "url": "https://x"}, {"name": "a", "type": "slack", "url": "https://y"}]},
     "webhooks[1] (a): the name is used twice"),
    ({"webhooks": [{"type": "slack", "url": "https://x"}]}, "webhooks[0] needs a name"),
    ({"webhooks": [{"name": "a", "type": "generic", "url": "http://x/hook", "secret": "s3cret"}]},
     "webhooks[0] (a): the url is http://, so its signing secret would cross the network in clear text: "
     "use https://, or set insecure_http: true to send it anyway"),
    ({"webhooks": [{"name": "a", "type": "dingtalk", "url": "http://x/robot/send?access_token=t0k"}]},
     "webhooks[0] (a): the url is http://, so the token in its URL's query string would cross the network in clear "
     "text: use https://, or set insecure_http: true to send it anyway"),
    ({"webhooks": [{"name": "a", "type": "slack", "url": "http://x/services/T/B/tok"}]},
     "webhooks[0] (a): the url is http://, so its URL path (a slack webhook's path is its token) would cross the "
     "network in clear text: use https://, or set insecure_http: true to send it anyway"),
    ({"webhooks": [{"name": "a", "type": "generic", "url": "https://x/hook\nHost: evil"}]},
     "webhooks[0] (a): the url and the secret must be one-line strings"),
    ({"webhooks": [{"name": "a", "type": "generic", "url": "https://x", "insecure_http": "yes"}]},
     "webhooks[0] (a): insecure_http must be true or false"),
    ({"quiet_period": 0}, "quiet_period must be a positive number of seconds, got 0"),
    ({"min_severity": "major"}, "min_severity must be one of critical, warning, info, got 'major'"),
    ({"checks": {"expected_gpus": 8}}, "checks: unknown check option(s): expected_gpus"),
    ({"checks": {"expected_gpu_count": -1}}, "checks: expected_gpu_count must not be negative, got -1"),
    ({"webhook": []}, "unknown configuration key(s): webhook"),
])
def test_bad_configuration_names_the_entry(config, message):
    with pytest.raises(settings.ConfigError) as error:
        monitor.check_config(config)
    assert str(error.value).startswith(message)


# --- against a real HTTP receiver (tests/lab/webhook-receiver/receiver.py) ---

SECRETS = {"lark": "lark-signing-secret-1", "dingtalk": "SECdingtalk-signing-secret-2", "generic": "generic-secret-3"}


def _load_receiver():
    spec = importlib.util.spec_from_file_location(
        "receiver", os.path.join(ROOT, "tests", "lab", "webhook-receiver", "receiver.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def receiver(tmp_path):
    log = tmp_path / "received.jsonl"
    server = _load_receiver().serve({"bind": "127.0.0.1", "port": 0, "log": str(log), "secrets": SECRETS,
                                     "fail_first": 1})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = "http://127.0.0.1:%d" % server.server_address[1]

    def received():
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]
    yield base, received
    server.shutdown()
    server.server_close()


@pytest.fixture
def node(tmp_path):
    sysfs = tmp_path / "sys"
    shutil.copytree(fixture_path("sysfs", "erdma"), sysfs)
    kernel = tmp_path / "kern.log"
    kernel.write_text("")
    return tmp_path


def _config(node, base, **extra):
    config = {
        "cluster": "lab", "host": "node-a", "state_dir": str(node / "state"), "quiet_period": 3600,
        "checks": {"expected_gpu_count": 8, "expected_rdma_devices": 1, "sysfs_root": str(node / "sys"),
                   "procfs_root": str(node), "kernel_log": str(node / "kern.log"),
                   "nvidia_smi_path": str(node / "absent-nvidia-smi")},
        "webhooks": [
            {"name": "feishu-ops", "type": "feishu", "url": base + "/feishu/hook/tok-feishu-0001", "secret": SECRETS["lark"],
             "insecure_http": True},
            {"name": "dingtalk-ops", "type": "dingtalk", "url": base + "/dingtalk/robot/send?access_token=tok-ding-0002",
             "secret": SECRETS["dingtalk"], "insecure_http": True},
            {"name": "slack-ops", "type": "slack", "url": base + "/slack/services/T000/B000/tok-slack-0003",
             "insecure_http": True},
            {"name": "events", "type": "generic", "url": base + "/generic/events", "secret": SECRETS["generic"],
             "insecure_http": True},
        ]}
    config.update(extra)
    os.makedirs(config["state_dir"], exist_ok=True)  # the role creates it
    return monitor.check_config(config)


def _state(config):
    with open(os.path.join(config["state_dir"], "state.json")) as handle:
        return json.load(handle)


def test_runs_against_a_real_receiver(node, receiver):
    base, received = receiver
    config = _config(node, base)
    lines = []
    port_state = node / "sys" / "class" / "infiniband" / "erdma_0" / "ports" / "1" / "state"
    port_state.write_text("1: DOWN\n")

    assert program.run_once(config, log=lines.append) == 0
    first = received()
    kinds = ("feishu", "dingtalk", "slack", "generic")
    assert sorted((r["kind"], r["status"]) for r in first) == sorted([(k, 200) for k in kinds] * 2)
    assert all(r["verified"] in (True, None) for r in first) and sum(r["verified"] is True for r in first) == 6
    events = [r["json"] for r in first if r["kind"] == "generic"]
    assert sorted(e["fault_type"] for e in events) == ["nvidia_smi", "rdma_port_state"]
    assert {e["status"] for e in events} == {"new"} and {e["host"] for e in events} == {"node-a"}
    raw = json.dumps(first) + "\n".join(lines)
    for secret in SECRETS.values():
        assert secret not in raw
    assert not any("tok-" in line for line in lines)
    assert lines[-1] == ("2 finding(s): 2 critical, 0 warning, 0 info (incomplete: nvidia-smi: nvidia-smi not found); "
                         "2 open event(s); 8 message(s) sent, 0 failed, 0 waiting")
    assert oct(os.stat(os.path.join(config["state_dir"], "state.json")).st_mode & 0o777) == "0o600"

    assert program.run_once(config, log=lines.append) == 0
    assert len(received()) == 8  # nothing new: quiet

    port_state.write_text("4: ACTIVE\n")
    assert program.run_once(config, log=lines.append) == 0
    recovered = received()[8:]
    assert len(recovered) == 4 and all("RECOVERED: rdma_port_state on node-a" in r["body"] or
                                       (r["json"] or {}).get("status") == "recovered" for r in recovered)
    port_event = next(e for e in events if e["fault_type"] == "rdma_port_state")
    assert next(r["json"] for r in recovered if r["kind"] == "generic")["event_id"] == port_event["event_id"]


def test_a_failed_delivery_is_retried_and_reported(node, receiver):
    base, received = receiver
    config = _config(node, base, webhooks=[{"name": "flaky", "type": "generic", "url": base + "/flaky/tok-flaky-0004"}])
    lines = []
    assert program.run_once(config, log=lines.append) == 1
    assert [line for line in lines if "could not send" in line] == [
        "webhook flaky (generic): could not send new %s nvidia_smi (node-a, critical): HTTP 500 "
        '{"ok": false, "error": "flaky endpoint: failing on purpose"}; the next run tries again'
        % _state(config)["events"]["nvidia_smi|node-a"]["event_id"]]
    assert program.run_once(config, log=lines.append) == 0
    assert program.run_once(config, log=lines.append) == 0
    assert [(r["status"], r["json"]["status"]) for r in received()] == [(500, "new"), (200, "new")]


def test_a_wrong_secret_is_a_failed_delivery(node, receiver):
    base, ignored = receiver
    config = _config(node, base, webhooks=[{"name": "d", "type": "dingtalk", "url": base + "/dingtalk/x?access_token=t",
                                            "secret": "SECwrong", "insecure_http": True}])
    lines = []
    assert program.run_once(config, log=lines.append) == 1
    assert "dingtalk answered code 310000: sign not match" in lines[0] and "SECwrong" not in "".join(lines)


def test_main_exit_codes(node, receiver, tmp_path, capsys):
    base, ignored = receiver
    path = tmp_path / "monitor.json"
    config = _config(node, base)
    config["checks"] = {k: v for k, v in config["checks"].items() if v not in (None, [], False)}
    path.write_text(json.dumps(config))
    assert program.main(["--config", str(path)]) == 0
    path.write_text(json.dumps(dict(config, webhooks=[{"name": "x", "type": "irc", "url": base + "/tok-secret-url"}])))
    assert program.main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "webhooks[0] (x): type must be one of" in err and "tok-secret-url" not in err
    assert program.main([]) == 2


def test_counters_rising_between_two_runs_are_rates_over_the_history(node, receiver):
    base, received = receiver
    counters = node / "sys" / "class" / "infiniband" / "erdma_0" / "ports" / "1" / "counters"
    counters.mkdir()
    (counters / "link_downed").write_text("3\n")
    (counters / "symbol_error").write_text("0\n")
    config = _config(node, base, webhooks=[{"name": "events", "type": "generic", "url": base + "/generic/e",
                                            "secret": SECRETS["generic"], "insecure_http": True}])
    config["checks"]["expected_gpu_count"] = None
    assert program.run_once(config, log=[].append, now=1000.0) == 0
    assert received() == []  # one reading: nothing to compare with yet
    state = _state(config)
    assert state["counters"]["ports"] == {"erdma_0/1": {"link_downed": 3, "symbol_error": 0}}
    assert state["history"] == [{"at": state["history"][0]["at"],
                                 "counters": {"erdma_0/1|link_downed": 3, "erdma_0/1|symbol_error": 0}}]
    (counters / "link_downed").write_text("5\n")
    assert program.run_once(config, log=[].append) == 0
    (event,) = [r["json"] for r in received()]
    assert (event["fault_type"], event["severity"], event["target"]) == ("link_flap", "critical", "node-a/erdma_0/1")
    assert event["detail"].startswith("link_downed rose by 2 in ")


def test_a_hung_webhook_neither_starves_the_others_nor_makes_them_repeat(node, receiver):
    base, received = receiver
    config = _config(node, base, timeout=2, deliver_deadline=4, webhooks=[
        {"name": "stuck", "type": "generic", "url": base + "/hang/events"},
        {"name": "events", "type": "generic", "url": base + "/generic/events", "secret": SECRETS["generic"],
         "insecure_http": True}])
    lines = []
    started = time.time()
    assert program.run_once(config, log=lines.append) == 1
    assert time.time() - started < 10
    healthy = [r for r in received() if r["kind"] == "generic"]
    assert [r["json"]["status"] for r in healthy] == ["new"]
    assert any("webhook stuck (generic): could not send new" in line and "no complete answer within 2 s" in line
               for line in lines), lines
    program.run_once(config, log=lines.append)  # the stuck one is tried again; the healthy one hears nothing twice
    assert len([r for r in received() if r["kind"] == "generic"]) == 1
    assert [m["body"]["status"] for m in _state(config)["outbox"]["stuck"]] == ["new"]


@pytest.mark.parametrize("path, error", [
    ("/status/500/x", "HTTP 500"), ("/status/429/x", "HTTP 429"),
    ("/redirect/301/x", "answered HTTP 301 (a redirect), which is not followed for a POST"),
    ("/redirect/302/x", "answered HTTP 302 (a redirect)"), ("/redirect/307/x", "answered HTTP 307 (a redirect)"),
    ("/drip/x", "no complete answer within 2 s"), ("/drip-headers/x", "no complete answer within 2 s"),
    ("/huge/x", "the answer was larger than 65536 bytes and was not read whole"),
])
def test_a_misbehaving_receiver_is_a_failure_kept_for_the_next_run(node, receiver, path, error):
    base, received = receiver
    config = _config(node, base, timeout=2, deliver_deadline=5,
                     webhooks=[{"name": "bad", "type": "generic", "url": base + path, "secret": SECRETS["generic"],
                                "insecure_http": True}])
    lines = []
    started = time.time()
    assert program.run_once(config, log=lines.append) == 1
    assert time.time() - started < 12
    assert any(error in line for line in lines), lines
    assert [m["body"]["status"] for m in _state(config)["outbox"]["bad"]] == ["new"]
    if "redirect" in path:  # one POST with its body; nothing followed it anywhere
        assert [(r["path"], r["method"] if "method" in r else "POST") for r in received()] == [(path, "POST")]
        assert not any(r["path"].startswith("/generic") for r in received())


def test_a_full_disk_is_said_once_an_hour_with_what_the_checks_found(node, receiver, monkeypatch, tmp_path):
    """A full disk used to be silence: three runs exited 1 and sent nothing. Now each webhook gets one alert an hour
    (the hour kept in /run, memory) naming the error and what this run found; the metric says the state is not
    writable; when the disk is back the finding is tracked and sent once, as before."""
    base, received = receiver
    monkeypatch.setattr(program, "UNSAVED_MARKS", str(tmp_path / "run-marks"))
    config = _config(node, base, webhooks=[{"name": "events", "type": "generic", "url": base + "/generic/e",
                                            "secret": SECRETS["generic"], "insecure_http": True}])
    assert program.run_once(config, log=[].append) == 0
    assert len(received()) == 1
    real_save = statefile.save_json

    def full(path, data):
        raise statefile.StateError("could not save %s: No space left on device" % path)
    monkeypatch.setattr(statefile, "save_json", full)
    (node / "kern.log").write_text("2026-11-23T18:00:00+00:00 node-a kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, "
                                   "name=python, GPU has fallen off the bus.\n")
    lines = []
    assert program.run_once(config, log=lines.append) == 1
    assert any("No space left on device: the state cannot be saved; the decider is told and the webhooks alerted "
               "directly" in line for line in lines), lines
    alert = received()[-1]["json"]
    assert len(received()) == 2 and alert["fault_type"] == "health_state" and alert["severity"] == "critical"
    assert "No space left on device" in alert["detail"] and "gpu_xid" in alert["detail"]
    assert program.run_once(config, log=[].append) == 1
    assert len(received()) == 2   # once an hour, not every run
    monkeypatch.setattr(statefile, "save_json", real_save)
    assert program.run_once(config, log=[].append) == 0
    assert sorted(r["json"]["fault_type"] for r in received()) == ["gpu_xid", "health_state", "nvidia_smi"]
    assert program.run_once(config, log=[].append) == 0
    assert len(received()) == 3


def test_a_full_disk_still_reports_to_the_decider_and_writes_the_metric(node, receiver, monkeypatch, tmp_path):
    base, received = receiver
    monkeypatch.setattr(program, "UNSAVED_MARKS", str(tmp_path / "run-marks"))
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    config = _config(node, base, textfile_dir=str(textfile))
    reported = []
    monkeypatch.setattr(program, "report", lambda config, result, source, clock: (
        reported.append(result["counts"]) or ({"text": "no action", "decision": {"action": "none"}}, None)))
    config["decider"] = {"url": "http://127.0.0.1:9", "secret": "s" * 32, "timeout": 5}

    def full(path, data):
        raise statefile.StateError("could not save %s: No space left on device" % path)
    monkeypatch.setattr(statefile, "save_json", full)
    assert program.run_once(config, log=[].append) == 1
    assert len(reported) == 1
    (line,) = [line for line in (textfile / "gpufabric_health.prom").read_text().splitlines()
               if line.startswith("gpufabric_health_state_writable{")]
    assert line.endswith(" 0") and 'Hostname="node-a"' in line and 'cluster="lab"' in line


def test_a_full_disk_after_a_delivery_stops_the_run(node, receiver, monkeypatch):
    base, received = receiver
    config = _config(node, base, webhooks=[{"name": "events", "type": "generic", "url": base + "/generic/e",
                                            "secret": SECRETS["generic"], "insecure_http": True}])
    port_state = node / "sys" / "class" / "infiniband" / "erdma_0" / "ports" / "1" / "state"
    port_state.write_text("1: DOWN\n")
    real_save, saves = statefile.save_json, []

    def fill_up(path, data):  # the state with both messages queued is saved; the first delivery cannot be
        saves.append(path)
        if len(saves) > 1:
            raise statefile.StateError("could not save %s: No space left on device" % path)
        real_save(path, data)
    monkeypatch.setattr(statefile, "save_json", fill_up)
    lines = []
    assert program.run_once(config, log=lines.append) == 1
    assert len(received()) == 1  # the second is not sent: it could not have been recorded either
    assert any("but could not save" in line and "stopping, so nothing more is sent" in line for line in lines), lines


@pytest.mark.parametrize("damage", ["directory", "events-list", "not-json"])
def test_a_damaged_state_is_set_aside_once_and_the_run_goes_on(node, receiver, damage):
    base, received = receiver
    config = _config(node, base, webhooks=[{"name": "events", "type": "generic", "url": base + "/generic/e",
                                            "secret": SECRETS["generic"], "insecure_http": True}])
    path = os.path.join(config["state_dir"], "state.json")
    if damage == "directory":
        os.mkdir(path)
    elif damage == "events-list":
        with open(path, "w") as handle:
            json.dump({"version": monitor.STATE_VERSION, "events": [], "outbox": {}}, handle)
    else:
        with open(path, "w") as handle:
            handle.write("{half")
    lines = []
    assert program.run_once(config, log=lines.append) == 0
    warnings = [line for line in lines if "set aside as" in line]
    assert len(warnings) == 1 and warnings[0].startswith(path + " could not be used")
    assert len([p for p in os.listdir(config["state_dir"]) if p.startswith("state.json.damaged-")]) == 1
    assert len(received()) == 1
    lines = []
    assert program.run_once(config, log=lines.append) == 0
    assert not [line for line in lines if "set aside" in line] and len(received()) == 1


def test_check_options_are_validated_like_the_module():
    from ansible_collections.gpufabric.rdma.plugins.module_utils.node import node_checks
    assert node_checks.options({"expected_gpu_count": 8})["nccl_conf"] == "/etc/nccl.conf"
    for given, message in (({"counter_interval": 601}, "counter_interval is at most 600 seconds, got 601"),
                           ({"expected_mtu": "9000"}, "expected_mtu must be a whole number, got '9000'"),
                           ({"xid_ignore": [13, "x"]}, "xid_ignore must be a list of Xid numbers, got [13, 'x']")):
        with pytest.raises(node_checks.CheckOptionError) as error:
            node_checks.options(given)
        assert str(error.value) == message
