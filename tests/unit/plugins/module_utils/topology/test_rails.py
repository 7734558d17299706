"""module_utils/topology/rails.py against nvidia-smi topo -m of an 8-GPU, 12-NIC node (aihub0007, and the same
capture edited, and aihub0008 pasted with glued cells) and of an 8x H200 node (sources: tests/unit/fixtures/README.md)."""


from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.rails import rail_report
from paths import fixture_text


read = fixture_text


TOPO_7 = read("nvidia_smi_fabric", "topo_nv18x8_12nic_aihub0007.txt")
TOPO_8_GLUED = read("nvidia_smi_fabric", "topo_nv18x8_12nic_aihub0008_glued_cells.txt")
TOPO_SWAP = read("nvidia_smi_fabric", "topo_nv18x8_12nic_aihub0007_edited_swap.txt")


def test_the_majority_rail_map_is_the_hca_list_the_operators_used():
    report = rail_report({"aihub0007": TOPO_7, "aihub0009": TOPO_7})
    assert report["majority"] == {"GPU0": "mlx5_0", "GPU1": "mlx5_1", "GPU2": "mlx5_2", "GPU3": "mlx5_5",
                                  "GPU4": "mlx5_6", "GPU5": "mlx5_7", "GPU6": "mlx5_8", "GPU7": "mlx5_11"}
    # the same list the cluster's operators set by hand (NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_5,... in the repository)
    assert report["nccl_ib_hca"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    assert report["consistent"] == ["aihub0007", "aihub0009"] and report["differing"] == []
    assert report["nccl_cross_nic"]["value"] is None and "give nic_leaves" in report["nccl_cross_nic"]["reason"]


def test_a_node_with_two_nics_swapped_is_named():
    report = rail_report({"aihub0007": TOPO_7, "aihub0009": TOPO_7, "node07": TOPO_SWAP})
    assert [d["host"] for d in report["differing"]] == ["node07"]
    assert report["differing"][0]["text"] == (
        "node07: GPU2 -> mlx5_5, majority mlx5_2; GPU3 -> mlx5_2, majority mlx5_5 "
        "(two NICs swapped: mlx5_2 and mlx5_5 swapped between GPU2 and GPU3)")
    assert report["differing"][0]["gpus"]["GPU3"] == {"nic": "mlx5_2", "majority": "mlx5_5"}
    assert report["nccl_ib_hca"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    assert report["nccl_cross_nic"] == {
        "value": None, "reason": "rails are not the same on every node (node07): keep NCCL's default NCCL_CROSS_NIC=2 until they are"}


def test_a_damaged_capture_and_a_node_without_nics_are_reported_not_guessed():
    report = rail_report({"aihub0007": TOPO_7, "aihub0008": TOPO_8_GLUED,
                          "h200": read("nvidia_smi", "topo_h200x8.txt")})
    assert report["no_nics"] == ["h200"]
    assert list(report["ambiguous"]["aihub0008"]) == ["GPU5"]      # "PIXNODE": two cells glued in the paste
    assert any(w.startswith("aihub0008: GPU5 has 10 NICs at the same distance") for w in report["warnings"])
    assert report["majority"]["GPU5"] == "mlx5_7"
    assert report["nccl_cross_nic"]["value"] is None and "aihub0008" in report["nccl_cross_nic"]["reason"]


def test_cross_nic_zero_only_when_every_leaf_carries_one_rail():
    rails = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]
    optimized = dict((h, dict((nic, "su1-rail%d" % i) for i, nic in enumerate(rails))) for h in ("a", "b"))
    report = rail_report({"a": TOPO_7, "b": TOPO_7}, nic_leaves=optimized)
    assert report["nccl_cross_nic"]["value"] == 0
    assert "rail-optimized" in report["nccl_cross_nic"]["reason"]
    one_leaf = dict((h, dict((nic, "tor1") for nic in rails)) for h in ("a", "b"))
    report = rail_report({"a": TOPO_7, "b": TOPO_7}, nic_leaves=one_leaf)
    assert report["nccl_cross_nic"]["value"] is None
    assert report["nccl_cross_nic"]["reason"].startswith("leaf tor1 carries rails 0, 1, 2, 3, 4, 5, 6, 7")
