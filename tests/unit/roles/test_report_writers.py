"""One way to write a report: every role and playbook that writes files on the controller does it through the
internal role report_files (its directory made, a relative path taken from where the run started, the files
written in check mode too and never counted as a change). This test walks every task file."""

import glob
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
WRITERS = ("ansible.builtin.copy", "ansible.builtin.template", "ansible.builtin.file", "copy", "template", "file")
# Files on the controller that are not reports: the site's own baselines file, written on purpose with
# -e gpufabric_record_baseline=true.
# Controller writes that are not reports: the site's baseline record, and the temporary archive program_archive made
# for one install (removed once unpacked, whatever happened).
NOT_REPORTS = {("roles/nccl_tests/tasks/report.yml", "Record this run as the site's baseline (gpufabric_record_baseline=true)"),
               ("roles/_common/tasks/program_install.yml", "Remove the archive from the controller")}


def _tasks(items, delegated=False):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        here = delegated or item.get("delegate_to") in ("localhost", "127.0.0.1")
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks"):
            yield from _tasks(item.get(key), here)
        yield item, here


def _files():
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")) +
                       glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))):
        rel = os.path.relpath(path, ROOT)
        if rel.startswith("roles/_common/tasks/report_files"):
            continue
        with open(path) as handle:
            data = yaml.safe_load(handle)
        plays = data if isinstance(data, list) else []
        if rel.startswith("playbooks/"):
            for play in plays:
                if isinstance(play, dict) and play.get("connection") == "local" or (
                        isinstance(play, dict) and play.get("hosts") == "localhost"):
                    for task, ignored in _tasks([{"block": play.get(k) or []} for k in ("tasks", "pre_tasks", "post_tasks")],
                                                True):
                        yield rel, task, True
                elif isinstance(play, dict):
                    for task, delegated in _tasks([{"block": play.get(k) or []} for k in ("tasks", "pre_tasks", "post_tasks")]):
                        yield rel, task, delegated
        else:
            for task, delegated in _tasks(plays):
                yield rel, task, delegated


def test_no_role_or_playbook_writes_controller_files_but_through_report_files():
    offenders = []
    for rel, task, on_controller in _files():
        module = next((k for k in task if k in WRITERS), None)
        if module and on_controller and (rel, task.get("name")) not in NOT_REPORTS:
            offenders.append("%s: %s" % (rel, task.get("name")))
    assert offenders == []


def test_every_role_with_a_report_directory_writes_through_report_files():
    for defaults in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")):
        role = defaults.split(os.sep)[-3]
        with open(defaults) as handle:
            variables = yaml.safe_load(handle) or {}
        dirs = [name for name in variables if name.endswith(("_report_dir", "_manifest_dir")) and name.startswith(role + "_")]
        if not dirs or role == "_common":
            continue
        text = "".join(open(p).read() for p in glob.glob(os.path.join(ROOT, "roles", role, "tasks", "*.yml")))
        assert "tasks_from: report_files" in text, role
