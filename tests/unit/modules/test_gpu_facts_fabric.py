"""gpu_facts keeps the node's NVLink domain from the Fabric fields of the nvidia-smi -q -x it already reads:
the GB200 x4 XML of tests/unit/fixtures/nvidia_smi_fabric (cited in the fixtures README) gives its domain, the
real 8x H200 capture (Completed/Success with an all-zero ClusterUUID) gives none, with the reason."""

import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink, slurm_conf
from ansible_collections.gpufabric.rdma.plugins.modules import gpu_facts
from moduletest import run_module, stub_bin, stub_path

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "fixtures"))


def _facts(tmp_path, monkeypatch, capture):
    bindir = stub_path(tmp_path, monkeypatch)
    stub_bin(bindir, {"nvidia-smi": "misbehave"})
    monkeypatch.setenv("STUB_NVIDIA_SMI_MODE", "file:" + os.path.join(FIXTURES, *capture))
    return run_module(gpu_facts, {"procfs_root": str(tmp_path)}, check_mode=True)["ansible_facts"]["gpu"]


def test_a_gb200_node_has_its_nvlink_domain(tmp_path, monkeypatch):
    fabric = _facts(tmp_path, monkeypatch, ("nvidia_smi_fabric", "q_gb200x4_constructed.xml"))["fabric"]
    assert fabric == {"domain": {"cluster_uuid": "9c6f5af3-53bf-49b5-a436-b66766c413c3", "clique_id": 4026}, "reason": None}


def test_the_topology_role_takes_blocks_from_the_node_records(tmp_path, monkeypatch):
    gb200 = _facts(tmp_path, monkeypatch, ("nvidia_smi_fabric", "q_gb200x4_constructed.xml"))["fabric"]
    domains = nvlink.nvlink_domains({"gb01": gb200, "gb02": gb200, "h200": {"domain": None, "reason": "zero"},
                                     "new": None})
    assert [d["hosts"] for d in domains["domains"]] == [["gb01", "gb02"]]
    assert domains["no_domain"] == {"h200": "zero", "new": "no NVLink facts for this host (run gpufabric.rdma.discover)"}
    assert "BlockName=block1 Nodes=gb[01-02]" in slurm_conf.slurm_topology_conf(domains, plugin="block")


def test_an_hgx_h200_node_has_none_and_says_why(tmp_path, monkeypatch):
    fabric = _facts(tmp_path, monkeypatch, ("nvidia_smi", "q_h200x8.xml"))["fabric"]
    assert fabric["domain"] is None and "zero" in fabric["reason"].lower()
