"""The node-to-decider protocol, written once (fleet/protocol.py): versioned, signed, one report shape."""

import json

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import protocol

SECRET = "report-secret-0123456789abcdef"
RESULT = {"findings": [{"check": "gpu_xid", "severity": "critical", "target": "n01/GPU 0", "detail": "Xid 79",
                        "fix_hint": "-"}], "complete": True, "unreadable": []}


def test_a_report_carries_its_version_and_is_verified_with_the_secret():
    body = protocol.report_body("n01", RESULT, "timer", "nonce-1")
    assert json.loads(body)["version"] == protocol.VERSION
    report, nonce = protocol.verify_report(SECRET, body, protocol.report_headers(SECRET, body)["X-Gpufabric-Signature"])
    assert nonce == "nonce-1" and report["node"] == "n01" and report["complete"] is True
    with pytest.raises(ValueError, match="signature does not match"):
        protocol.verify_report("another-secret-0123456789", body, protocol.report_signature(SECRET, body))


def _signed(data):
    body = json.dumps(data, sort_keys=True).encode("utf-8")
    return body, protocol.report_signature(SECRET, body)


def test_a_version_the_decider_does_not_read_is_refused_naming_it_and_none_is_version_1():
    report = json.loads(protocol.report_body("n01", RESULT, "timer", "n"))["report"]
    with pytest.raises(ValueError, match=r"protocol version 2; this decider reads version 1: upgrade the decider"):
        protocol.verify_report(SECRET, *_signed({"version": 2, "report": report, "nonce": "n"}))
    # A monitor from before the field: its report is version 1.
    assert protocol.verify_report(SECRET, *_signed({"report": report, "nonce": "n"}))[0]["node"] == "n01"


def test_a_challenge_names_one_plain_node():
    body = protocol.challenge_body("gpu-01")
    assert protocol.verify_challenge(SECRET, body, protocol.report_signature(SECRET, body)) == "gpu-01"
    bad = json.dumps({"node": "gpu-01\nNodeName=all"}).encode()
    with pytest.raises(ValueError, match="no plain node name"):
        protocol.verify_challenge(SECRET, bad, protocol.report_signature(SECRET, bad))
