"""Validation judges each run against what its hardware carries and, on one node, the path between its GPUs (issue
41, points 2 to 4): the real 4x H200 captures with NVLink peer-to-peer on and off (docs/benchmarks/2026-11-27-h200x4-p2p,
NCCL_DEBUG=INFO over INIT,P2P,SHM,NET,GRAPH,ENV) through nccl_tests_judge, as the nccl_tests role calls it."""

import os
import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.nccl_tests import (
    baseline_notes, bandwidth_svg, nccl_tests_judge, nccl_tests_summary)
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as gpu_parse
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import figures
from paths import ROOT

CAPTURES = os.path.join(ROOT, "docs", "benchmarks", "2026-11-27-h200x4-p2p")


def _read(name):
    with open(os.path.join(CAPTURES, name)) as handle:
        return handle.read()


def _record():
    """What discovery records of the node, from the capture's nvidia-smi -L and topo -m."""
    return {"gpu": {"gpus": [{"index": i, "name": "NVIDIA H200"} for i in range(4)], "compute_capabilities": ["9.0"],
                    "topology": gpu_parse.parse_nvidia_topo(_read("topo_m.txt"))},
            "rdma_devices": []}


def _run(name, mode):
    return {"label": "%s: all_reduce %s" % ("h200x4", name), "host": "h200x4", "mode": mode, "command": name,
            "rc": 0, "output": _read(name + ".txt"), "not_run": None}


PLATFORM = {"gpu": "NVIDIA H200", "gpus_by_mode": {"single": 4, "mpirun": 4},
            "interconnect_by_mode": {"single": "nvlink", "mpirun": "nvlink"}, "hardware": {"nodes": {"h200x4": _record()}}}
DEBUG = {"env": {}, "profile": None, "gdr_ready": None}


def _judge(runs, platform=None, **options):
    return nccl_tests_judge(runs, nccl_debug=DEBUG, baselines={"platform": platform or PLATFORM, "fraction": 0.9,
                                                               "local": options.pop("local", [])}, **options)


def test_peer_to_peer_off_fails_against_the_hardware_and_names_shm_and_its_cause_the_same_node_on_passes():
    judged = _judge([_run("single_p2p_on_r1", "single"), _run("single_p2p_off_r1", "single"),
                     _run("mpirun_p2p_on_r1", "mpirun"), _run("mpirun_p2p_off_r1", "mpirun")])
    on_single, off_single, on_mpirun, off_mpirun = judged
    for run in (on_single, on_mpirun):
        assert run["passed"] is True and run["failures"] == [], run["failures"]
        assert run["expected"]["busbw"] == 450.0 and 0.75 < run["expected"]["ratio"] < 0.8
        assert [r["check"] for r in run["nccl"]["reasons"] if r["ok"]] == ["intra_node"]
    for run in (off_single, off_mpirun):
        assert run["passed"] is False
        hardware, nccl = run["failures"][-1], [f for f in run["failures"] if f.startswith("NCCL: ")]
        assert re.match(r"busbw 2[0-9.]+ GB/s at 536870912 bytes is 5 % of what the hardware carries \(450 GB/s, bound by "
                        r"NVLink 4: 18 links x 25 GB/s a direction per GPU, through NVSwitch\); below 40 %$", hardware)
        assert nccl == ["NCCL: GPUs joined by NVLink talk through shared memory (SHM/direct/direct: 16 channel "
                        "connection(s)), not peer-to-peer: NCCL_P2P_DISABLE set by environment to 1"]
    text = nccl_tests_summary(judged)
    assert "h200x4: all_reduce single_p2p_off_r1: the hardware carries 450 GB/s (bound by NVLink 4" in text
    assert "= 5 %, below 40 %" in text and "= 77 %, at least 40 %" in text
    markdown = nccl_tests_summary(judged, "markdown")
    assert "## What the hardware carries" in markdown and "| 450 (5 %) | FAIL |" in markdown
    # a line on the chart at what the hardware carries, in each run's colour
    assert bandwidth_svg(judged).count("hardware carries 450</text>") == 4
    # the metrics carry the expectation beside the figure, with the same labels
    family = figures.nccl_tests_families(judged, "lab", 1.0)[-1]
    assert family["name"].endswith("expected_busbw_gigabytes_per_second")
    assert [value for labels, value in family["samples"]] == [450.0] and family["samples"][0][0]["size_bytes"] == 536870912


def test_the_site_s_recorded_baseline_wins_over_the_hardware():
    local = [{"kind": "nccl_busbw", "gpu": "H200", "gpus": 4, "interconnect": "nvlink", "collective": "all_reduce",
              "size": 536870912, "value": 23.0, "source": "recorded here"}]
    (run,) = _judge([_run("single_p2p_off_r1", "single")], local=local)
    assert not any("hardware" in f for f in run["failures"])
    assert "expected" not in run and "of the H200x4 NVLink baseline" in run["baseline"]


def test_a_run_without_hardware_facts_says_why_and_fails_nothing_for_it():
    platform = dict(PLATFORM, hardware={"nodes": {"h200x4": {"gpu": {"gpus": []}}}})
    (run,) = _judge([_run("single_p2p_on_r1", "single")], platform)
    assert run["passed"] is True and "nccl" not in run   # no hardware: nothing says the path must be P2P
    assert run["expected"] == {"busbw": None, "why": "h200x4: the run uses 4 GPUs and the node's record lists 0",
                               "source": "hardware", "fraction": None, "ratio": None, "failure": None}
    assert "no expectation from the hardware: h200x4: the run uses 4 GPUs" in nccl_tests_summary([run])


def test_the_share_can_be_set_or_turned_off_and_a_bad_one_is_named():
    platform = dict(PLATFORM, hardware=dict(PLATFORM["hardware"], fraction="0"))
    (run,) = nccl_tests_judge([_run("single_p2p_off_r1", "single")],
                              baselines={"platform": platform, "fraction": 0.9, "local": []})
    assert run["expected"]["ratio"] < 0.06 and not any("hardware" in f for f in run["failures"])
    with pytest.raises(AnsibleFilterError, match=r"platform.hardware.fraction must be a share from 0 to 1 .* got 40.0"):
        baseline_notes([], dict(PLATFORM, hardware={"nodes": {}, "fraction": 40}))
