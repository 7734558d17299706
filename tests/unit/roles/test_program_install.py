"""The monitor, decider and relay install their code through one role (program_install). In check or diff mode it
says which files would be installed or replaced (path, size, SHA-256) and never prints their source: `health
--check --diff`, the README's first health command, printed 12,043 lines, 11,310 of them our own Python as diffs."""

import hashlib
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: gpufabric.rdma.program_install
      vars:
        program_install_dir: {dir}
        program_install_modules: [text, numbers]
        program_install_program: roles/health_monitor/files/gpufabric_health_monitor.py
        program_install_name: monitor.py
"""


def _play(tmp_path, *extra):
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": {"n1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (tmp_path / "play.yml").write_text(PLAY.format(dir=tmp_path / "lib"))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml"),
                           "-e", "ansible_become=false", *extra], capture_output=True, text=True, check=False,
                          timeout=300, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc.stdout


def test_check_diff_names_each_file_with_size_and_checksum_and_shows_no_source(tmp_path, monkeypatch):
    out = _play(tmp_path, "--check", "--diff", "-e", "ansible_user_id=root")
    program = os.path.join(ROOT, "roles", "health_monitor", "files", "gpufabric_health_monitor.py")
    with open(program, "rb") as handle:
        data = handle.read()
    assert "roles/health_monitor/files/gpufabric_health_monitor.py | %d | %s" % (
        len(data), hashlib.sha256(data).hexdigest()) in out
    assert "plugins/module_utils/text.py | " in out and "plugins/module_utils/numbers.py | " in out
    assert "would install or replace in %s" % (tmp_path / "lib") in out
    assert "def main" not in out and "import " not in out
    assert len(out.splitlines()) < 120
    assert not (tmp_path / "lib").exists()   # check mode wrote nothing
