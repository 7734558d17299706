"""The modules on a sick node: tools that hang, print binary or garbage, truncated XML, or fail
(tests/stubs/misbehave.py). Each ends in bounded time with a result that says what happened, never a
traceback and never a hang. The modules run in this process (moduletest.run_module)."""

import os
import shutil
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.modules import gpu_facts, nccl_env, node_health, rdma_devices, rdma_netdev
from moduletest import calls, run_module, stub_bin
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
H200X8 = os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml")
DRIVER_GONE = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the " \
              "latest NVIDIA driver is installed and running."


@pytest.fixture
def sick(tmp_path, monkeypatch):
    """A node whose tools are stubs: set(tool, mode) puts one on PATH in that mode."""
    bindir = tmp_path / "bin"
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    monkeypatch.setenv("STUB_LOG", str(log))

    class Node(object):
        root = tmp_path

        def set(self, tool, mode):
            stub_bin(bindir, {tool: "misbehave"})
            monkeypatch.setenv("STUB_%s_MODE" % tool.upper().replace("-", "_"), mode)

        def calls(self):
            return calls(log)
    node = Node()
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "modules").write_text("ib_core 462848 9 - Live 0x0\n")
    node.proc = str(proc)
    return node


def _timed(func, *args, **kwargs):
    started = time.time()
    result = func(*args, **kwargs)
    return result, time.time() - started


def test_gpu_facts_reports_a_hung_nvidia_smi(sick):
    sick.set("nvidia-smi", "hang")
    result, took = _timed(run_module, gpu_facts, {"command_timeout": 2, "procfs_root": sick.proc})
    facts = result["ansible_facts"]["gpu"]
    assert took < 15 and result.get("failed") is not True
    assert facts["present"] is False and facts["count"] == 0
    assert facts["error"].endswith("-q -x did not answer within 2 s")
    assert any("did not answer within 2 s" in w for w in result["warnings"])


@pytest.mark.parametrize("mode, error", [
    ("binary", "printed no usable XML"),
    ("garbage", "printed no usable XML"),
    ("truncated:" + H200X8, "printed no usable XML"),
    ("fail:9:" + DRIVER_GONE, "exited 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"),
])
def test_gpu_facts_on_a_broken_nvidia_smi(sick, mode, error):
    sick.set("nvidia-smi", mode)
    result = run_module(gpu_facts, {"procfs_root": sick.proc})
    facts = result["ansible_facts"]["gpu"]
    assert result.get("failed") is not True and facts["present"] is False and error in facts["error"]


def test_gpu_facts_reads_crlf_and_coloured_output_like_the_clean_one(sick, monkeypatch):
    sick.set("nvidia-smi", "file:" + H200X8)
    clean = run_module(gpu_facts, {"procfs_root": sick.proc})["ansible_facts"]["gpu"]
    monkeypatch.setenv("STUB_NVIDIA_SMI_CRLF", "1")
    dirty = run_module(gpu_facts, {"procfs_root": sick.proc})["ansible_facts"]["gpu"]
    assert clean["count"] == dirty["count"] == 8 and clean["gpus"] == dirty["gpus"]


@pytest.mark.parametrize("mode, detail, fix", [
    ("hang", "nvidia-smi did not answer within 2 s", "a GPU lost from the PCIe bus often hangs nvidia-smi"),
    ("fail:9:" + DRIVER_GONE, "exited 9: NVIDIA-SMI has failed because it couldn't communicate",
     "the NVIDIA driver does not answer"),
    ("truncated:" + H200X8, "nvidia-smi -q -x printed no usable XML", "the NVIDIA driver does not answer"),
])
def test_node_health_says_what_is_wrong_with_nvidia_smi(sick, mode, detail, fix):
    sick.set("nvidia-smi", mode)
    result, took = _timed(run_module, node_health, {
        "expected_gpu_count": 8, "command_timeout": 2, "kernel_log": os.devnull,
        "sysfs_root": str(sick.root / "nosys"), "procfs_root": sick.proc})
    assert took < 15 and result.get("failed") is not True
    (found,) = [f for f in result["findings"] if f["check"] == "nvidia_smi"]
    assert found["severity"] == "critical" and detail in found["detail"] and found["fix_hint"].startswith(fix)
    # nvidia-smi did not answer, so no GPU was counted: no "a GPU fell off the bus" finding from a count of 0.
    assert not [f for f in result["findings"] if f["check"] == "gpu_count"]
    assert result["observed"]["gpu_count"] is None and result["healthy"] is False


def test_node_health_without_nvidia_smi_only_matters_where_gpus_are_expected(sick):
    args = {"kernel_log": os.devnull, "sysfs_root": str(sick.root / "nosys"), "procfs_root": sick.proc,
            "nvidia_smi_path": str(sick.root / "no-such-nvidia-smi")}
    assert run_module(node_health, args)["findings"] == []
    (found,) = run_module(node_health, dict(args, expected_gpu_count=4))["findings"]
    assert (found["check"], found["detail"]) == ("nvidia_smi", "nvidia-smi not found: cannot count GPUs (4 expected)")


def test_node_health_with_a_hung_kernel_log_reader(sick):
    sick.set("journalctl", "hang")
    sick.set("dmesg", "fail:1:dmesg: read kernel buffer failed: Operation not permitted")
    result, took = _timed(run_module, node_health, {"command_timeout": 2, "sysfs_root": str(sick.root / "nosys"),
                                                    "procfs_root": sick.proc, "nvidia_smi_path": os.devnull + "x"})
    assert took < 20
    (found,) = result["findings"]
    assert found["check"] == "kernel_log" and "journalctl -k -b did not answer within 2 s" in found["detail"]
    assert "dmesg -T exited 1: dmesg: read kernel buffer failed" in found["detail"]


def test_a_hung_kernel_log_reader_or_ethtool_makes_the_check_incomplete(sick):
    """What the remediation decider reads: a source that failed or hung is named, and the check is not complete."""
    import shutil
    from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, node_checks
    sick.set("journalctl", "hang")
    sick.set("dmesg", "fail:1:dmesg: read kernel buffer failed: Operation not permitted")
    args = {"command_timeout": 2, "sysfs_root": str(sick.root / "nosys"), "procfs_root": sick.proc,
            "nvidia_smi_path": os.devnull + "x"}
    result = run_module(node_health, args)
    assert result["complete"] is False
    assert result["unreadable"][0].startswith("kernel log: ") and "journalctl -k -b did not answer within 2 s" in \
        result["unreadable"][0]
    shutil.copytree(os.path.join(FIXTURES, "sysfs", "erdma"), str(sick.root / "sys"))
    sick.set("ethtool", "hang")
    (sick.root / "kern.log").write_text("")
    checked = node_checks.check_node(dict(args, sysfs_root=str(sick.root / "sys"), kernel_log=str(sick.root / "kern.log")),
                                     commands.Runner(2), history=[])
    assert checked["complete"] is False
    assert [u for u in checked["unreadable"] if u.startswith("pause counters of ")] and \
        "did not answer within 2 s" in checked["unreadable"][-1]


def test_the_pause_counters_of_a_working_ethtool_are_read(sick):
    """ethtool -S that answers: its pause counters reach the check (the local name of the binary once hid the
    reader's module, and every answer raised instead of being read)."""
    from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, node_checks
    shutil.copytree(os.path.join(FIXTURES, "sysfs", "erdma"), str(sick.root / "sys"))
    stats = sick.root / "ethtool-S.txt"
    stats.write_text("NIC statistics:\n     rx_packets: 10\n     tx_pause_storm_warning_events: 0\n"
                     "     tx_pause_storm_error_events: 1\n")
    sick.set("ethtool", "file:%s" % stats)
    (sick.root / "kern.log").write_text("")
    checked = node_checks.check_node({"command_timeout": 5, "sysfs_root": str(sick.root / "sys"), "procfs_root": sick.proc,
                                      "nvidia_smi_path": os.devnull + "x", "kernel_log": str(sick.root / "kern.log")},
                                     commands.Runner(5), history=[])
    assert not [u for u in checked["unreadable"] if u.startswith("pause counters of ")], checked["unreadable"]
    (sample,) = checked["observed"]["history"]
    assert any(key.endswith("|tx_pause_storm_error_events") for key in sample["counters"]), sample


def test_a_bad_command_timeout_names_itself(sick):
    for module in (gpu_facts, node_health, rdma_devices):
        result = run_module(module, {"command_timeout": 0})
        assert result["failed"] and "command_timeout must be a whole number of seconds from 1 to 3600, got 0" in result["msg"]


def test_rdma_devices_warns_about_a_missing_sysfs_root(sick):
    result = run_module(rdma_devices, {"sysfs_root": str(sick.root / "capture-typo")})
    assert result["ansible_facts"]["rdma_devices"] == []
    assert result["warnings"] == ["sysfs_root %s does not exist: no RDMA device can be read there"
                                  % (sick.root / "capture-typo")]


def test_rdma_devices_with_a_hung_ibv_devinfo(sick):
    sysfs = sick.root / "sys"
    shutil.copytree(os.path.join(FIXTURES, "sysfs", "erdma"), str(sysfs))
    sick.set("ibv_devinfo", "hang")
    result, took = _timed(run_module, rdma_devices, {"sysfs_root": str(sysfs), "command_timeout": 2})
    assert took < 15 and result["verbs"] is False
    assert [d["name"] for d in result["ansible_facts"]["rdma_devices"]] == ["erdma_0"]
    assert any("ibv_devinfo did not answer within 2 s" in w for w in result["warnings"])


def test_rdma_netdev_with_a_missing_sysfs_root(sick):
    result = run_module(rdma_netdev, {"name": "eth0", "mtu": 9000, "sysfs_root": str(sick.root / "nosys")})
    assert result["failed"] and result["msg"] == (
        "sysfs_root %s has no class/net directory: is it the root of a sysfs tree?" % (sick.root / "nosys"))


@pytest.mark.parametrize("name, message", [
    ("eth0\nip link set lo down", "name contains a newline (character 5)"),
    ("a/b", "name 'a/b' is not a network interface name"),
    ("x" * 16, "is not a network interface name (1-15 characters"),
])
def test_rdma_netdev_refuses_a_bad_interface_name(sick, name, message):
    result = run_module(rdma_netdev, {"name": name, "mtu": 9000})
    assert result["failed"] and message in result["msg"]
    assert sick.calls() == []


def test_rdma_netdev_with_a_hung_ip_changes_nothing(sick, tmp_path):
    sysfs = tmp_path / "sys"
    (sysfs / "class" / "net" / "eth0").mkdir(parents=True)
    sick.set("ip", "hang")
    result, took = _timed(run_module, rdma_netdev, {"name": "eth0", "mtu": 9000, "sysfs_root": str(sysfs),
                                                    "command_timeout": 2})
    assert took < 15 and result["failed"]
    assert result["msg"].endswith("-d -j did not answer within 2 s; nothing was changed")


@pytest.mark.parametrize("args, message", [
    ({"overrides": {"NCCL_DEBUG": "WARN\nNCCL_IB_HCA=mlx5_9"}},
     "overrides.NCCL_DEBUG contains a newline (character 5): a value written to a file or a command line must be one line"),
    ({"overrides": {"NCCL_X;rm": "1"}}, "override name 'NCCL_X;rm' is not an environment variable name"),
    ({"socket_ifname": "eth0\r"}, "socket_ifname contains a carriage return (character 5)"),
    ({"unset": ["NCCL DEBUG"]}, "unset entry 'NCCL DEBUG' is not an environment variable name"),
    ({"rdma_devices": [{"name": "mlx5_0", "transport": "RoCE", "ports": [{"port": "one"}]}]},
     "rdma_devices[0] (mlx5_0).ports[0]: port must be a int, got 'one'"),
    ({"rdma_devices": [{"name": "mlx5_0", "ports": []}]}, "rdma_devices[0]: transport must be a str, got None"),
    ({"rdma_devices": [{"name": "mlx5_0\n", "transport": "RoCE", "ports": []}]},
     "rdma_devices[0].name contains a newline"),
])
def test_nccl_env_refuses_what_would_break_the_file(tmp_path, args, message):
    dest = tmp_path / "nccl.conf"
    result = run_module(nccl_env, dict(args, profile="socket", socket_ifname=args.get("socket_ifname", "eth0"),
                                       dest=str(dest)))
    assert result["failed"] and message in result["msg"], result
    assert not dest.exists()


@pytest.mark.parametrize("check_mode", [False, True])
def test_nccl_env_dest_must_be_a_file_in_an_existing_directory(tmp_path, check_mode):
    result = run_module(nccl_env, {"profile": "socket", "socket_ifname": "eth0", "dest": str(tmp_path)}, check_mode)
    assert result["failed"] and result["msg"] == "dest %s is a directory: give the path of the file to write" % tmp_path
    missing = tmp_path / "etc" / "nccl.conf"
    result = run_module(nccl_env, {"profile": "socket", "socket_ifname": "eth0", "dest": str(missing)}, check_mode)
    assert result["failed"] and result["msg"] == "dest %s: directory %s does not exist" % (missing, missing.parent)
    result = run_module(nccl_env, {"profile": "socket", "socket_ifname": "eth0",
                                   "profile_script": str(missing)}, check_mode)
    assert result["failed"] and result["msg"].startswith("profile_script %s: directory" % missing)
