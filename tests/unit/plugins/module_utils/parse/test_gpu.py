import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu


def test_h200_nvidia_smi_xml(read_fixture):
    facts = gpu.parse_nvidia_smi_xml(read_fixture("nvidia_smi", "q_h200x8.xml"))
    assert (facts["driver_version"], facts["cuda_version"], facts["count"]) == ("580.159.04", "13.0", 8)
    assert len(facts["gpus"]) == 8
    first = facts["gpus"][0]
    assert first == {
        "index": 0, "minor_number": 0, "name": "NVIDIA H200",
        "uuid": "GPU-ba870ea2-f3da-7103-8d8f-0aa7218154d3", "pci_bus_id": "00000000:00:06.0",
        "serial": "1653724066167", "vbios_version": "96.00.A5.00.1A", "memory_total_mib": 143771, "persistence_mode": True,
        "mig_mode": "Disabled", "ecc_enabled": True,
        # sram_uncorrectable_parity + sram_uncorrectable_secded + dram_uncorrectable
        "ecc_uncorrected_volatile": 0,
        "power_limit_w": 700, "temperature_c": 37,
        # max_link_gen, max_link_width: what the link carries (judge/ceiling.py); *_now what it runs at
        "pcie": {"gen": 5, "width": 16, "gen_now": 5, "width_now": 16},
    }
    assert [g["index"] for g in facts["gpus"]] == list(range(8))
    assert len(set(g["uuid"] for g in facts["gpus"])) == 8


def test_query_gpu_csv_agrees_with_xml(read_fixture):
    """The same machine's --query-gpu CSV names the same bus ids and UUIDs as -q -x."""
    facts = gpu.parse_nvidia_smi_xml(read_fixture("nvidia_smi", "q_h200x8.xml"))
    csv = read_fixture("nvidia_smi", "query_gpu_h200x8.csv").splitlines()[1:]
    rows = [[c.strip() for c in line.split(",")] for line in csv if line.strip()]
    assert [r[2] for r in rows] == [g["uuid"] for g in facts["gpus"]]
    assert [r[3] for r in rows] == [g["pci_bus_id"] for g in facts["gpus"]]


def test_no_volatile_counters_is_unknown_not_zero():
    xml = "<nvidia_smi_log><attached_gpus>1</attached_gpus><gpu id='0'><ecc_mode><current_ecc>N/A</current_ecc></ecc_mode></gpu></nvidia_smi_log>"
    (only,) = gpu.parse_nvidia_smi_xml(xml)["gpus"]
    assert only["ecc_uncorrected_volatile"] is None and only["ecc_enabled"] is None


def test_old_driver_volatile_ecc_counters():
    xml = (
        "<nvidia_smi_log><driver_version>470.82.01</driver_version><cuda_version>11.4</cuda_version>"
        "<attached_gpus>1</attached_gpus><gpu id='00000000:3B:00.0'><product_name>Tesla V100-SXM2-32GB</product_name>"
        "<persistence_mode>Disabled</persistence_mode><mig_mode><current_mig>N/A</current_mig></mig_mode>"
        "<ecc_mode><current_ecc>Enabled</current_ecc></ecc_mode>"
        "<ecc_errors><volatile><single_bit><total>5</total></single_bit><double_bit><total>2</total></double_bit>"
        "</volatile></ecc_errors>"
        "<power_readings><power_limit>300.00 W</power_limit></power_readings>"
        "<fb_memory_usage><total>32510 MiB</total></fb_memory_usage></gpu></nvidia_smi_log>"
    )
    (only,) = gpu.parse_nvidia_smi_xml(xml)["gpus"]
    assert only["ecc_uncorrected_volatile"] == 2
    assert only["mig_mode"] is None and only["persistence_mode"] is False
    assert only["power_limit_w"] == 300 and only["pci_bus_id"] == "00000000:3B:00.0"
    assert only["temperature_c"] is None


@pytest.mark.parametrize("text", ["", "not xml", "<other/>"])
def test_bad_xml_is_a_clear_error(text):
    with pytest.raises(gpu.GpuParseError):
        gpu.parse_nvidia_smi_xml(text)


def test_h200_topo_with_escape_codes(read_fixture):
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_h200x8.txt"))
    assert sorted(topo["matrix"]) == ["GPU%d" % i for i in range(8)]
    assert topo["matrix"]["GPU0"]["GPU1"] == "NV18"
    assert topo["matrix"]["GPU3"]["GPU3"] == "X"
    assert topo["nics"] == {}
    assert topo["gpu_nics"] == dict(("GPU%d" % i, []) for i in range(8))
    assert topo["cpu_affinity"]["GPU7"] == "0-127"
    assert topo["numa_affinity"]["GPU0"] == 0
    assert gpu.has_nvlink(topo) is True


def test_h200x2_capture_from_the_device_machine(read_fixture):
    facts = gpu.parse_nvidia_smi_xml(read_fixture("nvidia_smi", "q_h200x2.xml"))
    assert facts["count"] == 2 and [g["pci_bus_id"] for g in facts["gpus"]] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert facts["gpus"][0]["uuid"] == "GPU-2007a042-8b67-c4a6-3717-e4762139f762"
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_h200x2.txt"))
    assert topo["matrix"] == {"GPU0": {"GPU0": "X", "GPU1": "NV18"}, "GPU1": {"GPU0": "NV18", "GPU1": "X"}}
    assert topo["cpu_affinity"] == {"GPU0": "0-31", "GPU1": "0-31"}


def test_dgx_topo_space_separated(read_fixture):
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_dgx_h100_spaces.txt"))
    assert topo["matrix"]["GPU7"]["GPU0"] == "NV18"
    assert topo["cpu_affinity"]["GPU4"] == "52-103" and topo["numa_affinity"]["GPU4"] == 1


def test_topo_with_nics_and_legend(read_fixture):
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_4gpu_4nic_constructed.txt"))
    assert topo["nics"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_bond_0"}
    assert topo["matrix"]["NIC2"]["GPU3"] == "NODE"
    # best rank only: two PXB NICs tie for GPU0; PIX beats NODE for GPU2 and GPU3
    assert topo["gpu_nics"] == {"GPU0": ["mlx5_0", "mlx5_1"], "GPU1": ["mlx5_0", "mlx5_1"],
                                "GPU2": ["mlx5_2"], "GPU3": ["mlx5_bond_0"]}
    assert topo["numa_affinity"] == {"GPU0": 0, "GPU1": 0, "GPU2": 1, "GPU3": 1}
    assert "NIC0" not in topo["cpu_affinity"]


def test_topo_old_driver_names_nic_in_header(read_fixture):
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_old_driver_nic_in_header_constructed.txt"))
    assert topo["gpu_nics"] == {"GPU0": ["mlx5_0"], "GPU1": ["mlx5_0"]}
    assert topo["nics"] == {}
    assert topo["numa_affinity"] == {"GPU0": None, "GPU1": None}
    assert gpu.has_nvlink(topo) is False


def test_topo_power9_with_nics_in_header_and_numa_node_8(read_fixture):
    # IBM AC922 (POWER9): NUMA nodes 0 and 8, NICs named in the header, NIC rows without affinity columns.
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_ac922_power9_mlx5_milanpro.txt"))
    assert topo["cpu_affinity"] == {"GPU0": "0-63", "GPU1": "0-63", "GPU2": "64-127", "GPU3": "64-127"}
    assert topo["numa_affinity"] == {"GPU0": 0, "GPU1": 0, "GPU2": 8, "GPU3": 8}
    assert topo["gpu_nics"]["GPU0"] == ["mlx5_0", "mlx5_1"]
    assert topo["gpu_nics"]["GPU3"] == ["mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5"]


def test_topo_cpu_affinity_list_is_kept_whole(read_fixture):
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_delos_4gpu_milanpro.txt"))
    assert topo["cpu_affinity"] == {"GPU0": "0-19,40-59", "GPU1": "0-19,40-59", "GPU2": "20-39,60-79",
                                    "GPU3": "20-39,60-79"}
    assert topo["numa_affinity"] == {"GPU0": 0, "GPU1": 0, "GPU2": 1, "GPU3": 1}


def test_topo_numa_affinity_list_is_kept_as_printed(read_fixture):
    # A GPU close to several NUMA nodes: nvidia-smi lists them; the first number alone (0) was wrong.
    topo = gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_numa_list_constructed.txt"))
    assert topo["numa_affinity"] == {"GPU0": "0-1", "GPU1": "0-1", "GPU2": 1, "GPU3": "0,8"}
    assert topo["cpu_affinity"]["GPU3"] == "0-19,40-127"


@pytest.mark.parametrize("cpu, numa, expected", [
    ("0,8,252-255", "0,8,252-255", ("0,8,252-255", "0,8,252-255")),
    ("N/A", "N/A", (None, None)),
    ("0-3", "12", ("0-3", 12)),
    ("0-3,", "1-", (None, None)),
])
def test_topo_affinity_cells(cpu, numa, expected):
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t%s\t%s\t\tN/A\n" % (cpu, numa)
    topo = gpu.parse_nvidia_topo(text)
    assert (topo["cpu_affinity"]["GPU0"], topo["numa_affinity"]["GPU0"]) == expected


def test_topo_without_matrix_is_a_clear_error():
    with pytest.raises(gpu.GpuParseError, match="GPU0"):
        gpu.parse_nvidia_topo("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")


@pytest.mark.parametrize("modules, expected", [
    ("nvidia_peermem 16384 0 - Live 0x0000000000000000\nnvidia 56000000 1 nvidia_peermem, Live 0x0\n",
     {"loaded": True, "module": "nvidia_peermem"}),
    ("nv_peer_mem 16384 0 - Live 0x0\nib_core 393216 9 nv_peer_mem, Live 0x0\n", {"loaded": True, "module": "nv_peer_mem"}),
    ("nvidia 56000000 0 - Live 0x0\n", {"loaded": False, "module": None}),
    ("", {"loaded": False, "module": None}),
])
def test_peermem(modules, expected):
    assert gpu.parse_peermem(modules) == expected


@pytest.mark.parametrize("lines, expected", [
    (["9.0"] * 8, "-gencode=arch=compute_90,code=sm_90"),
    (["8.0", " 9.0 ", "8.0"], "-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90"),
    ("10.0\n", "-gencode=arch=compute_100,code=sm_100"),
    (["/usr/local/cuda/bin/nvcc", "", "No devices were found"], ""),
    ([], ""),
])
def test_nvcc_gencode(lines, expected):
    assert gpu.nvcc_gencode(lines) == expected
