"""The node-to-decider protocol, written once (fleet/protocol.py): versioned, signed, one report shape."""

import json
import re

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import protocol
from paths import fixture_path

SECRET = "report-secret-0123456789abcdef"
DOMAIN = {"cluster_uuid": "00000001-0000-0000-0000-000000000001", "clique": 32766, "chassis_serial": "1820000000001",
          "slot": 25, "tray": 15}
RESULT = {"findings": [{"check": "gpu_xid", "severity": "critical", "target": "n01/GPU 0", "detail": "Xid 79",
                        "fix_hint": "-"}], "complete": True, "unreadable": []}


def test_a_report_carries_its_version_and_is_verified_with_the_secret():
    body = protocol.report_body("n01", RESULT, "timer", "nonce-1")
    # Without a domain to tell the report stays version 1: a decider that reads version 1 alone still takes it.
    assert json.loads(body)["version"] == 1
    assert json.loads(protocol.report_body("n01", dict(RESULT, domain=DOMAIN), "timer", "n"))["version"] == protocol.VERSION == 2
    report, nonce = protocol.verify_report(SECRET, body, protocol.report_headers(SECRET, body)["X-Gpufabric-Signature"])
    assert nonce == "nonce-1" and report["node"] == "n01" and report["complete"] is True
    with pytest.raises(ValueError, match="signature does not match"):
        protocol.verify_report("another-secret-0123456789", body, protocol.report_signature(SECRET, body))


def _signed(data):
    body = json.dumps(data, sort_keys=True).encode("utf-8")
    return body, protocol.report_signature(SECRET, body)


def test_a_version_the_decider_does_not_read_is_refused_naming_it_and_none_is_version_1():
    report = json.loads(protocol.report_body("n01", RESULT, "timer", "n"))["report"]
    with pytest.raises(ValueError, match=r"protocol version 3; this decider reads version 1, 2: upgrade the decider"):
        protocol.verify_report(SECRET, *_signed({"version": 3, "report": report, "nonce": "n"}))
    # A monitor from before the field: its report is version 1.
    assert protocol.verify_report(SECRET, *_signed({"report": report, "nonce": "n"}))[0]["node"] == "n01"


def test_a_challenge_names_one_plain_node():
    body = protocol.challenge_body("gpu-01")
    assert protocol.verify_challenge(SECRET, body, protocol.report_signature(SECRET, body)) == "gpu-01"
    bad = json.dumps({"node": "gpu-01\nNodeName=all"}).encode()
    with pytest.raises(ValueError, match="no plain node name"):
        protocol.verify_challenge(SECRET, bad, protocol.report_signature(SECRET, bad))


def test_a_version_2_report_carries_the_nodes_domain_checked_and_version_1_ignores_it():
    """Issue 55: the node tells the decider where it sits in its NVLink rack (what nvidia-smi -q prints); an all-zero
    ClusterUUID or CliqueId 0 is no domain, the chassis stays; a bad value is refused naming it."""
    body = protocol.report_body("n01", dict(RESULT, domain=DOMAIN), "timer", "n")
    report, ignored = protocol.verify_report(SECRET, body, protocol.report_signature(SECRET, body))
    assert report["domain"] == DOMAIN
    stuck = dict(DOMAIN, cluster_uuid="00000000-0000-0000-0000-000000000000", clique=0)
    assert protocol.check_domain(stuck) == dict(DOMAIN, cluster_uuid=None, clique=None)
    assert protocol.check_domain(dict(stuck, chassis_serial=None)) is None   # nothing left to place the node by
    assert protocol.check_domain(dict(DOMAIN, chassis_serial="0")) == dict(DOMAIN, chassis_serial=None)
    # A version 1 body never had the field: what it carries there is not read.
    v1 = dict(json.loads(body), version=1)
    assert protocol.verify_report(SECRET, *_signed(v1))[0]["domain"] is None
    for bad, message in ((dict(DOMAIN, rack="r1"), "unknown key(s) rack"),
                         (dict(DOMAIN, chassis_serial="18 2\n"), "chassis_serial must be the chassis serial number"),
                         (dict(DOMAIN, tray=-1), "tray must be a whole number from 0 to 4096 or null, got -1"),
                         (dict(DOMAIN, cluster_uuid="not a uuid"), "cluster_uuid must be the ClusterUUID"),
                         ("1820000000001", "report domain must be an object")):
        with pytest.raises(ValueError, match=re.escape(message)):
            protocol.check_report(dict(json.loads(body)["report"], domain=bad))


def test_report_domain_maps_node_domain_of_a_real_gb300_tray():
    """What the node side sends: topology/nvlink.node_domain of nvidia-smi -q -x (NVIDIA/k8s-test-infra's GB300
    capture) mapped to the report's domain; an H100 HGX board names no rack (None: the report stays version 1)."""
    import os
    from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.nvlink import node_domain
    fixtures = fixture_path("nvidia_smi_fabric")
    with open(os.path.join(fixtures, "qx_gb300x4_k8stestinfra.xml")) as handle:
        tray = protocol.report_domain(node_domain(handle.read()))
    assert tray["chassis_serial"] and tray["cluster_uuid"] and tray["tray"] is not None
    assert protocol.check_domain(tray) == dict(tray, cluster_uuid=tray["cluster_uuid"].lower())
    with open(os.path.join(fixtures, "qx_h100x8_k8stestinfra.xml")) as handle:
        assert protocol.report_domain(node_domain(handle.read())) is None
