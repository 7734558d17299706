"""A GPU without its driver is not READY: gpu_facts reads the NVIDIA GPUs on the PCI bus as well as nvidia-smi,
and readiness makes GPUs present but not answering a critical finding naming each GPU and its driver.

The PCI trees are the real one captured on the GPU machine (tests/unit/fixtures/pcie/links_h100_vm.tsv: a virtio
NIC and one H100), with no driver bound, and the 8x H200 capture's own PCI addresses."""

import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health, readiness
from ansible_collections.gpufabric.rdma.plugins.modules import gpu_facts, node_health
from moduletest import run_module, stub_bin, stub_path
from paths import FIXTURES

H200X8 = os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml")


def _captured_tree(tmp_path):
    """The H100 VM's PCI devices as sysfs has them (class, vendor, device), no driver link: a driver never loaded."""
    root = tmp_path / "sys"
    with open(os.path.join(FIXTURES, "pcie", "links_h100_vm.tsv")) as handle:
        for line in handle:
            if line.startswith("#"):
                continue
            address, klass, vendor, device = line.rstrip("\n").split("\t")[:4]
            node = root / "bus" / "pci" / "devices" / address
            node.mkdir(parents=True)
            for name, value in (("class", klass), ("vendor", vendor), ("device", device)):
                (node / name).write_text(value + "\n")
    return root


def _h200_tree(tmp_path, functions):
    """The 8x H200 capture's GPUs at their PCI addresses (00:06.0 to 00:0d.0), bound to nvidia, plus `functions`."""
    root = tmp_path / "sys"
    drivers = root / "bus" / "pci" / "drivers" / "nvidia"
    drivers.mkdir(parents=True)
    for slot in list(range(6, 14)) + list(functions):
        node = root / "bus" / "pci" / "devices" / ("0000:00:%02x.0" % slot)
        node.mkdir(parents=True)
        for name, value in (("class", "0x030200"), ("vendor", "0x10de"), ("device", "0x2335")):
            (node / name).write_text(value + "\n")
        (node / "driver").symlink_to(drivers)
    return root


def _facts(tmp_path, monkeypatch, sysfs_root, smi_mode=None, **args):
    bindir = stub_path(tmp_path, monkeypatch)
    if smi_mode:
        stub_bin(bindir, {"nvidia-smi": "misbehave"})
        monkeypatch.setenv("STUB_NVIDIA_SMI_MODE", smi_mode)
    else:
        monkeypatch.setenv("PATH", str(bindir))   # no nvidia-smi anywhere
    return run_module(gpu_facts, dict({"procfs_root": str(tmp_path), "sysfs_root": str(sysfs_root)}, **args),
                      check_mode=True)["ansible_facts"]["gpu"]


def _report(gpu):
    return readiness.build_report({"node1": {"gpu": gpu}})


def test_a_gpu_on_the_bus_without_nvidia_smi_is_not_ready(tmp_path, monkeypatch):
    gpu = _facts(tmp_path, monkeypatch, _captured_tree(tmp_path))
    assert gpu["present"] is False and gpu["count"] == 0
    assert gpu["pci_gpus"] == gpu["not_answering"] == [{"address": "0000:00:06.0", "device": "0x2330", "driver": None}]
    report = _report(gpu)
    assert report["ready"] is False
    (found,) = [f for f in report["nodes"]["node1"]["findings"] if f["check"] == "gpu_driver"]
    assert found["severity"] == "critical"
    assert found["detail"] == ("1 NVIDIA GPU(s) on the PCI bus but no NVIDIA driver answers (nvidia-smi not found): "
                               "0000:00:06.0 (driver none)")
    assert "NVIDIA driver" in found["fix_hint"]
    assert "gpu_driver" in readiness.render_text(report)


def test_node_health_on_a_gpu_node_without_nvidia_smi_is_incomplete_and_says_why(tmp_path, monkeypatch):
    """Issue 52 item 5: without expected_gpu_count it said complete and healthy beside "nvidia-smi not found", the
    report the decider resumes nodes on. The GPU on the bus is what says GPUs are expected."""
    monkeypatch.setenv("PATH", str(stub_path(tmp_path, monkeypatch)))   # no nvidia-smi anywhere
    args = {"kernel_log": os.devnull, "procfs_root": str(tmp_path), "command_timeout": 5}
    result = run_module(node_health, dict(args, sysfs_root=str(_captured_tree(tmp_path))))
    assert result["complete"] is False and result["healthy"] is False
    assert result["unreadable"] == ["nvidia-smi: nvidia-smi not found"]
    (found,) = [f for f in result["findings"] if f["check"] == "nvidia_smi"]
    assert (found["severity"], found["detail"]) == (
        "critical", "nvidia-smi not found: 1 NVIDIA GPU(s) on the PCI bus cannot be read (0000:00:06.0)")
    # a node with no GPU on the bus and none expected needs no nvidia-smi: complete and healthy
    result = run_module(node_health, dict(args, sysfs_root=str(tmp_path / "nosys")))
    assert result["complete"] is True and result["healthy"] is True and result["findings"] == []


def test_a_driver_that_does_not_answer_is_named_with_its_message(tmp_path, monkeypatch):
    gpu = _facts(tmp_path, monkeypatch, _captured_tree(tmp_path),
                 "fail:9:NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    (found,) = [f for f in _report(gpu)["nodes"]["node1"]["findings"] if f["check"] == "gpu_driver"]
    assert "couldn't communicate with the NVIDIA driver" in found["detail"]
    assert found["detail"].endswith("0000:00:06.0 (driver none)")


def test_every_gpu_answering_is_no_finding_and_a_ninth_on_the_bus_is(tmp_path, monkeypatch):
    gpu = _facts(tmp_path / "a", monkeypatch, _h200_tree(tmp_path / "a", []), "file:" + H200X8)
    assert gpu["count"] == 8 and len(gpu["pci_gpus"]) == 8 and gpu["not_answering"] == []
    assert not [f for f in _report(gpu)["nodes"]["node1"]["findings"] if f["check"] == "gpu_driver"]
    gpu = _facts(tmp_path / "b", monkeypatch, _h200_tree(tmp_path / "b", [0x0e]), "file:" + H200X8)
    assert gpu["not_answering"] == [{"address": "0000:00:0e.0", "device": "0x2335", "driver": "nvidia"}]
    (found,) = [f for f in _report(gpu)["nodes"]["node1"]["findings"] if f["check"] == "gpu_driver"]
    assert found["detail"] == ("1 NVIDIA GPU(s) on the PCI bus that nvidia-smi does not list (it lists 8): "
                               "0000:00:0e.0 (driver nvidia)")


def test_other_pci_functions_are_not_gpus(tmp_path):
    from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu
    assert [g["address"] for g in sysfs.read_pci_gpus(str(_captured_tree(tmp_path)))] == ["0000:00:06.0"]
    assert gpu.is_nvidia_gpu("0x10de", "0x030000") and gpu.is_nvidia_gpu("0x10DE\n", "0x030200")
    # an NVIDIA audio function, a Mellanox NIC, an NVSwitch bridge (0x0680) are not GPUs
    assert not gpu.is_nvidia_gpu("0x10de", "0x040300") and not gpu.is_nvidia_gpu("0x15b3", "0x020000")
    assert not gpu.is_nvidia_gpu("0x10de", "0x068000") and not gpu.is_nvidia_gpu(None, None)


def test_discovery_reads_what_decides_the_gpudirect_path_and_readiness_says_which(tmp_path, monkeypatch):
    """The open kernel module (a real /proc/driver/nvidia/version), no memory peers, the GPUs' IOMMU groups translated:
    DMA-BUF on a 6.8 kernel, no nvidia-peermem finding, and an iommu_mode warning on bare metal only."""
    sysfs_root = _h200_tree(tmp_path, [])
    for slot in range(6, 14):
        group = sysfs_root / "kernel" / "iommu_groups" / str(slot)
        group.mkdir(parents=True)
        (group / "type").write_text("DMA-FQ\n")
        (sysfs_root / "bus" / "pci" / "devices" / ("0000:00:%02x.0" % slot) / "iommu_group").symlink_to(group)
    (tmp_path / "driver" / "nvidia").mkdir(parents=True)
    with open(os.path.join(FIXTURES, "nvidia_driver", "proc_driver_nvidia_version_open_590.txt")) as handle:
        (tmp_path / "driver" / "nvidia" / "version").write_text(handle.read())
    (tmp_path / "cmdline").write_text("BOOT_IMAGE=/vmlinuz ro intel_iommu=on\n")
    gpu = _facts(tmp_path, monkeypatch, sysfs_root, "file:" + H200X8)
    assert gpu["gpudirect"]["kernel_module"] == {"driver": "590.48.01", "open": True}
    assert gpu["gpudirect"]["memory_peers"] == [] and gpu["gpudirect"]["iommu_cmdline"] == {"intel_iommu": "on"}
    assert set(gpu["gpudirect"]["iommu"].values()) == {"translated"} and len(gpu["gpudirect"]["iommu"]) == 8
    port = {"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand"}
    record = {"gpu": gpu, "kernel": "6.8.0-45-generic", "rdma_devices": [{"name": "mlx5_0", "transport": "InfiniBand",
                                                                          "ports": [port]}]}
    report = readiness.build_report({"node1": record})
    checks = [f["check"] for f in report["nodes"]["node1"]["findings"]]
    assert report["nodes"]["node1"]["gpudirect"]["path"] == ("dmabuf" if gpu["cuda_version"] >= "11.7" else "none")
    assert "peermem" not in checks and checks.count("iommu_mode") == 1
    assert "- node1: **dmabuf** (DMA-BUF: open GPU kernel module, kernel 6.8.0-45-generic" in readiness.render_markdown(report)
    guest = readiness.build_report({"node1": dict(record, virtualization="kvm/guest")})
    assert "iommu_mode" not in [f["check"] for f in guest["nodes"]["node1"]["findings"]]
    # An older kernel and no nvidia-peermem: no GPUDirect at all, said once, naming why.
    old = readiness.build_report({"node1": dict(record, kernel="5.4.0-47-generic")})
    (found,) = [f for f in old["nodes"]["node1"]["findings"] if f["check"] == "gpudirect_path"]
    assert found["detail"].startswith("no GPUDirect RDMA: neither DMA-BUF (kernel 5.4.0-47-generic (dma-buf memory regions "
                                      "need 5.12 or later)) nor nvidia-peermem")
    assert "peermem" not in [f["check"] for f in old["nodes"]["node1"]["findings"]]


@pytest.mark.parametrize("mode, how, said", [
    ("fail:9:NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "failed",
     "-q -x exited 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."),
    ("hang", "hung", "-q -x did not answer within 2 s"),
], ids=["failed", "hung"])
def test_a_node_whose_nvidia_smi_fails_or_hangs_is_not_ready(tmp_path, monkeypatch, mode, how, said):
    """Issue 52 point 5: no GPU on the bus (a GPU fallen off it), none expected, and nvidia-smi there but failing or
    hanging - discovery said READY. Readiness now judges it by the health check's own rule, in its words and fix."""
    gpu = _facts(tmp_path, monkeypatch, tmp_path / "nosys", mode, command_timeout=2)
    assert gpu["present"] is False and gpu["pci_gpus"] == []
    report = _report(gpu)
    assert report["ready"] is False, report["nodes"]["node1"]["findings"]
    assert gpu["nvidia_smi_problem"]["how"] == how and gpu["nvidia_smi_problem"]["detail"].endswith(said)
    (found,) = report["nodes"]["node1"]["findings"]
    assert (found["check"], found["severity"], found["detail"]) == ("nvidia_smi", "critical", gpu["error"])
    assert found["fix_hint"] == health.NVIDIA_SMI_FIXES[how]


def test_a_missing_nvidia_smi_is_judged_where_gpus_are_expected_and_said_once(tmp_path, monkeypatch):
    """The same rule as node_health: missing matters where a count is expected or GPUs sit on the bus - and where
    gpu_driver already names the GPUs on the bus, it is not said twice."""
    gpu = _facts(tmp_path / "a", monkeypatch, tmp_path / "a" / "nosys")
    assert gpu["nvidia_smi_problem"] == {"how": "missing", "detail": "nvidia-smi not found"}
    assert readiness.build_report({"node1": {"gpu": gpu}})["ready"] is True   # nothing says it should have GPUs
    (found,) = readiness.build_report({"node1": {"gpu": gpu}}, expected_gpu_count=8)["nodes"]["node1"]["findings"]
    assert (found["check"], found["detail"]) == ("nvidia_smi", "nvidia-smi not found: cannot count GPUs (8 expected)")
    gpu = _facts(tmp_path / "b", monkeypatch, _captured_tree(tmp_path / "b"))
    assert [f["check"] for f in _report(gpu)["nodes"]["node1"]["findings"]] == ["gpu_driver"]
    # a record made before gpu_facts said how: its error makes it failed, none missing
    old = {"present": False, "count": 0, "gpus": [], "error": "nvidia-smi -q -x exited 9: x"}
    (found,) = _report(old)["nodes"]["node1"]["findings"]
    assert (found["check"], found["fix_hint"]) == ("nvidia_smi", health.NVIDIA_SMI_FIXES["failed"])


def test_each_host_is_judged_against_its_own_count():
    """discover.yml passes each host's gpufabric_expected_gpu_count (group_vars, host_vars): the report keeps one
    count where all agree, each host's where they do not, and a bad one is named with its host."""
    import json
    from ansible_collections.gpufabric.rdma.plugins.filter.fabric import readiness_report
    nodes = {"g1": {"gpu": {"present": False, "count": 0, "gpus": []}}, "c1": {"gpu": {"present": False, "count": 0, "gpus": []}}}
    report = readiness_report(nodes, {"g1": "8", "c1": None})
    assert report["expected_gpu_count"] == {"g1": 8, "c1": None} and report["ready"] is False
    assert [f["check"] for f in report["nodes"]["g1"]["findings"]] == ["nvidia_smi"] and report["nodes"]["c1"]["findings"] == []
    assert readiness_report(nodes, {"g1": 8, "c1": 8})["expected_gpu_count"] == 8
    assert json.dumps(readiness_report(nodes, None)["expected_gpu_count"]) == "null"
    with pytest.raises(ValueError, match="expected_gpu_count of g1 must be a whole number of GPUs per node .0 or more., got 'eight'"):
        readiness_report(nodes, {"g1": "eight"})
