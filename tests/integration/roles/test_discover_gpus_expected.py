"""discover.yml as a user runs it, on a node whose group says it has GPUs (group_vars: gpufabric_expected_gpu_count: 8)
while nvidia-smi is missing (this machine has none): before, readiness read the expected count on the controller's
localhost, which a group's variables never reach, and said READY (issue 52, point 5). Each host's own count is
judged now, by the health check's rule (nvidia_smi: it cannot count the GPUs it should)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH") or shutil.which("nvidia-smi"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH) and "
                                       "a machine without nvidia-smi")


def test_a_group_that_expects_gpus_on_a_node_without_nvidia_smi_is_not_ready(tmp_path):
    (tmp_path / "inventory.json").write_text(json.dumps({
        "gpu_nodes": {"hosts": {"n1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
                      "vars": {"gpufabric_expected_gpu_count": 8}},
        "cpu_nodes": {"hosts": {"c1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (tmp_path / "sys" / "bus" / "pci" / "devices").mkdir(parents=True)   # no GPU on the bus: the count alone says it
    env = dict((k, v) for k, v in os.environ.items() if k != "ANSIBLE_CONFIG")
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), "gpufabric.rdma.discover",
                           "-e", json.dumps({"gpufabric_report_root": str(tmp_path / "report"), "ansible_become": False,
                                             "discovery_facts_dir": str(tmp_path / "facts"), "gpufabric_local_facts_dir": "",
                                             "discovery_sysfs_root": str(tmp_path / "sys")})],
                          capture_output=True, text=True, check=False, timeout=300, cwd=str(tmp_path),
                          env=dict(env, ANSIBLE_NOCOLOR="1"))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2 and "NOT READY: 1 critical finding(s) (nvidia_smi)" in out, out[-3000:]
    report = json.loads((tmp_path / "report" / "readiness.json").read_text())
    assert report["expected_gpu_count"] == {"c1": None, "n1": 8}
    (found,) = report["nodes"]["n1"]["findings"]
    assert (found["check"], found["severity"], found["detail"]) == (
        "nvidia_smi", "critical", "nvidia-smi not found: cannot count GPUs (8 expected)")
    assert report["nodes"]["c1"]["findings"] == []   # a node no GPU is expected on needs no nvidia-smi
    record = json.loads((tmp_path / "facts" / "facts.json").read_text())
    assert record["gpu"]["nvidia_smi_problem"] == {"how": "missing", "detail": "nvidia-smi not found"}
