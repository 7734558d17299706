"""The remediate module (playbooks/remediate.yml's Slurm path, AWX) against the stand-in slurmctld: the
same decider as the service - same lock, ledger and limits. Check mode changes nothing anywhere; a drain
AWX made under a wider policy holds while its finding is still reported under the service's narrower one;
a node that sent no report is not decided; the state directory must be the decider's own."""

import json
import os
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider, decider_settings, protocol
from ansible_collections.gpufabric.rdma.plugins.modules import remediate
from moduletest import calls, run_module, stub_bin
from paths import ROOT, fixture_path

PORT = {"check": "rdma_port_state", "severity": "critical", "target": "n1/mlx5_0/1", "detail": "DOWN", "fix_hint": "-"}
XID = {"check": "gpu_xid", "severity": "critical", "target": "n2/GPU 0", "detail": "Xid 79", "fix_hint": "-"}


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    bindir = stub_bin(tmp_path / "bin", {"sinfo": "fake_slurmctld", "sdiag": "fake_slurmctld", "scontrol": "fake_slurmctld"})
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(dict((n, {"partitions": ["gpu"], "state": "IDLE", "reason": None, "reason_time": None})
                                     for n in ("n1", "n2", "n3", "n4"))))
    monkeypatch.setenv("STUB_SLURM_NODES", str(nodes))
    monkeypatch.setenv("STUB_LOG", str(tmp_path / "stub.jsonl"))
    monkeypatch.setenv("STUB_SLURM_CLOCK", "1795526184")
    settings = {"mode": "enforce", "policy": [{"severity": "critical", "action": "drain"}],
                "rate_limit": {"max_nodes": 1, "max_percent": 100}, "circuit_breaker": {"max_percent": 100},
                "certification": {"required": False},   # test_certificates_gate_the_resume turns it on
                "slurm": {"enabled": True, "sinfo": os.path.join(bindir, "sinfo"), "sdiag": os.path.join(bindir, "sdiag"),
                          "scontrol": os.path.join(bindir, "scontrol")}}
    return tmp_path, nodes, settings


def _args(tmp_path, settings, reports):
    return {"reports": reports, "remediation": settings, "state_dir": str(tmp_path / "decider"), "cluster": "lab"}


def _health(findings, complete=True):
    return {"findings": findings, "complete": complete, "unreadable": [] if complete else ["kernel log: x"],
            "changed": False}


def test_check_mode_decides_and_changes_nothing_anywhere(slurm):
    tmp_path, nodes, settings = slurm
    before = nodes.read_text()
    result = run_module(remediate, _args(tmp_path, settings, {"n1": _health([PORT]), "n2": _health([XID])}),
                        check_mode=True, diff=True)
    assert result["changed"] and not result.get("failed"), result
    texts = [d["text"] for d in result["decisions"]]
    assert texts[0].startswith("Slurm: drained n1 (gpufabric: rdma_port_state n1/mlx5_0/1; policy policy-")
    assert texts[1].startswith("Slurm: held back n2 (rate limit: 1 node(s) of partition gpu")
    assert result["diff"]["after"] == texts[0] + "\n"
    assert nodes.read_text() == before and not (tmp_path / "decider").exists()
    assert [c for c in calls(tmp_path / "stub.jsonl") if c[1][:1] == ["update"]] == []


def test_an_awx_drain_under_a_wider_policy_holds_while_its_finding_is_reported(slurm):
    tmp_path, nodes, settings = slurm
    result = run_module(remediate, _args(tmp_path, settings, {"n1": _health([PORT])}))
    assert result["changed"] and result["decisions"][0]["done"], result
    assert json.loads(nodes.read_text())["n1"]["reason"].endswith("; via awx")
    assert (tmp_path / "decider" / ".gpufabric-owner").read_text() == "remediator\n"
    # The service decides next, with a narrower policy: only gpu_xid drains. The port is still down.
    narrow = decider_settings.check_config({"state_dir": str(tmp_path / "decider"), "remediation": dict(
        settings, policy=[{"check": "gpu_xid", "action": "drain"}])})
    report = protocol.check_report({"node": "n1", "findings": [PORT], "complete": True, "source": "timer"})
    lines = []
    decided = decider.decide({"n1": report}, narrow, time.time, lines.append)
    assert decided["decisions"][0]["action"] == "none"
    assert decided["decisions"][0]["why"] == ("stays drained: finding recorded at the drain still reported "
                                              "(rdma_port_state|n1/mlx5_0/1)")
    assert "DRAIN" in json.loads(nodes.read_text())["n1"]["state"]
    # Its kernel log cannot be read: still drained. A complete, clean check: resumed.
    blind = protocol.check_report({"node": "n1", "findings": [], "complete": False, "unreadable": ["kernel log: x"]})
    assert decider.decide({"n1": blind}, narrow, time.time, lines.append)["decisions"][0]["action"] == "none"
    clean = protocol.check_report({"node": "n1", "findings": [], "complete": True})
    assert decider.decide({"n1": clean}, narrow, time.time, lines.append)["decisions"][0]["done"]
    assert json.loads(nodes.read_text())["n1"]["state"] == "IDLE"


def _cert(dcgm="pass", level=2, nccl="pass"):
    return {"checks": [{"name": "dcgm", "status": dcgm, "level": level, "detail": "" if dcgm == "pass" else "Memory failed"},
                       {"name": "nccl", "status": nccl, "busbw": 361.2, "expected": 450.0, "size": 536870912}],
            "versions": {"dcgm": "4.2.3", "driver": "570.124.06"}, "measured_at": 1795526184}   # the drain's second


def test_certificates_gate_the_resume_and_check_mode_names_the_nodes_to_certify(slurm):
    tmp_path, nodes, settings = slurm
    settings = dict(settings, certification={"dcgm_level": 2})
    assert run_module(remediate, _args(tmp_path, settings, {"n1": _health([XID])}))["decisions"][0]["done"]
    clean = {"n1": _health([])}
    # Cleared, no certificate: stays drained, and check mode names n1 as the node to certify, changing nothing.
    before = nodes.read_text()
    planned = run_module(remediate, _args(tmp_path, settings, clean), check_mode=True)
    assert planned["certify"] == ["n1"] and nodes.read_text() == before
    assert planned["decisions"][0]["why"].startswith("stays drained: no return-to-service certificate: an active check "
                                                     "(dcgm level 2, nccl) must pass after the drain")
    # A failing certificate is recorded and refuses; a level too low refuses, naming the level.
    failed = run_module(remediate, dict(_args(tmp_path, settings, clean), certificates={"n1": _cert(dcgm="fail")}))
    assert failed["certificates"] == {"n1": "recorded"} and failed["certify"] == ["n1"]
    assert "does not certify: dcgm fail: Memory failed" in failed["decisions"][0]["why"]
    low = run_module(remediate, dict(_args(tmp_path, settings, clean), certificates={"n1": _cert(level=1)}))
    assert "dcgm ran level 1, the policy asks for level 2" in low["decisions"][0]["why"]
    assert "DRAIN" in json.loads(nodes.read_text())["n1"]["state"]
    # A passing one resumes, once: the decision and the ledger name it, with the time from drain to resume.
    good = run_module(remediate, dict(_args(tmp_path, settings, clean), certificates={"n1": _cert(), "n2": _cert()}))
    decision = good["decisions"][0]
    assert decision["done"] and json.loads(nodes.read_text())["n1"]["state"] == "IDLE", good
    assert good["certificates"]["n2"] == "ignored: n2 is not drained by gpufabric"
    assert "; certified " in decision["why"] and "dcgm level 2 pass, nccl pass 361.2 GB/s of 450 expected" in decision["why"]
    assert decision["certificate"]["versions"] == {"dcgm": "4.2.3", "driver": "570.124.06"}
    assert decision["mttr"] >= 0
    ledger = json.loads((tmp_path / "decider" / "decider.json").read_text())["ledger"]
    resume = ledger["nodes"]["n1"]["resumes"][-1]
    assert resume["certificate"]["checks"][0] == "dcgm level 2 pass" and resume["mttr"] == decision["mttr"]
    assert "certificate" not in ledger["nodes"]["n1"]


@pytest.mark.parametrize("cert, message", [
    ({"checks": []}, "certificate of n1: checks must be a list of 1 to 8 entries"),
    ({"checks": [{"name": "memtest", "status": "pass"}]}, "certificate of n1: each check needs a name from dcgm, nccl"),
    ({"checks": [{"name": "nccl", "status": "ok"}]}, "check nccl status must be one of pass, fail, warn, not run, got 'ok'"),
    ({"checks": [{"name": "nccl", "status": "pass", "busbw": float("nan")}]}, "check nccl busbw must be a finite number"),
])
def test_a_bad_certificate_fails_naming_the_value_and_nothing_is_done(slurm, cert, message):
    tmp_path, nodes, settings = slurm
    result = run_module(remediate, dict(_args(tmp_path, settings, {"n1": _health([])}), certificates={"n1": cert}))
    assert result["failed"] and message in result["msg"], result
    assert not (tmp_path / "decider").exists()


def test_a_node_without_a_report_is_not_decided_and_the_limit_is_shared(slurm):
    tmp_path, nodes, settings = slurm
    run_module(remediate, _args(tmp_path, settings, {"n1": _health([PORT])}))
    # n1 did not answer this time (unreachable): no report, so it is neither resumed nor touched.
    result = run_module(remediate, _args(tmp_path, settings, {"n2": _health([XID])}))
    assert [d["node"] for d in result["decisions"]] == ["n2"] and result["decisions"][0]["held"]
    assert "DRAIN" in json.loads(nodes.read_text())["n1"]["state"]


def test_a_state_dir_that_is_not_the_deciders_is_refused(slurm):
    tmp_path, nodes, settings = slurm
    (tmp_path / "decider").mkdir()
    result = run_module(remediate, _args(tmp_path, settings, {"n1": _health([PORT])}))
    assert result["failed"] and "exists and was not created by gpufabric's remediator" in result["msg"]
    result = run_module(remediate, dict(_args(tmp_path, settings, {}), state_dir="/var/lib"))
    assert result["failed"] and "state_dir: /var/lib is a system directory" in result["msg"]


def test_a_scheduler_that_prints_garbage_fails_the_task_with_the_reason(slurm, monkeypatch):
    tmp_path, nodes, settings = slurm
    monkeypatch.setenv("STUB_SINFO_MODE", "garbage")
    result = run_module(remediate, _args(tmp_path, settings, {"n1": _health([PORT])}))
    assert result["failed"] and result["msg"].startswith("could not act: sinfo: sinfo line 1 is not")


def test_a_racks_nodes_reported_with_their_domain_drain_as_one_and_are_certified_rack_by_rack(slurm):
    """Issue 55: node_health's result with the node's domain (where nvidia-smi places it in its NVLink rack) reaches the
    decider; three trays of one chassis with a fabric fault are one rack drain within max_nodes 1, and the plan after
    names every node of the rack to certify together (certify_rack)."""
    tmp_path, nodes, settings = slurm
    settings = dict(settings, certification={"required": True, "checks": ["dcgm"]}, rack={"min_nodes": 2, "window": 120})
    fault = {"check": "nvlink_fabric_health", "severity": "critical", "target": "GPU 0",
             "detail": "GPU 0: fabric health Summary is Unhealthy (Bandwidth Full)", "fix_hint": "-"}

    def health(node, findings):
        return dict(_health(findings), domain={"cluster_uuid": "00000001-0000-0000-0000-000000000001", "clique": 2,
                                               "chassis_serial": "1820000000001", "slot": int(node[1:]), "tray": int(node[1:])})
    result = run_module(remediate, _args(tmp_path, settings, dict((n, health(n, [fault])) for n in ("n1", "n2", "n3"))))
    assert [(d["node"], d["action"], d["rack"]) for d in result["decisions"]] == [
        (n, "drain", "1820000000001") for n in ("n1", "n2", "n3")], result
    assert sorted(n for n, node in json.loads(nodes.read_text()).items() if "DRAIN" in node["state"]) == ["n1", "n2", "n3"]
    os.environ["STUB_SLURM_CLOCK"] = "1795526784"
    plan = run_module(remediate, _args(tmp_path, settings, dict((n, health(n, [])) for n in ("n1", "n2", "n3"))),
                      check_mode=True)
    assert plan["certify"] == ["n1", "n2", "n3"]
    assert plan["certify_rack"] == {"n1": "1820000000001", "n2": "1820000000001", "n3": "1820000000001"}
    assert plan["certify_checks"] == "dcgm level 2"


def test_the_rack_comes_from_each_nodes_own_node_health_on_the_real_gb200_xml(slurm, monkeypatch):
    """Issue 55, the node side: the domain is not handed to the decider - each node's node_health reads it from the
    real GB200 `nvidia-smi -q -x` (k8s-test-infra, chassis 1820000000001) its stand-in nvidia-smi replays, with the
    fabric's Health Summary Unhealthy (as dra-driver#626 prints it) on one GPU; three such trays are one rack drain."""
    from ansible_collections.gpufabric.rdma.plugins.modules import node_health
    tmp_path, nodes, settings = slurm
    settings = dict(settings, rack={"min_nodes": 2, "window": 120})
    with open(fixture_path("nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml")) as handle:
        xml = handle.read().replace("<summary>Healthy</summary>", "<summary>Unhealthy</summary>", 1)
    for name in ("sys", "proc"):
        (tmp_path / name).mkdir()
    (tmp_path / "proc" / "modules").write_text("")
    (tmp_path / "kern.log").write_text("")
    reports = {}
    for tray, node in enumerate(("n1", "n2", "n3")):
        capture = tmp_path / ("capture-" + node)
        capture.mkdir()
        (capture / "q.xml").write_text(xml.replace("<tray_index>4</tray_index>", "<tray_index>%d</tray_index>" % tray))
        monkeypatch.setenv("NVIDIA_SMI_CAPTURE", str(capture))
        result = run_module(node_health, {
            "node_name": node, "nvidia_smi_path": os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi"),
            "sysfs_root": str(tmp_path / "sys"), "procfs_root": str(tmp_path / "proc"), "kernel_log": str(tmp_path / "kern.log"),
            "checks": {"imex_expected": False}})
        assert result["domain"]["chassis_serial"] == "1820000000001" and result["domain"]["tray"] == tray, result
        assert "nvlink_fabric_health" in [f["check"] for f in result["findings"]]
        reports[node] = result
    decided = run_module(remediate, _args(tmp_path, settings, reports))
    assert [(d["node"], d["action"], d["rack"]) for d in decided["decisions"]] == [
        (n, "drain", "1820000000001") for n in ("n1", "n2", "n3")], decided
    assert sorted(n for n, node in json.loads(nodes.read_text()).items() if "DRAIN" in node["state"]) == ["n1", "n2", "n3"]
