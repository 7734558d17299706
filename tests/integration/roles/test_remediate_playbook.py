"""playbooks/remediate.yml on Kubernetes, at the request level: no API server can run here, so the
decider (the remediate module, on the decider's host - here this machine) talks through kubectl
(tests/stubs/fake_kubectl.py) to tests/lab/kube-api-standin/server.py, which logs every request and
applies JSON patches as the API server does (a failed test op is 422). A node with an Xid 79 is cordoned
and tainted with a JSON patch that touches only our taint, cordon and annotations (the ledger rides
along); check mode sends no change at all; it is uncordoned when the fault clears; a taint another
controller added in between survives; a node an admin cordoned is left alone; a node whose check is
incomplete is never resumed."""

import json
import os
import sys

import pytest

import kube_standin
from paths import ROOT

STANDIN_SMI = os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi")
CAPTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "nvidia_smi", "q_h200x8.xml")
XID_79 = "2026-11-23T18:00:00+00:00 n1 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
OTHER_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")


@pytest.fixture
def cluster(tmp_path):
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "resourceVersion": "1", "annotations": {}},
              "spec": {"taints": [OTHER_TAINT]}},
             {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "spec": {"unschedulable": True}}]
    server = kube_standin.start(tmp_path, nodes)
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
    (tmp_path / "vars.yml").write_text(json.dumps(kube_standin.decider_vars(
        tmp_path, [{"severity": "critical", "action": "drain"}])))
    yield tmp_path
    server.terminate()
    server.wait()


def run(path, *extra):
    return kube_standin.run_playbook(path, "gpufabric.rdma.remediate", *extra)


patches = kube_standin.patches
nodes = kube_standin.nodes


def test_check_mode_reads_and_changes_nothing_anywhere(cluster):
    (cluster / "n1.log").write_text(XID_79)
    before = (cluster / "nodes.json").read_text()
    out = run(cluster, "--check", "--diff")
    assert "Kubernetes: cordoned and tainted n1 (gpufabric: gpu_xid " in out
    assert (cluster / "nodes.json").read_text() == before
    assert patches(cluster) == [] and not (cluster / "decider").exists()


TAINT = {"key": "gpufabric.io/unhealthy", "value": "gpu_xid", "effect": "NoSchedule"}


def test_a_fault_cordons_and_taints_with_a_json_patch_and_recovery_undoes_only_ours(cluster):
    (cluster / "n1.log").write_text(XID_79)
    out = run(cluster)
    (patch,) = patches(cluster)
    assert patch["path"] == "/api/v1/nodes/n1" and patch["content_type"].startswith("application/json-patch+json")
    assert [op["op"] + " " + op["path"] for op in patch["body"]] == [
        "test /metadata/resourceVersion", "add /metadata/annotations/gpufabric.io~1remediation", "add /spec/taints/-",
        "add /spec/unschedulable", "add /metadata/annotations/gpufabric.io~1cordoned-at"]
    assert patch["body"][2]["value"] == TAINT
    node = nodes(cluster)["n1"]
    assert node["spec"] == {"taints": [OTHER_TAINT, TAINT], "unschedulable": True}
    ledger = json.loads(node["metadata"]["annotations"]["gpufabric.io/remediation"])
    (drain,) = ledger["drains"]
    # The checks run on this machine (a local connection): the target names its host.
    target = drain["findings"][0].split("|", 1)[1]
    assert drain["findings"] == ["gpu_xid|" + target] and target.endswith("/GPU 0000:18:00")
    assert drain["by"].startswith("gpufabric-remediator@") and drain["via"] == "awx" and drain["policy"].startswith("policy-")
    assert drain["reason"] == "gpufabric: gpu_xid %s; policy %s; via awx" % (target, drain["policy"])
    # n2 was cordoned by an admin and is healthy: left as it is.
    assert "drained by someone else (cordoned by someone else)" in out
    assert nodes(cluster)["n2"]["spec"] == {"unschedulable": True}

    run(cluster)  # still faulty: nothing more to do
    assert len(patches(cluster)) == 1

    # Another controller adds its own taint meanwhile; the recovery removes only ours.
    stored = json.loads((cluster / "nodes.json").read_text())
    stored[0]["spec"]["taints"].append({"key": "example.com/maintenance", "effect": "NoExecute"})
    (cluster / "nodes.json").write_text(json.dumps(stored))
    (cluster / "n1.log").write_text("")
    # Cleared, but a certificate is needed (the default) and its check cannot run here (no dcgmi, no GPU): the play
    # goes on, the node stays cordoned, and the decision says which check did not run.
    out = run(cluster)
    assert "certify (dcgm level 2, nccl) on n1" in out
    assert "does not certify: dcgm not run: dcgmi is not installed" in out and "nccl not run: nccl-tests:" in out, out[-3000:]
    assert len(patches(cluster)) == 1 and nodes(cluster)["n1"]["spec"]["unschedulable"] is True
    # The certificate carries the decider's time of the plan that asked for the check (after the drain, before the
    # check began) as measured_at, and DCGM was told how many GPUs the node has (issue 53).
    record = json.loads((cluster / "decider" / "decider.json").read_text())["ledger"]["nodes"]["n1"]
    drained_at = record["drains"][-1]["at"]
    cert = record["certificate"]
    assert isinstance(cert["measured_at"], (int, float)) and drained_at <= cert["measured_at"] <= cert["at"], record
    assert "certificate measured at " in out
    (dcgm,) = json.loads((cluster / "report" / "certify" / "dcgm" / "dcgm.json").read_text())
    assert (dcgm["host"], dcgm["expected_gpus"]) == ("n1", 8)
    # A site that resumes on the passive check alone (certification.required false): the recovery.
    settings = json.loads((cluster / "vars.yml").read_text())
    settings["remediator_settings"]["certification"] = {"required": False}
    (cluster / "vars.yml").write_text(json.dumps(settings))
    run(cluster)
    body = patches(cluster)[-1]["body"]
    assert {"op": "test", "path": "/spec/taints/1", "value": TAINT} in body
    assert nodes(cluster)["n1"]["spec"] == {"taints": [OTHER_TAINT, {"key": "example.com/maintenance",
                                                                     "effect": "NoExecute"}], "unschedulable": False}
    assert "gpufabric.io/cordoned-at" not in nodes(cluster)["n1"]["metadata"]["annotations"]
    assert len(json.loads(nodes(cluster)["n1"]["metadata"]["annotations"]["gpufabric.io/remediation"])["resumes"]) == 1


def test_a_node_whose_check_fails_is_not_resumed(cluster):
    (cluster / "n1.log").write_text(XID_79)
    run(cluster)
    assert nodes(cluster)["n1"]["spec"]["unschedulable"] is True
    (cluster / "n1.log").unlink()
    (cluster / "n1.log").mkdir()  # the kernel log cannot be read: the check is incomplete
    out = run(cluster)
    assert "stays drained: the check could not read kernel log" in out
    assert nodes(cluster)["n1"]["spec"]["unschedulable"] is True and len(patches(cluster)) == 1
