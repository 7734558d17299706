"""baselines.py: reference figures and how a measured number compares with them."""
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import baselines

GIB = 1 << 30


def test_a_known_platform_says_how_far_from_its_baseline():
    entry = baselines.lookup("nccl_busbw", "NVIDIA H200", 2, "nvlink", collective="all_reduce", size=4 * GIB)
    assert entry["value"] == 345.2 and "2026-11-22-h200x2-validate" in entry["source"]
    text = baselines.describe(346.16, entry)
    assert text.startswith("346 GB/s = 100 % of the H200x2 NVLink baseline (345 GB/s: 2x H200 NV18")


def test_a_size_without_its_own_entry_takes_the_largest_size_below_it():
    entry = baselines.lookup("nccl_busbw", "NVIDIA H200", 2, "nvlink", collective="all_reduce", size=2 * GIB)
    assert entry["size"] == GIB and entry["value"] == 325.0
    assert baselines.lookup("nccl_busbw", "NVIDIA H200", 2, "nvlink", collective="all_reduce", size=1 << 20) is None


def test_an_unknown_sku_says_so_and_how_to_record_one():
    assert baselines.lookup("nccl_busbw", "NVIDIA H100 80GB HBM3", 2, "nvlink", collective="all_reduce", size=GIB) is None
    assert baselines.unknown("nccl_busbw all_reduce", "NVIDIA H100 80GB HBM3", 2, "nvlink") == (
        "no nccl_busbw all_reduce baseline for NVIDIA H100 80GB HBM3 x2 nvlink: record one from this run with "
        "-e gpufabric_record_baseline=true")


def test_the_sites_own_figures_win_and_recording_replaces_the_same_keys():
    local = [{"kind": "nccl_busbw", "gpu": "H100", "gpus": 2, "interconnect": "nvlink", "collective": "all_reduce",
              "size": GIB, "value": 300.0, "source": "recorded here"}]
    assert baselines.lookup("nccl_busbw", "NVIDIA H100 80GB HBM3", 2, "nvlink", local, collective="all_reduce", size=GIB)["value"] == 300
    updated = baselines.record(local, dict(local[0], value=310.0))
    assert len(updated) == 1 and updated[0]["value"] == 310.0
    assert baselines.floor(updated[0], 0.9) == 279.0


def test_the_ddp_baseline_of_the_measured_runs():
    entry = baselines.lookup("ddp_images_per_s", "NVIDIA H200", 2, "nvlink", model="resnet50", batch=320)
    assert baselines.describe(6267.5, entry, "images/s").startswith("6268 images/s = 100 % of the H200x2 NVLink baseline")
