"""The nccl role builds NCCL's Inspector (issue 57) from an NCCL source tree against the installed NCCL: make in the
plugin's folder (plugins/profiler/inspector/, ext-profiler/inspector/ in 2.28's tree) with the node's CUDA, the
library kept per NCCL version and gpufabric_nccl_inspector_plugin linked to it; a second run builds nothing; a tree
without the Inspector (NCCL before 2.28) fails saying so. The tree here is a stand-in whose Makefile records its
arguments and writes the library (the real build runs in tests/device/capture_inspector.sh)."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")

PLAY = """
- hosts: node
  gather_facts: false
  roles:
    - role: gpufabric.rdma.nccl
"""


def _setup(tmp_path, folder="plugins/profiler/inspector"):
    home = tmp_path / "nccl"
    (home / "include").mkdir(parents=True)
    (home / "include" / "nccl.h").write_text("#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n")
    plugin = tmp_path / "src" / folder
    plugin.mkdir(parents=True)
    (plugin / "Makefile").write_text("all:\n\techo $(CUDA_HOME) >> %s\n\ttouch libnccl-profiler-inspector.so\n"
                                     % (tmp_path / "made"))
    (tmp_path / "cuda").mkdir()
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": {"node": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "nccl_provider": "existing",
        "nccl_home": str(home), "nccl_inspector": True, "nccl_inspector_source_dir": str(tmp_path / "src"),
        "nccl_cuda_home": str(tmp_path / "cuda"), "gpufabric_local_facts_dir": "",
        "gpufabric_nccl_inspector_plugin": str(tmp_path / "inspector" / "libnccl-profiler-inspector.so")}}}}))


def _run(tmp_path, *extra):
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")]
                          + list(extra), capture_output=True, text=True, check=False, timeout=300,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_the_inspector_is_built_once_per_nccl_version_and_linked(tmp_path):
    _setup(tmp_path)
    rc, out = _run(tmp_path)
    assert rc == 0, out[-3000:]
    link = tmp_path / "inspector" / "libnccl-profiler-inspector.so"
    assert os.readlink(str(link)) == str(tmp_path / "inspector" / "2.28.9" / "libnccl-profiler-inspector.so")
    assert (tmp_path / "made").read_text() == "%s\n" % (tmp_path / "cuda")
    rc, out = _run(tmp_path)
    assert rc == 0 and "changed=0" in out, out[-3000:]
    assert (tmp_path / "made").read_text().count("\n") == 1


def test_a_tree_without_the_inspector_fails_naming_the_version(tmp_path):
    _setup(tmp_path, folder="src/misc")
    rc, out = _run(tmp_path)
    assert rc != 0
    assert ("%s on node has neither plugins/profiler/inspector/ nor ext-profiler/inspector/: the Inspector comes with "
            "NCCL 2.28 and later (installed: 2.28.9)" % (tmp_path / "src")) in out, out[-3000:]
