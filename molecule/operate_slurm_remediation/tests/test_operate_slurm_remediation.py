"""One decider per cluster against a real Slurm (slurmctld + three slurmd, Debian's slurm-wlm): the
health monitor on each node reports, the decider on the controller alone drains and resumes.

Every node reports a critical fault at the same moment through the HealthCheckProgram and through the
timer, with max_nodes 1: exactly one node is drained, the others are held back by the limit; the same
with one node's clock an hour ahead (libfaketime) and its time zone east; the circuit breaker stops all
action; shadow mode acts on nothing; a node drained for a fault stays drained while its kernel log
cannot be read, and while an AWX-run drain's fault (under a wider policy) is still present under the
decider's narrower one; repeat escalation keeps a flapping node out; the prolog gate refuses a job only
on a node the decider took out of service; an admin's drain is left alone. Return to service: a node drained for
an Xid 79 stays drained while its active check (DCGM level 2, replayed by a dcgmi stand-in, and nccl-tests on its
GPUs, a stand-in printing a real run) fails or cannot start, and is resumed by the remediate playbook once a passing
one is replayed; the epilog's DCGM level 2 failing between jobs drains through the decider; each drain leaves a
bounded evidence bundle on the decider, one per node kept, and a hung nvidia-bug-report.sh never holds the drain.
The tests run the wrappers slurmd runs, so they need not wait for HealthCheckInterval.
"""

import base64
import json
import os
import re
import subprocess
import tempfile
import threading
import time

import pytest
import testinfra

testinfra_hosts = ["gpufabric-ops-ctl"]

CTL = "gpufabric-ops-ctl"
NODES = ["gpufabric-ops-node1", "gpufabric-ops-node2", "gpufabric-ops-node3"]
SCENARIO = os.environ.get("MOLECULE_SCENARIO_DIRECTORY", os.path.dirname(os.path.dirname(__file__)))
XID_79 = ("2026-11-23T18:00:00+00:00 {node} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
          "GPU has fallen off the bus.")
XID_63 = ("2026-11-23T18:00:00+00:00 {node} kernel: NVRM: Xid (PCI:0000:18:00): 63, pid=1234, name=python, "
          "ECC page retirement recording event.")
DECIDER_CONFIG = "/etc/gpufabric-remediator/config.json"
LEDGER = "/var/lib/gpufabric-remediator/decider.json"
HISTORY = "/var/lib/gpufabric-remediator/decider.history.json"   # the decision history's second copy
SAVE = os.environ.get("GPUFABRIC_SAVE_SLURM_CAPTURES")  # a directory: keep the real outputs as fixtures

with open(os.path.join(SCENARIO, "decider-settings.json")) as handle:
    BASE_SETTINGS = json.load(handle)


def node_host(name):
    return testinfra.get_host("docker://" + name)


def write_log(name, line):
    data = base64.b64encode((line.format(node=name) + "\n" if line else "").encode()).decode()
    node_host(name).check_output("rm -rf /var/log/gpufabric-test/kern.log && echo %s | base64 -d > "
                                 "/var/log/gpufabric-test/kern.log", data)


def fault(name, present=True):
    """Write (or clear) an Xid 79 in the kernel log the checks read."""
    write_log(name, XID_79 if present else "")


def healthcheck(name, prefix=""):
    """What slurmd runs as HealthCheckProgram (always exit 0); its output says what the decider did."""
    result = node_host(name).run("%s/usr/local/sbin/gpufabric-healthcheck" % prefix)
    assert result.rc == 0, result.stderr
    return result.stdout + result.stderr


def timer_run(name):
    result = node_host(name).run("systemctl start gpufabric-health-monitor.service; "
                                 "journalctl -u gpufabric-health-monitor.service --no-pager -o cat -n 20")
    return result.stdout


def at_once(run, names):
    """Start ``run(name)`` for every node at the same moment; {name: output}."""
    out, barrier = {}, threading.Barrier(len(names))

    def one(name):
        barrier.wait()
        out[name] = run(name)
    threads = [threading.Thread(target=one, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return out


def show(host, name):
    out = host.check_output("scontrol show node -o %s", name)
    if SAVE:
        with open(os.path.join(SAVE, "scontrol_show_node_%d.txt" % int(time.time() * 1000)), "w") as handle:
            handle.write(out + "\n")
    state = re.search(r"\bState=(\S+)", out).group(1)
    reason = re.search(r"\bReason=(.*?) \[", out)
    return state, reason.group(1) if reason else None


def drained(host):
    return sorted(name for name in NODES if "DRAIN" in show(host, name)[0])


def set_decider(host, batch_window=None, **settings):
    """Give the decider other settings (or the scenario's own with none), forget its ledger and the ledger's second
    copy (with no drain of gpufabric in Slurm, a first start), restart it. ``batch_window``: how long it gathers the
    reports sent together (seconds; None: its default)."""
    config = json.loads(host.check_output("cat %s", DECIDER_CONFIG))
    wanted = dict(BASE_SETTINGS, **settings)
    config["remediation"] = wanted
    config.pop("batch_window", None)
    if batch_window is not None:
        config["batch_window"] = batch_window
    data = base64.b64encode(json.dumps(config).encode()).decode()
    # reset-failed: the tests restart it more often than systemd's start limit allows by default
    host.check_output("systemctl stop gpufabric-remediator && rm -f %s %s && echo %s | base64 -d > %s && "
                      "systemctl reset-failed gpufabric-remediator; systemctl start gpufabric-remediator",
                      LEDGER, HISTORY, data, DECIDER_CONFIG)
    wait_for_decider(host)


SCONTROL = "/usr/local/sbin/gpufabric-test-scontrol"
SCONTROL_MODE = "/etc/gpufabric-test-scontrol.mode"
# slurmctld's own scontrol, except for `update` when the mode file says hang (a decider killed mid-action) or fail
# (slurmctld refusing the update): what the decider runs when the tests point its settings here.
SCONTROL_WRAPPER = """#!/bin/sh
if [ "$1" = update ]; then
  case "$(cat %s 2>/dev/null)" in
    hang) sleep 300 ;;
    fail) echo "slurm_update error: Access/permission denied" >&2; exit 1 ;;
  esac
fi
exec /usr/bin/scontrol "$@"
""" % SCONTROL_MODE


def scontrol_through_wrapper(host, mode):
    data = base64.b64encode(SCONTROL_WRAPPER.encode()).decode()
    host.check_output("echo %s | base64 -d > %s && chmod 0755 %s && echo %s > %s", data, SCONTROL, SCONTROL, mode,
                      SCONTROL_MODE)
    set_decider(host, slurm={"enabled": True, "scontrol": SCONTROL})


def wait_for_decider(host):
    for attempt in range(100):
        if host.run("python3 -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:8740/v1/health')\"").rc == 0:
            return
        time.sleep(0.2)
    raise AssertionError("the decider did not come back")


def job_until_drained(host, name, tag, seconds):
    """Submit a one-line job to ``name``; (job id, state, reason) once the node drains, or after ``seconds``."""
    job = host.check_output("sbatch --parsable -N1 -w %s --wrap hostname -o /tmp/%s-%%j.out", name, tag)
    for attempt in range(seconds):
        state, reason = show(host, name)
        if "DRAIN" in state:
            break
        time.sleep(1)
    return job, state, reason


def admin_resume(host, name):
    host.run("scontrol update NodeName=%s State=RESUME", name)
    for attempt in range(30):
        if "DRAIN" not in show(host, name)[0]:
            return
        time.sleep(1)


@pytest.fixture(autouse=True)
def healthy_cluster(host):
    """Every test starts from three healthy nodes in service, a fresh decider with the scenario's settings."""
    for name in NODES:
        fault(name, False)
        admin_resume(host, name)
    set_decider(host)
    yield
    host.run("rm -f %s %s", SCONTROL_MODE, SCONTROL)
    node_host(NODES[0]).run("hostname %s", NODES[0])
    for name in NODES:
        fault(name, False)
        replay_dcgm(name, PASSING_DCGM)   # the epilog's DCGM passes again
        node_host(name).run("rm -f /opt/mlx-standin/capture/state.json /opt/mlx-standin/capture/log")  # factory settings
        admin_resume(host, name)
    set_decider(host)


def test_slurm_conf_runs_our_check_and_gate_everywhere(host):
    for name in [CTL] + NODES:
        conf = node_host(name).file("/etc/slurm/slurm.conf").content_string
        assert "HealthCheckProgram=/usr/local/sbin/gpufabric-healthcheck" in conf
        assert "HealthCheckInterval=3600" in conf and "HealthCheckNodeState=ANY" in conf
        assert "Epilog=/usr/local/sbin/gpufabric-epilog" in conf
        assert "Prolog=/usr/local/sbin/gpufabric-prolog" in conf
    config = host.check_output("scontrol show config")
    assert re.search(r"HealthCheckProgram\s*=\s*/usr/local/sbin/gpufabric-healthcheck", config)
    assert host.service("gpufabric-remediator").is_running
    assert host.file("/var/lib/gpufabric-remediator/.gpufabric-owner").content_string == "remediator\n"
    assert host.file("/etc/gpufabric-remediator/report.key").mode == 0o600


def test_a_fault_on_every_node_at_the_same_moment_drains_exactly_one(host):
    for name in NODES:
        fault(name)
    out = at_once(healthcheck, NODES)
    assert len(drained(host)) == 1, out
    (gone,) = drained(host)
    state, reason = show(host, gone)
    assert reason.startswith("gpufabric: gpu_xid %s/GPU 0000:18:00; policy molecule-critical; via healthcheck" % gone)
    held = [name for name in NODES if name != gone]
    for name in held:
        assert "held back" in out[name] and "rate limit: 1 node(s) of partition gpu already drained" in out[name], out[name]
    # The same through the timer: nothing more.
    out = at_once(timer_run, NODES)
    assert drained(host) == [gone], out
    journal = host.check_output("journalctl -u gpufabric-remediator --no-pager -o cat")
    assert "batch of 3 report(s)" in journal or "batch of 2 report(s)" in journal


def test_a_node_clock_an_hour_ahead_and_east_lets_no_second_drain_through(host):
    fault(NODES[0])
    healthcheck(NODES[0])
    assert drained(host) == [NODES[0]]
    fault(NODES[1])
    # The node's clock two hours ahead and its time zone nine hours east: the decider asks slurmctld's clock.
    out = healthcheck(NODES[1], prefix="TZ=Asia/Tokyo faketime -f +2h ")
    assert "held back" in out and drained(host) == [NODES[0]], out
    ahead = int(node_host(NODES[1]).check_output("TZ=Asia/Tokyo faketime -f +2h date +%s"))
    assert ahead - int(node_host(NODES[1]).check_output("date +%s")) > 7000  # the fake clock really is ahead


def test_the_circuit_breaker_stops_all_action(host):
    # One batch (a 10 s window): a report decided alone first is 1 of 3 unhealthy, below the breaker, and drains - on
    # two loaded cores the three checks finish seconds apart.
    set_decider(host, batch_window=10, circuit_breaker={"max_percent": 50, "window": 300},
                rate_limit={"max_nodes": 3, "max_percent": 100})
    for name in NODES:
        fault(name)
    out = at_once(healthcheck, NODES)
    assert drained(host) == [], out
    assert sum("circuit breaker open" in text for text in out.values()) == 3, out
    journal = host.check_output("journalctl -u gpufabric-remediator --no-pager -o cat")
    assert "circuit breaker open" in journal


def test_shadow_mode_acts_on_nothing(host):
    set_decider(host, mode="shadow")
    fault(NODES[0])
    out = healthcheck(NODES[0])
    assert "shadow mode, would have drained %s" % NODES[0] in out
    assert drained(host) == []
    ledger = json.loads(host.check_output("cat %s", LEDGER))
    assert ledger["ledger"]["nodes"][NODES[0]]["drains"][-1]["shadow"] is True


def test_a_drained_node_stays_drained_while_its_kernel_log_cannot_be_read(host):
    fault(NODES[0])
    healthcheck(NODES[0])
    assert drained(host) == [NODES[0]]
    node_host(NODES[0]).check_output("rm /var/log/gpufabric-test/kern.log && mkdir /var/log/gpufabric-test/kern.log")
    out = healthcheck(NODES[0])
    assert "stays drained: the check could not read kernel log" in out, out
    assert drained(host) == [NODES[0]]
    fault(NODES[0], False)
    assert "resumed %s" % NODES[0] in healthcheck(NODES[0])
    assert drained(host) == []


def _remediate(*extra, checks=None, **settings):
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    wide = dict(BASE_SETTINGS, policy=[{"severity": "critical", "action": "drain"},
                                       {"severity": "warning", "action": "drain"}], policy_name="awx-wide")
    wide.update(settings)
    extra_vars = {"remediate_hosts": "slurm_compute", "remediate_slurm_host": CTL, "remediator_settings": wide,
                  "health_monitor_checks": {"expected_gpu_count": 8, "nvidia_smi_path": "/opt/standin/nvidia-smi",
                                            "kernel_log": "/var/log/gpufabric-test/kern.log",
                                            "sysfs_root": "/opt/empty-sys", "command_timeout": 10, **(checks or {})}}
    proc = subprocess.run(["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "gpufabric.rdma.remediate",
                           "-e", json.dumps(extra_vars)] + list(extra),
                          capture_output=True, text=True, timeout=300, check=False, env=env)
    # ansible-core 2.19 prints a task's error on stderr, and its default callback wraps a long message over lines:
    # the assertions read both streams with each run of whitespace made one space.
    proc.stdout = " ".join((proc.stdout + proc.stderr).split())
    return proc


def test_an_awx_drain_holds_while_its_fault_is_present_under_the_deciders_narrower_policy(host):
    write_log(NODES[0], XID_63)  # a warning: the AWX run's policy drains it, the decider's does not
    proc = _remediate("--check")
    assert proc.returncode == 0 and drained(host) == [], proc.stdout[-3000:]
    assert "Slurm: drained %s" % NODES[0] in proc.stdout
    proc = _remediate()
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert drained(host) == [NODES[0]] and show(host, NODES[0])[1].endswith("; policy awx-wide; via awx")
    out = healthcheck(NODES[0])  # the decider's policy is critical only; the warning is still reported
    assert "stays drained: finding recorded at the drain still reported (gpu_xid|%s/GPU 0000:18:00)" % NODES[0] in out
    assert drained(host) == [NODES[0]]
    write_log(NODES[0], "")
    assert "resumed %s" % NODES[0] in healthcheck(NODES[0])


DCGM_FIXTURES = os.path.join(SCENARIO, "..", "..", "tests", "unit", "fixtures", "dcgm")
PASSING_DCGM = "dcgm3_r2_pass_p4de_awsome.txt"
CERTIFY = {"required": True, "dcgm_level": 2, "checks": ["dcgm", "nccl", "pairwise"], "max_age": 3600}
# The return-to-service check's tools are stand-ins replaying real captures (tests/lab); say so in every report.
# The stand-in prints no NCCL log, so what NCCL used is not judged here (molecule/validate_nccl_tests_perftest does).
CERTIFY_VARS = ["-e", json.dumps({"nccl_tests_bin_dir": "/opt/nccl-tests-standin", "nccl_tests_gpus_per_node": 8,
                                  "gpufabric_report_root": tempfile.mkdtemp(prefix="gpufabric-certify-"),
                                  "nccl_tests_nccl_debug": False, "nccl_tests_port_counters": False,
                                  "gpufabric_replayed_from": "stand-ins replaying public DCGM and nccl-tests captures"})]


def replay_dcgm(name, fixture, status=0):
    """What the dcgmi stand-in on ``name`` prints next (a real capture) and exits with; fixture None: no dcgmi."""
    node = node_host(name)
    if fixture is None:
        node.check_output("mv -f /usr/local/bin/dcgmi /usr/local/bin/capture/dcgmi.off")
        return
    with open(os.path.join(DCGM_FIXTURES, fixture), "rb") as handle:
        data = base64.b64encode(handle.read()).decode()
    node.check_output("test -e /usr/local/bin/dcgmi || mv /usr/local/bin/capture/dcgmi.off /usr/local/bin/dcgmi; "
                      "echo %s | base64 -d > /usr/local/bin/capture/dcgm.txt && echo %s > /usr/local/bin/capture/dcgm.rc",
                      data, str(status))


def test_a_drained_node_returns_only_on_a_certificate_its_active_check_earned(host):
    # The decider needs a certificate (DCGM level 2, nccl-tests on the node's GPUs); the node drains for an Xid 79.
    set_decider(host, certification=CERTIFY)
    fault(NODES[0])
    healthcheck(NODES[0])
    assert drained(host) == [NODES[0]]
    fault(NODES[0], False)
    # Cleared: the passive check alone no longer resumes it.
    out = healthcheck(NODES[0])
    assert "stays drained: no return-to-service certificate: an active check (dcgm level 2, nccl, pairwise)" in out, out
    # Its check cannot start (no dcgmi): not a pass, it stays drained, and the run says why.
    replay_dcgm(NODES[0], None)
    proc = _remediate(*CERTIFY_VARS, certification=CERTIFY)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "certify (dcgm level 2, nccl, pairwise) on %s; pairwise peer %s" % (NODES[0], NODES[1]) in proc.stdout, proc.stdout[-4000:]
    assert "does not certify: dcgm not run: dcgmi is not installed" in proc.stdout, proc.stdout[-4000:]
    assert drained(host) == [NODES[0]]
    # DCGM fails its PCIe test (a real capture): stays drained, naming the test.
    replay_dcgm(NODES[0], "dcgm3_r2_fail_pcie_nolebase.txt", 226)
    proc = _remediate(*CERTIFY_VARS, certification=CERTIFY)
    assert proc.returncode == 0 and "does not certify: dcgm fail: Integration/PCIe" in proc.stdout, proc.stdout[-4000:]
    assert drained(host) == [NODES[0]]
    # Check mode names the node it would certify and changes nothing.
    replay_dcgm(NODES[0], "dcgm3_r2_pass_p4de_awsome.txt")
    proc = _remediate("--check", *CERTIFY_VARS, certification=CERTIFY)
    assert proc.returncode == 0 and "certify (dcgm level 2, nccl, pairwise) on %s" % NODES[0] in proc.stdout, proc.stdout[-4000:]
    assert drained(host) == [NODES[0]]
    # Shadow mode: the same passing check, and the decider only says it would resume.
    proc = _remediate(*CERTIFY_VARS, certification=CERTIFY, mode="shadow")
    assert proc.returncode == 0 and "shadow mode, would have resumed %s" % NODES[0] in proc.stdout, proc.stdout[-4000:]
    assert drained(host) == [NODES[0]]
    # A passing DCGM level 2 and nccl-tests within what the node carries: resumed, the certificate in the ledger.
    proc = _remediate(*CERTIFY_VARS, certification=CERTIFY)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert drained(host) == [], proc.stdout[-4000:]
    assert "certified" in proc.stdout and "dcgm level 2 pass, nccl pass" in proc.stdout, proc.stdout[-4000:]
    assert re.search(r"pairwise pass [\d.]+ GB/s( of \d+ expected)? with %s" % NODES[1], proc.stdout), proc.stdout[-4000:]
    ledger = json.loads(host.check_output("cat %s", LEDGER))["ledger"]
    resume = ledger["nodes"][NODES[0]]["resumes"][-1]
    assert resume["certificate"]["checks"][0] == "dcgm level 2 pass" and resume["mttr"] >= 0
    assert resume["certificate"]["versions"]["dcgm"] == "3.3.3"
    assert node_host(NODES[0]).check_output("cat /usr/local/bin/capture/asked").startswith("diag -r 2")


FIRMWARE_CHECK = {"nic_firmware": {"profiles": ["roce_lossless"], "params": {"ecn_priorities": [3]},
                                   "tool": "/opt/mlx-standin/mlxconfig", "devices": ["01:00.1"]}}
MLX_LOG = "cat /opt/mlx-standin/capture/log 2>/dev/null || true"


def test_a_nic_firmware_change_is_drained_for_set_reset_certified_and_resumed_within_the_limits(host):
    # Every node's ConnectX-4 Lx (a real query) runs congestion control on all eight priorities; the profile wants
    # priority 3 only. The AWX run's policy drains on the warning, at most one node an hour.
    certify = dict(CERTIFY, checks=["dcgm", "nccl"])   # no node in service is clean enough to pair with
    proc = _remediate(*CERTIFY_VARS, checks=FIRMWARE_CHECK, certification=certify)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert drained(host) == [NODES[0]] and "nic_firmware_settings %s/01:00.1" % NODES[0] in show(host, NODES[0])[1]
    assert "held back %s (rate limit" % NODES[1] in proc.stdout, proc.stdout[-4000:]
    # Check mode: the drained, idle node's per-device diff, and nothing set, reset or resumed.
    proc = _remediate("--check", "--diff", *CERTIFY_VARS, checks=FIRMWARE_CHECK, certification=certify)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "change the NIC firmware settings of %s (drained, idle): nic_firmware_settings|%s/01:00.1" % (
        NODES[0], NODES[0]) in proc.stdout, proc.stdout[-4000:]
    assert "01:00.1 (ConnectX4LX): ROCE_CC_PRIO_MASK_P1 255 -> 8" in proc.stdout, proc.stdout[-4000:]
    assert "-01:00.1 ROCE_CC_PRIO_MASK_P1=255" in proc.stdout and "+01:00.1 ROCE_CC_PRIO_MASK_P1=8" in proc.stdout, proc.stdout[-4000:]
    assert " set " not in node_host(NODES[0]).check_output(MLX_LOG) and drained(host) == [NODES[0]]
    # For real: set, the replayed reset, a fresh check without the finding, DCGM level 2 and nccl-tests, resumed on the
    # certificate; the other two wait for the rate limit.
    proc = _remediate(*CERTIFY_VARS, checks=FIRMWARE_CHECK, certification=certify)
    assert proc.returncode == 0, proc.stdout[-4000:]
    log = node_host(NODES[0]).check_output(MLX_LOG).splitlines()
    assert [line for line in log if not line.endswith(" q")] == [
        "mlxconfig -y -d 01:00.1 set ROCE_CC_PRIO_MASK_P1=8 ROCE_CC_PRIO_MASK_P2=8", "mlxfwreset -d 01:00.1 -y reset"], log
    assert "resumed %s" % NODES[0] in proc.stdout and "dcgm level 2 pass, nccl pass" in proc.stdout, proc.stdout[-4000:]
    assert drained(host) == [], proc.stdout[-4000:]
    resume = json.loads(host.check_output("cat %s", LEDGER))["ledger"]["nodes"][NODES[0]]["resumes"][-1]
    assert resume["certificate"]["cleared"] == ["nic_firmware_settings|%s/01:00.1" % NODES[0]]
    assert " set " not in node_host(NODES[1]).check_output(MLX_LOG)


def test_the_epilog_runs_dcgm_level_2_between_jobs_and_the_decider_drains_on_its_failure(host):
    set_decider(host)
    replay_dcgm(NODES[2], "dcgm4_r2_fail_pcie_b200.txt", 226)
    try:
        job, state, reason = job_until_drained(host, NODES[2], "epilog", 90)
        assert "DRAIN" in state, (state, reason)
        assert reason.startswith("gpufabric: dcgm_diag %s" % NODES[2]) and reason.endswith("; via epilog"), reason
        assert "JobState=COMPLETED" in host.check_output("scontrol show job -o %s", job)  # the job itself ran
        assert node_host(NODES[2]).check_output("cat /usr/local/bin/capture/asked").startswith("diag -r 2")
    finally:
        replay_dcgm(NODES[2], PASSING_DCGM)
        admin_resume(host, NODES[2])


def test_a_drain_keeps_a_bounded_bundle_on_the_decider_and_a_hung_collector_never_holds_it(host):
    # nvidia-bug-report.sh hangs on the node; the budget is 5 s; one bundle per node is kept.
    set_decider(host, evidence={"budget": 5, "keep_per_node": 1},
                rate_limit={"max_nodes": 5, "max_percent": 100, "interval": 3600, "max_resumes": 5})
    node = node_host(NODES[1])
    node.check_output("printf '#!/bin/sh\\nsleep 300 & sleep 300\\n' > /usr/local/bin/nvidia-bug-report.sh && "
                      "chmod 755 /usr/local/bin/nvidia-bug-report.sh")
    try:
        names = []
        for attempt in range(2):
            fault(NODES[1])
            started = time.time()
            out = healthcheck(NODES[1])
            assert drained(host) == [NODES[1]] and time.time() - started < 40, out
            assert "nvidia-bug-report.out timed out" in out and "HTTP 200" in out, out
            ledger = json.loads(host.check_output("cat %s", LEDGER))
            names.append(ledger["ledger"]["nodes"][NODES[1]]["drains"][-1]["evidence"])
            path = "/var/lib/gpufabric-remediator/evidence/" + names[-1]
            listing = host.check_output("tar tzf %s", path).split()
            assert {"manifest.json", "findings.json", "kernel-log.txt", "rdma-ports.json"} <= set(listing), listing
            assert "Xid (PCI:0000:18:00): 79" in host.check_output("tar xzOf %s kernel-log.txt", path)
            assert host.check_output("stat -c %%a %s", path) == "600"
            fault(NODES[1], False)
            assert "resumed %s" % NODES[1] in healthcheck(NODES[1])
            time.sleep(1.1)   # the next drain's bundle gets the next second's name
        # keep_per_node 1: the first drain's bundle was dropped for the second's.
        kept = host.check_output("ls /var/lib/gpufabric-remediator/evidence/%s", NODES[1]).split()
        assert kept == [names[1].split("/")[1]] and names[0] != names[1], (kept, names)
    finally:
        node.run("rm -f /usr/local/bin/nvidia-bug-report.sh")


def test_repeat_escalation_keeps_a_flapping_node_out(host):
    # Three drains of one node within the hour: the rate limit (which counts them, resumed or not) is wide here.
    set_decider(host, escalation={"max_remediations": 2, "days": 7},
                rate_limit={"max_nodes": 5, "max_percent": 100, "interval": 3600, "max_resumes": 5})
    for attempt in range(3):
        fault(NODES[0])
        healthcheck(NODES[0])
        assert drained(host) == [NODES[0]]
        fault(NODES[0], False)
        out = healthcheck(NODES[0])
    assert drained(host) == [NODES[0]]
    assert show(host, NODES[0])[1].startswith("gpufabric: ESCALATED 3 drains in 7 d, a human must look: gpu_xid")
    assert "escalated" in out and "stays drained until a human resumes it" in out


def test_the_prolog_gate_refuses_a_job_only_on_a_node_the_decider_took_out(host):
    fault(NODES[0])  # the fault is there before any check ran: only the prolog sees it
    job, state, reason = job_until_drained(host, NODES[0], "gate", 60)
    assert "DRAIN" in state
    assert reason.startswith("gpufabric: gpu_xid %s/GPU 0000:18:00; policy molecule-critical; via gate" % NODES[0])
    record = host.check_output("scontrol show job -o %s", job)
    assert "JobState=COMPLETED" not in record
    host.run("scancel %s", job)
    # A second faulty node: the limit is used, so its gate lets the job run (a gate never drains beyond it).
    fault(NODES[1])
    gate = node_host(NODES[1]).run("/usr/local/sbin/gpufabric-prolog")
    assert gate.rc == 0 and drained(host) == [NODES[0]]


def test_a_node_an_admin_drained_stays_drained(host):
    host.check_output("scontrol update NodeName=%s State=DRAIN Reason=%s", NODES[1], "memory test")
    out = healthcheck(NODES[1])
    assert "drained by someone else (memory test)" in out
    fault(NODES[1])
    healthcheck(NODES[1])
    assert show(host, NODES[1])[1] == "memory test"


# --- the decider's own faults (issue 35), on the real slurmctld ---------------------------------------------------

def test_a_node_whose_host_name_is_not_its_nodename_is_one_node_on_every_path(host):
    """Before, the AWX path named findings by the OS host name and the monitor by the inventory name (the NodeName):
    a node drained by the monitor was resumed by an AWX run with its fault still there."""
    node_host(NODES[0]).check_output("hostname bmc-7f3a9c.cluster.local")
    assert node_host(NODES[0]).check_output("hostname") == "bmc-7f3a9c.cluster.local"
    fault(NODES[0])
    timer_run(NODES[0])
    assert drained(host) == [NODES[0]]
    # The fault is still there, and the AWX run's policy only notifies on it, so the run asks whether the node may
    # be resumed: only if its report names the finding as the drain recorded it does the node stay drained.
    proc = _remediate(policy=[{"severity": "critical", "action": "notify"}], policy_name="awx-notify")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert drained(host) == [NODES[0]], proc.stdout[-3000:]
    said = " ".join(proc.stdout.split())   # the scenario's callback folds long lines
    assert ("stays drained: finding recorded at the drain still reported (gpu_xid|%s/GPU 0000:18:00)" % NODES[0]
            in said), proc.stdout[-3000:]
    assert "bmc-7f3a9c" not in proc.stdout


def test_a_decider_killed_between_its_intent_and_scontrol_drains_the_node_after_its_restart(host):
    """Before, a decider killed after recording a drain and before slurmctld took it held the still-failing node
    back for the whole interval by its own phantom drain. Here `scontrol update` hangs, the decider is killed (SIGKILL,
    systemd restarts it), and the node's next report drains it."""
    scontrol_through_wrapper(host, "hang")
    fault(NODES[0])
    waiting = threading.Thread(target=healthcheck, args=(NODES[0],))
    waiting.start()
    for attempt in range(60):
        # [/] keeps pgrep from finding the shell that runs it
        if host.run("pgrep -f '[/]usr/local/sbin/gpufabric-test-scontrol update NodeName=%s'", NODES[0]).rc == 0:
            break
        time.sleep(0.5)
    else:
        raise AssertionError("the decider never ran scontrol update")
    ledger = json.loads(host.check_output("cat %s", LEDGER))["ledger"]
    assert ledger["nodes"][NODES[0]]["drains"][-1]["pending"] is True   # the intent is saved before acting
    host.check_output("echo real > %s && systemctl kill -s KILL gpufabric-remediator", SCONTROL_MODE)
    waiting.join(60)
    time.sleep(6)   # Restart=always, RestartSec=5
    wait_for_decider(host)
    assert drained(host) == []
    out = healthcheck(NODES[0])
    assert drained(host) == [NODES[0]], out
    assert "held back" not in out


def test_a_deleted_state_file_is_rebuilt_from_its_history_copy_or_from_slurm(host):
    """Before, a deleted decider.json started afresh. Now its second copy (decider.history.json) gives back every drain
    and resume: our drain counts against max_nodes 1. With the copy deleted too, Slurm's drain of ours shows the
    decider ran before, and the drains and resumes already over are unknown: none is made for one interval."""
    since = host.check_output("date +%s")
    fault(NODES[0])
    healthcheck(NODES[0])
    assert drained(host) == [NODES[0]]
    host.check_output("rm %s", LEDGER)
    fault(NODES[1])
    out = healthcheck(NODES[1])
    assert drained(host) == [NODES[0]] and "rate limit: 1 node(s) of partition gpu already drained" in out, out
    host.check_output("rm %s %s", LEDGER, HISTORY)
    fault(NODES[0], False)
    out = healthcheck(NODES[0])
    assert drained(host) == [NODES[0]] and "resume budget unknown" in out, out
    journal = host.check_output("journalctl -u gpufabric-remediator --no-pager -o cat --since @%s", since)
    assert "its decision history was restored from its second copy (decider.history.json): 1 node record(s)" in journal
    assert ("its limits are rebuilt from Slurm: 1 node(s) drained by gpufabric, 1 of them within the rate interval; its "
            "decision history could not be rebuilt" in journal), journal


def test_an_update_slurmctld_refuses_is_could_not_drain_once_and_never_drained(host):
    """Before, a failing `scontrol update` was told "DRAINED" then "COULD NOT ACT" on every report, and the node's
    journal said drained. Now the node hears "could not drain" once, then the backoff."""
    scontrol_through_wrapper(host, "fail")
    since = host.check_output("date +%s")
    fault(NODES[0])
    out = healthcheck(NODES[0])
    assert "could not drain %s: scontrol update" % NODES[0] in out and "Access/permission denied" in out, out
    assert "Slurm: drained" not in out and drained(host) == []
    out = healthcheck(NODES[0])
    assert "not tried again before" in out and drained(host) == [], out
    journal = host.check_output("journalctl -u gpufabric-remediator --no-pager -o cat --since @%s", since)
    assert journal.count("could not act on %s" % NODES[0]) == 1, journal


RAS_FIXTURES = os.path.join(SCENARIO, "..", "..", "tests", "unit", "fixtures", "nccl_ras")
RAS_STANDIN = os.path.join(SCENARIO, "..", "..", "tests", "lab", "nccl-ras-standin", "nccl_ras_standin.py")
# The reply captured on the GPU machine (docs/benchmarks/2026-11-27-h200x2-nccl-ras) names its node by that machine's
# address; the stand-in puts a node of this cluster in its place.
CAPTURED_ADDRESS = "192.0.2.2"


def _copy_to(name, source, dest, mode="0644"):
    with open(source, "rb") as handle:
        data = base64.b64encode(handle.read()).decode()
    node_host(name).check_output("echo %s | base64 -d > %s && chmod %s %s", data, dest, mode, dest)


def _ras_standin(name, fixture, suspect):
    """On ``name``, NCCL's RAS port answered by the stand-in replaying ``fixture`` with ``suspect``'s address."""
    address = node_host(suspect).check_output("hostname -i").split()[0]
    _copy_to(name, RAS_STANDIN, "/usr/local/lib/nccl_ras_standin.py")
    _copy_to(name, os.path.join(RAS_FIXTURES, fixture), "/tmp/ras-reply.txt")
    # A command of its own, '[n]ccl': the pattern must not match the shell that runs pkill.
    node_host(name).run("pkill -f '[n]ccl_ras_standin'")
    node_host(name).check_output("(nohup python3 /usr/local/lib/nccl_ras_standin.py /tmp/ras-reply.txt --rewrite %s=%s "
                                 ">/tmp/ras-standin.log 2>&1 &) ; sleep 1", CAPTURED_ADDRESS, address)


def _hang(job, *extra):
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    extra_vars = {"remediator_settings": BASE_SETTINGS, "hang_report_dir": tempfile.mkdtemp(prefix="gpufabric-hang-"),
                  "health_monitor_checks": {"expected_gpu_count": 8, "nvidia_smi_path": "/opt/standin/nvidia-smi",
                                            "kernel_log": "/var/log/gpufabric-test/kern.log",
                                            "sysfs_root": "/opt/empty-sys", "command_timeout": 10}}
    proc = subprocess.run(["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "gpufabric.rdma.hang",
                           "-e", "job_id=%s" % job, "-e", json.dumps(extra_vars)] + list(extra),
                          capture_output=True, text=True, timeout=300, check=False, env=env)
    with open(os.path.join(extra_vars["hang_report_dir"], "hang.json")) as handle:
        report = json.load(handle)
    return " ".join((proc.stdout + proc.stderr).split()), proc.returncode, report


def test_a_hung_job_names_its_rank_and_only_a_node_with_a_hardware_finding_is_drained(host):
    """Issue 40 on real Slurm: a job on the three nodes; node1's RAS port has no job (refused), node2 answers with the
    reply of a job whose rank 1 stopped calling NCCL (captured on the GPU machine), naming node2. With an Xid 79 on
    node2 the suspect is hardware and the decider drains node2 (check mode first: nothing drained); with the suspect
    on node3, whose check reads clean, it is the application and nothing is drained."""
    job = host.check_output("sbatch --parsable -N3 -w %s --wrap 'sleep 600' -o /dev/null", ",".join(NODES))
    try:
        for attempt in range(60):
            if host.check_output("squeue -h -j %s -o %%T", job) == "RUNNING":
                break
            time.sleep(1)
        _ras_standin(NODES[1], "hang_rank1_stopped_calling_2.28.9.txt", NODES[1])
        fault(NODES[1])
        out, rc, report = _hang(job, "--check")
        assert rc == 0 and drained(host) == [], out[-3000:]
        assert report["asked"][0]["node"] == NODES[0] and report["asked"][0]["kind"] == "refused"
        assert report["answered_by"] == NODES[1] and report["verdict"] == "suspects"
        (suspect,) = report["suspects"]
        assert (suspect["rank"], suspect["host"], suspect["nvml_gpu"], suspect["verdict"]) == (1, NODES[1], 1, "hardware")
        assert "rank 1 behind on node %s, GPU 1" % NODES[1] in out and "GPU has fallen off the bus" in out
        out, rc, report = _hang(job)
        assert rc == 0 and drained(host) == [NODES[1]], out[-3000:]
        assert "Slurm: drained %s" % NODES[1] in out

        fault(NODES[1], False)
        admin_resume(host, NODES[1])
        set_decider(host)
        _ras_standin(NODES[1], "hang_rank1_stopped_calling_2.28.9.txt", NODES[2])
        out, rc, report = _hang(job)
        assert rc == 0 and drained(host) == [], out[-3000:]
        assert report["suspects"][0]["verdict"] == "application" and report["suspects"][0]["host"] == NODES[2]
        assert "no hardware finding on %s: look at the application" % NODES[2] in out
    finally:
        host.run("scancel %s", job)
        node_host(NODES[1]).run("pkill -f '[n]ccl_ras_standin'")
