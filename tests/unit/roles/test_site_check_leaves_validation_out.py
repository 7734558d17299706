"""`site.yml --check` says that validation is left out of a check run, then printed about 230 skipped lines: the two
validation plays gathered facts and skipped every task of openmpi, nccl, dcgm_diag, nccl_tests and perftest one by
one (issue 52, point 10). A check run of the site now leaves both plays without hosts, one condition per play; the
run that asks for validation in check mode (gpufabric_validate_in_check_mode=true, or its old name) still has it."""

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
PLAYS = ("Validate with nccl-tests", "Measure RDMA point to point with perftest")


def _hosts_of_validation(tmp_path, *extra):
    """{play name: its host pattern} of the site's validation plays, as --list-hosts prints them (nothing runs)."""
    (tmp_path / "inventory.json").write_text(json.dumps({"gpu_nodes": {"hosts": dict(
        (h, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}) for h in ("n1", "n2"))}}))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), "gpufabric.rdma.site", "--list-hosts",
                           *extra], capture_output=True, text=True, check=False, timeout=300, cwd=str(tmp_path),
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0, out[-2000:]
    return dict((play, re.search(r"\): %s TAGS: \[[a-z,]+\] pattern: (\[[^]]*\])" % re.escape(play), out).group(1))
                for play in PLAYS)


def test_a_check_run_of_the_site_leaves_validation_without_hosts(tmp_path):
    assert _hosts_of_validation(tmp_path, "--check") == dict.fromkeys(PLAYS, "[]")


# (A run without --check keeps them: tests/unit/roles/test_host_patterns.py.)
@pytest.mark.parametrize("name", ["gpufabric_validate_in_check_mode", "validate_in_check_mode"])
def test_a_check_run_that_asks_for_validation_keeps_its_hosts(tmp_path, name):
    assert _hosts_of_validation(tmp_path, "--check", "-e", "%s=true" % name) == dict.fromkeys(PLAYS, "['all']")
