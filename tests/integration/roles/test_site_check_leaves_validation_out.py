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


# (A run without --check keeps them: tests/integration/roles/test_host_patterns.py.)
@pytest.mark.parametrize("name", ["gpufabric_validate_in_check_mode", "validate_in_check_mode"])
def test_a_check_run_that_asks_for_validation_keeps_its_hosts(tmp_path, name):
    assert _hosts_of_validation(tmp_path, "--check", "-e", "%s=true" % name) == dict.fromkeys(PLAYS, "['all']")


@pytest.mark.parametrize("extra, left_out", [
    ([], True),
    (["-e", "gpufabric_validate_in_check_mode=true"], False),
    (["-e", "validate_in_check_mode=true"], False),
], ids=["check", "asked", "asked-old-name"])
def test_the_site_says_validation_is_left_out_only_when_it_is(tmp_path, extra, left_out):
    """Issue 52: with -e gpufabric_validate_in_check_mode=true the check run said "validation ... is left out of this
    run" and then validated. Only the message play and validation run here (--tags validate --skip-tags always); the
    node cannot be reached, so a validation play that has it stops there."""
    (tmp_path / "inventory.json").write_text(json.dumps({"gpu_nodes": {"hosts": {"n1": {
        "ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_connection": "ssh"}}}}))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), "gpufabric.rdma.site", "--check",
                           "--tags", "validate", "--skip-tags", "always", *extra], capture_output=True, text=True,
                          check=False, timeout=300, cwd=str(tmp_path), env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    out = " ".join((proc.stdout + proc.stderr).split())
    said = "validation (nccl-tests, perftest) measures and is left out of this run" in out
    validated = "PLAY [Validate with nccl-tests] *" in out and "fatal: [n1]: UNREACHABLE!" in out
    assert (said, validated) == (left_out, not left_out), out[-2000:]
