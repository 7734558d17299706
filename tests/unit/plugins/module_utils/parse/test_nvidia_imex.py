"""nvidia-imex-ctl -N read (parse/nvidia_imex.py) in its older text layout (no version), its newer one (a version
column, -H's hostnames, the local node marked), and -j JSON, and judged (judge/imex.py) only where a domain is
expected. Real captures: a 1- and 2-node GH200 domain (IMEX 570.00), an 18-node P6e-GB200 UltraServer (570.172),
the -N -j of a healthy 2-node GB200 domain and of an unconfigured node; sources in tests/unit/fixtures/README.md."""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge.imex import imex_findings
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_imex import parse_nvidia_imex_ctl
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import parse_nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError
from paths import COLLECTIONS, fixture_text


read = fixture_text


OLD_2 = read("nvidia_imex", "ctl_N_2node_gh200_570_jpsnips.txt")
NEW_18 = read("nvidia_imex", "ctl_N_18node_gb200_570.172_pcluster_docs.txt")
HOSTS_4 = read("nvidia_imex", "ctl_N_H_4node_unavailable_constructed.txt")
JSON_UP = read("nvidia_imex", "ctl_N_j_2node_gb200_up_pcluster.json")
JSON_DOWN = read("nvidia_imex", "ctl_N_j_unconfigured_down_pcluster.json")
PCLUSTER_18 = ["172.31.48.81", "172.31.48.98", "172.31.48.221", "172.31.49.228", "172.31.50.39", "172.31.50.44",
               "172.31.51.66", "172.31.51.157", "172.31.52.239", "172.31.53.80", "172.31.54.95", "172.31.54.183",
               "172.31.54.203", "172.31.54.241", "172.31.55.59", "172.31.55.187", "172.31.55.197", "172.31.56.47"]


# --- the reader ------------------------------------------------------------------------------------------------

def test_older_layout_prints_no_version():
    one = parse_nvidia_imex_ctl(read("nvidia_imex", "ctl_N_1node_gh200_570_jpsnips.txt"))
    assert one["nodes"] == [{"index": 0, "address": "10.136.206.48", "hostname": None, "status": "READY", "version": None,
                             "local": False, "connections": [{"to": 0, "status": "CONNECTED"}]}]
    assert (one["domain_state"], one["versions_printed"], one["timestamp"], one["format"]) == (
        "UP", False, "3/25/2025 10:39:43.659", "text")
    two = parse_nvidia_imex_ctl(OLD_2)
    assert [n["address"] for n in two["nodes"]] == ["10.136.206.47", "10.136.206.48"]
    assert {c["status"] for n in two["nodes"] for c in n["connections"]} == {"CONNECTED"}


def test_newer_layout_has_a_version_column_and_eighteen_nodes():
    parsed = parse_nvidia_imex_ctl(NEW_18)
    assert [n["address"] for n in parsed["nodes"]] == PCLUSTER_18
    assert {n["version"] for n in parsed["nodes"]} == {"570.172"} and parsed["versions_printed"] is True
    assert [len(n["connections"]) for n in parsed["nodes"]] == [18] * 18
    assert parsed["nodes"][10]["connections"][17] == {"to": 17, "status": "CONNECTED"}
    assert parsed["domain_state"] == "UP" and parsed["complete"] is True


def test_hostnames_the_local_node_and_every_cell_of_the_legend():
    parsed = parse_nvidia_imex_ctl(HOSTS_4)
    assert [(n["index"], n["address"], n["hostname"], n["status"], n["version"], n["local"]) for n in parsed["nodes"]] == [
        (0, "10.66.6.8", "theia0271", "READY", "580.173.02", False),
        (1, "10.66.6.9", "theia0272", "READY", "580.173.02", True),
        (2, "10.66.6.10", "theia0273", "UNAVAILABLE", None, False),
        (3, "10.66.6.11", "theia0274", "READY", "580.173.02", False)]
    assert [c["status"] for c in parsed["nodes"][2]["connections"]] == ["INVALID"] * 4
    assert parsed["nodes"][0]["connections"][2]["status"] == "NEVER_CONNECTED"
    assert parsed["domain_state"] == "DEGRADED"
    cells = HOSTS_4.replace("       0        C   C   N   C", "       0        R   D   A   !V!").replace(
        "       3        C   C   N   C", "       3        !M!   C   N   C")
    assert [c["status"] for c in parse_nvidia_imex_ctl(cells)["nodes"][0]["connections"]] == [
        "RECOVERING", "DISCONNECTED", "AUTHENTICATING", "VERSION_MISMATCH"]
    assert parse_nvidia_imex_ctl(cells)["nodes"][3]["connections"][0]["status"] == "NODE_MAP_MISMATCH"


def test_json_forms_read_into_the_same_shape():
    up = parse_nvidia_imex_ctl(JSON_UP)
    assert up["format"] == "json" and up["domain_state"] == "UP" and up["timestamp"] == "8/8/2025 17:38:02.641"
    assert [(n["index"], n["address"], n["status"], n["version"]) for n in up["nodes"]] == [
        (0, "192.168.103.159", "READY", "570.172.08"), (1, "192.168.107.187", "READY", "570.172.08")]
    assert up["nodes"][0]["connections"] == [{"to": 0, "status": "CONNECTED"}, {"to": 1, "status": "CONNECTED"}]
    down = parse_nvidia_imex_ctl(JSON_DOWN)
    assert down["domain_state"] == "DOWN"
    assert down["nodes"] == [{"index": 0, "address": "0.0.0.0", "hostname": None, "status": "UNAVAILABLE", "version": None,
                              "local": False, "connections": [{"to": 0, "status": "INVALID"}]}]
    # an already loaded mapping (from_json in a playbook) reads the same
    assert parse_nvidia_imex_ctl(json.loads(JSON_UP)) == up


def test_crlf_and_a_table_cut_before_the_domain_state():
    assert parse_nvidia_imex_ctl(NEW_18.replace("\n", "\r\n")) == parse_nvidia_imex_ctl(NEW_18)
    cut = parse_nvidia_imex_ctl(NEW_18[:NEW_18.index("      12        C")])
    assert len(cut["nodes"]) == 18 and cut["domain_state"] is None and cut["complete"] is False
    assert [len(n["connections"]) for n in cut["nodes"]][11:13] == [18, 0]


def test_text_that_is_not_imex_is_refused():
    for text in ("", "nvidia-imex-ctl: command not found\n", "{\"nodes\": [1, 2]}", "{not json", "[]"):
        with pytest.raises(ToolTextError):
            parse_nvidia_imex_ctl(text)


LONG_LINES = ("a" + " " * 100000 + "b", "Node #1" + " " * 100000 + "- x", "Node #1 - " + " - " * 30000,
              " Nodes From\\To" + " 0" * 50000, "C " * 50000, "1" * 100000 + "x")


def test_the_reader_stays_linear():
    code = "\n".join([
        "from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_imex import parse_nvidia_imex_ctl",
        "for t in %r:" % (LONG_LINES,),
        "    for head in ('Nodes:\\n', 'Nodes:\\n Nodes From\\\\To  0   1\\n       0        '):",
        "        try:",
        "            parse_nvidia_imex_ctl(head + t + '\\nDomain State: UP\\n')",
        "        except ValueError:",
        "            pass"])
    result = subprocess.run([sys.executable, "-"], input=code, env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False,
                            timeout=20, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


# --- the judge -------------------------------------------------------------------------------------------------

def test_a_healthy_rack_gives_nothing():
    assert imex_findings(parse_nvidia_imex_ctl(NEW_18), PCLUSTER_18) == []
    assert imex_findings(parse_nvidia_imex_ctl(NEW_18), 18) == []
    assert imex_findings(parse_nvidia_imex_ctl(JSON_UP), ["192.168.103.159", "192.168.107.187"]) == []


def test_no_domain_expected_gives_no_imex_finding_nvsentinel_1471():
    """NVSentinel reports 'IMEX daemon status is -3 (not READY)' as a hardware fault on single-node H100 boxes and on
    idle GB300 trays (NVIDIA/NVSentinel#1471, NVIDIA/aicr#2641). An H100 HGX board has no multi-node NVLink domain
    (its ClusterUUID is all zeros): whatever IMEX says there - here an unconfigured daemon, DOWN - is no finding."""
    assert "IMEX daemon status is -3" in read("nvidia_imex", "dcgm_imex_unhealthy_p5_nvsentinel1471.txt")
    h100 = parse_nvidia_smi_fabric(read("nvidia_smi_fabric", "qx_h100x8_k8stestinfra.xml"))
    assert h100["domain"] is None
    down = parse_nvidia_imex_ctl(JSON_DOWN)
    for nothing_expected in (None, [], 0, False):
        assert imex_findings(down, nothing_expected) == []
    # the same output on a tray that must be in a domain is critical
    found = imex_findings(down, ["192.168.103.159", "192.168.107.187"])
    assert [(f["check"], f["severity"], f["target"]) for f in found] == [
        ("imex_node", "critical", "192.168.103.159"), ("imex_node", "critical", "192.168.107.187"),
        ("imex_domain", "critical", "IMEX domain")]


def test_a_node_missing_not_ready_or_not_connected_is_named():
    found = imex_findings(parse_nvidia_imex_ctl(HOSTS_4), ["theia0271", "theia0272", "theia0273", "theia0274"])
    assert [(f["check"], f["severity"], f["target"]) for f in found] == [
        ("imex_node", "critical", "theia0273"), ("imex_domain", "warning", "IMEX domain")]
    assert found[0]["detail"] == "IMEX node #2 theia0273 (10.66.6.10) is UNAVAILABLE, not READY (domain DEGRADED)"
    missing = imex_findings(parse_nvidia_imex_ctl(NEW_18), PCLUSTER_18 + ["172.31.60.1"])
    assert [(f["check"], f["target"]) for f in missing] == [("imex_node", "172.31.60.1")]
    assert "is not among the 18 nodes" in missing[0]["detail"]
    fewer = imex_findings(parse_nvidia_imex_ctl(OLD_2), 3)
    assert [(f["check"], f["detail"]) for f in fewer] == [("imex_node", "the IMEX domain lists 2 nodes, 3 expected")]


def test_a_node_cut_off_from_its_peers_is_named_once_not_by_every_peer():
    rows = NEW_18.splitlines()
    table = rows.index(" Nodes From\\To  0   1   2   3   4   5   6   7   8   9   10  11  12  13  14  15  16  17")
    for row in range(18):   # node 5 lost every peer; node 3 and node 9 lost each other
        cells = rows[table + 1 + row].split()
        for col in range(18):
            if (row == 5) != (col == 5) or {row, col} == {3, 9}:
                cells[col + 1] = "D" if row != 5 else "I"
        rows[table + 1 + row] = "      %2s        " % cells[0] + "   ".join(cells[1:])
    found = imex_findings(parse_nvidia_imex_ctl("\n".join(rows)), PCLUSTER_18)
    assert [(f["check"], f["target"]) for f in found] == [("imex_connection", "172.31.50.44"),
                                                          ("imex_connection", "172.31.49.228 and 172.31.53.80")]
    assert found[0]["detail"].startswith("IMEX node #5 172.31.50.44 is not connected to 17 of its 17 peers")
    assert found[1]["detail"] == ("IMEX nodes #3 172.31.49.228 and #9 172.31.53.80 are not connected "
                                  "(#3 to #9: DISCONNECTED, #9 to #3: DISCONNECTED)")


def test_version_and_node_map_mismatches_say_so():
    text = OLD_2.replace("       0        C  C", "       0        C  !V!").replace("       1        C  C", "       1        !V!  C")
    found = imex_findings(parse_nvidia_imex_ctl(text), 2)
    assert {f["check"] for f in found} == {"imex_connection"}
    assert "VERSION_MISMATCH" in found[0]["detail"] and "same IMEX" in found[0]["fix_hint"]


def test_a_degraded_domain_whose_expected_nodes_are_all_fine_is_information():
    """The DRA driver's ComputeDomain lists 18 slots; with 3 daemons the domain is DEGRADED by design."""
    found = imex_findings(parse_nvidia_imex_ctl(HOSTS_4), ["theia0271", "theia0272", "theia0274"])
    assert [(f["check"], f["severity"]) for f in found] == [("imex_domain", "info")]


def test_unknown_state_is_not_a_pass():
    cut = parse_nvidia_imex_ctl(NEW_18[:NEW_18.index("Domain State")])
    found = imex_findings(cut, PCLUSTER_18)
    assert [(f["check"], f["severity"]) for f in found] == [("imex_domain", "warning")]
    assert "ended before" in found[0]["detail"]


def test_bad_arguments_name_themselves():
    with pytest.raises(ToolTextError, match="expected_nodes"):
        imex_findings(parse_nvidia_imex_ctl(OLD_2), "10.0.0.1")
    with pytest.raises(ToolTextError, match="expected_nodes"):
        imex_findings(parse_nvidia_imex_ctl(OLD_2), -1)
    with pytest.raises(ToolTextError, match="parse_nvidia_imex_ctl"):
        imex_findings({"nodes": "x"}, 2)
