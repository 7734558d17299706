"""The monitor, decider and relay install their code through one role (program_install). In check or diff mode it
says which files would be installed or replaced (path, size, SHA-256) and never prints their source: `health
--check --diff`, the README's first health command, printed 12,043 lines, 11,310 of them our own Python as diffs."""

import hashlib
import json
import os
import re
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
        name: gpufabric.rdma._common
        tasks_from: program_install
      vars:
        program_install_dir: {dir}
        program_install_program: roles/health_monitor/files/gpufabric_health_monitor.py
        program_install_name: monitor.py
"""


def _play(tmp_path, *extra, suffix=""):
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": {"n1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (tmp_path / "play.yml").write_text(PLAY.format(dir=str(tmp_path / "lib") + suffix))
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
    assert "plugins/module_utils/common/text.py | " in out and "plugins/module_utils/common/numbers.py | " in out
    assert "would install or replace in %s" % (tmp_path / "lib") in out
    assert "def main" not in out and "import " not in out
    files = len(re.findall(r" \| \d+ \| [0-9a-f]{64}", out))
    assert files > 20 and len(out.splitlines()) < 8 * files + 40   # a few lines per file (its diff header), never its source
    assert not (tmp_path / "lib").exists()   # check mode wrote nothing


def test_it_installs_the_programs_import_closure_and_removes_code_it_no_longer_imports(tmp_path):
    """What is copied is computed from the program's imports (subfolders too); a module an upgrade moved (the flat
    monitor.py of an older release) is removed from the program's own tree, and nothing outside that tree."""
    tree = tmp_path / "lib" / "ansible_collections" / "gpufabric" / "rdma" / "plugins" / "module_utils"
    tree.mkdir(parents=True)
    (tree / "monitor.py").write_text("# the old flat monitor\n")
    (tmp_path / "lib" / "site-notes.txt").write_text("an admin's file\n")
    out = _play(tmp_path)
    assert (tree / "fleet" / "monitor.py").is_file() and (tree / "fleet" / "protocol.py").is_file()
    assert (tree / "node" / "node_checks.py").is_file() and not (tree / "fleet" / "remediation.py").exists()
    assert not (tree / "monitor.py").exists() and (tmp_path / "lib" / "site-notes.txt").exists()
    assert "changed=0" not in out
    again = _play(tmp_path, suffix="/")   # the same directory, spelled with a trailing slash: nothing is stale
    assert "changed=0" in again, again[-2000:]
