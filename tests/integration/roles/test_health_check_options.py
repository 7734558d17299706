"""The node health check's options are declared once, in the registry (module_utils/node/checks/all.py, issue 54).
The health_monitor role keeps no list of them: tasks/checks.yml hands node_health the mapping whole (its option
checks), and node_health refuses an unknown name naming the known ones. Before, the role kept three lists beside the
registry (vars/main.yml, the task naming each option, its argument spec), each one more edit for a new check's option
(issue 52 item 2: `health_monitor_checks: {dcgm_level: 1}`, as the README shows it, was refused - "unknown:
dcgm_level" - because the role's list lacked dcgm_level and dcgmi_path). Here: no list comes back, the argument spec
names only real options, and the task passes the mapping - converted, defaulted, without a warning."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from unittest import mock

import pytest
import yaml

from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import all as registry
from ansible_collections.gpufabric.rdma.plugins.modules import node_health
from moduletest import argument_spec
from paths import ROOT

ROLE = os.path.join(ROOT, "roles", "health_monitor")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
# Options of the module call only, not checks: the node's name in the report, and the checks' options in one mapping.
NOT_CHECKS = {"node_name", "checks"}
MODULE = "gpufabric.rdma.node_health#module:"


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _lists_of_options(value, where):
    """Every list in ``value`` (vars, tasks, ...) that names two or more of the checks' options: a list kept beside the
    registry."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _lists_of_options(item, "%s.%s" % (where, key))]
    if isinstance(value, list):
        named = [item for item in value if isinstance(item, str) and item in registry.DEFAULTS]
        found = [where] if len(named) >= 2 else []
        return found + [f for i, item in enumerate(value) for f in _lists_of_options(item, "%s[%d]" % (where, i))]
    return []


def _role_lists():
    found = []
    for path in sorted(glob.glob(os.path.join(ROLE, "*", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            found += _lists_of_options(yaml.safe_load(handle), os.path.relpath(path, ROOT))
    return found


def _node_health_calls():
    calls = []
    for path in sorted(glob.glob(os.path.join(ROLE, "tasks", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            calls += [t["gpufabric.rdma.node_health"] for t in yaml.safe_load(handle) or [] if "gpufabric.rdma.node_health" in t]
    return calls


def _mentioned_options():
    description = _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]["health_monitor_checks"]["description"]
    text = " ".join(description)
    return text, re.findall(r"O\(" + re.escape(MODULE) + r"([a-z_]+)", text)


def _not_options(names):
    return sorted(set(names) - set(registry.DEFAULTS) - NOT_CHECKS)


def test_the_role_keeps_no_list_of_the_options_and_passes_the_mapping_whole():
    assert _role_lists() == [], "the registry is the one list of the checks' options (module_utils/node/checks/all.py)"
    assert [set(call) for call in _node_health_calls()] == [{"checks", "node_name"}]
    assert set(argument_spec(node_health)) - NOT_CHECKS == set(registry.DEFAULTS)


def test_a_list_of_the_options_that_comes_back_fails():
    assert _lists_of_options({"__health_monitor_check_options": ["expected_gpu_count", "dcgm_level"]}, "vars") == [
        "vars.__health_monitor_check_options"]
    assert _lists_of_options([{"assert": {"that": ["x"]}}, {"loop": ["dcgm_level", "dcgmi_path", "x"]}], "tasks") == [
        "tasks[1].loop"]


def test_the_argument_spec_points_to_ansible_doc_and_names_only_real_options():
    text, mentioned = _mentioned_options()
    assert "ansible-doc gpufabric.rdma.node_health" in text
    assert len(mentioned) >= 5 and _not_options(mentioned) == []
    assert not re.search(r"C\((" + "|".join(registry.DEFAULTS) + r")\b", text), "name an option as O(%s...)" % MODULE
    with mock.patch.dict(registry.DEFAULTS):
        del registry.DEFAULTS["dcgm_level"]
        assert _not_options(mentioned) == ["dcgm_level"]


def _node(tmp_path):
    """The 8x H200 capture and the seed 002 eRDMA sysfs tree (real), as tests/integration/plugins/modules/test_node_health.py has it."""
    sysfs = tmp_path / "sys"
    shutil.copytree(os.path.join(FIXTURES, "sysfs", "erdma"), str(sysfs))
    (sysfs / "class" / "net" / "eth1" / "mtu").write_text("1500\n")
    (tmp_path / "capture").mkdir()
    shutil.copy(os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml"), str(tmp_path / "capture" / "q.xml"))
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "modules").write_text("nvidia_peermem 16384 0 - Live 0x0\nib_core 462848 9 - Live 0x0\n")
    return {"sysfs_root": str(sysfs), "procfs_root": str(tmp_path / "proc"), "expected_rdma_devices": "1",
            "nvidia_smi_path": os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi"),
            "kernel_log": os.path.join(FIXTURES, "kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"), "xid_ignore": [13, "109"]}


PLAY = """
- name: The role's checks from a mapping
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the checks of the mapping
      ansible.builtin.include_role:
        name: gpufabric.rdma.health_monitor
        tasks_from: checks.yml
      vars:
        health_monitor_run_checks: "{{ given_checks }}"

    - name: Write what it found
      ansible.builtin.copy:
        content: "{{ health_monitor_checks_result | to_json }}"
        dest: "{{ result_file }}"
        mode: "0600"
"""


@pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                    reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
def test_the_task_passes_the_mapping_converted_with_the_groups_gpu_count_and_no_warning(tmp_path):
    """checks: "{{ mapping }}" is one option holding a dict, not a template for the task's whole arguments (which
    Ansible warns about): no warning. "8" is 8; unset, the GPUs expected are the group's gpufabric_expected_gpu_count."""
    node = _node(tmp_path)
    (tmp_path / "play.yml").write_text(PLAY)
    cases = {"given": ({"expected_gpu_count": "8"}, None), "the group's": ({}, 9), "the mapping's over the group's": (
        {"expected_gpu_count": 8}, 9), "none": ({}, None), "an unknown name": ({"expected_gpus": 8}, None)}
    results = {}
    for name, (checks, group) in cases.items():
        extra = {"given_checks": dict(node, **checks), "result_file": str(tmp_path / "result.json"),
                 "ansible_python_interpreter": sys.executable}
        if group is not None:
            extra["gpufabric_expected_gpu_count"] = group
        env = dict(os.environ, NVIDIA_SMI_CAPTURE=str(tmp_path / "capture"), ANSIBLE_NOCOLOR="1")
        proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", json.dumps(extra),
                               str(tmp_path / "play.yml")], capture_output=True, text=True, env=env, timeout=300, check=False)
        assert "[WARNING]" not in proc.stdout + proc.stderr, (name, proc.stdout[-3000:] + proc.stderr[-2000:])
        if proc.returncode == 0:
            results[name] = json.loads((tmp_path / "result.json").read_text())
            (tmp_path / "result.json").unlink()
        else:
            results[name] = proc.stdout
    assert (results["given"]["healthy"], results["given"]["findings"]) == (True, []), results["given"]
    assert [f["detail"] for f in results["the group's"]["findings"]] == ["8 of 9 expected GPUs found"]
    assert results["the mapping's over the group's"]["findings"] == [] == results["none"]["findings"]
    assert "checks: unknown check option(s): expected_gpus (known: command_timeout, " in results["an unknown name"]
