"""Evidence at the drain: the decider drains first, then asks the node's monitor for a bounded bundle, which it posts
signed to the decider's store - capped, rotated, named in the ledger and the message; a collection that hangs is cut
at its budget and never holds the drain. Run for real: the remediator service over HTTP, the monitor, the stand-in
slurmctld, the webhook receiver."""

import json
import os
import re
import tarfile
import time
import urllib.request

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate, decider, evidence, protocol
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import PolicyError, check_config
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import evidence as collector
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import webhook
from decider_world import SECRET


def _store(c):
    return os.path.join(c.config["state_dir"], "evidence")


def _members(path):
    with tarfile.open(path) as tar:
        return dict((m.name, tar.extractfile(m).read()) for m in tar.getmembers())


def _post(c, node, ident, data, secret=SECRET):
    answer = webhook.send(c.url + evidence.EVIDENCE_PATH, data, protocol.evidence_headers(secret, node, ident, data), deadline=10)
    return answer.status, json.loads(answer.text or "{}")


def test_a_drained_node_sends_its_bundle_once_and_the_ledger_and_message_name_it(cluster):
    c = cluster(["n01", "n02"])
    c.fault("n01")
    lines = c.run("n01")
    assert c.drained() == ["n01"]
    sent = [l for l in lines if l.startswith("evidence n01-")]
    assert len(sent) == 1 and sent[0].endswith("HTTP 200 " + sent[0].split("HTTP 200 ", 1)[1]), lines
    assert "nvidia-bug-report.log.gz not run" in sent[0] and "kernel-log.txt ok" in sent[0]
    ledger = json.loads(open(os.path.join(c.config["state_dir"], "decider.json")).read())
    name = ledger["ledger"]["nodes"]["n01"]["drains"][-1]["evidence"]
    assert re.match(r"^n01/n01-\d{8}T\d{6}Z\.tar\.gz$", name)
    path = os.path.join(_store(c), name)
    assert ledger["evidence"][os.path.basename(path)[:-7]]["path"] == path
    members = _members(path)
    assert b"Xid (PCI:0000:18:00): 79" in members["kernel-log.txt"]
    assert json.loads(members["findings.json"].decode())[0]["check"] == "gpu_xid"
    manifest = dict((e["name"], e) for e in json.loads(members["manifest.json"].decode()))
    assert manifest["nvidia-bug-report.log.gz"]["detail"] == "nvidia-bug-report.sh is not installed (NVIDIA driver)"
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    drained = [m for m in c.messages(1) if m.get("status") == "drained"]
    assert drained and "evidence: %s in the decider's evidence store" % name in drained[0]["detail"], c.messages(1)
    # The next report: it arrived, so it is not asked for again.
    assert not [l for l in c.run("n01") if l.startswith("evidence ")]


def test_uploads_are_taken_only_signed_only_when_asked_only_once_and_only_for_the_node_itself(cluster):
    c = cluster(["n01", "n02"], evidence={"max_bytes": 65536})
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"]
    state = json.loads(open(os.path.join(c.config["state_dir"], "decider.json")).read())
    name = state["ledger"]["nodes"]["n01"]["drains"][-1]["evidence"]
    ident, path = os.path.basename(name)[:-7], os.path.join(_store(c), name)
    kept = open(path, "rb").read()
    assert _post(c, "n01", ident, b"x", secret="wrong-secret-0123456789abcdef")[0] == 401
    assert _post(c, "n02", ident, b"x")[0] == 403
    assert _post(c, "n01", "n01-20200101T000000Z", b"x") == (404, {"error": "no drain of n01 asked for n01-20200101T000000Z"})
    assert _post(c, "n01", ident, b"x" * 65537)[0] == 413
    assert _post(c, "n01", ident, b"replayed") == (200, {"stored": path, "already": True})
    assert open(path, "rb").read() == kept
    # Until a bundle arrives, every answer to the node asks for it again (a lost upload, a drain from an alert).
    del state["evidence"][ident]
    result = {"decisions": [{"node": "n01", "out_of_service": True}, {"node": "n02", "out_of_service": False}]}
    decider.ask_for_evidence(result, state, c.config["remediation"]["evidence"])
    assert result["decisions"][0]["evidence_request"] == {"id": ident, "name": name, "max_bytes": 65536, "budget": 45}
    assert "evidence_request" not in result["decisions"][1]


def test_a_hung_bug_report_is_cut_at_the_budget_and_the_drain_did_not_wait(cluster, tmp_path, monkeypatch):
    c = cluster(["n01", "n02"], evidence={"budget": 5})
    bindir = tmp_path / "hang-bin"
    bindir.mkdir()
    (bindir / "nvidia-bug-report.sh").write_text("#!/bin/sh\nsleep 300 &\nsleep 300\n")
    (bindir / "nvidia-bug-report.sh").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    c.fault("n01")
    started = time.time()
    lines = c.run("n01")
    took = time.time() - started
    assert c.drained() == ["n01"] and took < 20, (took, lines)
    sent = [l for l in lines if l.startswith("evidence n01-")][0]
    assert "nvidia-bug-report.out timed out" in sent and "HTTP 200" in sent, lines


def test_the_store_keeps_a_few_per_node_and_stays_within_its_total_dropping_the_oldest(tmp_path):
    settings = evidence.check_settings({"keep_per_node": 2, "max_total_bytes": 10000, "max_bytes": 4096})
    held = [("n1/n1-20261101T000000Z.tar.gz", 1000, 1), ("n1/n1-20261102T000000Z.tar.gz", 1000, 2),
            ("n2/n2-20261101T000000Z.tar.gz", 7000, 0)]
    assert evidence.to_drop(held, "n1", 1000, settings) == ["n1/n1-20261101T000000Z.tar.gz"]
    assert evidence.to_drop(held, "n3", 3000, settings) == ["n2/n2-20261101T000000Z.tar.gz"]
    # On disk: only our own files are listed (never another file in the store), and a store not ours is refused.
    store = tmp_path / "evidence"
    statefile.write_owned(str(store), "n1/n1-20261101T000000Z.tar.gz", b"a")
    (store / "n1" / "notes.txt").write_text("an admin's")
    assert [e[0] for e in statefile.owned_files(str(store), evidence.BUNDLE)] == ["n1/n1-20261101T000000Z.tar.gz"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / ".gpufabric-owner").write_text("someone\n")
    with pytest.raises(statefile.StateError, match="is not remediator's"):
        statefile.write_owned(str(foreign), "n1/n1-20261101T000000Z.tar.gz", b"a")


def test_a_bundle_over_its_limit_leaves_the_bug_report_out_first_and_says_so(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text("Xid 79\n" * 10)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-bug-report.sh").write_text(
        "#!/bin/sh\nhead -c 200000 /dev/urandom | gzip > \"$3.gz\"\n")   # --safe-mode --output-file <path>
    (bindir / "nvidia-bug-report.sh").chmod(0o755)
    runner = commands.Runner(10, path=str(bindir))
    data, manifest = collector.collect({"kernel_log": str(log), "sysfs_root": str(tmp_path)}, [], runner, 20, 64 * 1024)
    states = dict((e["name"], (e["status"], e["detail"])) for e in manifest)
    assert len(data) <= 64 * 1024
    assert states["nvidia-bug-report.log.gz"] == ("cut", "left out: the bundle would pass its 65536-byte limit")
    assert "nvidia-bug-report.log.gz" not in _members(_write(tmp_path, data))
    assert states["kernel-log.txt"][0] == "ok"


def _write(tmp_path, data):
    path = tmp_path / "b.tar.gz"
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("given, message", [
    ({"max_bytes": 10}, "remediation evidence max_bytes must be a whole number from 4096 to 1073741824, got 10"),
    ({"budget": 0}, "evidence budget must be a whole number from 5 to 600"),
    ({"dir": "relative/path"}, "evidence dir must be an absolute path on one line"),
    ({"max_total_bytes": 8192, "max_bytes": 16384}, "max_total_bytes (8192) must be at least max_bytes (16384)"),
    ({"keep": 3}, "unknown remediation evidence key(s) keep"),
])
def test_bad_evidence_settings_are_refused_naming_the_value(given, message):
    with pytest.raises(PolicyError) as err:
        check_config({"evidence": given, "slurm": {"enabled": True}})
    assert message in str(err.value)


def test_the_deciders_metrics_give_each_nodes_time_from_drain_to_resume_and_the_store(cluster):
    c = cluster(["n01", "n02"])
    c.fault("n01")
    c.run("n01")
    c.fault("n01", False)
    assert any("resumed n01" in line for line in c.run("n01"))
    with urllib.request.urlopen(c.url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    mttr = re.search(r'^gpufabric_remediation_mttr_seconds\{certified="false",cluster="lab",node="n01"\} (\d+)$', text, re.M)
    assert mttr and 0 <= int(mttr.group(1)) < 60, text
    assert 'gpufabric_remediation_evidence_bundles{cluster="lab"} 1' in text
    assert re.search(r'^gpufabric_remediation_evidence_bytes\{cluster="lab"\} [1-9]\d*$', text, re.M)


def test_the_resume_message_and_the_ledger_name_the_certificate(cluster):
    """Through the real webhook receiver: the message of a certified resume names the certificate (the AWX run
    records it; the service's delivery thread sends what the decider queued)."""
    c = cluster(["n01", "n02"], certification={"required": True, "checks": ["dcgm"]})
    c.fault("n01")
    c.run("n01")
    c.fault("n01", False)
    assert any("no return-to-service certificate" in line for line in c.run("n01"))
    cert = certificate.check_certificate({"checks": [{"name": "dcgm", "status": "pass", "level": 2}],
                                          "versions": {"dcgm": "4.2.3"}, "measured_at": time.time()}, "n01")
    report = protocol.check_report({"node": "n01", "findings": [], "complete": True, "source": "awx"})
    decided = decider.decide({"n01": report}, c.config, time.time, c.lines.append, certificates={"n01": cert})
    assert decided["decisions"][0]["done"] and c.drained() == []
    told = [m for m in c.messages(3, wait=10) if m.get("status") == "resumed"]
    assert told and "certified " in told[0]["detail"] and "dcgm level 2 pass; DCGM 4.2.3" in told[0]["detail"], c.messages(3)
    ledger = json.loads(open(os.path.join(c.config["state_dir"], "decider.json")).read())["ledger"]
    assert ledger["nodes"]["n01"]["resumes"][-1]["certificate"]["checks"] == ["dcgm level 2 pass"]
