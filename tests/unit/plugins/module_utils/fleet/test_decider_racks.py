"""The rack as one unit, for real (issue 55 items 4 and 6): the remediator service over HTTP, the stand-in slurmctld
(tests/unit/decider_world.py) and the webhook receiver. Four trays of one GB200 chassis report, signed, what the real
judge finds in real nvidia-smi captures and where nvidia-smi places them (their domain, protocol version 2): a
Limited Capacity warning alone drains nothing; a fabric fault on all four within seconds is one rack decision - one
scontrol update per node, one ledger entry, one message, one metric - within max_nodes 1, in shadow mode and in
enforce mode; the rack returns only once every tray holds a certificate with IMEX up and an NVLink-domain run."""

import json
import os
import threading
import time
import urllib.request

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate, decider, protocol
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge.nvlink_fabric import nvlink_fabric_findings
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import webhook
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import parse_nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.nvlink import node_domain
from decider_world import SECRET
from paths import fixture_path

NOW = 1795526184
FIX = fixture_path("nvidia_smi_fabric")
TRAYS = ["t01", "t02", "t03", "t04"]


def read(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as handle:
        return handle.read()


PLACE = protocol.report_domain(node_domain(read("qx_gb200x4_k8stestinfra.xml")))   # a real GB200 tray
CHASSIS = PLACE["chassis_serial"]
UNHEALTHY = nvlink_fabric_findings(parse_nvidia_smi_fabric(read("q_gb200_fabric_grep_dra626.txt")))
LIMITED = nvlink_fabric_findings(parse_nvidia_smi_fabric(read("q_gb300x4_constructed.txt").replace(
    "Summary                                    : Healthy", "Summary                                    : Limited Capacity", 1)))
DCGM = {"status": "pass", "level": 2, "failures": [], "reason": None, "dcgm_version": "4.2.3"}
DOMAIN_RUN = {"label": "all_reduce_perf across rack", "passed": True, "failures": [],
              "figure": {"size": 1 << 30, "busbw": 812.4}, "expected_busbw": 750.0}


def _at(when):
    os.environ["STUB_SLURM_CLOCK"] = str(int(when))   # slurmctld's clock (sdiag)


def _result(node, findings):
    return {"findings": findings, "complete": True, "unreadable": [],
            "domain": dict(PLACE, tray=TRAYS.index(node) + 1, slot=TRAYS.index(node) + 10)}


def _send(world, node, findings):
    """What a tray's health monitor sends: a nonce, then its signed report with its domain; the decider's answer."""
    challenge = protocol.challenge_body(node)
    nonce = json.loads(webhook.send(world.url + protocol.CHALLENGE_PATH, challenge,
                                    protocol.report_headers(SECRET, challenge)).text)["nonce"]
    body = protocol.report_body(node, _result(node, findings), "healthcheck", nonce)
    assert json.loads(body)["version"] == 2
    answer = webhook.send(world.url + protocol.REPORT_PATH, body, protocol.report_headers(SECRET, body), deadline=25)
    assert answer.status == 200, answer.text
    return json.loads(answer.text)["decision"]


def _all_at_once(world, findings):
    out = {}
    threads = [threading.Thread(target=lambda n=n: out.__setitem__(n, _send(world, n, findings))) for n in TRAYS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return out


def _ledger(world):
    with open(os.path.join(world.config["state_dir"], "decider.json")) as handle:
        return json.load(handle)["ledger"]


def _metrics(world):
    with urllib.request.urlopen(world.url + "/metrics", timeout=10) as answer:
        return answer.read().decode()


def _rack_world(cluster, mode):
    world = cluster(TRAYS + ["n09", "n10"], mode=mode,
                    rate_limit={"max_nodes": 1, "max_percent": 10, "interval": 3600, "max_resumes": 1},
                    circuit_breaker={"max_percent": 50, "window": 300}, rack={"min_nodes": 2, "window": 120},
                    certification={"required": True, "checks": ["dcgm"]})
    world.config["batch_window"] = 1.5   # the four reports sent in the same second are one batch
    return world


@pytest.mark.parametrize("mode", ["enforce", "shadow"])
def test_four_trays_of_one_chassis_reporting_within_seconds_are_one_rack_decision(cluster, mode):
    world = _rack_world(cluster, mode)
    _at(NOW)
    # One tray turns Limited Capacity: a warning, told by its monitor, not a drain.
    warned = _send(world, "t01", LIMITED)
    assert warned["action"] == "none" and not warned["held"] and world.updates() == []
    # All four report a fabric fault within seconds.
    answers = _all_at_once(world, UNHEALTHY)
    assert [(answers[n]["action"], answers[n]["held"], answers[n]["rack"]) for n in TRAYS] == [
        ("drain", False, CHASSIS)] * 4
    if mode == "enforce":
        assert world.drained() == TRAYS and len(world.updates()) == 4
        assert all(world.slurm()[n]["reason"].startswith("gpufabric: nvlink_rack rack %s (+1 more)" % CHASSIS) for n in TRAYS)
    else:
        assert world.drained() == [] and world.updates() == []
    ledger = _ledger(world)
    assert list(ledger["racks"]["decisions"]) == [CHASSIS]
    decision = ledger["racks"]["decisions"][CHASSIS]
    assert (decision["action"], decision["nodes"], decision["shadow"]) == ("drain", TRAYS, mode == "shadow")
    assert decision["side"] == ("the NVLink switch trays or their fabric manager: every tray reports fabric health "
                                "Unhealthy (all 4 trays)")
    time.sleep(1.0)
    told = [m for m in world.messages(1) if m["source"] == "gpufabric.rdma.remediator"]
    assert [(m["status"], m["host"], m["target"]) for m in told] == [
        ("shadow" if mode == "shadow" else "drained", "rack %s" % CHASSIS, "rack %s: t01, t02, t03, t04" % CHASSIS)]
    assert "4 trays reported NVLink fabric faults within 120 s (t01, t02, t03, t04)" in told[0]["detail"]
    text = _metrics(world)
    assert 'gpufabric_remediation_rack_nodes{action="drain",cluster="lab",rack="%s",shadow="%s"} 4' % (
        CHASSIS, "true" if mode == "shadow" else "false") in text, text


def _hand(world, certificates):
    """remediate.yml's last step: every tray's fresh report and the certificates, to the same decider's code and lock."""
    reports = dict((n, protocol.check_report(dict(_result(n, []), node=n, source="awx"))) for n in TRAYS)
    certs = dict((n, certificate.check_certificate(c, n)) for n, c in certificates.items())
    decided = decider.decide(reports, world.config, time.time, world.lines.append, certificates=certs)
    return dict((d["node"], d) for d in decided["decisions"])


def _certificate(measured_at, imex="UP"):
    return certificate.from_results(DCGM, measured_at=measured_at, nvlink_domain=[DOMAIN_RUN], rack=CHASSIS,
                                    imex=None if imex is None else {"domain_state": imex, "findings": []})


def test_the_rack_returns_only_after_every_tray_is_certified_with_imex_up_and_a_domain_run(cluster):
    world = _rack_world(cluster, "enforce")
    _at(NOW)
    _all_at_once(world, UNHEALTHY)
    assert world.drained() == TRAYS
    # The switch tray is replaced: the trays report clean, and wait for their certificates.
    _at(NOW + 600)
    clean = _all_at_once(world, [])
    assert [(clean[n]["action"], clean[n]["certify"]) for n in TRAYS] == [("none", True)] * 4
    assert clean["t01"]["why"] == ("stays drained: no return-to-service certificate: an active check (dcgm level 2, imex, "
                                   "nvlink_domain) must pass after the drain")
    # Three trays certified; the fourth's IMEX domain is DEGRADED: no tray returns.
    _at(NOW + 900)
    certs = dict((n, _certificate(NOW + 650)) for n in TRAYS[:3])
    certs["t04"] = _certificate(NOW + 650, imex="DEGRADED")
    partial = _hand(world, certs)
    assert [partial[n]["action"] for n in TRAYS] == ["none"] * 4 and world.drained() == TRAYS
    assert partial["t01"]["why"] == (
        "stays drained: rack %s returns together, and 1 of its node(s) may not yet (t04: the certificate measured at "
        "2026-11-24T13:27:14Z does not certify: imex fail: domain DEGRADED: domain DEGRADED)" % CHASSIS)
    # Every tray certified, IMEX up, the NVLink-domain run above its expectation: the rack returns, together.
    _at(NOW + 1000)
    back = _hand(world, {"t04": _certificate(NOW + 950)})
    assert [back[n]["action"] for n in TRAYS] == ["resume"] * 4 and world.drained() == []
    assert "nvlink_domain pass 812.4 GB/s of 750 expected with rack %s, imex pass" % CHASSIS in back["t04"]["why"]
    time.sleep(1.0)
    told = [(m["status"], m["host"]) for m in world.messages(2) if m["source"] == "gpufabric.rdma.remediator"]
    assert told == [("drained", "rack %s" % CHASSIS), ("resumed", "rack %s" % CHASSIS)]
    assert _ledger(world)["racks"]["decisions"][CHASSIS]["action"] == "resume"
