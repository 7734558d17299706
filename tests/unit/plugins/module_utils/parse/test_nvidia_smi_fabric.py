"""parse_nvidia_smi_fabric's rack fields (issue 55): each GPU's fabric Health rows as NVIDIA prints them and its
Platform Info block, read from real `nvidia-smi -q -x` of GB200, GB300, B200, H100, A100 and L40S machines
(NVIDIA/k8s-test-infra), a real GB300 Platform Info text block and the GB200 Fabric excerpts of public issues; and
the node's place in the rack derived from them (topology/nvlink.node_domain). Sources: tests/unit/fixtures/README.md."""

import os
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import HEALTH_KEYS, parse_nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.nvlink import node_domain
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError
from paths import COLLECTIONS, fixture_path

FIX = fixture_path("nvidia_smi_fabric")
HEALTHY_ROWS = {"summary": "Healthy", "bandwidth": "Full", "route_recovery_in_progress": "False",
                "route_unhealthy": "False", "access_timeout_recovery": "False"}


def read(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as handle:
        return handle.read()


def test_gb200_tray_xml_gives_every_health_row_and_its_platform():
    parsed = parse_nvidia_smi_fabric(read("qx_gb200x4_k8stestinfra.xml"))
    assert parsed["domain"] == {"cluster_uuid": "00000001-0000-0000-0000-000000000001", "clique_id": 2}
    first = parsed["gpus"][0]
    assert first["health"] == dict(HEALTHY_ROWS, incorrect_configuration=None, partition_assigned=None)
    assert first["platform"] == {"chassis_serial": "1820000000001", "slot_number": 14, "tray_index": 4, "host_id": 1,
                                 "peer_type": "Switch Connected", "module_id": 2, "gpu_fabric_guid": "0x0000000000000001"}
    assert [g["platform"]["module_id"] for g in parsed["gpus"]] == [2, 1, 4, 3]
    assert first["health_summary"] == "Healthy" and parsed["warnings"] == []


def test_gb300_tray_xml_prints_incorrect_configuration_none():
    parsed = parse_nvidia_smi_fabric(read("qx_gb300x4_k8stestinfra.xml"))
    assert parsed["domain"] == {"cluster_uuid": "00000001-0000-0000-0000-000000000001", "clique_id": 32766}
    assert {g["health"]["incorrect_configuration"] for g in parsed["gpus"]} == {"None"}
    assert {(g["platform"]["slot_number"], g["platform"]["tray_index"]) for g in parsed["gpus"]} == {(25, 15)}


def test_gb300_text_reads_the_same_as_its_xml():
    text = parse_nvidia_smi_fabric(read("q_gb300x4_constructed.txt"))
    xml = parse_nvidia_smi_fabric(read("qx_gb300x4_k8stestinfra.xml"))
    for field in ("bus_id", "name", "state", "status", "clique_id", "cluster_uuid", "health", "platform"):
        assert [g[field] for g in text["gpus"]] == [g[field] for g in xml["gpus"]], field
    assert text["domain"] == xml["domain"]


def test_older_drivers_print_four_health_rows_and_n_a_fabric():
    a100 = parse_nvidia_smi_fabric(read("qx_a100_vm_k8stestinfra.xml"))   # driver 570: no Summary row
    assert a100["gpus"][0]["state"] is None and set(a100["gpus"][0]["health"]) == set(HEALTH_KEYS)
    assert set(a100["gpus"][0]["health"].values()) == {None}
    assert a100["gpus"][0]["platform"]["module_id"] == 7 and a100["gpus"][0]["platform"]["chassis_serial"] is None
    h100 = parse_nvidia_smi_fabric(read("q_h100_della_jdh4.txt"))        # driver 560 text: Bandwidth alone
    assert h100["gpus"][0]["health"]["bandwidth"] is None and h100["gpus"][0]["platform"] is None


def test_hgx_boards_say_switch_connected_but_name_no_chassis():
    b200 = parse_nvidia_smi_fabric(read("qx_b200x8_k8stestinfra.xml"))
    assert len(b200["gpus"]) == 8 and b200["domain"] is None and "all zeros" in b200["reason"]
    platform = b200["gpus"][0]["platform"]
    assert (platform["peer_type"], platform["chassis_serial"], platform["tray_index"]) == ("Switch Connected", None, None)
    assert b200["gpus"][0]["health"]["summary"] == "Healthy"


def test_a_platform_info_block_alone_is_read_not_refused():
    parsed = parse_nvidia_smi_fabric(read("q_platform_info_gb300_k8stestinfra642.txt"))
    assert parsed["gpus"][0]["platform"] == {"chassis_serial": "1823825185529", "slot_number": 5, "tray_index": 4,
                                             "host_id": 1, "peer_type": "Switch Connected", "module_id": 2,
                                             "gpu_fabric_guid": "0x21ac5b6a528f7cf5"}
    assert parsed["domain"] is None and "no Fabric section" in parsed["reason"]


def test_unhealthy_and_stuck_excerpts_keep_their_rows():
    unhealthy = parse_nvidia_smi_fabric(read("q_gb200_fabric_grep_dra626.txt"))
    assert unhealthy["gpus"][0]["health"]["summary"] == "Unhealthy"
    assert unhealthy["gpus"][0]["health"]["bandwidth"] == "Full"
    stuck = parse_nvidia_smi_fabric(read("q_gb200_insufficient_resources_azhpc506.txt"))
    assert (stuck["gpus"][0]["status"], stuck["gpus"][0]["clique_id"]) == ("Insufficient Resources", "0")
    assert set(stuck["gpus"][0]["health"].values()) == {None}


def test_crlf_and_a_text_cut_in_the_middle_of_a_row():
    text = read("q_gb300x4_constructed.txt")
    crlf = parse_nvidia_smi_fabric(text.replace("\n", "\r\n"))
    assert crlf["gpus"] == parse_nvidia_smi_fabric(text)["gpus"]
    cut = text[:text.index("Route Unhealthy", text.index("GPU 00000009")) + len("Route Unh")]
    parsed = parse_nvidia_smi_fabric(cut)
    assert len(parsed["gpus"]) == 2
    assert parsed["gpus"][1]["health"]["route_recovery_in_progress"] == "False"
    assert parsed["gpus"][1]["health"]["route_unhealthy"] is None        # the cut row is not guessed
    assert parsed["domain"] == {"cluster_uuid": "00000001-0000-0000-0000-000000000001", "clique_id": 32766}


def test_a_row_of_another_section_is_not_taken_for_a_health_row():
    """'Summary' and 'Bandwidth' appear elsewhere in nvidia-smi -q (the Summary of a section, a bandwidth
    reading): only the ones under Fabric > Health are health rows."""
    text = read("q_gb300x4_constructed.txt").replace(
        "    Processes", "    Clocks Event Reasons\n        Summary                                        : Unhealthy\n"
        "    Processes", 1)
    assert parse_nvidia_smi_fabric(text)["gpus"][0]["health"]["summary"] == "Healthy"


def test_node_domain_names_the_rack_the_tray_and_the_clique():
    assert node_domain(parse_nvidia_smi_fabric(read("qx_gb200x4_k8stestinfra.xml"))) == {
        "domain": "00000001-0000-0000-0000-000000000001/2", "cluster_uuid": "00000001-0000-0000-0000-000000000001",
        "clique_id": 2, "chassis_serial": "1820000000001", "slot_number": 14, "tray_index": 4, "host_id": 1,
        "reason": None}
    stuck = node_domain(read("q_gb200_insufficient_resources_azhpc506.txt"))
    assert stuck["domain"] is None and stuck["reason"] == "GPU 0: fabric Status is Insufficient Resources"
    h100 = node_domain(read("qx_h100x8_k8stestinfra.xml"))
    assert (h100["domain"], h100["chassis_serial"], h100["tray_index"]) == (None, None, None)
    assert h100["reason"].startswith("all 8 GPUs: ClusterUUID is all zeros")
    tray_only = node_domain(read("q_platform_info_gb300_k8stestinfra642.txt"))
    assert (tray_only["domain"], tray_only["chassis_serial"], tray_only["tray_index"]) == (None, "1823825185529", 4)


def test_node_domain_refuses_gpus_of_two_chassis():
    text = read("q_gb300x4_constructed.txt")
    two = text.replace("1820000000001", "1820000000002", 1)
    result = node_domain(two)
    assert result["chassis_serial"] is None and result["domain"] == "00000001-0000-0000-0000-000000000001/32766"
    assert result["reason"] == "the GPUs name different chassis: 1820000000001, 1820000000002"
    with pytest.raises(TopologyError, match="node_domain needs"):
        node_domain(42)


SHAPES = ("a" + " " * 100000 + "b", "  Summary:" + " " * 100000 + "x", "1" * 100000 + "x", "\t" * 100000 + "#",
          "Route Recovery in progress" + " " * 100000 + ": False")
DEEPEST = ("GPU 00000008:06:00.0\n    Platform Info\n        Slot Number : ",
           "GPU 00000008:06:00.0\n    Fabric\n        State : Completed\n        Health\n            ")


def test_the_reader_stays_linear_on_long_lines_and_many_gpus():
    """100,000-character lines of the shapes that make overlapping repetitions quadratic, inside Platform Info and
    Fabric > Health, and a 4,096-GPU text, in a child process with a 20 s limit (linear code needs well under 1 s)."""
    code = "\n".join([
        "from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import parse_nvidia_smi_fabric",
        "for head in %r:" % (DEEPEST,),
        "    for t in %r:" % (SHAPES,),
        "        parse_nvidia_smi_fabric(head + t + '\\n')",
        "one = open(%r).read()" % os.path.join(FIX, "q_gb300x4_constructed.txt"),
        "parsed = parse_nvidia_smi_fabric(one * 1024)",
        "assert len(parsed['gpus']) == 4096, len(parsed['gpus'])"])
    result = subprocess.run([sys.executable, "-"], input=code, env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False,
                            timeout=20, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
