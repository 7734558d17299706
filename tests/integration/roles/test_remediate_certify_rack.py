"""remediate.yml's rack check (playbooks/tasks/certify_rack.yml, what it runs for a rack the decider drained as one),
run for real by ansible-playbook on this machine: each of the rack's nodes reads its IMEX domain through a stand-in
nvidia-imex-ctl that prints a real capture (aws-parallelcluster's healthy 2-node `-N -j`, and its unconfigured DOWN
one; tests/unit/fixtures/README.md), judged against the rack's node count, and the certificate made of it passes the
imex check only when the domain is UP; a tool that is missing, hangs or prints something else is 'not run' in its own
words, never a pass. The nccl-tests run across the rack is the nccl_tests role's (its own tests); here it runs none."""

import json
import os
import subprocess
import sys

import pytest
from paths import ROOT

IMEX = os.path.join(ROOT, "tests", "unit", "fixtures", "nvidia_imex")
TASKS = os.path.join(ROOT, "playbooks", "tasks", "certify_rack.yml")

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")

PLAY = """
- hosts: rack
  gather_facts: false
  tasks:
    - name: Check the rack
      ansible.builtin.include_tasks: "%(tasks)s"
      vars:
        certify_rack_name: "1820000000001"
        certify_rack_hosts: [t01, t02]
        certify_rack_runs: []
        certify_rack_imex_ctl: "%(tool)s"
        certify_rack_imex_timeout: 2
    - name: Make the certificate
      ansible.builtin.copy:
        dest: "%(out)s/{{ inventory_hostname }}.json"
        content: >-
          {{ {'imex': certify_rack_imex, 'runs': certify_rack_results,
              'certificate': none | gpufabric.rdma.return_certificate(imex=certify_rack_imex,
                 nvlink_domain=certify_rack_results['1820000000001'], rack='1820000000001',
                 measured_at=1795526184)} | to_json }}
        mode: "0644"
"""


def _run(tmp_path, script, tool=None):
    if tool is None:
        tool = tmp_path / "nvidia-imex-ctl"
        tool.write_text("#!/bin/sh\n" + script)
        tool.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "play.yml").write_text(PLAY % {"tool": tool, "out": out, "tasks": TASKS})
    (tmp_path / "inventory.yml").write_text(json.dumps({"all": {"children": {"rack": {"hosts": dict(
        (h, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}) for h in ("t01", "t02"))}}}}))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml")],
                          capture_output=True, text=True, check=False, timeout=180,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return dict((h, json.loads((out / ("%s.json" % h)).read_text())) for h in ("t01", "t02"))


def _imex_check(found):
    return [c for c in found["certificate"]["checks"] if c["name"] == "imex"][0]


def test_an_imex_domain_up_with_every_node_ready_certifies_imex(tmp_path):
    found = _run(tmp_path, "cat %s\n" % os.path.join(IMEX, "ctl_N_j_2node_gb200_up_pcluster.json"))
    for host in ("t01", "t02"):
        assert found[host]["imex"] == {"domain_state": "UP", "findings": [], "not_run": None}
        assert _imex_check(found[host]) == {"name": "imex", "status": "pass", "detail": "domain UP"}
        # No run across the rack here: the NVLink-domain check is not run, and does not certify.
        assert found[host]["runs"] == {"1820000000001": []}
        assert [c["status"] for c in found[host]["certificate"]["checks"] if c["name"] == "nvlink_domain"] == ["not run"]


def test_an_unconfigured_imex_domain_down_fails_the_check(tmp_path):
    found = _run(tmp_path, "cat %s\n" % os.path.join(IMEX, "ctl_N_j_unconfigured_down_pcluster.json"))
    check = _imex_check(found["t01"])
    assert check["status"] == "fail" and check["detail"].startswith("domain DOWN: ")


@pytest.mark.parametrize("script, words", [
    ("sleep 30\n", "nvidia-imex-ctl -N -j did not answer within 2 s"),
    ("echo 'connection refused' >&2; exit 3\n", "nvidia-imex-ctl -N -j exited 3: connection refused"),
    ("echo 'Usage: something else entirely'\n", "nvidia-imex-ctl -N -j printed what is not IMEX's node list"),
])
def test_an_imex_tool_that_hangs_fails_or_prints_something_else_is_not_run(tmp_path, script, words):
    found = _run(tmp_path, script)
    check = _imex_check(found["t02"])
    assert check["status"] == "not run" and check["detail"].startswith(words), check


def test_a_missing_imex_tool_is_not_run_saying_so(tmp_path):
    missing = str(tmp_path / "nowhere" / "nvidia-imex-ctl")
    found = _run(tmp_path, None, tool=missing)
    assert _imex_check(found["t01"]) == {"name": "imex", "status": "not run", "detail": "%s is not installed" % missing}


def test_remediate_yml_loops_over_the_racks_it_drained_each_with_its_nodes(tmp_path):
    """The rack play's own loop, as remediate.yml writes it, over three hosts of two racks: before, its label
    (``__remediate_rack.grouper``) failed on ansible-core 2.19, which hands groupby's groups to the loop as lists, and
    no rack was ever certified ("object of type 'list' has no attribute 'grouper'")."""
    import yaml
    with open(os.path.join(ROOT, "playbooks", "remediate.yml")) as handle:
        plays = yaml.safe_load(handle)
    (task,) = [p for p in plays if p.get("hosts") == "gpufabric_certify_rack"][0]["tasks"]
    said = tmp_path / "said"
    said.mkdir()
    play = [{"hosts": "all", "gather_facts": False, "tasks": [{
        "name": "Name each rack and its nodes", "loop": task["loop"], "loop_control": task["loop_control"],
        "vars": dict((k, task["vars"][k]) for k in ("certify_rack_name", "certify_rack_hosts")),
        "ansible.builtin.copy": {"dest": "%s/{{ certify_rack_name }}.json" % said, "mode": "0644",
                                 "content": "{{ certify_rack_hosts | to_json }}"}}]}]
    (tmp_path / "play.yml").write_text(json.dumps(play))
    racks = {"t01": "1820000000001", "t02": "1820000000001", "t03": "1820000000002"}
    (tmp_path / "inventory.yml").write_text(json.dumps({"all": {"hosts": dict(
        (h, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "__remediate_certify_rack": r})
        for h, r in racks.items())}}))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml")],
                          capture_output=True, text=True, check=False, timeout=180,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "rack 1820000000001" in proc.stdout and "rack 1820000000002" in proc.stdout, proc.stdout[-3000:]
    assert dict((p.stem, json.loads(p.read_text())) for p in said.iterdir()) == {
        "1820000000001": ["t01", "t02"], "1820000000002": ["t03"]}
