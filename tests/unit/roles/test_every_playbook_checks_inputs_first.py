"""Every playbook that changes anything (and discover.yml) checks every input of the roles it runs before its first
change, in one preflight (roles/_common/tasks/preflight.yml) - issue 52, point 6: discover.yml and configure.yml run
alone had none (a gpufabric_known_good typo failed after discovery had written every node's record; configure.yml
installed drivers before it read rdma_network_mtu=abc), nor did tune, health, remediate, monitoring, kubernetes,
topology and hang; slow (issue 57) checks them from its start.

Read from the playbooks themselves: the roles a playbook runs (its plays' roles, include_role/import_role, the task
files it includes, the playbooks it imports), and the roles its leading preflight plays on localhost name."""

import glob
import os
import re
import sys

import yaml

from moduletest import every_task

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLAYBOOKS = os.path.join(ROOT, "playbooks")
ROLES = set(os.listdir(os.path.join(ROOT, "roles")))
# The container lab's own playbook: docker on the controller, stand-ins on its containers; none of the collection's
# roles, and its one input (lab_state) is asserted before anything.
NOT_CHECKED = {"lab.yml"}


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or []


def _role_of(task):
    for key in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
        if key in task:
            return str(task[key]["name"]).replace("gpufabric.rdma.", ""), task[key].get("tasks_from")
    return None, None


def _plays(name):
    """The plays of a collection playbook in the order they run, imports expanded."""
    plays = []
    for play in _load(os.path.join(PLAYBOOKS, name)):
        imported = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
        if imported:
            plays += _plays(imported.replace("gpufabric.rdma.", "").replace(".yml", "") + ".yml")
        else:
            plays.append(play)
    return plays


def _roles_run(play):
    roles = set(str(r["role"] if isinstance(r, dict) else r).replace("gpufabric.rdma.", "") for r in play.get("roles") or [])
    files = []
    for task in every_task((play.get("pre_tasks") or []) + (play.get("tasks") or []) + (play.get("post_tasks") or [])):
        role, dummy = _role_of(task)
        if role:
            roles.add(role)
        for key in ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks"):
            if isinstance(task.get(key), str) and task[key].startswith("tasks/"):
                files.append(task[key])
    for path in files:
        roles |= _roles_run({"tasks": _load(os.path.join(PLAYBOOKS, path))})
    return roles


def _preflight_roles(play):
    """The roles a play's preflight names (a templated list: every role it may name), or None without a preflight."""
    for task in every_task(play.get("tasks")):
        role, tasks_from = _role_of(task)
        if role == "_common" and tasks_from == "preflight":
            named = task.get("vars", {}).get("preflight_roles")
            return set(named) if isinstance(named, list) else set(re.findall(r"'([a-z_]+)'", str(named)))
    return None


def unchecked(name):
    """The roles the playbook runs that no preflight before its first change names."""
    plays = _plays(name)
    checked = set()
    for play in plays:
        named = _preflight_roles(play) if play.get("hosts") == "localhost" and not play.get("roles") else None
        if named is None:
            break
        checked |= named
    run = set()
    for play in plays:
        run |= _roles_run(play)
    return sorted(run - checked)


def test_every_playbook_checks_the_inputs_of_every_role_it_runs_first():
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(PLAYBOOKS, "*.yml")))
    found = dict((name, unchecked(name)) for name in names if name not in NOT_CHECKED)
    assert dict((name, roles) for name, roles in found.items() if roles) == {}
    assert len(found) == 13 and all(set(unchecked(name)) <= ROLES for name in found)


def test_the_check_sees_a_role_run_without_its_preflight(tmp_path, monkeypatch):
    (tmp_path / "a.yml").write_text(
        "- hosts: localhost\n  tasks:\n    - ansible.builtin.include_role: {name: gpufabric.rdma._common, tasks_from: preflight}\n"
        "      vars: {preflight_roles: \"{{ ['_common'] + (['nccl_tests'] if x else []) }}\"}\n"
        "- ansible.builtin.import_playbook: b.yml\n")
    (tmp_path / "b.yml").write_text("- hosts: all\n  roles: [gpufabric.rdma.nccl_tests, gpufabric.rdma.perftest]\n"
                                    "  tasks:\n    - ansible.builtin.include_role: {name: gpufabric.rdma._common}\n")
    monkeypatch.setattr(sys.modules[__name__], "PLAYBOOKS", str(tmp_path))
    assert unchecked("a.yml") == ["perftest"]
