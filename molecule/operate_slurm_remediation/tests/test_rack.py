"""The rack phase (issue 55) on the same real Slurm: the three compute nodes become three trays of one GB200 NVL72 rack.

Each node's nvidia-smi stand-in replays the real GB200 `nvidia-smi -q -x` (NVIDIA/k8s-test-infra's qx-gb200.xml:
chassis 1820000000001, one ClusterUUID and CliqueId for all three) with the node's own tray index and slot, and its
nvidia-imex-ctl stand-in (tests/lab) a real daemon's node list. The verifier switches what they print by the files it
writes: the fabric Health Summary (Healthy, Limited Capacity on one GPU, Unhealthy on every GPU) and the IMEX capture.

In shadow and in enforce mode: one tray at Limited Capacity is a warning and nothing drains; then all three report
Unhealthy within seconds through the health monitor's own report path (its result's ``domain`` read from the XML), and
the decider makes ONE rack decision - the ledger's rack entry, its reason naming the rack on every node (enforce) or
on none (shadow), one action against max_nodes 1; then, the stand-ins healthy again, the remediate playbook certifies
the rack (DCGM, IMEX UP as each tray sees it, one nccl-tests run across the three) and the rack returns as one:
the decider in shadow mode only says it would resume them, in enforce mode all three are resumed together.
"""

import base64
import gzip
import json
import os
import re

import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # pytest.ini imports test files by path only
from test_operate_slurm_remediation import (  # noqa: E402  the scenario's own helpers: one owner
    CERTIFY_VARS, DECIDER_CONFIG, LEDGER, NODES, SCENARIO, _copy_to, _remediate, admin_resume, at_once, drained,
    healthcheck, node_host, set_decider, show)

testinfra_hosts = ["gpufabric-ops-ctl"]

FIXTURES = os.path.join(SCENARIO, "..", "..", "tests", "unit", "fixtures")
GB200_XML = os.path.join(FIXTURES, "nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml")
H200_XML = os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml")
IMEX_UP_2 = os.path.join(FIXTURES, "nvidia_imex", "ctl_N_j_2node_gb200_up_pcluster.json")   # -N -j, 2 nodes READY
IMEX_UP_18 = os.path.join(FIXTURES, "nvidia_imex", "ctl_N_18node_gb200_570.172_pcluster_docs.txt")   # -N, 18 READY
RACK = "1820000000001"   # the capture's chassis serial: the rack each tray names
# tray index and slot per node: node1 prints the capture's own (tray 4, slot 14)
TRAYS = dict((name, (4 + i, 14 + i)) for i, name in enumerate(NODES))
MONITOR_CONFIG = "/etc/gpufabric/health-monitor.json"
TRAY_CHECKS = {"expected_gpu_count": 4, "imex_ctl_path": "/opt/standin/nvidia-imex-ctl"}
RACK_POLICY = {"min_nodes": 2, "window": 300}
# DCGM level 2 (a real passing capture) on each tray, and the rack's own checks: IMEX and the NVLink-domain run
RACK_CERTIFY = {"required": False, "dcgm_level": 2, "checks": ["dcgm"], "max_age": 3600}
RACK_VARS = ["-e", json.dumps({"remediate_certify_imex_ctl": TRAY_CHECKS["imex_ctl_path"]})]
BATCH = 10   # the decider gathers the three trays' reports into one batch: their checks take a few seconds each


def fabric(name, summary="Healthy"):
    """The node's nvidia-smi stand-in prints the real GB200 XML with its own tray and slot, and the Health Summary
    ``summary`` (Limited Capacity: on its first GPU; Unhealthy: on every GPU)."""
    tray, slot = TRAYS[name]
    with open(GB200_XML) as handle:
        text = handle.read()
    text = text.replace("<tray_index>4</tray_index>", "<tray_index>%d</tray_index>" % tray)
    text = text.replace("<slot_number>14</slot_number>", "<slot_number>%d</slot_number>" % slot)
    if summary != "Healthy":
        text = text.replace("<summary>Healthy</summary>", "<summary>%s</summary>" % summary,
                            1 if summary == "Limited Capacity" else -1)
    write_xml(name, text.encode())


def write_xml(name, data):
    """The nvidia-smi stand-in's q.xml on ``name``, sent compressed: a command line's argument holds 128 KiB."""
    node_host(name).check_output("echo %s | base64 -d | gunzip > /opt/standin/capture/q.xml",
                                 base64.b64encode(gzip.compress(data)).decode())


def imex(name, capture):
    _copy_to(name, capture, "/opt/standin/capture/imex.txt")


@pytest.fixture(autouse=True)
def rack_of_three(host):
    """Three healthy GB200 trays of one rack (the monitor's configuration expects their 4 GPUs), in service; after the
    test, the scenario's H200 nodes again."""
    for name in NODES:
        fabric(name)
        imex(name, IMEX_UP_2)
        node_host(name).check_output(
            "test -e {0}.h200 || cp -p {0} {0}.h200; python3 -c \"import json; c = json.load(open('{0}')); "
            "c['checks'].update({1}); json.dump(c, open('{0}', 'w'))\"".format(MONITOR_CONFIG, repr(TRAY_CHECKS)))
        admin_resume(host, name)
    yield
    for name in NODES:
        with open(H200_XML, "rb") as handle:
            write_xml(name, handle.read())
        imex(name, IMEX_UP_2)
        node_host(name).check_output("mv -f {0}.h200 {0}".format(MONITOR_CONFIG))
        admin_resume(host, name)
    set_decider(host)


def _ledger(host):
    return json.loads(host.check_output("cat %s", LEDGER))["ledger"]


def _rack_metric(host, shadow):
    metrics = host.check_output("python3 -c \"import urllib.request; "
                                "print(urllib.request.urlopen('http://127.0.0.1:8740/metrics').read().decode())\"")
    found = [line for line in metrics.splitlines() if line.startswith("gpufabric_remediation_rack_nodes{")
             and 'rack="%s"' % RACK in line and 'action="drain"' in line and 'shadow="%s"' % shadow in line]
    return found, metrics


@pytest.mark.parametrize("mode", ["shadow", "enforce"])
def test_a_rack_whose_trays_all_report_unhealthy_within_seconds_is_one_decision(host, mode):
    shadow = mode == "shadow"
    set_decider(host, batch_window=BATCH, mode=mode, rack=RACK_POLICY, certification=RACK_CERTIFY)
    assert json.loads(host.check_output("cat %s", DECIDER_CONFIG))["batch_window"] == BATCH

    # One tray at Limited Capacity: a warning, told; nothing drains, no rack decision.
    fabric(NODES[0], "Limited Capacity")
    out = healthcheck(NODES[0])
    assert "0 critical, 1 warning" in out, out
    assert drained(host) == [] and show(host, NODES[0])[1] is None, out
    ledger = _ledger(host)
    assert not (ledger["nodes"].get(NODES[0]) or {}).get("drains"), ledger["nodes"].get(NODES[0])
    assert not (ledger.get("racks") or {}).get("decisions"), ledger.get("racks")

    # Every tray Unhealthy, reported at the same moment: one rack decision for all three, under max_nodes 1.
    for name in NODES:
        fabric(name, "Unhealthy")
    out = at_once(healthcheck, NODES)
    said = " ".join(" ".join(out.values()).split())
    ledger = _ledger(host)
    decision = (ledger.get("racks") or {}).get("decisions", {}).get(RACK)
    assert decision, (said[-3000:], ledger.get("racks"))
    assert (decision["action"], decision["nodes"], sorted(decision["faulted"]), decision["shadow"]) == (
        "drain", NODES, NODES, shadow), decision
    assert decision["why"].startswith("rack %s: 3 trays reported NVLink fabric faults within 300 s" % RACK), decision
    assert "switch side: " in decision["why"] and "drain together" in decision["why"], decision
    for name in NODES:
        entry = ledger["nodes"][name]["drains"][-1]
        assert (entry["rack"], bool(entry.get("shadow"))) == (RACK, shadow), entry
        assert entry["findings"][0] == "nvlink_rack|rack %s" % RACK, entry
        assert "rack %s" % RACK in out[name], out[name]
    # One action against the rate limit (max_nodes 1): nothing of the rack held back.
    assert "held back" not in said and "rate limit" not in said, said[-3000:]
    journal = host.check_output("journalctl -u gpufabric-remediator --no-pager -o cat -n 40")
    assert "batch of 3 report(s)" in journal, journal
    found, metrics = _rack_metric(host, "true" if shadow else "false")
    assert len(found) == 1 and re.search(r" 3(\.0)?$", found[0]), [line for line in metrics.splitlines() if "rack" in line]
    if shadow:
        assert drained(host) == [], said[-3000:]
        assert all("shadow mode, would have drained %s" % name in out[name] for name in NODES), said[-3000:]
        assert all(show(host, name)[1] is None for name in NODES)
        return
    assert drained(host) == NODES, said[-3000:]
    for name in NODES:
        assert show(host, name)[1].startswith("gpufabric: nvlink_rack rack %s" % RACK), show(host, name)

    # The trays healthy again and their reports clear: the rack stays out until it is certified as a rack.
    for name in NODES:
        fabric(name)
    out = at_once(healthcheck, NODES)
    assert drained(host) == NODES, out
    # IMEX as each tray sees it: a domain with at least the rack's three nodes, all READY and connected, UP (the
    # 2-node capture names fewer nodes than the rack has). The decider in shadow mode resumes nothing.
    for name in NODES:
        imex(name, IMEX_UP_18)
    cert = dict(checks=TRAY_CHECKS, certification=RACK_CERTIFY, rack=RACK_POLICY)
    proc = _remediate(*(CERTIFY_VARS + RACK_VARS), mode="shadow", **cert)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "rack by rack with IMEX and an NVLink-domain run: %s" % RACK in proc.stdout, proc.stdout[-4000:]
    for name in NODES:
        assert "shadow mode, would have resumed %s" % name in proc.stdout, proc.stdout[-4000:]
    assert drained(host) == NODES
    # Certified (DCGM level 2, IMEX UP, the run across the rack): all three resumed together, one rack decision.
    proc = _remediate(*(CERTIFY_VARS + RACK_VARS), **cert)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert drained(host) == [], proc.stdout[-4000:]
    ledger = _ledger(host)
    back = ledger["racks"]["decisions"][RACK]
    assert (back["action"], back["nodes"]) == ("resume", NODES), back
    for name in NODES:
        certificate = ledger["nodes"][name]["resumes"][-1]["certificate"]
        checks = " ".join(certificate["checks"])
        assert "imex pass" in checks and re.search(r"nvlink_domain pass .*with rack %s" % RACK, checks), certificate
