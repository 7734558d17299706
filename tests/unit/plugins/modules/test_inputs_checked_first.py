"""Bad input is refused, naming the value, before a module writes a file or runs a command; garbage
in what a tool prints is a message, never a traceback. The modules run in this process
(moduletest.run_module) against stub tools (tests/stubs) and real captures (tests/unit/fixtures)."""

import json
import os
import shutil

import pytest

from ansible_collections.gpufabric.rdma.plugins.modules import nccl_env, rdma_devices, rdma_netdev, slurm_job
from moduletest import calls, run_module, stub_bin, stub_path
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
SLURM_TOOLS = ("sbatch", "scontrol", "scancel", "sacct")
# Debian 12's /etc/NetworkManager/NetworkManager.conf as the network-manager package installs it: NetworkManager
# leaves what /etc/network/interfaces defines to ifupdown and manages every other interface.
DEBIAN_NM_CONF = "[main]\nplugins=ifupdown,keyfile\n\n[ifupdown]\nmanaged=false\n"
NM_NOT_RUNNING = "fail:8:Error: NetworkManager is not running."   # nmcli's text and exit status


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node whose tools are stubs: tools(name=mode) puts misbehave.py (or fake_slurm.py) on PATH."""
    bindir = stub_path(tmp_path, monkeypatch)

    class Node(object):
        root = tmp_path

        def tools(self, **modes):
            for tool, mode in modes.items():
                stub_bin(bindir, {tool: "fake_slurm" if mode == "fake_slurm" else "misbehave"})
                if mode != "fake_slurm":
                    monkeypatch.setenv("STUB_%s_MODE" % tool.upper(), mode)

        def calls(self):
            return calls(tmp_path / "calls.jsonl")
    return Node()


# -- nccl_env -------------------------------------------------------------------------------------

@pytest.mark.parametrize("check_mode", [False, True])
@pytest.mark.parametrize("sysfs_root, message", [
    ("{tmp}/captures/node17/sys",
     "sysfs_root {tmp}/captures/node17/sys does not exist: expected the root of a sysfs tree (/sys, or a copy of "
     "one), or give rdma_devices"),
    ("{fixtures}/README.md",
     "sysfs_root {fixtures}/README.md is not a directory: expected the root of a sysfs tree (/sys, or a copy of "
     "one), or give rdma_devices"),
    # The directory that holds the captures, one level too high: no class/ in it.
    ("{fixtures}/sysfs",
     "sysfs_root {fixtures}/sysfs has no class directory: expected the root of a sysfs tree (/sys, or a copy of "
     "one), or give rdma_devices"),
])
def test_nccl_env_refuses_a_sysfs_root_that_is_no_sysfs_tree(tmp_path, sysfs_root, message, check_mode):
    dest = tmp_path / "nccl.conf"
    where = dict(tmp=tmp_path, fixtures=FIXTURES)
    result = run_module(nccl_env, {"sysfs_root": sysfs_root.format(**where), "socket_ifname": "eth0",
                                   "dest": str(dest)}, check_mode=check_mode)
    assert result["failed"] and result["msg"] == message.format(**where)
    assert not dest.exists()   # before: profile socket, NCCL_IB_DISABLE=1 written


def test_nccl_env_still_reads_a_captured_sysfs_tree(tmp_path):
    dest = tmp_path / "nccl.conf"
    result = run_module(nccl_env, {"sysfs_root": os.path.join(FIXTURES, "sysfs", "roce_mlx5"), "socket_ifname": "eth0",
                                   "dest": str(dest)})
    assert result["changed"] and result["profile"] == "roce" and "NCCL_IB_GID_INDEX=3\n" in dest.read_text()


def test_nccl_env_refuses_a_procfs_root_that_is_not_there(tmp_path):
    dest = tmp_path / "nccl.conf"
    result = run_module(nccl_env, {"profile": "socket", "procfs_root": str(tmp_path / "proc"), "dest": str(dest)})
    assert result["failed"] and result["msg"] == ("procfs_root %s does not exist: expected the root of a proc tree "
                                                  "(/proc, or a copy of one), or give socket_ifname" % (tmp_path / "proc"))
    assert not dest.exists()


@pytest.mark.parametrize("check_mode", [False, True])
@pytest.mark.parametrize("mode, message", [
    ("banana", "mode must be octal (such as 0644) or symbolic (such as u=rw,go=r), got 'banana'"),
    ("u=banana", "mode must be octal (such as 0644) or symbolic (such as u=rw,go=r), got 'u=banana'"),
    (["0644"], "mode must be octal (such as 0644) or symbolic (such as u=rw,go=r), got ['0644']"),
    ("17777", "mode '17777' is not a permission: give 0000 to 7777 (octal), such as 0644"),
])
def test_nccl_env_checks_mode_before_it_writes(tmp_path, mode, message, check_mode):
    dest, script = tmp_path / "nccl.conf", tmp_path / "nccl.sh"
    dest.write_text("NCCL_DEBUG=INFO\n")
    result = run_module(nccl_env, {"profile": "socket", "socket_ifname": "eth0", "dest": str(dest),
                                   "profile_script": str(script), "mode": mode}, check_mode=check_mode)
    assert result["failed"] and result["msg"] == message
    # before: dest rewritten and the script created, then "mode must be in octal or symbolic form"
    assert dest.read_text() == "NCCL_DEBUG=INFO\n" and not script.exists()


@pytest.mark.parametrize("mode, expected", [("0600", 0o600), ("u=rw,go=r", 0o644), (0o640, 0o640)])
def test_nccl_env_takes_octal_and_symbolic_modes(tmp_path, mode, expected):
    dest = tmp_path / "nccl.conf"
    result = run_module(nccl_env, {"profile": "socket", "socket_ifname": "eth0", "dest": str(dest), "mode": mode})
    assert result["changed"] and os.stat(str(dest)).st_mode & 0o7777 == expected


# -- slurm_job ------------------------------------------------------------------------------------

@pytest.mark.parametrize("job_id", [
    u"\u00b2",            # superscript two: str.isdigit() is True
    u"\u0664\u0667",      # Arabic-Indic 47: int() reads it
    "0", "4294967294", "99999999999", "12_3", "1+0", "-5",
])
def test_slurm_job_refuses_a_job_id_that_is_not_a_slurm_job_id(node, job_id):
    node.tools(**dict((tool, "fake_slurm") for tool in SLURM_TOOLS))
    # The stand-in controller knows a running job by that name: before, it was read and then cancelled.
    (node.root / "jobs.json").write_text(json.dumps({job_id: {"name": "x", "script": "/tmp/x.sbatch", "state": "RUNNING",
                                                              "reason": "None"}}))
    result = run_module(slurm_job, {"job_id": job_id, "timeout": 1, "poll_interval": 1})
    assert result["failed"] and result["msg"] == (
        "job_id must be a Slurm job id, a whole number from 1 to 4294967293 in ASCII digits, got %r" % job_id)
    assert node.calls() == []
    assert json.loads((node.root / "jobs.json").read_text())[job_id]["state"] == "RUNNING"


@pytest.mark.parametrize("args, message", [
    ({"timeout": 10 ** 12}, "timeout must be at most 31536000 seconds (a year), got 1000000000000"),
    ({"poll_interval": 10 ** 12, "timeout": 10}, "poll_interval must be at most 86400 seconds (a day), got 1000000000000"),
])
def test_slurm_job_bounds_its_waits_before_any_command(node, args, message):
    node.tools(**dict((tool, "fake_slurm") for tool in SLURM_TOOLS))
    (node.root / "jobs.json").write_text(json.dumps({"7": {"name": "x", "script": "/tmp/x.sbatch", "state": "RUNNING",
                                                           "reason": "None"}}))
    result = run_module(slurm_job, dict(args, job_id="7"))   # before: OverflowError from time.sleep()
    assert result["failed"] and result["msg"] == message and node.calls() == []


def _record_with_nodelist(tmp_path, node_list):
    with open(os.path.join(FIXTURES, "slurm", "scontrol_job_completed.txt")) as handle:
        record = handle.read()
    assert "NodeList=gpufabric-slurm-node[1-2] " in record
    path = tmp_path / "scontrol_job.txt"
    path.write_text(record.replace("NodeList=gpufabric-slurm-node[1-2] ", "NodeList=%s " % node_list))
    return str(path)


@pytest.mark.parametrize("node_list, problem", [
    ("gpu[01-", "unbalanced '[' in hostlist 'gpu[01-'"),
    ("node[3-1]", "range '3-1' runs backwards in hostlist 'node[3-1]'"),
    ("a[1-99999999]", "hostlist 'a[1-99999999]' names more than 100000 hosts: refusing to expand it"),
])
def test_slurm_job_names_a_malformed_nodelist(node, tmp_path, node_list, problem):
    node.tools(scontrol="file:" + _record_with_nodelist(tmp_path, node_list), scancel="fail:1:must not run",
               sacct="fail:1:must not run")
    result = run_module(slurm_job, {"job_id": "1"})   # before: SlurmParseError raised out of the module
    assert result["failed"] and result["msg"] == (
        "scontrol show job printed a record this module cannot read (job 1: NodeList is not a Slurm hostlist: %s); "
        "the job was left as it is" % problem)
    assert result["record"]["NodeList"] == node_list and result["job_id"] == "1"
    assert [tool for tool, argv in node.calls()] == ["scontrol"]


def test_slurm_job_names_a_malformed_nodelist_from_accounting(node):
    # The sacct line of test_slurm's forgotten job, its NodeList cut short.
    path = node.root / "sacct.txt"
    path.write_text("41|nccl|COMPLETED|0:0|gpu-a[08-|00:03:10|gpu\n41.batch|batch|COMPLETED|0:0|gpu-a08|00:03:10|\n")
    node.tools(scontrol="fail:1:slurm_load_jobs error: Invalid job id specified", sacct="file:%s" % path)
    result = run_module(slurm_job, {"job_id": "41"})
    assert result["failed"] and result["msg"] == (
        "sacct printed a record this module cannot read (job 41: NodeList is not a Slurm hostlist: unbalanced '[' "
        "in hostlist 'gpu-a[08-'); the job was left as it is")


# -- rdma_devices: a LID that is not one ------------------------------------------------------------

@pytest.mark.parametrize("lid", ["0x" + "f" * 4000, "9" * 4000, "9" * 5000, u"\u00b2", "0x10000"])
def test_rdma_devices_reports_a_lid_that_is_not_one_as_unknown(tmp_path, lid):
    sysfs = tmp_path / "sys"
    shutil.copytree(os.path.join(FIXTURES, "sysfs", "ib_mlx5"), str(sysfs), symlinks=True)
    port = sysfs / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    (port / "lid").write_text(lid + "\n")
    # before: "Exceeds the limit (4300 digits) for integer string conversion" when the result was printed
    result = run_module(rdma_devices, {"sysfs_root": str(sysfs), "use_verbs": False})
    (device,) = result["ansible_facts"]["rdma_devices"]
    assert result.get("failed") is not True
    assert (device["ports"][0]["lid"], device["ports"][0]["sm_lid"], device["ports"][0]["state"]) == (None, 1, "ACTIVE")


# -- rdma_netdev: NetworkManager installed, not running ----------------------------------------------

def _netdev_host(node, nm_conf=None):
    sysfs = node.root / "sys"
    (sysfs / "class" / "net" / "eth0").mkdir(parents=True)
    etc = node.root / "etc"
    (etc / "NetworkManager" / "conf.d").mkdir(parents=True)
    (etc / "NetworkManager" / "NetworkManager.conf").write_text(DEBIAN_NM_CONF)
    if nm_conf:
        (etc / "NetworkManager" / "conf.d" / "90-site.conf").write_text(nm_conf)
    node.tools(ip="file:" + os.path.join(FIXTURES, "net", "ip_link_veth.json"), nmcli=NM_NOT_RUNNING,
               networkctl="fail:1:Failed to connect to bus: No such file or directory")
    return {"name": "eth0", "mtu": 9000, "sysfs_root": str(sysfs), "etc_root": str(etc)}


def test_rdma_netdev_warns_that_a_stopped_networkmanager_will_take_the_interface(node):
    args = _netdev_host(node)
    result = run_module(rdma_netdev, args, check_mode=True, diff=True)
    etc = args["etc_root"]
    rules = "%s/udev/rules.d/70-gpufabric-mtu.rules" % etc
    assert result["changed"] and result["mtu"]["manager"] == "udev" and result["mtu"]["persisted_in"] == rules
    assert result["warnings"] == [
        "eth0: NetworkManager is installed but not running, and nothing in %s/NetworkManager/ leaves eth0 unmanaged: "
        "when NetworkManager starts it manages eth0, and the MTU is then what the connection it activates there says "
        "(DHCP's, where the connection leaves it automatic) - the udev rule in %s keeps MTU 9000 only until then. "
        "To keep the MTU under NetworkManager, start it and run this again (the MTU then goes into the connection's "
        "802-3-ethernet.mtu); to keep NetworkManager away from eth0, add unmanaged-devices=interface-name:eth0 to "
        "[keyfile] in a file in %s/NetworkManager/conf.d/." % (etc, rules, etc)]
    assert not os.path.exists(rules)


def test_rdma_netdev_does_not_warn_for_an_interface_networkmanager_leaves_alone(node):
    args = _netdev_host(node, nm_conf="[keyfile]\nunmanaged-devices=interface-name:eth0\n")
    result = run_module(rdma_netdev, args, check_mode=True)
    assert result["mtu"]["manager"] == "udev" and result["warnings"] == []


def test_rdma_netdev_with_networkmanager_asked_for_but_stopped_says_so(node):
    args = _netdev_host(node)
    result = run_module(rdma_netdev, dict(args, manager="networkmanager"), check_mode=True)
    assert result["failed"] and result["msg"] == (
        "manager networkmanager: NetworkManager is installed but not running, so it has no connection on eth0 to "
        "keep the MTU in: start it and run this again")
