"""The health monitor on a node, posting to a real HTTP receiver on the docker network.

The tests run in order: each starts the monitor's service (the timer is set an hour out) after
changing the node, and reads what the receiver got since the previous step.
"""

import json
import os
import re
import subprocess

import yaml

testinfra_hosts = ["gpufabric-hm-node"]

NODE = "gpufabric-hm-node"
SCENARIO = os.environ.get("MOLECULE_SCENARIO_DIRECTORY", os.path.dirname(os.path.dirname(__file__)))
UNIT = "gpufabric-health-monitor"
PORT_STATE = "/opt/captured/sys/class/infiniband/erdma_0/ports/1/state"
CHAT = ("feishu", "dingtalk", "slack", "generic")

with open(os.path.join(SCENARIO, "vars", "webhooks.yml")) as handle:
    SETTINGS = yaml.safe_load(handle)
SECRETS = list(SETTINGS["receiver_secrets"].values())
TOKENS = re.findall(r"tok-[a-z]+-[0-9a-f]+", json.dumps(SETTINGS["monitor_webhooks"]))
SEEN = {"count": 0}


def _received():
    out = subprocess.run(["docker", "exec", "gpufabric-hm-receiver", "cat", "/var/lib/receiver/received.jsonl"],
                         capture_output=True, text=True, check=False).stdout
    return [json.loads(line) for line in out.splitlines()]


def _new():
    """What the receiver got since the last call."""
    everything = _received()
    new = everything[SEEN["count"]:]
    SEEN["count"] = len(everything)
    return new


def _run(host):
    return host.run("systemctl start %s.service" % UNIT)


def _by_kind(records):
    kinds = {}
    for record in records:
        kinds.setdefault(record["kind"], []).append(record)
    return kinds


def _assert_no_secret(text):
    for secret in SECRETS + TOKENS:
        assert secret not in text, "a secret or webhook token leaked"


def test_installed(host):
    assert len(SECRETS) == 3 and len(TOKENS) == 4
    timer = host.service("%s.timer" % UNIT)
    assert timer.is_enabled and timer.is_running
    assert host.run("systemctl show -p NextElapseUSecMonotonic %s.timer" % UNIT).stdout.strip() != \
        "NextElapseUSecMonotonic=infinity"
    config = host.file("/etc/gpufabric/health-monitor.json")
    assert (config.user, config.group, config.mode) == ("root", "root", 0o600)
    settings = json.loads(config.content_string)
    assert settings["cluster"] == "molecule-lab" and settings["host"] == NODE
    assert [w["name"] for w in settings["webhooks"]] == ["feishu-ops", "dingtalk-ops", "slack-ops", "events", "flaky"]
    assert host.file("/var/lib/gpufabric-health-monitor").mode == 0o700
    assert host.file("/var/lib/gpufabric-health-monitor/.gpufabric-owner").content_string == "health_monitor\n"
    code = "/usr/local/lib/gpufabric-health-monitor/ansible_collections/gpufabric/rdma/plugins/module_utils"
    assert host.file(code + "/fleet/monitor.py").exists and host.file(code + "/node/node_checks.py").exists
    assert not host.file(code + "/fleet/remediation.py").exists   # the decider's planner is not the node's code
    _assert_no_secret(host.run("systemctl cat %s.service %s.timer" % (UNIT, UNIT)).stdout)
    assert _new() == []  # installing sent nothing


def test_first_run_sends_one_message_per_fault(host):
    result = _run(host)
    assert result.rc != 0  # the flaky endpoint failed: the unit says so
    kinds = _by_kind(_new())
    assert {k: len(v) for k, v in kinds.items()} == {"feishu": 2, "dingtalk": 2, "slack": 2, "generic": 2, "flaky": 1}
    # the receiver fails the flaky endpoint's first request only; its queue stops there (order is kept),
    # and the second fault waits behind the first in the outbox, saved
    assert [r["status"] for r in kinds["flaky"]] == [500]
    for kind in ("feishu", "dingtalk", "generic"):
        assert [r["verified"] for r in kinds[kind]] == [True, True]  # signed with the right secret
    events = sorted((r["json"] for r in kinds["generic"]), key=lambda e: e["fault_type"])
    assert [(e["fault_type"], e["severity"], e["target"]) for e in events] == [
        ("nvidia_smi", "critical", NODE), ("rdma_port_state", "critical", NODE + "/erdma_0/1")]
    for event in events:
        assert (event["status"], event["cluster"], event["host"]) == ("new", "molecule-lab", NODE)
        assert re.match(r"^gf-[0-9a-f]{16}$", event["event_id"])
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", event["detected_at"])
        assert event["detail"] and event["fix_hint"]
    assert events[0]["detail"] == "nvidia-smi not found: cannot count GPUs (8 expected)"
    assert events[1]["detail"].startswith("port is DOWN")
    text = next(r["json"]["text"]["content"] for r in kinds["dingtalk"] if "rdma_port_state" in r["body"])
    assert "Fault target: %s/erdma_0/1" % NODE in text and "Event ID: %s" % events[1]["event_id"] in text
    assert kinds["slack"][0]["json"]["text"].startswith("[gpufabric] FAULT: node %s in cluster molecule-lab" % NODE)
    assert set(kinds["dingtalk"][0]["query"]) == {"access_token", "timestamp", "sign"}
    for record in _received():
        _assert_no_secret(record["body"])
    journal = host.run("journalctl -u %s.service --no-pager -o cat" % UNIT).stdout
    assert "webhook flaky (generic): could not send new" in journal and "HTTP 500" in journal
    _assert_no_secret(journal)
    state = host.file("/var/lib/gpufabric-health-monitor/state.json")
    assert state.mode == 0o600
    _assert_no_secret(state.content_string)
    waiting = json.loads(state.content_string)["outbox"]
    assert [m["body"]["status"] for m in waiting["flaky"]] == ["new", "new"] and waiting["events"] == []


def test_second_run_is_quiet_and_retries_the_failed_delivery(host):
    assert _run(host).rc == 0
    new = _new()
    assert [(r["kind"], r["status"], r["json"]["status"]) for r in new] == [("flaky", 200, "new"), ("flaky", 200, "new")]
    assert _run(host).rc == 0
    assert _new() == []


def test_recovery_after_the_port_comes_back(host):
    port_event = _port_event_id()
    assert host.run("printf '4: ACTIVE\\n' > %s" % PORT_STATE).rc == 0
    assert _run(host).rc == 0
    new = _by_kind(_new())
    assert {k: len(v) for k, v in new.items()} == {"feishu": 1, "dingtalk": 1, "slack": 1, "generic": 1, "flaky": 1}
    event = new["generic"][0]["json"]
    assert (event["status"], event["fault_type"], event["event_id"]) == ("recovered", "rdma_port_state", port_event)
    assert event["cleared_at"] >= event["detected_at"]
    assert "RECOVERED: rdma_port_state on %s" % NODE in new["feishu"][0]["json"]["content"]["text"]


def test_recovery_after_the_gpus_come_back(host):
    assert host.run("mv /opt/standin/nvidia-smi.off /opt/standin/nvidia-smi").rc == 0
    assert _run(host).rc == 0
    new = _new()
    assert len(new) == 5 and {r["json"]["status"] for r in new if r["kind"] in ("generic", "flaky")} == {"recovered"}
    assert {r["json"]["fault_type"] for r in new if r["kind"] == "generic"} == {"nvidia_smi"}
    assert _run(host).rc == 0
    assert _new() == []
    state = json.loads(host.file("/var/lib/gpufabric-health-monitor/state.json").content_string)
    assert state["events"] == {} and state["last_run"]["healthy"] is True


def test_a_hung_nvidia_smi_is_a_finding_not_a_hung_timer(host):
    """The fault the monitor exists for: nvidia-smi hanging on a GPU lost from the bus (command_timeout 5 s)."""
    hang = "#!/bin/sh\nsleep 600 &\nexec sleep 600\n"
    assert host.run("mv /opt/standin/nvidia-smi /opt/standin/nvidia-smi.real && printf '%s' > /opt/standin/nvidia-smi"
                    " && chmod 0755 /opt/standin/nvidia-smi" % hang).rc == 0
    started = host.run("date +%s").stdout
    assert _run(host).rc == 0
    took = int(host.run("date +%s").stdout) - int(started)
    assert took < 30, "the monitor's run took %d s" % took
    events = [r["json"] for r in _new() if r["kind"] == "generic"]
    assert [(e["status"], e["fault_type"], e["severity"], e["detail"]) for e in events] == [
        ("new", "nvidia_smi", "critical", "nvidia-smi did not answer within 5 s")]
    assert "fallen off the bus" in events[0]["fix_hint"]
    assert host.run("pgrep -f 'slee[p] 600'").rc == 1  # killed with everything it started
    assert host.run("mv /opt/standin/nvidia-smi.real /opt/standin/nvidia-smi").rc == 0
    assert _run(host).rc == 0
    assert {r["json"]["status"] for r in _new() if r["kind"] == "generic"} == {"recovered"}


def test_a_rising_symbol_error_rate_is_one_finding_then_one_recovery(host):
    """Grey failure: symbol errors rising faster than 120 an hour (rate_window 20 s in this scenario)."""
    counters = "/opt/captured/sys/class/infiniband/erdma_0/ports/1/counters"
    assert host.run("mkdir -p %s && echo 0 > %s/symbol_error" % (counters, counters)).rc == 0
    assert _run(host).rc == 0
    assert _new() == []  # one reading: nothing to compare with
    assert host.run("echo 5000 > %s/symbol_error" % counters).rc == 0
    assert _run(host).rc == 0
    events = [r["json"] for r in _new() if r["kind"] == "generic"]
    assert [(e["status"], e["fault_type"], e["severity"], e["target"]) for e in events] == [
        ("new", "rdma_error_rate", "critical", NODE + "/erdma_0/1")]
    assert events[0]["detail"].startswith("symbol_error rose by 5000 in ")
    assert _run(host).rc == 0
    assert _new() == []  # still rising within the window: still one open finding, nothing new to say
    host.run("sleep 21")
    assert _run(host).rc == 0  # a whole window without a new error
    events = [r["json"] for r in _new() if r["kind"] == "generic"]
    assert [(e["status"], e["fault_type"]) for e in events] == [("recovered", "rdma_error_rate")]
    assert host.run("rm -r %s" % counters).rc == 0


def test_a_link_its_firmware_advises_on_is_a_finding_and_its_ber_a_metric(host):
    """Issue 39: the link_health check through an mlxlink stand-in replaying real captures - a healthy BlueField-3 port
    (its BER a metric), then a ConnectX-5 whose firmware says "Cable speed not enabled" and whose capture has no BER:
    two findings, then recovery."""
    prom = "/var/lib/gpufabric-test-textfile/gpufabric_health.prom"
    assert _run(host).rc == 0
    assert _new() == []
    metrics = host.file(prom).content_string
    assert re.search(r'^gpufabric_link_effective_ber\{[^}]*device="mlx5_0"[^}]*port="1"[^}]*\} \S+$', metrics, re.M)
    fixtures = os.path.join(SCENARIO, "..", "..", "tests", "unit", "fixtures", "mlxlink")
    with open(os.path.join(fixtures, "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt")) as handle:
        advised = handle.read()
    assert subprocess.run(["docker", "exec", "-i", NODE, "sh", "-c", "cat > /opt/standin/mlxlink.txt"],
                          input=advised, text=True, check=False).returncode == 0
    assert _run(host).rc == 0
    events = [r["json"] for r in _new() if r["kind"] == "generic"]
    # The capture has no counter section: mlxlink -c gave no BER, so the port is also unread (issue 53).
    assert sorted((e["status"], e["fault_type"], e["target"]) for e in events) == [
        ("new", "link_recommendation", NODE + "/mlx5_0/1"), ("new", "link_unread", NODE + "/mlx5_0/1")]
    assert "Cable speed not enabled" in [e for e in events if e["fault_type"] == "link_recommendation"][0]["detail"]
    with open(os.path.join(fixtures, "bf3_100g_dac_healthy_m_c_sigcomm26.txt")) as handle:
        healthy = handle.read()
    assert subprocess.run(["docker", "exec", "-i", NODE, "sh", "-c", "cat > /opt/standin/mlxlink.txt"],
                          input=healthy, text=True, check=False).returncode == 0
    assert _run(host).rc == 0
    assert sorted((r["json"]["status"], r["json"]["fault_type"]) for r in _new() if r["kind"] == "generic") == [
        ("recovered", "link_recommendation"), ("recovered", "link_unread")]


def _port_event_id():
    return next(r["json"]["event_id"] for r in _received()
                if r["kind"] == "generic" and r["json"]["fault_type"] == "rdma_port_state")


def _play(name, *extra):
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    return subprocess.run(["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"],
                           os.path.join(SCENARIO, name)] + list(extra),
                          capture_output=True, text=True, timeout=300, check=False, env=env)


def _flat(output):
    """The output with whitespace folded (the yaml callback wraps long messages)."""
    return " ".join(output.split())


def test_a_verbose_check_run_prints_no_secret(host):  # host: keeps pytest from reordering the tests
    proc = _play("converge.yml", "--check", "--diff", "-vvv")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"gpufabric-hm-node\s*: ok=\d+\s+changed=0 ", proc.stdout), proc.stdout[-5000:]
    _assert_no_secret(proc.stdout + proc.stderr)


def test_the_drift_check_compares_nccl_conf_with_what_nccl_env_wrote(host):
    """One owner: without expected_nccl_env in the checks, the monitor expects what the nccl_env role wrote and
    published on the node; a hand edit of /etc/nccl.conf is a finding, undoing it a recovery."""
    settings = json.loads(host.file("/etc/gpufabric/health-monitor.json").content_string)
    published = json.loads(host.file("/etc/ansible/facts.d/gpufabric_nccl_env.fact").content_string)
    assert published["env"]["NCCL_SOCKET_IFNAME"] == "eth0"
    assert settings["checks"]["expected_nccl_env"] == published["env"] and settings["checks"]["nccl_conf"] == "/etc/nccl.conf"
    _new()
    assert host.run("sed -i 's/^NCCL_SOCKET_IFNAME=eth0$/NCCL_SOCKET_IFNAME=eth9/' /etc/nccl.conf").rc == 0
    try:
        assert _run(host).rc == 0
        (event,) = [r["json"] for r in _by_kind(_new())["generic"]]
        assert (event["status"], event["fault_type"], event["severity"]) == ("new", "nccl_env_drift", "warning")
        assert event["detail"] == "NCCL_SOCKET_IFNAME=eth9, the profile sets eth0"
    finally:
        host.run("sed -i 's/^NCCL_SOCKET_IFNAME=eth9$/NCCL_SOCKET_IFNAME=eth0/' /etc/nccl.conf")
    assert _run(host).rc == 0
    (event,) = [r["json"] for r in _by_kind(_new())["generic"]]
    assert (event["status"], event["fault_type"]) == ("recovered", "nccl_env_drift")


def test_bad_configuration_fails_before_anything_is_written(host):
    bad = {"bad_webhooks": [{"name": "ops", "type": "teams", "url": "https://example.invalid/tok-teams-77aa01"}]}
    proc = _play("bad_config.yml", "-e", json.dumps(bad))
    assert proc.returncode != 0
    assert "value of type must be one of: lark, feishu, dingtalk, slack, generic, got: teams" in _flat(proc.stdout + proc.stderr)
    assert "tok-teams-77aa01" not in proc.stdout + proc.stderr
    bad = {"bad_webhooks": [{"name": "ops", "type": "slack", "url": "https://x.invalid/a"},
                            {"name": "ops", "type": "slack", "url": "https://x.invalid/tok-slack-0b0b0b"}]}
    proc = _play("bad_config.yml", "-e", json.dumps(bad))
    assert proc.returncode != 0 and "webhooks[1] (ops): the name is used twice" in _flat(proc.stdout + proc.stderr)
    assert "tok-slack-0b0b0b" not in proc.stdout + proc.stderr
    proc = _play("bad_config.yml", "-e", json.dumps({"bad_webhooks": [], "bad_checks": {"expected_gpus": 8}}))
    assert proc.returncode != 0 and "checks: unknown check option(s): expected_gpus" in _flat(proc.stdout + proc.stderr)
    assert not host.file("/etc/gpufabric/bad-health-monitor.json").exists


def test_the_role_never_chmods_or_deletes_a_directory_it_did_not_create(host):
    """The state directory set to /var/lib or /tmp (and a site's own directory): refused on install,
    left alone on removal - nothing chmodded, nothing deleted."""
    assert host.run("mkdir -p /srv/site-data && chmod 0755 /srv/site-data && echo keep > /srv/site-data/file").rc == 0
    before = dict((path, host.file(path).mode) for path in ("/var/lib", "/tmp", "/srv/site-data"))
    for path, why in (("/var/lib", "/var/lib is a system directory"), ("/tmp", "/tmp is a system directory"),
                      ("/srv/site-data", "/srv/site-data exists and was not created by health_monitor")):
        proc = _play("own_dirs.yml", "-e", "owned_state_dir=" + path)
        assert proc.returncode != 0 and why in _flat(proc.stdout + proc.stderr), proc.stdout[-3000:]
        proc = _play("own_dirs.yml", "-e", "owned_state_dir=" + path, "-e", "owned_state=absent")
        if path == "/srv/site-data":
            assert proc.returncode == 0 and "was not created by health_monitor" in _flat(proc.stdout + proc.stderr)
    assert dict((path, host.file(path).mode) for path in before) == before
    assert host.file("/srv/site-data/file").content_string == "keep\n" and host.file("/var/lib/dpkg").is_directory
    assert not host.file("/etc/gpufabric/other-health-monitor.json").exists


def test_absent_removes_the_monitor(host):
    proc = _play("remove.yml")
    assert proc.returncode == 0, proc.stdout[-3000:]
    for path in ("/etc/systemd/system/%s.timer" % UNIT, "/etc/gpufabric/health-monitor.json",
                 "/var/lib/gpufabric-health-monitor", "/usr/local/lib/gpufabric-health-monitor"):
        assert not host.file(path).exists, path
    assert host.run("systemctl is-active %s.timer" % UNIT).stdout.strip() in ("inactive", "unknown")
    proc = _play("remove.yml")
    assert proc.returncode == 0 and re.search(r"gpufabric-hm-node\s*: ok=\d+\s+changed=0", proc.stdout)
