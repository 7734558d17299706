"""No O(N^2) step at fleet scale (issue 42): a role's task runs on every host of its play, so a task that loops over
the play's hosts (or an inventory group), or scans hostvars with map('extract', hostvars, ...), on every host costs
N x N module runs or templating passes - a million at 1,000 nodes. Such work runs once (run_once, or add_host, which
Ansible runs once) or on one host; the few exceptions are named here with the reason they stay linear."""

import glob
import json
import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOSTS = re.compile(r"ansible_play_hosts|\bplay_hosts\b|ansible_play_batch|groups\[|groups\.")
EXTRACT = re.compile(r"map\(\s*['\"]extract['\"]\s*,\s*hostvars")
# Plays on one host: whatever they scan, they scan once.
ONE_HOST = re.compile(r"^localhost$|\[:1\]|\|\s*first\b|remediate_decider_host")
# (file, task name): why it stays linear.
EXCEPTIONS = {
    ("roles/nccl_tune/tasks/run.yml", "Write the plan of the phase {{ __nccl_tune_phase.name }}"):
        "main.yml includes run.yml on the launcher only (the first of nccl_tune_hosts)",
    ("roles/nccl_tune/tasks/measure.yml", "Derive what the hardware carries for each collective"):
        "main.yml includes measure.yml on the launcher only in mpirun mode; in single mode each host reads its own record",
    ("roles/nccl_tests/tasks/main.yml", "Judge and report"):
        "the include's variables are templated by the judge's tasks (report.yml), each of which runs once",
    ("playbooks/remediate.yml", "Run nccl-tests over each drained node and the peer, one pair after another"):
        "the nodes the decider names to certify are few (its rate limit), and they share the one peer",
    ("playbooks/remediate.yml", "Check the rack's IMEX domain and run nccl-tests across it"):
        "the racks the decider names to certify are few (a rack drain is one action against its rate limit), and the "
        "play's hosts are their nodes: the loop groups them once per rack",
}


def _once(task):
    return task.get("run_once") is True or str(task.get("run_once")).lower() == "true"


def _tasks(tasks, once=False):
    """(task, runs once) for every task, blocks opened; a block's run_once holds for its tasks."""
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        here = once or _once(task)
        if "block" in task:
            for key in ("block", "rescue", "always"):
                yield from _tasks(task.get(key), here)
            continue
        yield task, here


def _per_host_scans(path, tasks):
    found = []
    for task, once in _tasks(tasks):
        if once or "ansible.builtin.add_host" in task or "add_host" in task:
            continue
        loop = task.get("loop") if "loop" in task else next((v for k, v in task.items() if k.startswith("with_")), None)
        what = None
        if loop is not None and HOSTS.search(str(loop)):
            what = "loops over the play's hosts on every host"
        elif EXTRACT.search(json.dumps(task, default=str)):
            what = "scans hostvars on every host"
        if what and (path, task.get("name")) not in EXCEPTIONS:
            found.append("%s: %r %s" % (path, task.get("name"), what))
    return found


def _relative(path):
    return os.path.relpath(path, ROOT)


def test_no_role_task_scans_every_host_on_every_host():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))):
        with open(path) as handle:
            found += _per_host_scans(_relative(path), yaml.safe_load(handle))
    assert not found, "O(N^2) steps (run them once, with run_once or on one host):\n" + "\n".join(found)


def test_no_play_on_many_hosts_scans_every_host_on_every_host():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))):
        with open(path) as handle:
            plays = yaml.safe_load(handle) or []
        for play in plays:
            if isinstance(play, dict) and "hosts" in play and not ONE_HOST.search(str(play["hosts"]).strip()):
                found += _per_host_scans(_relative(path), play.get("tasks"))
    assert not found, "O(N^2) steps (run them once, with run_once or on one host):\n" + "\n".join(found)


@pytest.mark.parametrize("task, message", [
    ({"name": "authorize", "ansible.posix.authorized_key": {"key": "{{ hostvars[item].k }}"},
      "loop": "{{ ansible_play_hosts }}"}, "loops over the play's hosts on every host"),
    ({"name": "peers", "ansible.builtin.set_fact": {"p": "{{ groups['all'] | map('extract', hostvars) | list }}"}},
     "scans hostvars on every host"),
])
def test_the_check_finds_the_two_shapes_and_passes_them_once(task, message):
    assert _per_host_scans("x.yml", [task]) == ["x.yml: %r %s" % (task["name"], message)]
    assert _per_host_scans("x.yml", [dict(task, run_once=True)]) == []
    assert _per_host_scans("x.yml", [{"block": [task], "run_once": True}]) == []
