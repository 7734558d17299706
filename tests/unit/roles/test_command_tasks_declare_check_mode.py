"""Every command, shell, raw and script task of the roles and playbooks says what it does in check mode.

Ansible skips these modules in check mode unless told otherwise, and a task after it that reads the
skipped result then breaks, or plans from nothing. So each such task must have ``changed_when`` and
one of: ``check_mode: false`` (a read-only probe that runs in check mode too; it must then also say
``changed_when: false``), ``creates``/``removes`` (Ansible reports the change without running it; these
need no changed_when),
``ansible_check_mode`` in its ``when``, or a comment in or just above the task that says what check
mode does to it ("check mode ...").
"""

import glob
import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
COMMANDS = {"ansible.builtin.command", "ansible.builtin.shell", "ansible.builtin.raw", "ansible.builtin.script",
            "command", "shell", "raw", "script"}
FILES = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
               + glob.glob(os.path.join(ROOT, "roles", "*", "handlers", "*.yml"))
               + glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if any(key in COMMANDS for key in node):
            yield node
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            if key in node:
                yield from _tasks(node[key])


def _text_of(lines, name):
    """The lines of the task named name, with the three lines above it."""
    for index, line in enumerate(lines):
        if re.match(r"^\s*-?\s*name:\s*['\"]?%s['\"]?\s*(#.*)?$" % re.escape(name), line):
            indent = len(line) - len(line.lstrip(" -"))
            end = index + 1
            while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip(" ")) >= indent
                                        and not re.match(r"^\s*- ", lines[end][:indent])):
                end += 1
            return "\n".join(lines[max(0, index - 3):end])
    return ""


CASES = []
for path in FILES:
    with open(path) as handle:
        text = handle.read()
    for task in _tasks(yaml.safe_load(text)):
        CASES.append((os.path.relpath(path, ROOT), task.get("name", "(unnamed)"), task, text))


def test_the_audit_sees_the_tasks():
    names = {name for path, name, task, text in CASES}
    assert len(CASES) >= 20
    assert {"Run ibv_devinfo", "Read the installed MLNX_OFED version", "Run the single-node tests (one process, -g <GPUs>)"} <= names


@pytest.mark.parametrize("path, name, task, text", CASES, ids=["%s: %s" % (c[0], c[1]) for c in CASES])
def test_command_task_declares_its_check_mode(path, name, task, text):
    module = next(key for key in task if key in COMMANDS)
    params = task[module] if isinstance(task[module], dict) else {}
    args = task.get("args") or {}
    creates = "creates" in params or "removes" in params or "creates" in args or "removes" in args
    assert "changed_when" in task or creates, "%s: %s has no changed_when (nor creates/removes)" % (path, name)
    if task.get("check_mode") is False:
        assert task["changed_when"] is False, "%s: %s runs in check mode, so it must change nothing" % (path, name)
        return
    declared = (creates or "ansible_check_mode" in str(task.get("when", ""))
                or re.search(r"#.*check mode", _text_of(text.splitlines(), name), re.I))
    assert declared, "%s: %s does not say what check mode does to it" % (path, name)
