import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu, kernel_log, nccl_conf, rdma


def test_xids_from_a_production_node(read_fixture):
    events = kernel_log.parse_xid_events(read_fixture("kernel_log", "dmesg_T_xid_43_31_94_akash244.txt"))
    assert [(e["pci"], e["xid"], e["count"]) for e in events] == [
        ("0000:00:05", 43, 2), ("0000:00:07", 31, 1), ("0000:00:08", 94, 1)]
    assert events[0]["processes"] == ["pt_main_thread (1045242)", "pt_main_thread (1084984)"]
    assert events[2]["processes"] == []  # pid='<unknown>'
    assert events[2]["detail"].startswith("pid='<unknown>', name=<unknown>, Contained: SM (0x1)")
    found = health.xid_findings("node4", events)
    assert [(f["severity"], f["target"]) for f in found] == [
        ("info", "node4/GPU 0000:00:05"), ("info", "node4/GPU 0000:00:07"), ("warning", "node4/GPU 0000:00:08")]
    assert "contained ECC error" in found[2]["detail"]


def test_gpu_fallen_off_the_bus_without_an_xid_line(read_fixture):
    (event,) = kernel_log.parse_xid_events(read_fixture("kernel_log", "dmesg_fallen_off_bus_no_xid_nvsentinel155.txt"))
    assert (event["pci"], event["xid"]) == ("0000:b3:00", 79)
    (found,) = health.xid_findings("gpu-7", [event])
    assert (found["check"], found["severity"]) == ("gpu_xid", "critical")
    assert "fallen off the bus" in found["detail"]


def test_xid_45_names_its_nvlink_cause(read_fixture):
    events = kernel_log.parse_xid_events(read_fixture("kernel_log", "journal_xid_45_after_149_ogkm1150.txt"))
    assert [(e["pci"], e["count"], e["caused_by"]) for e in events] == [
        ("0000:dc:00", 2, [149]), ("0000:ed:00", 2, [145]), ("0000:ba:00", 2, [145]), ("0000:97:00", 1, [145])]
    assert "[caused by Xid 149]" in health.xid_findings("n", events)[0]["detail"]


def test_application_xids_and_ignore_list(read_fixture):
    events = kernel_log.parse_xid_events(read_fixture("kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"))
    assert [(e["xid"], e["count"]) for e in events] == [(13, 3), (109, 1)]
    assert [f["severity"] for f in health.xid_findings("n", events)] == ["info", "warning"]
    assert health.xid_findings("n", events, ignore=(13, 109)) == []


def test_xid_lines_of_old_drivers_without_pci_prefix(read_fixture):
    # "NVRM: Xid (0000:01:00): 16, ..." - driver 304.64, before the "PCI:" prefix
    events = kernel_log.parse_xid_events(read_fixture("kernel_log", "kern_log_xid_16_8_old_format_bumblebee329.txt"))
    assert [(e["pci"], e["xid"], e["count"]) for e in events] == [("0000:01:00", 16, 8), ("0000:01:00", 8, 1)]
    assert events[0]["detail"] == "Head 00000000 Count 00000000"
    assert [(f["severity"], f["target"]) for f in health.xid_findings("laptop", events)] == [
        ("warning", "laptop/GPU 0000:01:00"), ("warning", "laptop/GPU 0000:01:00")]


def test_xid_154_names_what_the_gpu_needs_now(read_fixture):
    # GB200 node: NVLink Xid 149, then the driver's recovery action per GPU (Xid 154)
    events = kernel_log.parse_xid_events(read_fixture("kernel_log", "dmesg_xid_149_154_gb200_gpud1061.txt"))
    assert [(e["pci"], e["xid"], e["count"]) for e in events] == [
        ("0009:01:00", 149, 3), ("0009:01:00", 154, 1), ("0008:01:00", 149, 2), ("0019:01:00", 154, 1),
        ("0018:01:00", 154, 1), ("0008:01:00", 154, 1)]
    assert events[1]["recovery_action"] == {"code": 4, "name": "Drain and Reset", "from_code": 0, "from_name": "None"}
    assert events[3]["recovery_action"]["code"] == 1
    found = dict(((f["target"], f["detail"].split(" ")[1]), f) for f in health.xid_findings("gb200", events))
    drain = found[("gb200/GPU 0009:01:00", "154")]
    assert drain["severity"] == "critical"
    assert drain["detail"] == "Xid 154 (GPU recovery action changed) x1: the GPU now needs: Drain and Reset (0x4)"
    assert "reset the GPU" in drain["fix_hint"] and drain["fix_hint"].startswith("drain the node")
    reset = found[("gb200/GPU 0008:01:00", "154")]
    assert reset["severity"] == "critical"
    assert reset["detail"] == ("Xid 154 (GPU recovery action changed) x1: the GPU now needs: GPU Reset Required (0x1), "
                               "changed from Drain and Reset (0x4)")
    assert reset["fix_hint"].startswith("the GPU is unusable until reset")
    assert found[("gb200/GPU 0009:01:00", "149")]["severity"] == "critical"


@pytest.mark.parametrize("line, severity, fix", [
    ("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
     "critical", "reboot it"),
    ("NVRM: Xid (PCI:0000:0d:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (PF FLR)",
     "critical", "reset it"),
    ("NVRM: Xid (PCI:0000:0d:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
     "info", "nothing"),
    ("NVRM: Xid (PCI:0000:0d:00): 154, GPU recovery action changed", "critical", "reset the GPU"),
])
def test_xid_154_is_rated_by_its_action(line, severity, fix):
    (found,) = health.xid_findings("n", kernel_log.parse_xid_events(line))
    assert found["severity"] == severity and fix in found["fix_hint"]


def test_fatal_sxids_next_to_a_gpu_off_the_bus(read_fixture):
    text = read_fixture("kernel_log", "dmesg_xid_79_sxid_20034_gpud.txt")
    assert [(e["pci"], e["xid"]) for e in kernel_log.parse_xid_events(text)] == [("0000:91:00", 79)]
    events = kernel_log.parse_fabric_events(text)
    assert [(e["switch"], e["pci"], e["sxid"], e["fatal"], e["count"], e["links"]) for e in events["sxid"]] == [
        ("nvidia-nvswitch1", "0000:06:00.0", 20034, True, 1, [48]),
        ("nvidia-nvswitch0", "0000:05:00.0", 20034, True, 2, [63, 62]),
        ("nvidia-nvswitch2", "0000:07:00.0", 20034, True, 1, [37])]
    assert events["nvlink_training"] == [] and events["nic_pcie"] == []
    found = health.fabric_findings("hgx", events)
    assert [(f["check"], f["severity"], f["target"]) for f in found] == [
        ("nvswitch_sxid", "critical", "hgx/NVSwitch 0000:06:00.0"),
        ("nvswitch_sxid", "critical", "hgx/NVSwitch 0000:05:00.0"),
        ("nvswitch_sxid", "critical", "hgx/NVSwitch 0000:07:00.0")]
    assert found[1]["detail"] == "SXid 20034 (fatal) x2 on nvidia-nvswitch0, links 63, 62: Fatal, Link 63 LTSSM Fault Up"
    assert found[2]["detail"] == "SXid 20034 (fatal) x1 on nvidia-nvswitch2, link 37: Fatal, Link 37 LTSSM Fault Up"
    assert "reboot it to reset the GPUs and NVSwitches" in found[0]["fix_hint"]


def test_non_fatal_sxid_is_a_warning():
    line = "[111.111] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)"
    (found,) = health.fabric_findings("n", kernel_log.parse_fabric_events(line))
    assert (found["severity"], found["detail"]) == (
        "warning", "SXid 12028 (non-fatal) x1 on nvidia-nvswitch3, link 32: Non-fatal, Link 32 egress non-posted PRIV "
                   "error (First)")


def test_nvlink_links_that_did_not_come_up(read_fixture):
    events = kernel_log.parse_fabric_events(read_fixture("kernel_log", "dmesg_nvlink_post_rx_detect_gh100_gpud1272.txt"))
    (training,) = events["nvlink_training"]
    assert (training["count"], training["peers"]) == (6, [0])
    (found,) = health.fabric_findings("h100", events)
    assert (found["check"], found["severity"], found["target"]) == ("nvlink_training", "critical", "h100")
    assert found["detail"].startswith("NVLink links failed to come up at driver load (peer 0), x6, no Xid: "
                                      "[6619715.535712] NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL")


def test_nic_on_a_limited_pcie_link(read_fixture):
    events = kernel_log.parse_fabric_events(read_fixture("kernel_log", "dmesg_mlx5_pcie_limited_l2fwdnv6.txt"))
    (nic,) = events["nic_pcie"]
    assert (nic["pci"], nic["available_gbps"], nic["capable_gbps"], nic["limiting_device"]) == (
        "0000:b3:00.1", 63.008, 252.048, "0000:b2:00.0")
    assert (nic["limited_by"], nic["capable"]) == ({"speed": "8 GT/s", "width": 8}, {"speed": "16 GT/s", "width": 16})
    (found,) = health.fabric_findings("dpdk", events)
    assert (found["check"], found["severity"], found["target"]) == ("nic_pcie_bandwidth", "warning", "dpdk/NIC 0000:b3:00.1")
    assert found["detail"] == ("mlx5_core 0000:b3:00.1 gets 63.008 of 252.048 Gb/s PCIe bandwidth: limited by a 8 GT/s "
                               "x8 link at 0000:b2:00.0 (capable of 16 GT/s x16)")


def test_nic_at_full_pcie_bandwidth_is_no_finding(read_fixture):
    # "63.008 Gb/s available PCIe bandwidth (8.0 GT/s PCIe x8 link)": the card's own maximum, nothing limits it
    events = kernel_log.parse_fabric_events(read_fixture("kernel_log", "pstore_dmesg_mlx5_pcie_full_gpud.txt"))
    assert events == {"sxid": [], "nvlink_training": [], "nic_pcie": []}


def test_newer_kernel_wording_of_a_limited_link():
    line = ("mlx5_core 0000:3b:00.0: 126.024 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x8 link at "
            "0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")
    (nic,) = kernel_log.parse_fabric_events(line)["nic_pcie"]
    assert (nic["limited_by"], nic["capable"]) == ({"speed": "16.0 GT/s", "width": 8}, {"speed": "16.0 GT/s", "width": 16})


def test_healthy_h200_memory(read_fixture):
    gpus = gpu.parse_gpu_memory_health(read_fixture("nvidia_smi", "q_h200x8.xml"))
    assert len(gpus) == 8 and gpus[0]["remap_pending"] is False and gpus[0]["remapped_uncorrectable"] == 0
    assert health.gpu_memory_findings("h200", gpus) == []


def test_remap_failure_and_pending(read_fixture):
    # The real H200 capture with two GPUs' remapper state changed (values nvidia-smi prints).
    text = read_fixture("nvidia_smi", "q_h200x8.xml")
    text = text.replace("<remapped_row_failure>No</remapped_row_failure>", "<remapped_row_failure>Yes</remapped_row_failure>", 1)
    second = text.index("<remapped_row_pending>No</remapped_row_pending>", text.index("<remapped_row_failure>Yes"))
    text = text[:second] + "<remapped_row_pending>Yes</remapped_row_pending>" + text[second + len("<remapped_row_pending>No</remapped_row_pending>"):]
    gpus = gpu.parse_gpu_memory_health(text)
    found = health.gpu_memory_findings("h200", gpus)
    assert [(f["check"], f["severity"], f["target"]) for f in found] == [
        ("gpu_row_remap", "critical", "h200/GPU %s" % gpus[0]["pci"]),
        ("gpu_row_remap", "warning", "h200/GPU %s" % gpus[1]["pci"])]


def _counters(tmp_path, values):
    for port, counters in values.items():
        device, number = port.split("/")
        folder = tmp_path / "class" / "infiniband" / device / "ports" / number / "counters"
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in counters.items():
            (folder / name).write_text("%d\n" % value)
    return sysfs.read_port_counters(str(tmp_path))


def test_counters_rising_between_readings(tmp_path):
    before = _counters(tmp_path, {"mlx5_0/1": {"link_downed": 2, "symbol_error": 10, "port_rcv_errors": 0}})
    after = _counters(tmp_path, {"mlx5_0/1": {"link_downed": 3, "symbol_error": 10, "port_rcv_errors": 0}})
    assert health.rising_counters(before, after) == [("mlx5_0/1", "link_downed", 2, 3)]
    (found,) = health.counter_findings("n1", health.rising_counters(before, after), 30)
    assert (found["severity"], found["target"], found["detail"]) == (
        "critical", "n1/mlx5_0/1", "link_downed rose from 2 to 3 in 30 s")


def test_inventory_against_expectations(read_fixture):
    devices = rdma.parse_ibv_devinfo(read_fixture("ibv_devinfo", "erdma_seed002.txt"))
    found = health.inventory_findings("ebmgn8v", 7, devices, False, {"eth1": 1500, "eth2": 9000},
                                      {"gpu_count": 8, "rdma_devices": 3, "mtu": 9000, "peermem": True})
    checks = [(f["check"], f["severity"], f["target"]) for f in found]
    assert checks == [
        ("gpu_count", "critical", "ebmgn8v"),
        ("rdma_device_count", "critical", "ebmgn8v"),
        ("rdma_port_state", "critical", "ebmgn8v/rocep156s0/1"),
        ("mtu", "warning", "ebmgn8v:eth1"),
        ("peermem", "warning", "ebmgn8v"),
    ]
    assert found[0]["detail"] == "7 of 8 expected GPUs found"
    assert health.inventory_findings("ok", 8, [], True, {}, {}) == []


def test_nccl_conf_drift():
    deployed = nccl_conf.parse_nccl_conf("# written by gpufabric.rdma\nNCCL_SOCKET_IFNAME=eth0\nNCCL_IB_HCA=mlx5_1\nNCCL_DEBUG=INFO\n")
    found = health.nccl_drift_findings("n", deployed, {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "mlx5",
                                                       "NCCL_IB_GID_INDEX": "3"})
    assert [(f["severity"], f["detail"]) for f in found] == [
        ("warning", "NCCL_IB_GID_INDEX is missing (the profile sets NCCL_IB_GID_INDEX=3)"),
        ("warning", "NCCL_IB_HCA=mlx5_1, the profile sets mlx5"),
        ("info", "set by hand, not by the profile: NCCL_DEBUG")]


@pytest.mark.parametrize("address, short", [("00000000:3B:00.0", "0000:3b:00"), ("0000:3b:00", "0000:3b:00"),
                                            ("0000:b3:00.0", "0000:b3:00")])
def test_short_pci(address, short):
    assert gpu.short_pci(address) == short


def test_one_parse_of_the_nvidia_smi_xml_serves_both_readers(read_fixture):
    text = read_fixture("nvidia_smi", "q_h200x8.xml")
    root = gpu.nvidia_smi_root(text)
    assert gpu.parse_gpu_memory_health(root) == gpu.parse_gpu_memory_health(text)
    assert gpu.parse_nvidia_smi_xml(root) == gpu.parse_nvidia_smi_xml(text)
    assert gpu.attached_gpu_count(root) == 8
    with pytest.raises(gpu.GpuParseError):
        gpu.nvidia_smi_root("<html/>")


@pytest.mark.parametrize("problem, expected, pci, detail", [
    (("missing", "nvidia-smi not found"), None, [], None),
    (("missing", "nvidia-smi not found"), 4, [], "nvidia-smi not found: cannot count GPUs (4 expected)"),
    (("missing", "nvidia-smi not found"), None, [{"address": "0000:%02x:00.0" % i} for i in range(6)],
     "nvidia-smi not found: 6 NVIDIA GPU(s) on the PCI bus cannot be read (0000:00:00.0, 0000:01:00.0, 0000:02:00.0, "
     "0000:03:00.0, ...)"),
    (("hung", "nvidia-smi did not answer within 30 s"), None, [], "nvidia-smi did not answer within 30 s"),
])
def test_a_missing_nvidia_smi_matters_where_gpus_are_expected(problem, expected, pci, detail):
    found, unread = health.nvidia_smi_findings("n1", problem, expected, pci)
    if detail is None:   # no GPU expected, none on the bus: a node without GPUs needs no nvidia-smi
        assert (found, unread) == ([], [])
        return
    (finding,) = found
    assert (finding["check"], finding["severity"], finding["detail"]) == ("nvidia_smi", "critical", detail)
    assert unread == ["nvidia-smi: %s" % problem[1]]
    assert health.nvidia_smi_findings("n1", None, expected, pci) == ([], [])
