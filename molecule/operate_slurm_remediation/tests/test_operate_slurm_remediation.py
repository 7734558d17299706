"""From alert to action against a real Slurm (slurmctld + two slurmd, Debian's slurm-wlm): the health
monitor drains a faulty node with its own reason, jobs go to the healthy node, the node is resumed when
the fault clears, an admin's drain is left alone, the prolog gate refuses a job on a faulty node, and
the rate limit stops a second drain. slurmd runs the same wrapper as HealthCheckProgram; the tests run
it directly so they need not wait for HealthCheckInterval."""

import base64
import os
import re
import time

import pytest
import testinfra

testinfra_hosts = ["gpufabric-ops-ctl"]

NODES = ["gpufabric-ops-node1", "gpufabric-ops-node2"]
XID_79 = ("2026-11-23T18:00:00+00:00 {node} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
          "GPU has fallen off the bus.")
SAVE = os.environ.get("GPUFABRIC_SAVE_SLURM_CAPTURES")  # a directory: keep the real outputs as fixtures


def node_host(name):
    return testinfra.get_host("docker://" + name)


def fault(name, present):
    """Write (or clear) an Xid 79 in the kernel log the checks read."""
    line = base64.b64encode((XID_79.format(node=name) + "\n" if present else "").encode()).decode()
    node_host(name).check_output("echo %s | base64 -d > /var/log/gpufabric-test/kern.log", line)
    assert ("Xid" in node_host(name).file("/var/log/gpufabric-test/kern.log").content_string) == present


def healthcheck(name):
    """What slurmd runs as HealthCheckProgram."""
    result = node_host(name).run("/usr/local/sbin/gpufabric-healthcheck")
    assert result.rc == 0, result.stderr
    return result.stdout


def show(host, name):
    out = host.check_output("scontrol show node -o %s", name)
    if SAVE:
        with open(os.path.join(SAVE, "scontrol_show_node_%d.txt" % int(time.time() * 1000)), "w") as handle:
            handle.write(out + "\n")
    state = re.search(r"\bState=(\S+)", out).group(1)
    reason = re.search(r"\bReason=(.*?) \[", out)
    return state, reason.group(1) if reason else None


def resume(host, name):
    host.run("scontrol update NodeName=%s State=RESUME", name)
    for attempt in range(30):
        if "DRAIN" not in show(host, name)[0]:
            return
        time.sleep(1)


@pytest.fixture(autouse=True)
def healthy_cluster(host):
    """Every test starts from two healthy nodes in service and ends with them back."""
    for name in NODES:
        fault(name, False)
        healthcheck(name)
        resume(host, name)
    yield
    for name in NODES:
        fault(name, False)
        healthcheck(name)
        resume(host, name)


def test_slurm_conf_runs_our_check_and_gate_everywhere(host):
    for name in ["gpufabric-ops-ctl"] + NODES:
        conf = node_host(name).file("/etc/slurm/slurm.conf").content_string
        assert "HealthCheckProgram=/usr/local/sbin/gpufabric-healthcheck" in conf
        assert "HealthCheckInterval=3600" in conf and "HealthCheckNodeState=ANY" in conf
        assert "Prolog=/usr/local/sbin/gpufabric-prolog" in conf
    config = host.check_output("scontrol show config")
    assert re.search(r"HealthCheckProgram\s*=\s*/usr/local/sbin/gpufabric-healthcheck", config)
    assert re.search(r"Prolog\s*=\s*/usr/local/sbin/gpufabric-prolog", config)


def test_a_fault_drains_the_node_with_our_reason_and_jobs_go_to_the_healthy_node(host):
    fault(NODES[0], True)
    out = healthcheck(NODES[0])
    assert "slurm: ran scontrol update NodeName=gpufabric-ops-node1 State=DRAIN" in out
    state, reason = show(host, NODES[0])
    assert "DRAIN" in state
    assert reason == "gpufabric: gpu_xid gpufabric-ops-node1/GPU 0000:18:00"
    # A job submitted meanwhile runs on the healthy node.
    job = host.check_output("sbatch --parsable -N1 --wrap hostname -o /tmp/ops-%j.out")
    for attempt in range(60):
        record = host.check_output("scontrol show job -o %s", job)
        if "JobState=COMPLETED" in record:
            break
        time.sleep(1)
    assert "JobState=COMPLETED" in record and "NodeList=%s" % NODES[1] in record
    # Running the check again changes nothing: the drain is already ours.
    assert "ran scontrol" not in healthcheck(NODES[0])
    # The fault clears: the node is resumed.
    fault(NODES[0], False)
    assert "slurm: ran scontrol update NodeName=gpufabric-ops-node1 State=RESUME" in healthcheck(NODES[0])
    state, reason = show(host, NODES[0])
    assert "DRAIN" not in state and reason is None


def test_a_node_an_admin_drained_stays_drained(host):
    host.check_output("scontrol update NodeName=%s State=DRAIN Reason=%s", NODES[1], "memory test")
    out = healthcheck(NODES[1])
    assert "ran scontrol" not in out and "drained by someone else (memory test)" in out
    state, reason = show(host, NODES[1])
    assert "DRAIN" in state and reason == "memory test"
    # A fault on it changes nothing either: the admin's reason stays.
    fault(NODES[1], True)
    assert "ran scontrol" not in healthcheck(NODES[1])
    assert show(host, NODES[1])[1] == "memory test"


def test_the_prolog_gate_refuses_a_job_on_a_faulty_node(host):
    fault(NODES[0], True)  # the fault is there before any check ran: only the prolog sees it
    gate = node_host(NODES[0]).run("/usr/local/sbin/gpufabric-prolog")
    assert gate.rc == 1 and "refusing the job: gpufabric: gpu_xid" in gate.stderr
    job = host.check_output("sbatch --parsable -N1 -w %s --wrap hostname -o /tmp/gate-%%j.out", NODES[0])
    for attempt in range(60):
        state, reason = show(host, NODES[0])
        if "DRAIN" in state:
            break
        time.sleep(1)
    assert "DRAIN" in state  # Slurm drained the node after the prolog failed
    record = host.check_output("scontrol show job -o %s", job)
    assert "JobState=COMPLETED" not in record  # the job did not run there
    assert re.search(r"Restarts=[1-9]|JobState=PENDING|Requeue", record)
    host.run("scancel %s", job)
    # The node was drained by Slurm for the failed prolog, not by us: its reason says so.
    assert reason and "gpufabric:" not in reason


def test_the_rate_limit_stops_a_second_drain(host):
    fault(NODES[0], True)
    fault(NODES[1], True)
    assert "State=DRAIN" in healthcheck(NODES[0])
    out = healthcheck(NODES[1])
    assert "ran scontrol" not in out
    assert "rate limit: 1 node(s) already drained by gpufabric in the last 3600 s (gpufabric-ops-node1), at most 1" in out
    assert "DRAIN" not in show(host, NODES[1])[0]
