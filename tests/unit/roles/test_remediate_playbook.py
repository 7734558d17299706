"""playbooks/remediate.yml on Kubernetes, at the request level: no API server can run here, so
kubernetes.core talks to tests/lab/kube-api-standin/server.py, which logs every request. A node with
an Xid 79 is cordoned and tainted with the exact merge-patch body, in check mode only as a
server-side dry run, and uncordoned when the fault clears; a node an admin cordoned is left alone."""

import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SERVER = os.path.join(ROOT, "tests", "lab", "kube-api-standin", "server.py")
STANDIN_SMI = os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi")
CAPTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "nvidia_smi", "q_h200x8.xml")
XID_79 = "2026-11-23T18:00:00+00:00 n1 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
OTHER_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")


@pytest.fixture
def cluster(tmp_path):
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "annotations": {}},
              "spec": {"taints": [OTHER_TAINT]}},
             {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "spec": {"unschedulable": True}}]
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    portfile = tmp_path / "port"
    server = subprocess.Popen([sys.executable, SERVER, str(tmp_path / "nodes.json"), str(tmp_path / "requests.jsonl"),
                               str(portfile)])
    for attempt in range(100):
        if portfile.exists() and portfile.read_text():
            break
        time.sleep(0.05)
    port = portfile.read_text()
    (tmp_path / "kubeconfig").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": "http://127.0.0.1:%s" % port}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    capture = tmp_path / "capture"
    capture.mkdir()
    (capture / "q.xml").write_text(open(CAPTURE).read())
    for host in ("n1", "n2"):
        (tmp_path / ("%s.log" % host)).write_text("")
    (tmp_path / "inventory.yml").write_text(json.dumps({"all": {"hosts": {
        host: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
               "health_monitor_checks": {"expected_gpu_count": 8, "nvidia_smi_path": str(tmp_path / "nvidia-smi"),
                                         "kernel_log": str(tmp_path / ("%s.log" % host)),
                                         "sysfs_root": str(tmp_path / "nosys"), "command_timeout": 10}}
        for host in ("n1", "n2")}}}))
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nNVIDIA_SMI_CAPTURE=%s exec %s \"$@\"\n" % (capture, STANDIN_SMI))
    smi.chmod(0o755)
    (tmp_path / "vars.yml").write_text(json.dumps({
        "remediate_kubeconfig": str(tmp_path / "kubeconfig"),
        "health_monitor_remediation": {"policy": [{"severity": "critical", "action": "drain"}],
                                       "rate_limit": {"max_nodes": 1, "max_percent": 100},
                                       "kubernetes": {"enabled": True}}}))
    yield tmp_path
    server.terminate()
    server.wait()


def run(path, *extra):
    env = dict(os.environ, ANSIBLE_BECOME="false", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(["ansible-playbook", "-i", str(path / "inventory.yml"), "-e", "@" + str(path / "vars.yml"),
                           "-e", "ansible_become=false", "gpufabric.rdma.remediate"] + list(extra),
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout


def patches(path):
    log = path / "requests.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [entry for entry in lines if entry["method"] == "PATCH"]


def nodes(path):
    return dict((n["metadata"]["name"], n) for n in json.loads((path / "nodes.json").read_text()))


def test_check_mode_sends_only_a_dry_run_and_changes_nothing(cluster):
    (cluster / "n1.log").write_text(XID_79)
    before = (cluster / "nodes.json").read_text()
    out = run(cluster, "--check", "--diff")
    assert "Kubernetes: cordoned and tainted n1 (gpufabric: gpu_xid " in out
    assert (cluster / "nodes.json").read_text() == before
    (entry,) = patches(cluster)
    assert entry["query"] == {"dryRun": ["All"]}  # a server-side dry run: the API server changes nothing


def test_a_fault_cordons_and_taints_with_the_exact_patch_and_recovery_undoes_it(cluster):
    (cluster / "n1.log").write_text(XID_79)
    out = run(cluster)
    (patch,) = patches(cluster)
    assert patch["path"] == "/api/v1/nodes/n1" and patch["content_type"].startswith("application/merge-patch+json")
    stamp = patch["body"]["metadata"]["annotations"]["gpufabric.io/cordoned-at"]
    # kubernetes.core adds the object's identity to the merge patch the monitor would send.
    assert patch["body"] == {"apiVersion": "v1", "kind": "Node", "spec": {"unschedulable": True, "taints": [
        OTHER_TAINT, {"key": "gpufabric.io/unhealthy", "value": "gpu_xid", "effect": "NoSchedule"}]},
        "metadata": {"name": "n1", "annotations": {"gpufabric.io/cordoned-at": stamp}}}
    assert patch["query"] == {}
    assert nodes(cluster)["n1"]["spec"]["unschedulable"] is True
    # n2 was cordoned by an admin and is healthy: left as it is.
    assert "Kubernetes: no action (drained by someone else (cordoned by someone else)" in out
    assert nodes(cluster)["n2"]["spec"] == {"unschedulable": True}

    run(cluster)  # still faulty: nothing more to do
    assert len(patches(cluster)) == 1

    (cluster / "n1.log").write_text("")
    run(cluster)
    assert patches(cluster)[-1]["body"] == {"apiVersion": "v1", "kind": "Node",
                                            "spec": {"taints": [OTHER_TAINT], "unschedulable": None},
                                            "metadata": {"name": "n1", "annotations": {"gpufabric.io/cordoned-at": None}}}
    assert nodes(cluster)["n1"]["spec"] == {"taints": [OTHER_TAINT]}
    assert nodes(cluster)["n1"]["metadata"]["annotations"] == {}
