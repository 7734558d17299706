"""A `meta: flush_handlers` task prints its header once per host with nothing under it, named or not ("TASK [Reload
what changed]", "TASK [ansible.builtin.meta]"), on every run (issue 52, point 10: rdma_drivers' was the first seen;
fleet_monitoring, remediator and topology had one each). No role flushes its handlers: the remediator restarts its
decider by a task of its own where the wait for it follows, and fleet_monitoring and topology write their reports
before the changes their handlers apply, so nothing of the role runs between a change and its handler."""

import glob
import os

import yaml

from moduletest import every_task

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _flushes(path):
    with open(path, encoding="utf-8") as handle:
        return [task.get("name", "(no name)") for task in every_task(yaml.safe_load(handle))
                if str(task.get("ansible.builtin.meta", task.get("meta", ""))).strip() == "flush_handlers"]


def test_no_role_flushes_its_handlers():
    found = dict((os.path.relpath(path, ROOT), _flushes(path))
                 for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))))
    assert dict((path, names) for path, names in found.items() if names) == {}
    assert len(found) > 50


def test_the_check_finds_a_flush_in_a_block(tmp_path):
    (tmp_path / "t.yml").write_text("- name: b\n  block:\n    - ansible.builtin.meta: flush_handlers\n"
                                    "- name: Reload\n  meta: flush_handlers\n")
    assert _flushes(str(tmp_path / "t.yml")) == ["(no name)", "Reload"]


def test_the_decider_restarts_before_the_wait_for_it():
    with open(os.path.join(ROOT, "roles", "remediator", "tasks", "main.yml"), encoding="utf-8") as handle:
        names = [task.get("name") for task in every_task(yaml.safe_load(handle))]
    restart = names.index("Restart the decider when its code, configuration or unit changed")
    assert names.index("Install, enable and start the decider's service") < restart < names.index("Wait until the decider answers")
    assert not os.path.exists(os.path.join(ROOT, "roles", "remediator", "handlers", "main.yml"))
