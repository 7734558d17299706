"""baseline_notes on a real 2x H200 mpirun run (docs/benchmarks/2026-11-22-h200x2-validate/hand_mpirun.txt)."""
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.nccl_tests import FilterModule

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
F = FilterModule().filters()
PLATFORM = {"gpu": "NVIDIA H200", "gpus_by_mode": {"mpirun": "2"}, "interconnect_by_mode": {"mpirun": "nvlink"}}


def judged():
    with open(os.path.join(ROOT, "docs", "benchmarks", "2026-11-22-h200x2-validate", "hand_mpirun.txt")) as handle:
        text = handle.read()
    return F["nccl_tests_judge"]([{"label": "mpirun", "host": "vm", "mode": "mpirun", "command": "mpirun", "rc": 0,
                                   "output": text}])


def test_a_real_run_reads_as_a_share_of_its_baseline():
    (run,) = F["baseline_notes"](judged(), PLATFORM)["runs"]
    assert run["passed"] is True
    assert run["baseline"].startswith("345 GB/s = 100 % of the H200x2 NVLink baseline")


def test_without_a_user_threshold_a_run_far_below_its_baseline_fails():
    strict = dict(PLATFORM, gpus_by_mode={"mpirun": 2})
    local = [{"kind": "nccl_busbw", "gpu": "H200", "gpus": 2, "interconnect": "nvlink", "collective": "all_reduce",
              "size": 4 << 30, "value": 500.0}]
    (run,) = F["baseline_notes"](judged(), strict, 0.9, local)["runs"]
    assert run["passed"] is False
    assert run["failures"][-1] == ("busbw 345.2 GB/s at 4294967296 bytes is below 90 % of the H200x2 NVLink baseline "
                                   "(500.0 GB/s)")
    (informed,) = F["baseline_notes"](judged(), strict, 0.9, local, True)["runs"]
    assert informed["passed"] is True  # the user's threshold decides; the baseline only informs


def test_an_unknown_platform_is_noted_and_recorded_on_request():
    result = F["baseline_notes"](judged(), {"gpu": "NVIDIA B200", "gpus": 2, "interconnect": "nvlink"})
    assert "no nccl_busbw all_reduce baseline for NVIDIA B200 x2 nvlink" in result["runs"][0]["baseline"]
    assert result["record"] == [{"kind": "nccl_busbw", "gpu": "NVIDIA B200", "gpus": 2, "interconnect": "nvlink",
                                 "collective": "all_reduce", "size": 4294967296, "value": 345.19,
                                 "source": "recorded here: mpirun"}]


def test_garbage_is_refused_by_name():
    with pytest.raises(AnsibleFilterError, match="baseline_notes"):
        F["baseline_notes"]("not runs", PLATFORM)
