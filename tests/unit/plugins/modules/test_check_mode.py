"""Check mode changes nothing, module by module: every command a module runs is logged by the stub
tools (tests/stubs), every file it would write is looked at afterwards. The same calls outside check
mode show the test would see a change (a submitted job, a cancelled job, a written file)."""

import json
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.modules import (
    gpu_facts, nccl_env, node_health, rdma_devices, rdma_netdev, slurm_conf_settings, slurm_job)
from moduletest import calls, run_module, stub_bin, stub_path
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
READ_ONLY = {
    "nvidia-smi": [["-q", "-x"], ["topo", "-m"], ["--query-gpu=index,compute_cap", "--format=csv,noheader"],
                   ["nvlink", "--status"]],
    "nvcc": [["--version"]],
    "ibv_devinfo": [[]],
    "journalctl": [["-k", "-b", "--no-pager", "-o", "short-iso"]],
}


@pytest.fixture
def node(tmp_path, monkeypatch):
    bindir = stub_path(tmp_path, monkeypatch)

    def tools(**modes):
        for tool, mode in modes.items():
            tool = tool.replace("_", "-") if tool == "nvidia_smi" else tool
            stub_bin(bindir, {tool: "fake_slurm" if tool in ("sbatch", "scontrol", "sacct", "scancel") else "misbehave"})
            if mode:
                monkeypatch.setenv("STUB_%s_MODE" % tool.upper().replace("-", "_"), mode)
    node = type("Node", (), {})()
    node.tools = tools
    node.calls = lambda: calls(tmp_path / "calls.jsonl")
    node.root = tmp_path
    return node


def test_gpu_facts_only_reads(node):
    node.tools(nvidia_smi="file:" + os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml"))
    result = run_module(gpu_facts, {}, check_mode=True)
    assert result["changed"] is False and result["ansible_facts"]["gpu"]["count"] == 8
    assert all(argv in READ_ONLY[tool] for tool, argv in node.calls()) and len(node.calls()) == 3


def test_rdma_devices_only_reads(node):
    sysfs = os.path.join(FIXTURES, "sysfs", "erdma")
    node.tools(ibv_devinfo="file:" + os.path.join(FIXTURES, "ibv_devinfo", "erdma_seed002.txt"))
    result = run_module(rdma_devices, {"sysfs_root": sysfs}, check_mode=True)
    assert result["changed"] is False and result["verbs"] is True
    assert node.calls() == [("ibv_devinfo", [])]


def test_node_health_only_reads(node):
    node.tools(nvidia_smi="file:" + os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml"),
               journalctl="file:" + os.path.join(FIXTURES, "kernel_log", "journal_xid_45_after_149_ogkm1150.txt"))
    result = run_module(node_health, {"expected_gpu_count": 8, "sysfs_root": str(node.root / "nosys")},
                        check_mode=True)
    assert result["changed"] is False and result["observed"]["gpu_count"] == 8
    assert result["observed"]["kernel_log_source"].startswith("journalctl")
    assert all(argv in READ_ONLY[tool] for tool, argv in node.calls())


@pytest.mark.parametrize("check_mode", [True, False])
def test_nccl_env_writes_only_outside_check_mode(node, check_mode):
    dest, script = node.root / "nccl.conf", node.root / "nccl.sh"
    dest.write_text("NCCL_DEBUG=INFO\n")
    result = run_module(nccl_env, {"profile": "socket", "socket_ifname": "eth0", "dest": str(dest),
                                   "profile_script": str(script)}, check_mode=check_mode, diff=True)
    assert result["changed"] is True
    assert [d["after_header"] for d in result["diff"]] == [str(dest), str(script)]
    assert "NCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME=eth0\n" in result["diff"][0]["after"]
    assert result["diff"][0]["before"] == "NCCL_DEBUG=INFO\n"
    if check_mode:
        assert dest.read_text() == "NCCL_DEBUG=INFO\n" and not script.exists()
    else:
        assert dest.read_text() == result["diff"][0]["after"] and script.exists()


def test_rdma_netdev_sets_and_writes_nothing_in_check_mode(node):
    sysfs = node.root / "sys"
    (sysfs / "class" / "net" / "eth0").mkdir(parents=True)
    node.tools(ip="file:" + os.path.join(FIXTURES, "net", "ip_link_veth.json"), nmcli="fail:8:not running",
               networkctl="fail:1:not running", mlnx_qos="fail:1:no device", dcb="fail:2:not supported")
    rules = "/etc/udev/rules.d/70-gpufabric-mtu.rules"
    existed = os.path.exists(rules)
    result = run_module(rdma_netdev, {"name": "eth0", "mtu": 9000, "pfc_priorities": [3], "trust": "dscp",
                                      "sysfs_root": str(sysfs)}, check_mode=True, diff=True)
    assert result["changed"] is True and "mtu 1500 -> 9000" in result["applied"]
    assert result["mtu"]["manager"] in ("udev", "ifupdown", "netplan", "networkd", "networkmanager")
    assert any(d.get("after_header", "").endswith("(runtime)") for d in result["diff"])
    logged = node.calls()
    assert ("ip", ["-d", "-j", "link", "show", "dev", "eth0"]) in logged
    assert not [argv for tool, argv in logged if tool == "ip" and "set" in argv]
    assert not [argv for tool, argv in logged if tool in ("mlnx_qos", "dcb") and len(argv) > 4]
    assert os.path.exists(rules) == existed


def test_slurm_job_submits_nothing_in_check_mode(node):
    node.tools(sbatch=None, scontrol=None, scancel=None, sacct=None)
    script = node.root / "job.sbatch"
    script.write_text("#!/bin/bash\nhostname\n")
    result = run_module(slurm_job, {"script": str(script)}, check_mode=True)
    assert (result["changed"], result["submitted"]) == (True, False)
    assert result["msg"] == "would submit %s (check mode: nothing was submitted)" % script
    assert node.calls() == []


@pytest.mark.parametrize("check_mode", [True, False])
def test_slurm_job_cancels_nothing_in_check_mode(node, monkeypatch, check_mode):
    node.tools(sbatch=None, scontrol=None, scancel=None, sacct=None)
    script = node.root / "job.sbatch"
    script.write_text("#!/bin/bash\nsleep 300\n")
    monkeypatch.setenv("STUB_SLURM_STATE", "RUNNING")
    submitted = run_module(slurm_job, {"script": str(script), "wait": False})
    job_id = submitted["job_id"]
    result = run_module(slurm_job, {"job_id": job_id, "timeout": 1, "poll_interval": 1}, check_mode=check_mode)
    assert result["failed"] and result["timed_out"]
    cancels = [argv for tool, argv in node.calls() if tool == "scancel"]
    if check_mode:
        assert result["msg"] == "job %s still RUNNING after 1 s; would cancel it (check mode: not cancelled)" % job_id
        assert result["would_cancel"] == "still RUNNING after 1 s" and cancels == []
        state = json.loads((node.root / "jobs.json").read_text())[job_id]["state"]
        assert state == "RUNNING"
    else:
        assert result["msg"] == "job %s still RUNNING after 1 s; cancelled it" % job_id and cancels == [[job_id]]


def test_slurm_job_never_hangs_on_a_silent_controller(node, monkeypatch):
    node.tools(sbatch=None, scontrol="hang", scancel=None, sacct=None)
    script = node.root / "job.sbatch"
    script.write_text("#!/bin/bash\nhostname\n")
    result = run_module(slurm_job, {"script": str(script), "command_timeout": 2})
    assert result["failed"] and result["submitted"] is True
    assert result["msg"].endswith("show job did not answer within 2 s: is slurmctld reachable from this host?")


def test_slurm_job_refuses_a_newline_in_what_it_passes_on(node):
    node.tools(sbatch=None, scontrol=None, scancel=None, sacct=None)
    script = node.root / "job.sbatch"
    script.write_text("#!/bin/bash\n")
    result = run_module(slurm_job, {"script": str(script), "sbatch_args": ["--partition=gpu\n--uid=0"]})
    assert result["failed"] and result["msg"].startswith("sbatch_args[0] contains a newline (character 16)")
    assert node.calls() == []


@pytest.mark.parametrize("check_mode", [True, False])
def test_slurm_conf_settings_writes_only_outside_check_mode(node, check_mode):
    node.tools(slurmd="fail:1:no slurmd", slurmctld="fail:1:no slurmctld", scontrol="fail:1:no scontrol")
    conf = node.root / "slurm.conf"
    conf.write_text("ClusterName=lab\n")
    result = run_module(slurm_conf_settings, {"path": str(conf), "settings": {"Prolog": "/usr/local/sbin/gpufabric-prolog"},
                                              "ours_prefix": "/usr/local/sbin/gpufabric-"}, check_mode=check_mode, diff=True)
    assert result["changed"] is True and result["slurm_version"] is None
    assert result["diff"][0]["after"] == "ClusterName=lab\nProlog=/usr/local/sbin/gpufabric-prolog # managed by gpufabric.rdma\n"
    assert conf.read_text() == ("ClusterName=lab\n" if check_mode else result["diff"][0]["after"])
    assert [tool for tool, argv in node.calls()] == ["slurmctld", "slurmd", "scontrol"]
