"""What the hardware can carry (issue 41, point 1), derived from what discovery records, on real captures:
8x H200 NVSwitch (tests/unit/fixtures: nvidia-smi -q -x, topo -m, all_reduce_perf -g 8), 4x H200 with NVLink
peer-to-peer on and off (docs/benchmarks/2026-11-27-h200x4-p2p) and the 2x H200 record discovery wrote
(docs/benchmarks/2026-11-22-h200x2-discover/facts.json, a record of an earlier release: no compute capability)."""

import copy
import json
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import ceiling
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as gpu_parse
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
H200X4 = os.path.join(ROOT, "docs", "benchmarks", "2026-11-27-h200x4-p2p")
H200X2 = os.path.join(ROOT, "docs", "benchmarks", "2026-11-22-h200x2-discover", "facts.json")


def _read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


def _h200x8():
    facts = gpu_parse.parse_nvidia_smi_xml(_read(FIXTURES, "nvidia_smi", "q_h200x8.xml"))
    facts.update(topology=gpu_parse.parse_nvidia_topo(_read(FIXTURES, "nvidia_smi", "topo_h200x8.txt")), compute_capabilities=["9.0"])
    return facts


def _h200x4():
    """The 4x capture printed nvidia-smi -q as text: the GPUs by name, the matrix from topo -m."""
    names = [line.split(":")[1].split("(")[0].strip() for line in _read(H200X4, "gpus.txt").splitlines() if line.startswith("GPU ")]
    return {"gpus": [{"index": i, "name": n} for i, n in enumerate(names)],
            "topology": gpu_parse.parse_nvidia_topo(_read(H200X4, "topo_m.txt"))}


def _figure(*parts):
    return nccl_tests.at_largest_size(nccl_tests.parse(_read(*parts)))


def test_8x_h200_nvswitch_carries_18_links_a_gpu_and_its_real_run_reaches_three_quarters():
    found = ceiling.node_ceiling(_h200x8(), 8)
    assert found == {"busbw": 450.0, "link": "nvlink",
                     "bound": "NVLink 4: 18 links x 25 GB/s a direction per GPU, through NVSwitch"}
    size, busbw = _figure(FIXTURES, "nccl_tests", "all_reduce_g8_h200x8.txt")
    failure, note, ratio = ceiling.judge(size, busbw, found)
    assert (size, failure, note) == (4 << 30, None, None) and round(ratio, 2) == 0.81


@pytest.mark.parametrize("run", ["single_p2p_off_r1", "single_p2p_off_r2", "mpirun_p2p_off_r1", "mpirun_p2p_off_r2"])
def test_4x_h200_with_peer_to_peer_disabled_fails_against_the_hardware(run):
    found = ceiling.ceiling("all_reduce", [{"host": "h200x4", "gpu": _h200x4()}], 4)
    assert found["busbw"] == 450.0 and "through NVSwitch" in found["bound"]
    size, busbw = _figure(H200X4, run + ".txt")
    failure, note, ratio = ceiling.judge(size, busbw, found)
    assert ratio < 0.06 and note is None
    assert failure.startswith("busbw %g GB/s at 536870912 bytes is 5 %% of what the hardware carries (450 GB/s, "
                              "bound by NVLink 4: 18 links" % busbw) and failure.endswith("below 40 %")


@pytest.mark.parametrize("run", ["single_p2p_on_r1", "single_p2p_on_r2", "mpirun_p2p_on_r1", "mpirun_p2p_on_r2"])
def test_4x_h200_with_peer_to_peer_passes(run):
    found = ceiling.ceiling("all_reduce", [{"host": "h200x4", "gpu": _h200x4()}], 4)
    failure, note, ratio = ceiling.judge(*_figure(H200X4, run + ".txt"), expected=found)
    assert failure is None and note is None and 0.75 < ratio < 0.8


def test_a_record_without_compute_capability_takes_the_generation_from_the_gpu_model():
    with open(H200X2) as handle:
        record = json.load(handle)
    assert "compute_capabilities" not in record["gpu"]
    assert ceiling.node_ceiling(record["gpu"], 2)["busbw"] == 450.0
    assert ceiling.node_ceiling(record["gpu"], 1) == {"busbw": None, "why": "one GPU a node: no link inside the node is crossed"}


def test_a_small_largest_size_is_not_judged_against_the_hardware():
    failure, note, ratio = ceiling.judge(8 << 20, 175.41, {"busbw": 450.0, "bound": "NVLink"})
    assert failure is None and "below 64 MiB" in note and round(ratio, 2) == 0.39


def _without_nvlink(facts):
    facts = copy.deepcopy(facts)
    for row in facts["topology"]["matrix"].values():
        for column in row:
            if row[column].startswith("NV"):
                row[column] = "SYS"
    return facts


def test_gpus_without_nvlink_are_bound_by_their_pcie_link():
    found = ceiling.node_ceiling(_without_nvlink(_h200x8()), 8)
    assert found == {"busbw": 63.0, "link": "pcie", "bound": "PCIe Gen5 x16: 63.0 GB/s a direction per GPU"}


def test_nvlink_pairs_that_do_not_join_four_gpus_into_a_ring_leave_pcie_the_bound():
    facts = _without_nvlink(_h200x8())   # H100 NVL: bridged pairs, the pairs joined through the host
    for a, b in (("GPU0", "GPU1"), ("GPU2", "GPU3")):
        facts["topology"]["matrix"][a][b] = facts["topology"]["matrix"][b][a] = "NV12"
    assert ceiling.node_ceiling(facts, 2)["bound"] == "NVLink 4: 12 links x 25 GB/s a direction per GPU"
    four = ceiling.node_ceiling(facts, 4)
    assert four["link"] == "pcie" and four["bound"].endswith("NVLink does not join the run's GPUs into one ring")


def test_a_direct_mesh_counts_the_links_to_the_run_s_other_gpus():
    facts = _h200x8()   # 4 A100 joined pairwise by 4 NVLinks each (HGX A100 4-GPU)
    facts["compute_capabilities"] = ["8.0"]
    for row in facts["topology"]["matrix"].values():
        for column in row:
            if row[column].startswith("NV"):
                row[column] = "NV4"
    assert ceiling.node_ceiling(facts, 4)["busbw"] == 300.0
    assert ceiling.node_ceiling(facts, 2)["busbw"] == 100.0


def _ports(*rates, state="ACTIVE"):
    return [{"name": "mlx5_%d" % i, "ports": [{"port": 1, "state": state, "rate_gbps": rate}]} for i, rate in enumerate(rates)]


def test_across_nodes_the_rdma_ports_bound_the_ring_and_ib_hca_picks_them():
    nodes = [{"host": h, "gpu": _h200x8(), "rdma_devices": _ports(*[400] * 8)} for h in ("a", "b")]
    assert ceiling.ceiling("all_gather", nodes, 8) == {
        "busbw": 400.0, "link": "network", "bound": "8 RDMA port(s) of a, 400 GB/s a direction together"}
    # all_reduce may take NCCL's tree, which carries each byte across once: 2(n-1)/n times the ports, NVLink below
    assert ceiling.ceiling("all_reduce", nodes, 8)["link"] == "nvlink"
    assert ceiling.ceiling("all_gather", nodes, 8, ib_hca="=mlx5_0,mlx5_1")["busbw"] == 100.0
    assert ceiling.ceiling("all_reduce", nodes, 8, ib_hca="=mlx5_0,mlx5_1") == {
        "busbw": 187.5, "link": "network",
        "bound": "2 RDMA port(s) of a, 100 GB/s a direction together, times 2(n-1)/n = 1.88 for NCCL's tree"}
    assert ceiling.ceiling("alltoall", nodes, 8)["busbw"] == 93.8
    assert ceiling.ceiling("sendrecv", nodes, 8)["busbw"] == 50.0
    one_port = [{"host": h, "gpu": _h200x8(), "rdma_devices": _ports(100)} for h in ("a", "b")]
    assert ceiling.ceiling("all_gather", one_port, 1)["busbw"] == 12.5


def test_a_ceiling_that_cannot_be_known_says_why_and_judges_nothing():
    down = [{"host": h, "gpu": _h200x8(), "rdma_devices": _ports(400, state="DOWN")} for h in ("a", "b")]
    found = ceiling.ceiling("all_reduce", down, 8)
    assert found == {"busbw": None, "why": "a: no active RDMA port with a rate: what the network carries is unknown"}
    assert ceiling.judge(1 << 30, 10.0, found) == (None, None, None)
    assert ceiling.ceiling("hypercube", down, 8)["why"] == "no ceiling is derived for hypercube"
    unknown = {"gpus": [{"index": 0, "name": "Tesla T4"}, {"index": 1, "name": "Tesla T4"}],
               "topology": {"matrix": {"GPU0": {"GPU1": "NV2"}, "GPU1": {"GPU0": "NV2"}}}}
    assert ceiling.node_ceiling(unknown, 2)["why"] == "the NVLink rate of compute capability unknown is not known"
    assert ceiling.judge(1 << 30, float("nan"), {"busbw": 450.0, "bound": "x"}) == (None, None, None)
    with pytest.raises(ceiling.CeilingError, match="got '8'"):
        ceiling.node_ceiling(unknown, "8")


def test_each_bounding_link_has_its_own_share():
    """PCIe between GPUs that cannot reach each other peer-to-peer copies through host memory: a healthy 2x RTX 2080
    Ti (Gen3 x16, P2P not supported) gives 4.00 GB/s at 1 GiB (Anthony-Hoo/Anthony-Hoo.github.io,
    posts/AutoDL_Multi-GPU_Interconnection_Test.md), a quarter of its link; the same share of NVLink fails."""
    pcie = {"busbw": 15.8, "link": "pcie", "bound": "PCIe Gen3 x16"}
    assert ceiling.judge(1 << 30, 4.00, pcie)[0] is None
    assert "below 40 %" in ceiling.judge(1 << 30, 0.25 * 450, {"busbw": 450.0, "link": "nvlink", "bound": "NVLink"})[0]
    assert ceiling.judge(1 << 30, 1.0, pcie, fraction=0)[0] is None
    assert "below 50 %" in ceiling.judge(1 << 30, 4.00, pcie, fraction=0.5)[0]


def test_the_filter_takes_records_by_host_or_one_record_and_gives_the_floor():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.gpufabric.rdma.plugins.filter.nccl_tests import busbw_ceiling

    record = {"hostname": "h200x8", "gpu": dict(_h200x8(), count=8), "rdma_devices": _ports(*[400] * 8)}
    assert busbw_ceiling(record) == {"busbw": 450.0, "link": "nvlink", "fraction": 0.4, "floor": 180.0,
                                     "bound": "NVLink 4: 18 links x 25 GB/s a direction per GPU, through NVSwitch"}
    two = busbw_ceiling({"a": record, "b": record}, "all_gather", fraction=0.5)
    assert (two["busbw"], two["link"], two["floor"]) == (400.0, "network", 200.0)
    assert busbw_ceiling({"a": record, "b": dict(record, rdma_devices=[])}, "all_gather")["floor"] is None
    with pytest.raises(AnsibleFilterError, match="gpus_per_node must be a whole number of 1 or more .* got 'eight'"):
        busbw_ceiling(record, gpus_per_node="eight")
    with pytest.raises(AnsibleFilterError, match="fraction must be a share from 0 to 1, got 4"):
        busbw_ceiling(record, fraction=4)


def test_the_tuner_calls_a_node_far_below_its_hardware_broken_not_untuned():
    """The tuner's sanity check on the real 4x H200 runs: NCCL's defaults with peer-to-peer reach 77 % of what the
    node's NVLink carries; with it disabled 5 %, and tune.md says no setting found there is worth keeping."""
    from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import tuning

    expected = {"all_reduce": ceiling.floor(ceiling.ceiling("all_reduce", [{"host": "n", "gpu": _h200x4()}], 4))}
    for capture, words in (("single_p2p_on_r1", "the defaults reach 77 % of 450 GB/s (NVLink 4"),
                           ("single_p2p_off_r1", "**BROKEN, not untuned**: the defaults' median busbw 22.69 GB/s")):
        runs = [{"collective": "all_reduce", "candidate": tuning.DEFAULT, "repeat": r, "rc": 0,
                 "stdout": _read(H200X4, capture + ".txt")} for r in range(2)]
        result = tuning.report({"runs": runs}, expected=expected)
        assert words in tuning.markdown(result), tuning.markdown(result)
        assert (result["hardware"]["all_reduce"]["failure"] is None) == capture.startswith("single_p2p_on")
    assert tuning.report({"runs": []})["hardware"] == {}
