"""The topology filters as a playbook uses them: registered command results in, loop results over hosts,
errors that start with the filter's name and name the bad value, and the text the copy task writes."""


import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.parsers import FilterModule as ParserFilters
from ansible_collections.gpufabric.rdma.plugins.filter.topology import FilterModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs
from paths import fixture_text

# The topology filters, and the readers of the fabric's tools they take (parsers.py holds every parse_* filter).
READERS = ("parse_ibnetdiscover", "parse_lldp_neighbors", "parse_nvidia_smi_fabric")
F = dict(FilterModule().filters(), **dict((name, ParserFilters().filters()[name]) for name in READERS))


read = fixture_text


def registered(stdout, rc=0):
    return {"changed": False, "rc": rc, "stdout": stdout, "stderr": "", "stdout_lines": stdout.splitlines()}


def test_every_topology_filter_is_exported():
    assert set(F) == {"parse_ibnetdiscover", "fabric_tree", "parse_lldp_neighbors", "host_leaf_map",
                      "parse_nvidia_smi_fabric", "nvlink_domains", "slurm_topology_conf", "rail_report",
                      "observed_attachment", "cabling_check", "topology_node_labels"}


def test_ibnetdiscover_to_topology_conf_from_a_registered_result():
    result = registered(read("ibnetdiscover", "x5_psmn_qdr_hpc_toolset.txt"))
    parsed = F["parse_ibnetdiscover"](result, node_name_map=read("ibnetdiscover", "x5_psmn_node_name_map.txt"))
    assert parsed["counts"]["hosts"] == 86
    tree = F["fabric_tree"](parsed)
    text = F["slurm_topology_conf"](tree)
    assert "SwitchName=ib-0002c902004827b0 Nodes=r815lin[104-107,110-114]\n" in text
    assert text.count("SwitchName=") == 12          # 6 leaves, 5 switches above them, top
    # without a name map the fabric has no host name: the filter says so instead of writing an empty file
    with pytest.raises(AnsibleFilterError, match="^gpufabric.rdma.slurm_topology_conf: no host is attached"):
        F["slurm_topology_conf"](F["fabric_tree"](result))


def test_a_bad_name_fails_naming_the_filter_and_the_value():
    with pytest.raises(AnsibleFilterError) as caught:
        F["slurm_topology_conf"]({"gpu01": "leaf 1"})
    assert str(caught.value).startswith("gpufabric.rdma.slurm_topology_conf: leaf switch name 'leaf 1' holds a space")
    with pytest.raises(AnsibleFilterError, match=r"top_switch 'core=1' holds '='"):
        F["slurm_topology_conf"]({"gpu01": "leaf1", "gpu02": "leaf2"}, top_switch="core=1")
    with pytest.raises(AnsibleFilterError, match="plugin must be a string, got 3"):
        F["slurm_topology_conf"]({"gpu01": "leaf1"}, plugin=3)


def test_lldp_from_a_loop_over_hosts_gives_the_leaf_of_each():
    loop = {"results": [{"item": host, "stdout": read("lldp", "lldpcli_neighbors_%s_lab.keyvalue" % host), "rc": 0}
                        for host in ("gpunode07", "gpunode08")]}
    leaf_map = F["host_leaf_map"](None, lldp=loop, user_map={"gpunode09": "leaf02"})
    assert dict((h, v["leaf"]) for h, v in leaf_map["hosts"].items()) == {
        "gpunode07": "leaf01", "gpunode08": "leaf01", "gpunode09": "leaf02"}
    text = F["slurm_topology_conf"](leaf_map)
    assert "SwitchName=leaf01 Nodes=gpunode[07-08]\nSwitchName=leaf02 Nodes=gpunode09\n" in text
    observed = F["observed_attachment"](None, lldp=loop, lldp_interfaces="ens*")
    check = F["cabling_check"](observed, rail_nics="=ens1np0,ens2np0", rail_leaves=["leaf01", "leaf02"])
    assert [m["host"] + " " + m["nic"] for m in check["miscabled"]] == ["gpunode08 ens1np0", "gpunode08 ens2np0"]


def test_lldp_json_loaded_by_from_json_works():
    import json
    parsed = F["parse_lldp_neighbors"](json.loads(read("lldp", "lldpcli_neighbors_gpunode08_lab.json")))
    assert parsed["interfaces"]["ens1np0"]["chassis_name"] == "leaf02"
    with pytest.raises(AnsibleFilterError, match="^gpufabric.rdma.parse_lldp_neighbors: not lldpcli output"):
        F["parse_lldp_neighbors"](registered("lldpcli: command not found"))


def test_host_leaf_map_needs_a_source():
    with pytest.raises(AnsibleFilterError, match="needs at least one source"):
        F["host_leaf_map"](None)


def test_nvlink_domains_and_block_conf_from_registered_results():
    tray = read("nvidia_smi_fabric", "q_gb200x4_constructed.xml")
    loop = {"results": [{"item": "gb%02d" % n, "stdout": tray} for n in range(1, 5)]
            + [{"item": "hgx01", "stdout": read("nvidia_smi", "q_h200x2.xml")}]}
    domains = F["nvlink_domains"](loop)
    assert domains["domains"][0]["hosts"] == ["gb01", "gb02", "gb03", "gb04"]
    assert domains["host_domain"]["hgx01"] is None
    text = F["slurm_topology_conf"](domains, block_sizes=[4])
    assert "BlockName=block1 Nodes=gb[01-04]\nBlockSizes=4\n" in text
    assert F["parse_nvidia_smi_fabric"](registered(tray))["domain"]["clique_id"] == 4026
    with pytest.raises(AnsibleFilterError, match="^gpufabric.rdma.nvlink_domains: nvidia-smi output of n1: no GPU"):
        F["nvlink_domains"]({"n1": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."})


def test_rail_report_from_registered_topo_outputs():
    topo = read("nvidia_smi_fabric", "topo_nv18x8_12nic_aihub0007.txt")
    swap = read("nvidia_smi_fabric", "topo_nv18x8_12nic_aihub0007_edited_swap.txt")
    report = F["rail_report"]({"aihub0007": registered(topo), "aihub0009": registered(topo), "node07": registered(swap)})
    assert report["nccl_ib_hca"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    assert [d["host"] for d in report["differing"]] == ["node07"]
    with pytest.raises(AnsibleFilterError, match="^gpufabric.rdma.rail_report: expects a mapping of host"):
        F["rail_report"]("aihub0007")


def test_the_conf_text_round_trips_through_slurms_hostlists():
    mapping = dict(("dgx%03d" % n, "leaf%d" % ((n - 1) // 8 + 1)) for n in range(1, 33))
    text = F["slurm_topology_conf"](mapping, leaf_spines=dict(("leaf%d" % n, "spine1") for n in range(1, 5)))
    listed = []
    for line in text.splitlines():
        if line.startswith("SwitchName=") and "Nodes=" in line:
            listed += slurm_jobs.expand_hostlist(line.split("Nodes=", 1)[1])
    assert listed == sorted(mapping)
    assert "SwitchName=spine1 Switches=leaf[1-4]\n" in text and "SwitchName=top" not in text


def test_node_labels_from_the_real_fabric_and_from_maps():
    """The X5 fabric's host -> leaf (ibnetdiscover with its node_name_map) as Kubernetes labels; NVLink domains as
    the block names topology.conf gives them; a leaf name that cannot be a label value is named."""
    parsed = F["parse_ibnetdiscover"](read("ibnetdiscover", "x5_psmn_qdr_hpc_toolset.txt"),
                                      node_name_map=read("ibnetdiscover", "x5_psmn_node_name_map.txt"))
    leaves = F["host_leaf_map"](parsed)
    labels = F["topology_node_labels"](leaves)
    assert len(labels) == 86
    assert labels["r815lin104"]["gpufabric.io/leaf"] == "ib-0002c902004827b0"
    assert labels["r815lin104"]["gpufabric.io/leaf"] == leaves["hosts"]["r815lin104"]["leaf"]
    blocks = F["topology_node_labels"](None, {"gpu01": "rack-a", "gpu02": "rack-a", "gpu03": "rack-b"})
    conf = F["slurm_topology_conf"]({"gpu01": "rack-a", "gpu02": "rack-a", "gpu03": "rack-b"}, plugin="block")
    assert blocks == {"gpu01": {"gpufabric.io/nvlink-domain": "block1"}, "gpu02": {"gpufabric.io/nvlink-domain": "block1"},
                      "gpu03": {"gpufabric.io/nvlink-domain": "block2"}}
    assert "BlockName=block2 Nodes=gpu03" in conf
    # no spines label: on this real fabric one leaf's spines joined run to 68 characters, past a label value's 63
    assert all(set(host_labels) == {"gpufabric.io/leaf"} for host_labels in labels.values())
    with pytest.raises(AnsibleFilterError, match="leaf of gpu01 'leaf 1' cannot be a Kubernetes label value"):
        F["topology_node_labels"]({"gpu01": "leaf 1"})
