"""The monitor, decider and relay install their code through one role (program_install). In check or diff mode it
says which files would be installed or replaced (path, size, SHA-256) and never prints their source: `health
--check --diff`, the README's first health command, printed 12,043 lines, 11,310 of them our own Python as diffs.

It installs the program and its module_utils in one transfer (issue 52, point 7): copying each of the monitor's 38
files on its own cost 237 module runs on the node and 38 transfers, and 199 module runs when nothing had changed."""

import hashlib
import json
import os
import re
import stat
import subprocess
import sys

import pytest
from paths import ROOT

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


def _node_calls(out):
    """(module runs, file transfers) on the node n1, from ansible-playbook -vvv."""
    return len(re.findall(r"^<n1> EXEC ", out, re.M)), len(re.findall(r"^<n1> PUT ", out, re.M))


def test_it_installs_the_programs_import_closure_in_one_transfer_and_removes_code_it_no_longer_imports(tmp_path):
    """What is copied is computed from the program's imports (subfolders too), sent as one archive; a module an
    upgrade moved (the flat monitor.py of an older release) is removed from the program's own tree, and nothing
    outside that tree. A file whose content or mode drifted is replaced, and only it; the steady state is one read."""
    tree = tmp_path / "lib" / "ansible_collections" / "gpufabric" / "rdma" / "plugins" / "module_utils"
    tree.mkdir(parents=True)
    (tree / "monitor.py").write_text("# the old flat monitor\n")
    (tmp_path / "lib" / "site-notes.txt").write_text("an admin's file\n")
    out = _play(tmp_path, "-vvv")
    assert (tree / "fleet" / "monitor.py").is_file() and (tree / "fleet" / "protocol.py").is_file()
    assert (tree / "node" / "node_checks.py").is_file() and not (tree / "fleet" / "remediation.py").exists()
    assert not (tree / "monitor.py").exists() and (tmp_path / "lib" / "site-notes.txt").exists()
    assert (tmp_path / "lib" / "monitor.py").read_bytes() == open(os.path.join(
        ROOT, "roles", "health_monitor", "files", "gpufabric_health_monitor.py"), "rb").read()
    assert stat.S_IMODE((tree / "common" / "text.py").stat().st_mode) == 0o644
    assert stat.S_IMODE((tree / "common").stat().st_mode) == 0o755
    assert "changed=0" not in out
    runs, transfers = _node_calls(out)
    assert transfers == 1 and runs <= 10, (runs, transfers)   # one archive, not 38 copies

    (tree / "common" / "text.py").write_text("# edited on the node\n")
    (tree / "common" / "numbers.py").chmod(0o600)
    out = _play(tmp_path, "--diff", suffix="/")   # the same directory, spelled with a trailing slash
    listed = re.findall(r"(plugins/module_utils/\S+|roles/\S+) \| \d+ \| [0-9a-f]{64}", out)
    assert sorted(listed) == ["plugins/module_utils/common/numbers.py", "plugins/module_utils/common/text.py"], out[-3000:]
    assert (tree / "common" / "text.py").read_bytes() == open(os.path.join(ROOT, "plugins", "module_utils", "common", "text.py"), "rb").read()
    assert stat.S_IMODE((tree / "common" / "numbers.py").stat().st_mode) == 0o644

    again = _play(tmp_path, "-vvv", suffix="/")
    assert "changed=0" in again, again[-2000:]
    assert _node_calls(again) == (1, 0)   # one find reads every file's checksum
