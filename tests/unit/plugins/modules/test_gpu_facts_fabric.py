"""gpu_facts keeps the node's place in the NVLink fabric from the Fabric and Platform Info fields of the nvidia-smi -q -x
it already reads: real GB200 and GB300 trays (NVIDIA/k8s-test-infra's captures, cited in the fixtures README) give
their domain, chassis and tray, and each GPU's registration and Health rows; real HGX H100 and B200 boards and the
8x H200 capture (Completed/Success with an all-zero ClusterUUID) give none, with the reason."""

import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nvlink_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink, slurm_conf
from ansible_collections.gpufabric.rdma.plugins.modules import gpu_facts
from moduletest import run_module, stub_bin, stub_path
from paths import FIXTURES

GB200 = ("nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml")
GB300 = ("nvidia_smi_fabric", "qx_gb300x4_k8stestinfra.xml")
SCRUBBED_UUID = "00000001-0000-0000-0000-000000000001"    # NVIDIA scrubbed the ClusterUUID of these captures


def _facts(tmp_path, monkeypatch, capture):
    bindir = stub_path(tmp_path, monkeypatch)
    stub_bin(bindir, {"nvidia-smi": "misbehave"})
    monkeypatch.setenv("STUB_NVIDIA_SMI_MODE", "file:" + os.path.join(FIXTURES, *capture))
    return run_module(gpu_facts, {"procfs_root": str(tmp_path)}, check_mode=True)["ansible_facts"]["gpu"]


@pytest.mark.parametrize("capture, clique, slot, tray", [(GB200, 2, 14, 4), (GB300, 32766, 25, 15)])
def test_a_rack_tray_has_its_domain_chassis_and_tray(tmp_path, monkeypatch, capture, clique, slot, tray):
    fabric = _facts(tmp_path, monkeypatch, capture)["fabric"]
    place = dict((key, fabric[key]) for key in nvlink.PLACE_KEYS)
    assert place == {"domain": "%s/%d" % (SCRUBBED_UUID, clique), "cluster_uuid": SCRUBBED_UUID, "clique_id": clique,
                     "chassis_serial": "1820000000001" if capture == GB200 else place["chassis_serial"],
                     "slot_number": slot, "tray_index": tray, "host_id": 1, "reason": None}
    assert place["chassis_serial"]
    assert [(g["state"], g["status"], g["health"]["summary"]) for g in fabric["gpus"]] == [
        ("Completed", "Success", "Healthy")] * 4
    assert set(fabric["gpus"][0]) == set(nvlink.FABRIC_GPU_KEYS)
    # what readiness judges: a healthy tray gives nothing, told it is a tray or left to infer it
    assert nvlink_fabric.nvlink_fabric_findings(fabric, {"domain": True}) == []
    assert nvlink_fabric.nvlink_fabric_findings(fabric) == []


@pytest.mark.parametrize("capture", [("nvidia_smi_fabric", "qx_h100x8_k8stestinfra.xml"),
                                     ("nvidia_smi_fabric", "qx_b200x8_k8stestinfra.xml"), ("nvidia_smi", "q_h200x8.xml")])
def test_an_hgx_board_has_no_domain_and_says_why(tmp_path, monkeypatch, capture):
    fabric = _facts(tmp_path, monkeypatch, capture)["fabric"]
    assert fabric["domain"] is None and fabric["chassis_serial"] is None and "zero" in fabric["reason"].lower()
    assert len(fabric["gpus"]) == 8
    assert nvlink_fabric.nvlink_fabric_findings(fabric) == []        # an HGX board's zero UUID is normal


def test_the_topology_role_takes_blocks_from_the_node_records(tmp_path, monkeypatch):
    gb200 = _facts(tmp_path, monkeypatch, GB200)["fabric"]
    older = {"domain": {"cluster_uuid": SCRUBBED_UUID, "clique_id": 2}, "reason": None}   # a record made before
    domains = nvlink.nvlink_domains({"gb01": gb200, "gb02": gb200, "gb03": older,
                                     "h200": {"domain": None, "reason": "zero"}, "new": None})
    assert [d["hosts"] for d in domains["domains"]] == [["gb01", "gb02", "gb03"]]
    assert domains["domains"][0]["chassis"] == ["1820000000001"]
    assert domains["host_place"]["gb01"] == {"chassis_serial": "1820000000001", "slot_number": 14, "tray_index": 4}
    assert domains["no_domain"] == {"h200": "zero", "new": "no NVLink facts for this host (run gpufabric.rdma.discover)"}
    assert "BlockName=block1 Nodes=gb[01-03]" in slurm_conf.slurm_topology_conf(domains, plugin="block")
