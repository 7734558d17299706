# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Reference figures, so a report can say whether a number is good: "346 GB/s = 100 % of the H200x2
NVLink baseline". Each entry names where it was measured; a site records its own with
``record_baseline`` (the local file is read over these).

Keys: kind (nccl_busbw | ddp_images_per_s | perftest_gbps), gpu (a model name as nvidia-smi prints
it, matched case-insensitively by containment: "H200" matches "NVIDIA H200"), gpus, interconnect
(nvlink | pcie | a fabric name for multi-node; nvlink for the nodes of one multi-node NVLink domain too), and per
kind: collective + size (nccl), model + batch (ddp), link_gbps (perftest).

FLOORS are the least a multi-node NVLink domain's NVLS all_reduce may give, per SKU, for any number of GPUs from two
trays up (``gpus_at_least``): a run below one fails whatever the fraction (docs/expected-figures.md says which figure
and why). A measured baseline of the same keys wins over a floor.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

GIB = 1 << 30

BUILTIN = [
    # Our measurements (docs/benchmarks/, tests/unit/fixtures/nccl_tests): NCCL 2.28.9, nccl-tests 2.19.6, NVLS off.
    {"kind": "nccl_busbw", "gpu": "H200", "gpus": 8, "interconnect": "nvlink", "collective": "all_reduce",
     "size": 4 * GIB, "value": 365.0, "source": "8x H200 NVSwitch, all_reduce_perf -g 8 (tests/unit/fixtures/nccl_tests/all_reduce_g8_h200x8.txt)"},
    {"kind": "nccl_busbw", "gpu": "H200", "gpus": 8, "interconnect": "nvlink", "collective": "all_gather",
     "size": GIB, "value": 344.2, "source": "8x H200 NVSwitch, all_gather_perf over mpirun (tests/unit/fixtures/nccl_tests/all_gather_mpi_h200x8.txt)"},
    {"kind": "nccl_busbw", "gpu": "H200", "gpus": 2, "interconnect": "nvlink", "collective": "all_reduce",
     "size": 4 * GIB, "value": 345.2, "source": "2x H200 NV18, mpirun -np 2 (docs/benchmarks/2026-11-22-h200x2-validate)"},
    {"kind": "nccl_busbw", "gpu": "H200", "gpus": 2, "interconnect": "nvlink", "collective": "all_reduce",
     "size": GIB, "value": 325.0, "source": "2x H200 NV18, -g 2 (docs/benchmarks/2026-11-23-h200x2-tune, defaults)"},
    {"kind": "nccl_busbw", "gpu": "H200", "gpus": 2, "interconnect": "nvlink", "collective": "all_gather",
     "size": GIB, "value": 270.0, "source": "2x H200 NV18, -g 2 (docs/benchmarks/2026-11-23-h200x2-tune, defaults)"},
    {"kind": "nccl_busbw", "gpu": "H200", "gpus": 2, "interconnect": "nvlink", "collective": "reduce_scatter",
     "size": GIB, "value": 275.0, "source": "2x H200 NV18, -g 2 (docs/benchmarks/2026-11-23-h200x2-tune, defaults)"},
    # A full GB200 NVL72 rack, 72 ranks, NVLS over MNNVL: coreweave/nccl-tests README.md @cb865533 lines 263-274 (NCCL
    # 2.26.2, all_reduce_perf -b 16M -e 8G -f 2 -g 1, NCCL_MNNVL_ENABLE=1), tests/unit/fixtures/nccl_tests/
    # all_reduce_gb200_nvl72_72gpu_coreweave.txt; out-of-place busbw.
    {"kind": "nccl_busbw", "gpu": "GB200", "gpus": 72, "interconnect": "nvlink", "collective": "all_reduce",
     "size": GIB, "value": 681.17, "source": "GB200 NVL72, 72 GPUs (coreweave/nccl-tests README, NCCL 2.26.2)"},
    {"kind": "nccl_busbw", "gpu": "GB200", "gpus": 72, "interconnect": "nvlink", "collective": "all_reduce",
     "size": 2 * GIB, "value": 757.78, "source": "GB200 NVL72, 72 GPUs (coreweave/nccl-tests README, NCCL 2.26.2)"},
    {"kind": "nccl_busbw", "gpu": "GB200", "gpus": 72, "interconnect": "nvlink", "collective": "all_reduce",
     "size": 4 * GIB, "value": 839.16, "source": "GB200 NVL72, 72 GPUs (coreweave/nccl-tests README, NCCL 2.26.2)"},
    {"kind": "ddp_images_per_s", "gpu": "H200", "gpus": 1, "interconnect": "nvlink", "model": "resnet50", "batch": 320,
     "value": 3164.0, "source": "ddp_benchmark.py fp32, 1x H200 (docs/benchmarks/2026-11-23-h200x2-tune/ddp)"},
    {"kind": "ddp_images_per_s", "gpu": "H200", "gpus": 2, "interconnect": "nvlink", "model": "resnet50", "batch": 320,
     "value": 6267.0, "source": "ddp_benchmark.py fp32, 2x H200 NV18 (docs/benchmarks/2026-11-23-h200x2-tune/ddp)"},
]


# NVLS all_reduce floors of a multi-node NVLink domain (two trays or more), out-of-place busbw at 4 GiB and above:
# NVIDIA's own validator figures where one is published (docs/expected-figures.md: why these, beside the public runs).
FLOORS = [
    {"kind": "nccl_busbw", "gpu": "GB300", "gpus_at_least": 8, "interconnect": "nvlink", "collective": "all_reduce",
     "size": 4 * GIB, "value": 630.0, "floor": True,
     "source": "GB300 NVLS floor of NVIDIA's aicr validator nccl-all-reduce-bw-nvls (target 700, floor 630; NVIDIA/aicr#2641)"},
    {"kind": "nccl_busbw", "gpu": "GB200", "gpus_at_least": 8, "interconnect": "nvlink", "collective": "all_reduce",
     "size": 4 * GIB, "value": 500.0, "floor": True,
     "source": "GB200 NVLS floor of NVIDIA's aicr recipes gb200-eks/oke-training (>= 500, provisional; NVIDIA/aicr#2784)"},
]


def _matches(entry, want):
    for key, value in want.items():
        if value is None:
            continue
        have = entry.get(key)
        if key == "gpus" and entry.get("gpus_at_least") is not None:
            if not isinstance(value, int) or value < entry["gpus_at_least"]:
                return False
        elif key == "gpu":
            if not have or str(have).lower() not in str(value).lower():
                return False
        elif have != value:
            return False
    return True


def lookup(kind, gpu, gpus, interconnect, local=None, **detail):
    """The baseline for these keys (local entries first), else None. A size without its own entry takes the
    entry of the largest size not above it (busbw only grows with the size on a healthy fabric)."""
    want = dict(kind=kind, gpu=gpu, gpus=gpus, interconnect=interconnect, **dict((k, v) for k, v in detail.items() if k != "size"))
    for table in (local or [], BUILTIN, FLOORS):
        found = [e for e in table if _matches(e, want)]
        size = detail.get("size")
        if size is not None:
            exact = [e for e in found if e.get("size") == size]
            if exact:
                return exact[0]
            below = sorted((e for e in found if e.get("size") and e["size"] <= size), key=lambda e: e["size"])
            found = below[-1:] if below else []
        if found:
            return found[0]
    return None


def label(entry):
    name = str(entry.get("gpu") or "?").replace("NVIDIA ", "")
    if entry.get("floor"):
        return "%s NVLS %s floor" % (name, entry.get("collective") or "")
    return "%sx%s %s" % (name, entry.get("gpus"), {"nvlink": "NVLink", "pcie": "PCIe"}.get(entry.get("interconnect"), entry.get("interconnect")))


def describe(value, entry, unit="GB/s"):
    """'346 GB/s = 100 % of the H200x2 NVLink baseline (345.2 GB/s, ...)'."""
    if entry is None or value is None:
        return None
    return "%s %s = %.0f %% of the %s%s (%s %s: %s)" % (
        _num(value), unit, 100.0 * value / entry["value"], label(entry), "" if entry.get("floor") else " baseline",
        _num(entry["value"]), unit, entry.get("source", "recorded here"))


def unknown(kind, gpu, gpus, interconnect):
    return ("no %s baseline for %s x%s %s: record one from this run with -e gpufabric_record_baseline=true" % (
        kind, gpu or "an unknown GPU", gpus, interconnect))


def floor(entry, fraction):
    """The least a run may give against ``entry``: a share of a measured baseline, a floor itself."""
    if not entry:
        return None
    return entry["value"] if entry.get("floor") else entry["value"] * fraction


def below(value, size, fraction, entry):
    """The failure of a run below its baseline's share, or below a floor."""
    if entry.get("floor"):
        return "busbw %.1f GB/s at %d bytes is below the %s (%.1f GB/s: %s)" % (
            value, size, label(entry), entry["value"], entry.get("source"))
    return "busbw %.1f GB/s at %d bytes is below %.0f %% of the %s baseline (%.1f GB/s)" % (
        value, size, fraction * 100, label(entry), entry["value"])


def record(local, entry):
    """The local baseline list with ``entry`` added or replacing the one with the same keys."""
    keys = ("kind", "gpu", "gpus", "interconnect", "collective", "size", "model", "batch", "link_gbps")
    return [e for e in (local or []) if not all(e.get(k) == entry.get(k) for k in keys)] + [entry]


def _num(value):
    return ("%.0f" % value) if value >= 100 else ("%.1f" % value)
