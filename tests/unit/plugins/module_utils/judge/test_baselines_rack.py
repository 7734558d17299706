"""A rack's reference figures (judge/baselines.py): CoreWeave's all_reduce_perf over a full GB200 NVL72 rack (72 ranks,
NCCL 2.26.2, NCCL_MNNVL_ENABLE=1; coreweave/nccl-tests README.md @cb865533, the tables in tests/unit/fixtures/
nccl_tests/) is the 72-GPU baseline, and the NVLS floors per SKU (NVIDIA's aicr validator: GB300 630 GB/s, GB200 500
GB/s) judge any multi-node domain from two trays up."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import baselines, validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests

GIB = 1 << 30


def _judged(read_fixture, name):
    result = nccl_tests.parse(read_fixture("nccl_tests", name))
    result["collective"] = "all_reduce"      # the README names the binary (all_reduce_perf); its table does not
    return {"label": name, "mode": "mpirun", "result": result, "passed": True, "failures": []}


def test_a_full_gb200_rack_is_its_own_baseline(read_fixture):
    run = _judged(read_fixture, "all_reduce_gb200_nvl72_72gpu_coreweave.txt")
    assert nccl_tests.at_largest_size(run["result"]) == (8 * GIB, 834.57)
    platform = {"gpu": "NVIDIA GB200", "gpus": 72, "interconnect": "nvlink"}
    [judged] = validation.baseline_notes([run], platform)["runs"]
    assert judged["baseline"].startswith("835 GB/s = 99 % of the GB200x72 NVLink baseline (839 GB/s: GB200 NVL72")
    assert judged["passed"] and not judged["failures"]


def test_the_nvls_floor_judges_a_domain_of_any_size_from_two_trays():
    floor = baselines.lookup("nccl_busbw", "NVIDIA GB300", 16, "nvlink", collective="all_reduce", size=8 * GIB)
    assert (floor["value"], floor["floor"]) == (630.0, True) and "NVIDIA/aicr#2641" in floor["source"]
    assert baselines.floor(floor, 0.9) == 630.0          # a floor is the least itself, not a share of it
    assert baselines.describe(843.06, floor).startswith("843 GB/s = 134 % of the GB300 NVLS all_reduce floor (630 GB/s")
    gb200 = baselines.lookup("nccl_busbw", "NVIDIA GB200", 8, "nvlink", collective="all_reduce", size=4 * GIB)
    assert gb200["value"] == 500.0 and "NVIDIA/aicr#2784" in gb200["source"]
    # one tray is no multi-node domain, sizes below 4 GiB are not where the floor was set, the network is not NVLink
    assert baselines.lookup("nccl_busbw", "NVIDIA GB200", 4, "nvlink", collective="all_reduce", size=4 * GIB) is None
    assert baselines.lookup("nccl_busbw", "NVIDIA GB200", 8, "nvlink", collective="all_reduce", size=GIB) is None
    assert baselines.lookup("nccl_busbw", "NVIDIA GB200", 8, "infiniband", collective="all_reduce", size=4 * GIB) is None
    # a measured baseline of the same keys wins over the floor
    assert baselines.lookup("nccl_busbw", "NVIDIA GB200", 72, "nvlink", collective="all_reduce", size=4 * GIB)["value"] == 839.16


def test_a_run_below_the_floor_fails_naming_it(read_fixture):
    # the 20-rack run's 405.7 GB/s at 16 GiB (1440 ranks, most traffic over InfiniBand between racks) were it one
    # domain's: below the GB200 floor
    run = _judged(read_fixture, "all_reduce_gb200_20rack_1440gpu_coreweave.txt")
    [judged] = validation.baseline_notes([run], {"gpu": "NVIDIA GB200", "gpus": 1440, "interconnect": "nvlink"})["runs"]
    assert not judged["passed"]
    assert judged["failures"] == [
        "busbw 405.7 GB/s at 17179869184 bytes is below the GB200 NVLS all_reduce floor (500.0 GB/s: GB200 NVLS floor "
        "of NVIDIA's aicr recipes gb200-eks/oke-training (>= 500, provisional; NVIDIA/aicr#2784))"]
    # the same run between two racks' domains over the network is set against no NVLink floor
    [apart] = validation.baseline_notes([run], {"gpu": "NVIDIA GB200", "gpus": 1440, "interconnect": "infiniband"})["runs"]
    assert apart["passed"] and apart["baseline"].startswith("no nccl_busbw all_reduce baseline")


@pytest.mark.parametrize("name, ranks, largest", [
    ("all_reduce_gb200_nvl72_72gpu_coreweave.txt", 71, (8 * GIB, 834.57)),
    ("all_reduce_gb200_2rack_144gpu_coreweave.txt", 143, (16 * GIB, 810.41)),
    ("all_reduce_gb200_20rack_1440gpu_coreweave.txt", 1439, (16 * GIB, 405.74)),
])
def test_the_coreweave_tables_read(read_fixture, name, ranks, largest):
    result = nccl_tests.parse(read_fixture("nccl_tests", name))
    assert result["passed"] and [r["rank"] for r in result["ranks"]] == [ranks]
    assert nccl_tests.at_largest_size(result) == largest
