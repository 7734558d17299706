"""A host pattern that matches nothing fails, naming the variable and the pattern: before, `-e burnin_group=gpus`
or `-e health_hosts=gpu_node` skipped every play with a warning and exited 0 having done nothing, and topology
without a slurm_controller group wrote Slurm's files on the machine it ran on, as root."""

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")


def _run(tmp_path, playbook, *extra):
    (tmp_path / "inventory.json").write_text(json.dumps({"gpu_nodes": {"hosts": dict(
        (h, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}) for h in ("n1", "n2"))}}))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), playbook, "--check", *extra],
                          capture_output=True, text=True, check=False, timeout=300, cwd=str(tmp_path),
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


@pytest.mark.parametrize("playbook, extra, message", [
    ("gpufabric.rdma.burnin", ["-e", "burnin_group=gpus"], "burnin_group=gpus matches no host of the inventory"),
    ("gpufabric.rdma.health", ["-e", "health_hosts=gpu_node"], "health_hosts=gpu_node matches no host of the inventory"),
    ("gpufabric.rdma.tune", ["-e", "tune_hosts=gpu-nodes"], "tune_hosts=gpu-nodes matches no host of the inventory"),
    ("gpufabric.rdma.topology", [], "this playbook needs a group slurm_controller in the inventory"),
], ids=["burnin", "health", "tune", "topology"])
def test_a_pattern_that_matches_nothing_fails_naming_it(tmp_path, playbook, extra, message):
    rc, out = _run(tmp_path, playbook, *extra)
    assert rc != 0, out[-2000:]
    assert message in out, out[-2000:]
    assert "the inventory's groups are: gpu_nodes" in out
    assert "ok: [n1]" not in out   # nothing ran on the nodes


@pytest.mark.parametrize("name", ["gpufabric_site_validate", "site_validate"])
def test_site_validate_false_leaves_validation_without_hosts(tmp_path, name):
    """-e gpufabric_site_validate=false (or its old name): validate.yml's plays get no hosts (no facts gathered, no
    skipped task printed)."""
    rc, out = _run(tmp_path, "gpufabric.rdma.validate", "-e", "%s=false" % name, "--list-hosts")
    assert rc == 0, out[-2000:]
    assert re.search(r"play #\d+ \(\): Validate with nccl-tests TAGS: \[validate\] pattern: \[\] hosts \(0\):", out), out[-2000:]
    assert re.search(r"Measure RDMA point to point with perftest TAGS: \[[a-z,]+\] pattern: \[\] hosts \(0\):", out)
    rc, out = _run(tmp_path, "gpufabric.rdma.validate", "--list-hosts")
    assert re.search(r"Validate with nccl-tests TAGS: \[validate\] pattern: \['all'\] hosts \(2\): n[12] n[12]", out), out[-2000:]
