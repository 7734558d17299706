"""The GPUDirect RDMA path by NCCL's own conditions (judge/gpudirect.py), and the readers behind it on real outputs:
/proc/driver/nvidia/version (open and proprietary modules), the IOMMU from the boot line and the kernel log,
`ethtool -i` and `nvidia-smi -q` text (tests/unit/fixtures, each cited in its README)."""
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import gpudirect
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ethtool, gpu, iommu, nvidia_smi_q, rdma
from paths import FIXTURES


def read(*path):
    with open(os.path.join(FIXTURES, *path)) as handle:
        return handle.read()


OPEN = {"driver": "590.48.01", "open": True}
PROPRIETARY = {"driver": "535.129.03", "open": False}


def test_the_open_kernel_module_is_read_from_a_real_version_file_behind_its_prompt():
    assert gpu.parse_proc_nvidia_version(read("nvidia_driver", "proc_driver_nvidia_version_open_590.txt")) == OPEN
    assert gpu.parse_proc_nvidia_version("") is None and gpu.parse_proc_nvidia_version(None) is None


@pytest.mark.parametrize("inputs, kernel, path, why", [
    ({"kernel_module": OPEN, "memory_peers": [], "cuda_version": "13.1"}, "6.8.0-45", "dmabuf",
     "DMA-BUF: open GPU kernel module, kernel 6.8.0-45, CUDA driver 13.1"),
    ({"kernel_module": OPEN, "memory_peers": ["nvidia-peermem"], "cuda_version": "12.4"}, "6.8.0", "dmabuf",
     "nvidia-peermem is loaded too (the fallback)"),
    ({"kernel_module": PROPRIETARY, "memory_peers": ["nvidia-peermem"], "cuda_version": "12.2"}, "5.15.0", "peermem",
     "nvidia-peermem; not DMA-BUF: the proprietary GPU kernel module 535.129.03 (dma-buf needs the open one)"),
    ({"kernel_module": OPEN, "memory_peers": [], "cuda_version": "12.4", "nccl_dmabuf": "0"}, "6.8", "none",
     "neither DMA-BUF (NCCL_DMABUF_ENABLE=0) nor nvidia-peermem"),
    ({"kernel_module": OPEN, "memory_peers": ["nv_mem"], "cuda_version": "11.4"}, "5.4.0-47", "peermem",
     "kernel 5.4.0-47 (dma-buf memory regions need 5.12 or later); CUDA driver 11.4 (11.7 or later)"),
    ({"kernel_module": None, "memory_peers": None, "cuda_version": "12.4"}, "6.8", "unknown",
     "unknown: the GPU kernel module (/proc/driver/nvidia/version); memory peers (sysfs)"),
])
def test_the_path_follows_nccls_conditions(inputs, kernel, path, why):
    judged = gpudirect.path(inputs, kernel)
    assert judged["path"] == path and why in judged["why"], judged


def test_no_path_is_a_finding_only_with_rdma_and_a_translating_iommu_only_on_bare_metal():
    none = gpudirect.path({"kernel_module": PROPRIETARY, "memory_peers": [], "cuda_version": "12.2"}, "6.8")
    assert [f["check"] for f in gpudirect.findings("n1", none, {}, True, False)] == ["gpudirect_path"]
    assert gpudirect.findings("n1", none, {}, False, False) == []
    modes = {"0000:19:00.0": "translated", "0000:3b:00.0": "passthrough"}
    assert [f["check"] for f in gpudirect.findings("n1", {"path": "dmabuf"}, modes, True, False)] == ["iommu_mode"]
    assert gpudirect.findings("n1", {"path": "dmabuf"}, modes, True, True) == []


def test_the_iommu_mode_from_a_real_boot_line_and_kernel_log_and_from_sysfs_group_types():
    log = iommu.parse_kernel_log(read("kernel_log", "proc_cmdline_and_dmesg_iommu_amd_passthrough.txt"))
    assert log["default_domain"] == "passthrough"
    assert log["cmdline"] == {"amd_iommu": "on", "iommu": "pti"}   # the user's own typo: not pt, so no mode from it
    assert iommu.mode_from_cmdline(log["cmdline"]) is None
    assert iommu.mode_from_cmdline({"iommu": "pt"}) == "passthrough" and iommu.mode_from_cmdline({"intel_iommu": "off"}) == "off"
    assert iommu.mode_from_groups({"a": "identity\n", "b": "DMA-FQ", "c": "DMA", "d": None}) == {
        "a": "passthrough", "b": "translated", "c": "translated", "d": "off"}


def test_ethtool_i_of_a_connectx4_lx_without_a_board_id():
    info = ethtool.parse_ethtool_info(read("ethtool", "ethtool_i_cx4lx_mlx5_core_fw_without_psid.txt"))
    assert (info["driver"], info["firmware_version"], info["psid"], info["bus_info"]) == (
        "mlx5_core", "14.23.1020", None, "0000:af:00.0")
    assert info["version"] == "3.0-1 (January 2015)" and info["expansion_rom_version"] is None
    assert info["supports"] == {"statistics": True, "test": False, "eeprom_access": False, "register_dump": False,
                                "priv_flags": False}
    with_psid = ethtool.parse_ethtool_info("driver: mlx5_core\nfirmware-version: 28.39.1002 (MT_0000000838)\n")
    assert (with_psid["firmware_version"], with_psid["psid"]) == ("28.39.1002", "MT_0000000838")
    with pytest.raises(ValueError, match="no 'driver:' line"):
        ethtool.parse_ethtool_info("bus-info: 0000:af:00.0\n")


def test_ibv_devinfo_of_twelve_connectx7_gives_each_firmware_and_both_board_ids():
    devices = rdma.parse_ibv_devinfo(read("ibv_devinfo", "ibv_devinfo_12x_cx7_roce_mixed_board_ids.txt"))
    assert [d["name"] for d in devices] == ["mlx5_%d" % i for i in range(12)]
    assert set(d["fw_ver"] for d in devices) == {"28.43.3608"}
    assert [d["board_id"] for d in devices] == ["MT_0000000838"] * 8 + ["MT_0000000834"] * 4


def test_nvidia_smi_q_text_gives_driver_cuda_and_each_gpus_vbios():
    parsed = nvidia_smi_q.parse_nvidia_smi_q(read("nvidia_smi", "nvidia_smi_q_a100_sxm4_80gb_driver470_vbios.txt"))
    assert (parsed["driver_version"], parsed["cuda_version"], parsed["attached_gpus"]) == ("470.103.01", "11.4", 1)
    (one,) = parsed["gpus"]
    assert (one["bus_id"], one["product_name"], one["vbios_version"], one["board_id"]) == (
        "00000000:94:00.0", "NVIDIA A100-SXM4-80GB", "92.00.45.00.05", "0x9400")
    assert one["fields"]["MIG Mode"] == {"Current": "Disabled", "Pending": "Disabled"}
    assert one["fields"]["Accounting Mode"] == "Disabled" and parsed["unparsed"] == []
    with pytest.raises(nvidia_smi_q.NvidiaSmiQError):
        nvidia_smi_q.parse_nvidia_smi_q("hello\n")


def _gdr_reason(name):
    from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug
    parsed = nccl_debug.parse_nccl_debug(read("nccl_debug", name))
    judged = nccl_path.judge_nccl_debug(parsed, {"rdma": True, "gdr": True})
    return parsed, [r for r in judged["reasons"] if r["check"] == "gdr"]


def test_the_transport_proof_says_which_gpudirect_mechanism_nccl_used_in_its_own_words():
    # NCCL 2.16.5: DMA-BUF available on the GPU and 'GPU Direct RDMA Enabled for HCA': both paths possible, not named.
    parsed, (reason,) = _gdr_reason("gdr_enabled_dmabuf_available_nccl2.16_nccltests350.txt")
    assert parsed["gdr"] is True and parsed["dmabuf_gpus"]
    assert reason["ok"] is True and reason["reason"].endswith(
        "through nvidia-peermem or DMA-BUF (both available; this NCCL does not say which)")
    assert "GPU Direct RDMA Enabled for HCA 0 'mlx5_0'" in reason["evidence"][0]
    # The (DMABUF) form NCCL 2.23 and later print names DMA-BUF.
    line = "n1:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0'\n"
    from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug
    text = read("nccl_debug", "gdr_enabled_dmabuf_available_nccl2.16_nccltests350.txt").replace(
        "n013:101855:101885 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n", line).replace(
        "n013:101855:101885 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_2'\n", "")
    judged = nccl_path.judge_nccl_debug(nccl_debug.parse_nccl_debug(text), {"rdma": True, "gdr": True})
    (reason,) = [r for r in judged["reasons"] if r["check"] == "gdr"]
    assert reason["reason"].endswith("through DMA-BUF") and "(DMABUF) enabled" in reason["evidence"][0]
    # RoCE with nvidia_peermem loaded, yet NCCL disabled GPUDirect on both HCAs (nccl#1537): a failed proof.
    parsed, (reason,) = _gdr_reason("gdr_disabled_roce_nccl1537.txt")
    assert parsed["gdr"] is False and reason["ok"] is False
    assert "NCCL ran without GPUDirect RDMA" in reason["reason"]


@pytest.mark.parametrize("name, driver, is_open", [
    ("proc_driver_nvidia_version_proprietary_535.183.01.txt", "535.183.01", False),
    ("proc_driver_nvidia_version_open_525.60.11.txt", "525.60.11", True),
    ("proc_driver_nvidia_version_open_565.57.01.txt", "565.57.01", True),
])
def test_open_and_proprietary_kernel_modules_from_real_version_files(name, driver, is_open):
    assert gpu.parse_proc_nvidia_version(read("nvidia_driver", name)) == {"driver": driver, "open": is_open}


def test_ethtool_i_of_an_inbox_connectx7_carries_its_board_id():
    info = ethtool.parse_ethtool_info(read("ethtool", "ethtool_i_mlx5_psid_cx7_amzn2023_inbox.txt"))
    assert (info["firmware_version"], info["psid"], info["version"]) == (
        "28.42.1000", "MT_0000000834", "6.1.106-116.188.amzn2023.x86_64")


def test_a_whole_nvidia_smi_q_of_an_h800_reads_into_sections():
    parsed = nvidia_smi_q.parse_nvidia_smi_q(read("nvidia_smi", "nvidia_smi_q_h800_ecc_remapped_rows.txt"))
    assert (parsed["driver_version"], parsed["cuda_version"], parsed["attached_gpus"]) == ("525.105.17", "12.0", 8)
    (one,) = parsed["gpus"]
    assert (one["product_name"], one["vbios_version"]) == ("NVIDIA H800", "96.00.51.00.0E")
    assert one["fields"]["ECC Errors"]["Volatile"]["DRAM Uncorrectable"] == "N/A"
    rows = one["fields"]["Remapped Rows"]
    assert (rows["Uncorrectable Error"], rows["Pending"], rows["Remapping Failure Occurred"]) == ("0", "No", "No")
    assert rows["Bank Remap Availability Histogram"]["Max"] == "2560 bank(s)"
