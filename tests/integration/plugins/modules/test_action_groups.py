"""meta/runtime.yml's action group `commands`: module_defaults {group/gpufabric.rdma.commands: {command_timeout: N}} sets
the time limit of every command the collection's modules run. The group is exactly the modules that take
command_timeout (a group default that a module does not take fails that module), and a real ansible-playbook
run shows a module in it picking the default up."""

import glob
import importlib
import json
import os
import subprocess
import sys
from unittest import mock

import pytest
import yaml
from ansible.module_utils import basic
from paths import ROOT

MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))
                 if not p.endswith("__init__.py"))
with open(os.path.join(ROOT, "meta", "runtime.yml")) as _handle:
    RUNTIME = yaml.safe_load(_handle)


class _Captured(BaseException):
    """Raised in place of AnsibleModule.__init__ once the argument spec is seen (never caught by the module)."""


def accepted_options(name):
    """The options a module's AnsibleModule is built with: what it really accepts, not what its docs say."""
    module = importlib.import_module("ansible_collections.gpufabric.rdma.plugins.modules." + name)
    seen = {}

    def capture(self, argument_spec=None, *args, **kwargs):
        seen.update(argument_spec or {})
        raise _Captured()
    with mock.patch.object(basic.AnsibleModule, "__init__", capture):
        with pytest.raises(_Captured):
            module.main()
    return set(seen)


def test_the_group_is_every_module_that_takes_command_timeout():
    group = RUNTIME["action_groups"]["commands"]
    taking = [name for name in MODULES if "command_timeout" in accepted_options(name)]
    assert len(taking) >= 7, taking  # the check itself reads the modules' options
    assert sorted(group) == taking, "meta/runtime.yml action_groups.commands must list exactly these modules: %s" % taking
    assert len(set(group)) == len(group)


def _play(tmp_path, tasks):
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "module_defaults": {"group/gpufabric.rdma.commands": {"command_timeout": 1}},
        "tasks": tasks}], sort_keys=False))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")],
                          capture_output=True, text=True, timeout=300, env=env, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    return [task["hosts"]["localhost"] for task in tasks]


@pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                    reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
def test_a_play_sets_command_timeout_once_for_every_module(tmp_path):
    """nvidia-smi hangs for 5 s: under the group default it is killed after 1 s (the module's own default is 30 s);
    a task's own command_timeout still wins; a module outside the group is not handed an option it lacks."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nsleep 5\n")
    smi.chmod(0o755)
    kernel_log = tmp_path / "kern.log"
    kernel_log.write_text("[    0.000000] Linux version 6.1.0-18-amd64\n")
    (tmp_path / "nosys").mkdir()
    health = {"expected_gpu_count": 8, "kernel_log": str(kernel_log), "nvidia_smi_path": str(smi),
              "sysfs_root": str(tmp_path / "nosys"), "procfs_root": str(tmp_path / "nosys")}
    grouped, own, outside = _play(tmp_path, [
        {"name": "Check the node under the group's default", "gpufabric.rdma.node_health": health},
        {"name": "Check the node with its own limit", "gpufabric.rdma.node_health": dict(health, command_timeout=2)},
        {"name": "Compute the NCCL environment (no command_timeout option)",
         "gpufabric.rdma.nccl_env": {"profile": "auto", "rdma_devices": [], "socket_ifname": "eth0"},
         "check_mode": True},
    ])
    (found,) = [f for f in grouped["findings"] if f["check"] == "nvidia_smi"]
    assert found["severity"] == "critical" and "nvidia-smi did not answer within 1 s" in found["detail"], found
    (found,) = [f for f in own["findings"] if f["check"] == "nvidia_smi"]
    assert "nvidia-smi did not answer within 2 s" in found["detail"], found
    assert outside.get("failed") is not True and outside["profile"] == "socket", outside
