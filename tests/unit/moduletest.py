"""Run a collection module's main() in this process, the way Ansible would hand it its arguments.

``run_module(gpu_facts, {...}, check_mode=True)`` -> the module's result dict (what it printed as JSON),
whether it ended in exit_json or fail_json. Stub tools (tests/stubs) go on PATH with ``stub_bin``.
"""

import contextlib
import io
import json
import os

from unittest import mock

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

STUBS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "stubs"))


def _forget_warnings():
    """Ansible keeps warnings for the process; one module run must not see the last one's."""
    from ansible.module_utils.common import warnings
    for name in ("_global_warnings", "_global_deprecations"):
        store = getattr(warnings, name, None)
        if store is not None:
            store.clear()


def run_module(module, args, check_mode=False, diff=False):
    """The module's result; result['warnings'] holds the text of each module.warn() call."""
    _forget_warnings()
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    out = io.StringIO()
    warned = []
    original = basic.AnsibleModule.warn

    def warn(self, warning, *more, **kwargs):
        warned.append(warning)
        return original(self, warning, *more, **kwargs)
    with patch_module_args(args), contextlib.redirect_stdout(out), mock.patch.object(basic.AnsibleModule, "warn", warn):
        try:
            module.main()
        except SystemExit:
            pass
    text = out.getvalue()
    result = json.loads(text[text.find("{"):])
    result["warnings"] = warned
    return result


def stub_bin(directory, tools):
    """A directory of links: {name: 'misbehave' | 'fake_slurm'} -> the directory's path (put it first on PATH)."""
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    for name, program in tools.items():
        link = os.path.join(directory, name)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(os.path.join(STUBS, program + ".py"), link)
    return directory


def stub_path(tmp_path, monkeypatch):
    """A node whose tools will be stubs: tmp_path/bin first on PATH, the stubs' call log and Slurm state in
    tmp_path. Returns the bin directory for stub_bin()."""
    bindir = tmp_path / "bin"
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    monkeypatch.setenv("STUB_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("STUB_SLURM_DIR", str(tmp_path))
    return bindir


def calls(log_path):
    """The stub calls logged to STUB_LOG: [(tool, argv), ...]."""
    if not os.path.exists(str(log_path)):
        return []
    with open(str(log_path)) as handle:
        return [(entry["tool"], entry["argv"]) for entry in map(json.loads, handle)]


def every_task(tasks):
    """Every task of a task list as YAML loads it, those inside block, rescue and always too, in order."""
    for task in tasks or []:
        if isinstance(task, dict):
            yield task
            for key in ("block", "rescue", "always"):
                yield from every_task(task.get(key))


class _Captured(BaseException):
    pass


def argument_spec(module):
    """The argument_spec a module's main() gives AnsibleModule, taken before anything runs."""
    def capture(*args, **kwargs):
        raise _Captured(kwargs["argument_spec"])
    with mock.patch.object(module, "AnsibleModule", side_effect=capture):
        try:
            module.main()
        except _Captured as caught:
            return caught.args[0]
    raise AssertionError("%s's main() did not make an AnsibleModule" % module.__name__)
