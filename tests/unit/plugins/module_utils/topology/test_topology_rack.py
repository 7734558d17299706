"""Slurm's topology/block and the Kubernetes labels from the NVLink domains the node records keep (gpu_facts' fabric
fact of real GB200 and GB300 trays, NVIDIA/k8s-test-infra's nvidia-smi -q -x): each block names its chassis, a rack
split over two blocks is noted, and nvidia.com/gpu.clique is '<ClusterUUID>.<CliqueId>' exactly as NVIDIA's GPU
feature discovery writes it (NVIDIA/k8s-device-plugin internal/lm/imex.go: strings.Join([clusterUUID, cliqueID], "."),
the UUID from uuid.FromBytes(...).String(), the clique fmt.Sprintf("%d"), at 1b826acc)."""

import copy
import re

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import labels, nvlink, slurm_conf

UUID = "00000001-0000-0000-0000-000000000001"      # the captures' ClusterUUID, scrubbed by NVIDIA


@pytest.fixture
def trays(read_fixture):
    gb200 = nvlink.fabric_fact(read_fixture("nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml"))
    gb300 = nvlink.fabric_fact(read_fixture("nvidia_smi_fabric", "qx_gb300x4_k8stestinfra.xml"))
    return gb200, gb300


def test_blocks_name_their_chassis_and_a_split_rack_is_noted(trays):
    gb200, gb300 = trays
    other_rack = dict(copy.deepcopy(gb300), chassis_serial="1820000000002")
    stray = dict(copy.deepcopy(gb300), chassis_serial="1820000000001")   # a tray of rack 1 registered in clique 32766
    records = {"gb01": gb200, "gb02": gb200, "gb03": other_rack, "gb04": stray}
    domains = nvlink.nvlink_domains(records)
    text = slurm_conf.slurm_topology_conf(domains, plugin="block")
    assert "# NVLink domain %s clique 2; chassis 1820000000001\nBlockName=block1 Nodes=gb[01-02]\n" % UUID in text
    assert "# NVLink domain %s clique 32766; chassis 1820000000001, 1820000000002\n" % UUID in text
    assert ("# note: chassis 1820000000001 is split over block1, block2: one rack's trays belong to one NVLink domain"
            in text)
    one_rack = slurm_conf.slurm_topology_conf(nvlink.nvlink_domains({"gb01": gb200, "gb02": gb200}), plugin="block")
    assert "split" not in one_rack


def test_the_clique_label_is_gfds(trays):
    gb200, gb300 = trays
    result = labels.node_labels(domains=nvlink.nvlink_domains({"gb01": gb200, "gb02": gb300, "hgx": None}))
    assert result == {"gb01": {"gpufabric.io/nvlink-domain": "block1", "nvidia.com/gpu.clique": UUID + ".2"},
                      "gb02": {"gpufabric.io/nvlink-domain": "block2", "nvidia.com/gpu.clique": UUID + ".32766"}}
    # GFD's form: the canonical lower-case UUID, a dot, the clique in decimal; a valid label value (63 characters)
    for value in (entry["nvidia.com/gpu.clique"] for entry in result.values()):
        assert re.match(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[0-9]{1,10}$", value)
        assert len(value) <= 63
    assert labels.clique_label("8A6C0D1E-0000-0000-0000-0000000000AB", 4026) == "8a6c0d1e-0000-0000-0000-0000000000ab.4026"


def test_a_host_to_domain_map_labels_cliques_only_where_it_names_one():
    named = labels.node_labels(domains={"gb01": UUID + "/2", "gb02": "rack-b", "gb03": None})
    assert named == {"gb01": {"gpufabric.io/nvlink-domain": "block1", "nvidia.com/gpu.clique": UUID + ".2"},
                     "gb02": {"gpufabric.io/nvlink-domain": "block2"}}
    with pytest.raises(TopologyError, match="cannot be a Kubernetes label value"):
        labels.clique_label("not a uuid but far too long for a label value " * 2, 1)
