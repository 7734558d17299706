"""parse_nccl_debug on real logs behind Ray's and vLLM's labels, and on an NCCL 2.27 log cut between a port's line and
its virtual device (issue 52, points 4 and 5). Sources in tests/unit/fixtures/README.md."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug


def _reasons(verdict, check):
    return [r for r in verdict["reasons"] if r["check"] == check]


def test_a_port_whose_virtual_device_line_was_cut_off_is_still_a_device_slurmv4(read_fixture):
    """Point 4: NCCL 2.27.5 printed the per-port lines of mlx5_0, mlx5_2 and mlx5_5 on one host but the log ends
    before mlx5_5's 'Made virtual device' line; ib_devices dropped mlx5_5 although ib_physical_devices has it. It is
    numbered after the virtual device before it (mlx5_2 is [2], so mlx5_5 is [3], as NCCL_IB_HCA's order says)."""
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", "per_port_cut_before_virtual_2.27.5_slurmv4.txt"))
    assert sorted(p["device"] for p in result["ib_physical_devices"]) == ["mlx5_0", "mlx5_2", "mlx5_5"]
    assert [(d["index"], d["name"], d["link_type"], d["host"]) for d in result["ib_devices"]] == [
        (0, "mlx5_0:1", "RoCE", "tpgds-aihub0007"), (2, "mlx5_2:1", "RoCE", "tpgds-aihub0007"),
        (3, "mlx5_5:1", "RoCE", "tpgds-aihub0007")]
    assert result["ib_hca"] == "mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"


def test_a_port_numbered_by_a_device_the_log_names_is_left_out():
    """A number already taken by a virtual device of another name (a merged NIC) is not guessed for a second port."""
    log = ("h:1:1 [0] NCCL INFO NET/IB: [0] mlx5_0:uverbs0:1/IB provider=Mlx5 speed=400000 ar=0\n"
           "h:1:1 [0] NCCL INFO NET/IB: [1] mlx5_1:uverbs1:1/IB provider=Mlx5 speed=400000 ar=0\n"
           "h:1:1 [0] NCCL INFO NET/IB : Made virtual device [0] name=mlx5_0+mlx5_1 speed=800000 ndevs=2\n")
    result = nccl_debug.parse_nccl_debug(log)
    assert result["ib_devices"] == [] and len(result["ib_physical_devices"]) == 2


def test_rays_deduplication_note_hid_gpudirect_rdma_llmk8s(read_fixture):
    """Point 5: vLLM on Ray; Ray's ' [repeated 14x across cluster]' after 'via NET/IB/0/GDRDMA' made the flags
    'GDRDMA [repeated ...]' (GPUDirect RDMA reported off), and after 'set by environment to SYS' the value."""
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", "ray_dedup_vllm_pp2_llmk8s.txt"))
    assert result["gdr"] is True and result["net"] == "IB"
    assert [c["transport"] for c in result["connections"] if c["kind"] == "NET"] == ["NET/IB/0/GDRDMA"] * 2
    assert result["env"] == {"NCCL_NET_GDR_LEVEL": "SYS"}
    assert result["transport_counts"] == {"P2P/IPC": 1, "NET/IB": 2}
    assert (result["nccl_version"], result["cuda_version"], result["hosts"]) == ("2.21.5", "12.4", ["deepseek-v2-5-0-1"])
    verdict = nccl_path.judge_nccl_debug(result, {"rdma": True, "gdr": True})
    assert verdict["passed"] is True
    # rank 0 of the 2-rank communicator is never placed in this excerpt: its connections are not called one process
    assert {c["intra_process"] for c in result["connections"] if c["kind"] == "NET"} == {None}


def test_dma_buf_offered_but_not_used_is_no_gpudirect_rdma_dgxspark(read_fixture):
    """Point 5, a prefixed vLLM log that says 'GPU Direct RDMA (DMABUF) enabled' (a DGX Spark pair,
    '(EngineCore_DP0 pid=..) (RayWorkerWrapper pid=.., ip=..)' labels): the plugin offered DMA-BUF, but NCCL's own
    connection lines carry no /GDRDMA, so GPUDirect RDMA stays off; the verdict says both, and names the HCAs (NCCL
    prints these lines without the closing quote)."""
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", "dmabuf_offered_no_gdrdma_vllm_ray_dgxspark1.txt"))
    assert result["gdr"] is False and result["hosts"] == ["spark-3995"]
    assert [(e["hca_index"], e["hca"], e["dmabuf"], e["checked_by_plugin"]) for e in result["gdr_hcas"]] == [
        (1, "roceP2p1s0f1", True, True), (0, "rocep1s0f1", True, True)]
    (gdr,) = _reasons(nccl_path.judge_nccl_debug(result, {"rdma": True, "gdr": True}), "gdr")
    assert gdr["ok"] is False
    assert gdr["reason"] == (
        "NCCL ran without GPUDirect RDMA although peermem/DMA-BUF is expected; the net plugin offered it through "
        "DMA-BUF for roceP2p1s0f1, rocep1s0f1, but no NET connection uses it (no /GDRDMA): NCCL's own check turned it "
        "down (NCCL_NET_GDR_LEVEL, the GPU-NIC distance, or a GPU without it)")
    assert gdr["evidence"][0].endswith("[send] via NET/IBext_v10/1")
    assert "(DMABUF) enabled for HCA 1" in gdr["evidence"][1]


def test_a_ray_log_that_says_gdr_is_disabled_reads_false_ray40850(read_fixture):
    """Point 5: '(RayTrainWorker pid=83500)' lines with 'NET/Socket : GPU Direct RDMA Disabled for HCA 1 'virbr0''
    read None (only IB lines were counted); NCCL said disabled for every interface: False. Sockets: not judged."""
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", "ray_socket_gdr_disabled_ray40850.txt"))
    assert result["gdr"] is False and result["hosts"] == ["localhost"]
    assert [(e["plugin"], e["hca_index"], e["hca"]) for e in result["gdr_hcas"]] == [
        ("Socket", 1, "virbr0"), ("Socket", 2, "br-f630fcb1853c")]
    assert _reasons(nccl_path.judge_nccl_debug(result, {"gdr": True}), "gdr") == []


@pytest.mark.parametrize("lines, gdr", [
    # the peer-memory module is missing but DMA-BUF registers: the HCA has GPUDirect RDMA
    (["NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)", "NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0"],
     True),
    # NCCL's own word after the plugin's offer decides (a DGX Spark: DMA-BUF offered, the topology says no)
    (["NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'rocep1s0f0'",
      "NET/NCCL RDMA Plugin v10 : GPU Direct RDMA Disabled for HCA 0 'rocep1s0f0'"], False),
    (["NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)"], False),
    # the lines of the network NCCL used count, not those of another it tried
    (["Using network IB", "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
      "NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'"], True),
])
def test_gpudirect_rdma_per_hca_from_its_lines(lines, gdr):
    result = nccl_debug.parse_nccl_debug("".join("h:1:2 [0] NCCL INFO %s\n" % line for line in lines))
    assert result["gdr"] is gdr


def test_torchruns_tee_labels_are_not_part_of_the_host_name_tp4dp2(read_fixture):
    """Point 5: torchrun --tee puts '[default<local rank>]:' before every line of a worker; the labels ended up in the
    host names, so one pod of 4 ranks read as 4 hosts. A real TP=4 x DP=2 log on two p6-b200 pods (EFA, aws-ofi-nccl)."""
    result = nccl_debug.parse_nccl_debug(read_fixture("nccl_debug", "torchrun_tee_labels_efa_b200_tp4dp2.txt"))
    assert result["hosts"] == ["tp4-dp2-inference-pods-0"]
    assert (result["nccl_version"], result["nodes"], result["ranks"]) == ("2.27.3", 2, 8)
    assert {c["host"] for c in result["connections"]} == {"tp4-dp2-inference-pods-0"}
    assert result["dmabuf_gpus"] == [0, 1, 2, 3] and result["external_net_plugin"] == "Libfabric (v10)"


@pytest.mark.parametrize("label", ["[default{rank}]:", "[rank{rank}]:", "[default{rank}]:[rank{rank}]: ", "0: [default{rank}]:"])
def test_a_multi_hca_log_behind_torchruns_labels_reads_as_without_them_slurmv4(read_fixture, label):
    """The real 8-HCA IB/RoCE log of two SGLang nodes (NCCL 2.27), each NCCL line behind the label torchrun or PyTorch
    puts before a worker's line (its local rank, the GPU in brackets): the same hosts, HCAs and connections."""
    import re
    text = read_fixture("nccl_debug", "ib_roce_gdrdma_2node_slurmv4.txt")
    labelled = "\n".join(label.format(rank=m.group(1)) + line if m else line
                         for line, m in ((line, re.search(r" \[(\d+)\] NCCL ", line)) for line in text.split("\n")))
    assert labelled.count("]:") > 300
    plain, seen = nccl_debug.parse_nccl_debug(text), nccl_debug.parse_nccl_debug(labelled)
    assert seen["hosts"] == plain["hosts"] == ["tpgds-aihub0008"]
    assert seen["net_devices"] == plain["net_devices"] and len(plain["net_devices"]) == 8
    assert [(d["name"], d["link_type"], d["host"]) for d in seen["ib_devices"]] == [
        (d["name"], d["link_type"], d["host"]) for d in plain["ib_devices"]]
    assert seen["connections"] == plain["connections"] and seen["gdr"] is plain["gdr"] is True
