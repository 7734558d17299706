"""The playbooks as a user runs them (the installed collection, the default callback, no ansible.cfg of ours), issue 52:

- every documented input is checked on the controller before the first change, and the message names the variable and
  the value typed: before, `nccl_tests_min_busbw=abc` failed after the openmpi, nccl and dcgm roles, naming ansible-core's
  internal class; `validate_dcgm_level=5` after them, naming the role's internal dcgm_diag_level; a typo in
  gpufabric_known_good after discovery had written every node's record;
- a check run of validate.yml or burnin.yml leaves the last real run's reports as they were, passes, and prints no
  template warning of an unset DCGM level (`'validate_dcgm_level' is undefined` on every default run).
"""

import json
import os
import subprocess
import sys

import pytest

from moduletest import calls, stub_bin
from paths import ROOT

GOOD = os.path.join(ROOT, "tests", "unit", "fixtures", "nccl_tests", "mpirun_tag_output_h100.txt")

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")


def _run(tmp_path, playbook, *extra, host_vars=None, env=None):
    hosts = dict((h, dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                          **(host_vars or {}).get(h, {}))) for h in ("n1", "n2"))
    (tmp_path / "inventory.json").write_text(json.dumps({"gpu_nodes": {"hosts": hosts}}))
    environ = dict((k, v) for k, v in os.environ.items() if k != "ANSIBLE_CONFIG")
    environ.update(ANSIBLE_NOCOLOR="1", STUB_LOG=str(tmp_path / "calls.jsonl"), **(env or {}))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), playbook, *extra],
                          capture_output=True, text=True, check=False, timeout=300, cwd=str(tmp_path), env=environ)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


@pytest.mark.parametrize("playbook, extra, host_vars, messages", [
    ("gpufabric.rdma.validate", ["-e", "nccl_tests_min_busbw=abc"], None,
     ['nccl_tests_min_busbw is "abc", expected a number (role gpufabric.rdma.nccl_tests) - nothing has run yet']),
    ("gpufabric.rdma.validate", ["-e", "validate_dcgm_level=5"], None,
     ['validate_dcgm_level is "5", expected one of 1, 2, 3, 4 (an input of this playbook)']),
    ("gpufabric.rdma.site", ["-e", '{"gpufabric_known_good": {"*": {"floors": {"drvier": "535.104"}}}}'], None,
     ["gpufabric_known_good[*].floors: unknown key 'drvier' (known: driver, cuda, kernel, vbios, nic_fw, ofed)"]),
    # a rule between inputs, set for one host only in the inventory, is named with that host
    ("gpufabric.rdma.validate", [], {"n2": {"nccl_tests_max_wrong": -1}},
     ["nccl_tests_max_wrong must be a whole number of wrong values allowed (0 or more), got -1 (on n2)"]),
    ("gpufabric.rdma.burnin", ["-e", "burnin_dcgm_level=7", "-e", "burnin_tolerance=2"], None,
     ['burnin_dcgm_level is "7", expected one of 1, 2, 3, 4 (an input of this playbook)',
      "burnin_tolerance must be a fraction between 0 and 1, got '2'"]),
    # run alone (issue 52): configure.yml installed the drivers first; discover.yml wrote every node's record first
    ("gpufabric.rdma.configure", ["--check", "-e", "rdma_network_mtu=abc"], None,
     ['rdma_network_mtu is "abc", expected a whole number (role gpufabric.rdma.rdma_network) - nothing has run yet']),
    ("gpufabric.rdma.discover", ["--check", "-e", '{"gpufabric_known_good": {"*": {"floors": {"drvier": "535.104"}}}}'], None,
     ["gpufabric_known_good[*].floors: unknown key 'drvier' (known: driver, cuda, kernel, vbios, nic_fw, ofed) - nothing "
      "has run yet"]),
    # issue 56: DRA on a cluster that does not serve resource.k8s.io/v1 fails before discovery writes a record
    ("gpufabric.rdma.kubernetes", ["-e", "k8s_resource_api=dra", "-e", "k8s_version=1.33.2"], None,
     ["k8s_resource_api dra needs Kubernetes 1.34 or later (resource.k8s.io/v1 is served from 1.34); the cluster is "
      "1.33.2: keep k8s_resource_api=device_plugin there, or upgrade the cluster first"]),
    ("gpufabric.rdma.kubernetes", ["-e", "k8s_resource_api=cdi"], None,
     ['k8s_resource_api is "cdi", expected one of "device_plugin", "dra" (an input of this playbook)']),
], ids=["type", "playbook-choice", "known-good", "rule-one-host", "burnin", "configure", "discover", "kubernetes-dra-1.33",
        "kubernetes-api"])
def test_a_bad_input_fails_before_any_host_is_touched(tmp_path, playbook, extra, host_vars, messages):
    rc, out = _run(tmp_path, playbook, *extra, host_vars=host_vars)
    assert rc != 0, out[-2000:]
    for message in messages:
        assert message in out, out[-3000:]
    assert "[n1]" not in out and "[n2]" not in out, out[-3000:]   # no task ran for a node, not even gathering facts
    assert "_AnsibleTaggedStr" not in out and "dcgm_diag_level" not in out


def test_validate_check_run_keeps_the_last_report_and_warns_of_nothing(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    kept = {"summary.md": "# nccl-tests\n\n**PASS**: 2 of 2 run(s) passed.\n", "runs.json": "[]\n",
            "busbw.svg": "<svg/>\n", "gpufabric_nccl_tests.prom": "gpufabric_nccl_tests_passed 1\n"}
    for name, content in kept.items():
        (report / name).write_text(content)
    bindir = stub_bin(tmp_path / "bin", {"all_reduce_perf": "misbehave"})
    rc, out = _run(tmp_path, "gpufabric.rdma.validate", "--check", "-e", json.dumps({
        "nccl_tests_build": False, "nccl_tests_mpi": False, "nccl_tests_bin_dir": bindir, "nccl_tests_gpus_per_node": 1,
        "nccl_tests_report_dir": str(report)}), env={"STUB_ALL_REDUCE_PERF_MODE": "file:" + GOOD})
    assert rc == 0, out[-3000:]
    assert dict((p.name, p.read_text()) for p in report.iterdir()) == kept
    assert "are left as the last real run wrote them; a real run would:" in out and "FAIL" not in out
    assert "is undefined" not in out and "[WARNING]" not in out, out[-3000:]
    assert calls(tmp_path / "calls.jsonl") == []


def test_burnin_check_run_warns_of_no_unset_dcgm_level(tmp_path):
    bindir = stub_bin(tmp_path / "bin", {"mpirun": "misbehave"})
    rc, out = _run(tmp_path, "gpufabric.rdma.burnin", "--check", "-e", json.dumps({
        "burnin_mpirun": os.path.join(bindir, "mpirun"), "burnin_mpirun_args": [], "burnin_gpus_per_node": 1,
        "burnin_report_dir": str(tmp_path / "burnin")}), env={"STUB_MPIRUN_MODE": "file:" + GOOD})
    assert rc == 0, out[-3000:]
    assert "is undefined" not in out and "[WARNING]" not in out, out[-3000:]
    assert not (tmp_path / "burnin").exists()


def test_hang_by_job_id_without_a_slurm_host_fails_at_once_saying_what_to_set(tmp_path):
    """Before: squeue ran on the controller ("No such file or directory") after three host pattern warnings."""
    rc, out = _run(tmp_path, "gpufabric.rdma.hang", "-e", "job_id=4242")
    assert rc != 0, out[-2000:]
    assert ("job_id=4242 is looked up with squeue on a Slurm host, and the inventory names none: add a slurm_controller "
            "group (a host where squeue runs), set -e hang_slurm_host=<host> (localhost if this machine is a Slurm login "
            "node), or name the job's nodes instead with -e '{\"hang_nodes\": [\"node1\", \"node2\"]}'") in out, out[-2000:]
    assert "squeue" not in out.split("Check that a host can ask Slurm", maxsplit=1)[0] and "No such file" not in out
    assert "Could not match supplied host pattern" not in out


def test_hang_with_no_answer_warns_of_no_missing_group(tmp_path):
    """No node answers (nothing listens on the port): no suspect, no decider group - and no host pattern warning."""
    rc, out = _run(tmp_path, "gpufabric.rdma.hang", "-e", '{"hang_nodes": ["n1"], "hang_port": 9, "hang_timeout": 5}',
                   "-e", "hang_report_dir=%s" % (tmp_path / "hang"))
    assert rc == 0, out[-3000:]
    assert "Could not match supplied host pattern" not in out and "[WARNING]" not in out, out[-3000:]
    assert (tmp_path / "hang" / "hang.md").exists()
