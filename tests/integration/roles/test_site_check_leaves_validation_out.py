"""`site.yml --check` says that validation is left out of a check run, then printed about 230 skipped lines: the two
validation plays gathered facts and skipped every task of openmpi, nccl, dcgm_diag, nccl_tests and perftest one by
one (issue 52, point 10). A check run of the site now leaves both plays without hosts, one condition per play; the
run that asks for validation in check mode (gpufabric_validate_in_check_mode=true, or its old name) still has it.
Since site.yml validates what changed (issue 58), its validation plays take the nodes its plan chose, and a check run
plans: it reads each node's last validation and prints whom a real run would measure and why, measuring nothing."""

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
PLAYS = ("Validate with nccl-tests", "Measure RDMA point to point with perftest")
PLAN = "Choose the nodes validation measures"


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
                for play in PLAYS + (PLAN,))


def test_a_check_run_of_the_site_leaves_validation_without_hosts_and_plans(tmp_path):
    assert _hosts_of_validation(tmp_path, "--check") == dict(dict.fromkeys(PLAYS, "[]"), **{PLAN: "['all']"})


# In site.yml the validation plays measure the nodes its plan chose (known when the run decides: no pattern before it);
# a run without --check, validate.yml alone, keeps all: tests/integration/roles/test_host_patterns.py.
@pytest.mark.parametrize("name", ["gpufabric_validate_in_check_mode", "validate_in_check_mode"])
def test_a_check_run_that_asks_for_validation_plans_on_every_host(tmp_path, name):
    assert _hosts_of_validation(tmp_path, "--check", "-e", "%s=true" % name)[PLAN] == "['all']"


@pytest.mark.parametrize("extra, left_out", [
    ([], True),
    (["-e", "gpufabric_validate_in_check_mode=true"], False),
    (["-e", "validate_in_check_mode=true"], False),
], ids=["check", "asked", "asked-old-name"])
def test_the_site_says_validation_is_left_out_only_when_it_is(tmp_path, extra, left_out):
    """Issue 52: with -e gpufabric_validate_in_check_mode=true the check run said "validation ... is left out of this
    run" and then validated. Only the message play, the plan and validation run here (--tags validate --skip-tags
    always), on this machine; either way the plan says whom a real run would measure, and nothing is recorded."""
    (tmp_path / "inventory.json").write_text(json.dumps({"gpu_nodes": {"hosts": {"n1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
        "gpufabric_validate_record_dir": str(tmp_path / "records"), "nccl_tests_mpi": False, "nccl_tests_build": False,
        "nccl_tests_gpus_per_node": 1, "gpufabric_report_root": str(tmp_path / "report")}}}}))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), "gpufabric.rdma.site", "--check",
                           "--tags", "validate", "--skip-tags", "always", *extra], capture_output=True, text=True,
                          check=False, timeout=300, cwd=str(tmp_path), env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    out = " ".join((proc.stdout + proc.stderr).split())
    said = "validation (nccl-tests, perftest) measures and is left out of this run" in out
    validated = re.search(r"PLAY \[Validate with nccl-tests\] \*+ TASK \[Gathering Facts\] \*+ ok: \[n1\]", out) is not None
    assert (said, validated) == (left_out, not left_out), out[-2000:]
    assert "check mode measures nothing; a real run would measure:" in out and "n1: measured: no record of a validation" in out
    assert not (tmp_path / "records").exists()
