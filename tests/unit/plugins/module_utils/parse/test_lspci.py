"""parse/lspci.py and judge/pcie_path.py on real public lspci -vvv outputs (tests/unit/fixtures/lspci, each cited in
the fixtures README): a Dell H100 server's subtree through a Broadcom PEX890xx Gen5 switch (ACS off, two switch ports
trained down), a root port at x2 of x16, a PLX PEX 8725 port with ACS on, and `grep ACSCtl` of GPU servers."""
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import pcie_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import lspci
from paths import fixture_path

FIXTURES = fixture_path("lspci")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return lspci.parse_lspci(handle.read())


def test_a_gpu_server_subtree_through_a_gen5_switch():
    parsed = read("lspci_vvv_dell_h100_pex890xx_switch_acs_disabled.txt")
    by = dict((d["address"], d) for d in parsed["devices"])
    assert len(parsed["devices"]) == 13
    gpu, nic = by["0000:19:00.0"], by["0000:1a:00.0"]
    assert lspci.is_gpu(gpu) and lspci.is_nic(nic) and not lspci.is_nic(gpu)
    assert gpu["lnk_cap"]["width"] == 16
    assert gpu["lnk_sta"] == {"speed_gts": 32.0, "width": 16, "speed_downgraded": False, "width_downgraded": False}
    assert by["0000:17:00.0"]["lnk_sta"]["speed_downgraded"] and by["0000:17:00.0"]["bridge"]
    assert by["0000:15:01.0"]["max_read_req"] == 4096 and by["0000:15:01.0"]["max_payload"] == 256
    switch = [d for d in parsed["devices"] if d["bridge"] and d["acs_ctl"] is not None]
    assert switch and all(lspci.acs_redirects(d["acs_ctl"]) == [] for d in switch)
    # ACS off everywhere, GPU and NICs at full width and speed: nothing to say
    assert pcie_path.findings("node1", parsed) == []
    assert pcie_path.summary(parsed)["acs_redirect"] == []


def test_acs_on_a_switch_port_of_a_gpu_server_is_a_finding_on_bare_metal_only():
    parsed = read("lspci_vvv_dell_h100_pex890xx_switch_acs_disabled.txt")
    for device in parsed["devices"]:
        if device["address"] in ("0000:17:00.0", "0000:17:01.0"):
            device["acs_ctl"].update(SrcValid=True, ReqRedir=True, CmpltRedir=True)
    (found,) = pcie_path.findings("node1", parsed)
    assert found["check"] == "pcie_acs" and found["detail"].startswith(
        "ACS redirects peer-to-peer traffic on 2 PCIe bridge(s): 0000:17:00.0 (SrcValid ReqRedir CmpltRedir), 0000:17:01.0")
    assert pcie_path.findings("vm1", parsed, virtualized=True) == []


def test_a_plx_port_with_acs_on_and_grep_lines_of_gpu_servers():
    plx = read("lspci_vvv_plx_pex8725_port_acs_enabled_fragment.txt")   # the previous port's tail, then the next port
    assert [lspci.acs_redirects(flags) for flags in plx["acs_lines"]] == [["SrcValid", "ReqRedir", "CmpltRedir"]]
    assert plx["devices"][0]["address"] == "0000:02:08.0" and plx["devices"][0]["acs_ctl"] is None
    grep = read("lspci_vvv_grep_acsctl_mixed_fully_enabled_and_disabled.txt")
    assert grep["devices"] == [] and len(grep["acs_lines"]) == 12
    (found,) = pcie_path.findings("node7", grep)   # a grep has no devices: what it shows is judged
    assert found["detail"].startswith("ACS redirects peer-to-peer traffic on 7 PCIe bridge(s): GPUDirect RDMA")
    amd = read("lspci_vvv_grep_acsctl_amd_switch_partial_srcvalid.txt")
    assert any(lspci.acs_redirects(flags) == ["SrcValid"] for flags in amd["acs_lines"])


def test_a_link_trained_down_is_said_for_a_gpu_or_nic_and_not_for_a_gpus_idle_speed():
    parsed = read("lspci_vvv_dell_h100_pex890xx_switch_acs_disabled.txt")
    by = dict((d["address"], d) for d in parsed["devices"])
    by["0000:19:00.0"]["lnk_sta"].update(speed_gts=2.5)          # an idle GPU: not a finding
    assert pcie_path.findings("node1", parsed) == []
    by["0000:19:00.0"]["lnk_sta"].update(width=8)
    by["0000:1a:00.0"]["lnk_sta"].update(speed_gts=16.0)
    found = pcie_path.findings("node1", parsed)
    assert [(f["check"], f["target"], f["detail"]) for f in found] == [   # judged as the health check judges sysfs
        ("pcie_link", "node1/0000:19:00.0", "PCIe gpu runs at x8 of x16 (0000:19:00.0)"),
        ("pcie_link", "node1/0000:1a:00.0", "PCIe NIC runs at 16 of 32 GT/s (0000:1a:00.0)")]
    root = read("lspci_vvv_intel_rootport_width_downgraded_x16_to_x2.txt")["devices"][0]
    assert root["lnk_sta"]["width"] == 2 and root["lnk_sta"]["width_downgraded"] and root["lnk_cap"]["width"] == 16


def test_text_that_is_not_lspci_fails_naming_it():
    with pytest.raises(lspci.LspciError, match="not lspci -vvv output"):
        lspci.parse_lspci("lspci: command not found\n")


def test_discovery_keeps_the_path_and_readiness_judges_it(tmp_path, monkeypatch):
    """gpu_facts runs lspci -vvv (a stand-in printing the Dell capture with two switch ports' ACS turned on), the
    record keeps the summary, readiness gives pcie_acs on bare metal and nothing in a VM; lspci missing is said."""
    from ansible_collections.gpufabric.rdma.plugins.modules import gpu_facts
    from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import readiness
    from moduletest import run_module
    with open(os.path.join(FIXTURES, "lspci_vvv_dell_h100_pex890xx_switch_acs_disabled.txt")) as handle:
        text = handle.read()
    on = text.replace("ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir-", "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+", 2)
    (tmp_path / "capture.txt").write_text(on)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "lspci").write_text("#!/bin/sh\n[ \"$1\" = -vvv ] && exec cat %s\nexit 2\n" % (tmp_path / "capture.txt"))
    (bindir / "lspci").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % bindir)
    facts = run_module(gpu_facts, {"procfs_root": str(tmp_path), "sysfs_root": str(tmp_path)}, check_mode=True)
    pcie = facts["ansible_facts"]["gpu"]["pcie"]
    assert [r["on"] for r in pcie["acs_redirect"]] == [["SrcValid", "ReqRedir", "CmpltRedir"]] * 2, pcie
    assert (pcie["gpus"], pcie["nics"]) == (1, 3)
    record = {"gpu": {"present": False, "pcie": pcie}, "rdma_devices": [], "interfaces": [], "virtualization": "none/host"}
    found = [f for f in readiness.node_findings("node1", record) if f["check"] == "pcie_acs"]
    assert len(found) == 1 and "on 2 PCIe bridge(s)" in found[0]["detail"]
    vm = dict(record, virtualization="kvm/guest")
    assert [f for f in readiness.node_findings("vm1", vm) if f["check"] == "pcie_acs"] == []
    (bindir / "lspci").unlink()
    if commands.Runner(path=str(bindir)).which("lspci") is None:   # a host with pciutils of its own has one in /usr/bin
        facts = run_module(gpu_facts, {"procfs_root": str(tmp_path), "sysfs_root": str(tmp_path)}, check_mode=True)
        assert facts["ansible_facts"]["gpu"]["pcie"] == {"error": "lspci is not installed (pciutils)"}
