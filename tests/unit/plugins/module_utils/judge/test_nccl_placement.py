"""Where a pod's GPUs and NICs landed, from its NCCL log (judge/nccl_path.placement): an aligned pod runs GPUDirect
RDMA over the NICs of its GPUs' rails; a misaligned one runs without it although it is set up (NCCL's own distance
check turns it down for a NIC off the GPU's rail), over a NIC outside the rails, or with fewer channels (dranet's GB300
example: 8 channels, about 56 GB/s NUMA-local; 2 channels, about 25 GB/s cross-NUMA). The validation report says which."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu, nccl_debug

# The rails of tpgds-aihub0007 (its real topo -m, the same cluster as the log below): the NIC on each GPU's switch.
AIHUB_RAILS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]


def _log(read_fixture, name):
    return nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", name))


def _reason(verdict, check):
    (found,) = [r for r in verdict["reasons"] if r["check"] == check]
    return found


def test_the_rails_are_the_nics_on_each_gpus_switch(read_fixture):
    topology = gpu.parse_nvidia_topo(read_fixture("nvidia_smi_fabric", "topo_nv18x8_12nic_aihub0007.txt"))
    assert sorted(n for nics in topology["gpu_nics"].values() for n in nics) == sorted(AIHUB_RAILS)


def test_an_aligned_pod_runs_gpudirect_rdma_over_the_nics_of_its_rails(read_fixture):
    """2 nodes x 8 GPUs on the aihub cluster, NCCL_IB_HCA the eight NICs on the GPUs' own switches: every NET
    connection /GDRDMA."""
    parsed = _log(read_fixture, "ib_roce_gdrdma_2node_slurmv4.txt")
    found = nccl_path.placement(parsed, {"rails": AIHUB_RAILS})
    assert found["placement"] == "aligned"
    assert found["reason"] == ("GPUs and NICs aligned: every NET connection uses GPUDirect RDMA over mlx5_0, mlx5_1, "
                               "mlx5_2, mlx5_5, mlx5_6, mlx5_7, mlx5_8, mlx5_11 (the NICs of the pod's rails), "
                               "16 coll channels")
    assert found["evidence"] == ["tpgds-aihub0008:207013:207013 [6] NCCL INFO Channel 06/0 : 7[7] -> 14[6] [receive] "
                                 "via NET/IB/6/GDRDMA"]
    verdict = nccl_path.judge_nccl_debug(parsed, {"rdma": True, "gdr": True, "rails": AIHUB_RAILS})
    assert verdict["passed"] is True and _reason(verdict, "placement")["ok"] is True
    entry = nccl_path.report_entry(parsed, {"rails": AIHUB_RAILS})
    assert entry["placement"] == "aligned"
    assert nccl_path.used_text(entry).endswith("GPUDirect RDMA on, 16 coll channels, GPUs and NICs aligned")
    assert entry["expected_text"].endswith("each GPU with the NICs of its rail (%s)" % ", ".join(AIHUB_RAILS))


def test_a_misaligned_pod_runs_without_the_gpudirect_rdma_it_was_offered(read_fixture):
    """Two DGX Spark hosts: the plugin offered DMA-BUF GPUDirect RDMA for both HCAs, and NCCL's distance check
    turned it down - every NET connection without /GDRDMA, as for a pod whose NIC is off its GPU's rail."""
    parsed = _log(read_fixture, "dmabuf_offered_no_gdrdma_vllm_ray_dgxspark1.txt")
    found = nccl_path.placement(parsed)
    assert found["placement"] == "misaligned"
    assert found["reason"] == ("GPUs and NICs misaligned: 2 of 2 NET connections without GPUDirect RDMA although it is "
                               "offered for the HCAs: NCCL's own distance check turned it down, as for a NIC that is "
                               "not on the GPU's rail")
    assert found["evidence"][0].endswith("[send] via NET/IBext_v10/1")
    assert "GPU Direct RDMA (DMABUF) enabled for HCA 1 'roceP2p1s0f1" in found["evidence"][1]
    # a note without a claim to hold the run to; a failure where the claim named the rails
    assert _reason(nccl_path.judge_nccl_debug(parsed, {"rdma": True}), "placement")["ok"] is None
    verdict = nccl_path.judge_nccl_debug(parsed, {"rdma": True, "rails": ["roceP2p1s0f1", "rocep1s0f1"]})
    assert verdict["passed"] is False and _reason(verdict, "placement")["ok"] is False
    entry = nccl_path.report_entry(parsed, {"rdma": True})
    assert nccl_path.used_text(entry).endswith("GPUDirect RDMA off, GPUs and NICs misaligned")


def test_a_nic_outside_the_rails_or_fewer_channels_is_a_misaligned_pod(read_fixture):
    parsed = _log(read_fixture, "ib_roce_gdrdma_2node_slurmv4.txt")
    found = nccl_path.placement(parsed, {"rails": AIHUB_RAILS[:4]})
    assert found["placement"] == "misaligned"
    assert found["reason"] == ("GPUs and NICs misaligned: NCCL used mlx5_6, mlx5_7, mlx5_8, mlx5_11, outside the rails "
                               "of the pod's GPUs (mlx5_0, mlx5_1, mlx5_2, mlx5_5), 16 coll channels")
    found = nccl_path.placement(parsed, {"channels": 32})
    assert (found["placement"], found["reason"]) == (
        "misaligned", "GPUs and NICs misaligned: 16 coll channels where an aligned pod opens 32")
    assert nccl_path.placement(parsed, {"channels": 16})["placement"] == "aligned"


@pytest.mark.parametrize("name, reason", [
    ("gdr_disabled_roce_nccl1537.txt", "no RDMA connection between nodes in this log"),
    ("gdr_disabled_no_module_2node_nccl899.txt", "GPUDirect RDMA is not set up (no peermem, no DMA-BUF offered): the "
                                                 "log cannot tell an aligned pod from a misaligned one"),
    ("socket_fallback_efa_4node_trainingoneks.txt", "no RDMA connection between nodes in this log"),
])
def test_a_log_that_cannot_tell_says_so(read_fixture, name, reason):
    parsed = _log(read_fixture, name)
    found = nccl_path.placement(parsed, {"rails": ["mlx5_0"]})
    assert found["placement"] is None and found["reason"].startswith(reason)
    assert nccl_path.report_entry(parsed, {})["placement"] is None
    assert "GPUs and NICs" not in nccl_path.used_text(nccl_path.report_entry(parsed, {}))


@pytest.mark.parametrize("expected, message", [
    ({"rails": "mlx5_0"}, "expected rails must be the names of the NICs on the pod's GPUs' rails"),
    ({"rails": [""]}, "expected rails must be the names"),
    ({"channels": 0}, "expected channels must be the coll channels an aligned run opens"),
    ({"channels": True}, "expected channels must be"),
])
def test_what_the_claim_promised_is_checked(read_fixture, expected, message):
    with pytest.raises(nccl_debug.NcclDebugError, match=message):
        nccl_path.judge_nccl_debug(_log(read_fixture, "ib_roce_gdrdma_2node_slurmv4.txt"), expected)
