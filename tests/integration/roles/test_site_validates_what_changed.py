"""site.yml validates what changed (issue 58): a node whose configuration phase ran for drift is measured, a node that
changed nothing and holds a fresh passing record of its last validation is reported from it ("not measured again:
last validated <date>, <figures>") and not run, -e gpufabric_validate=all measures both, and a stale record or one
measured on other hardware is measured again.

site.yml for real (ansible-playbook, local connection, two hosts n1 and n2 on this machine), its validation part only
(--tags validate --skip-tags always: discovery and configure do not run here, so each host's discovery record and the
configure check's answer - discovery_node, gpufabric_applied - come from the inventory as this run's), nccl-tests
through the stub binary (tests/stubs/misbehave.py) printing a real capture, each host's record in its own directory.
"""

import json
import os
import subprocess
import sys

import pytest

from moduletest import calls, stub_bin
from paths import ROOT

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
GOOD = os.path.join(ROOT, "tests", "unit", "fixtures", "nccl_tests", "mpirun_tag_output_h100.txt")
HOSTS = ("n1", "n2")
PHASES = [{"name": name, "fingerprint": "%064x" % index} for index, name in enumerate(["drivers", "network", "nccl_env"])]
DRIFT = "drift since it was applied: /etc/nccl.conf: content changed"


def _record(kernel="6.1.0-28-amd64"):
    """A discovery record (facts.json) as the nccl_tests role reads it: one H100, no NVLink."""
    return {"schema": 1, "hostname": "n", "os": "Debian 12", "kernel": kernel, "architecture": "x86_64",
            "virtualization": "none/host", "container": False, "cpus": 8, "memory_mib": 32000, "interfaces": [],
            "rdma_devices": [], "gpu": {"present": True, "count": 1, "nvlink": False,
                                        "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}]}}


def _site(tmp_path, ran=None, kernels=None, extra=()):
    """One site.yml run; ``ran``: {host: the configure phases that ran, with why}. -> (rc, output)."""
    hosts = {}
    for host in HOSTS:
        hosts[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
                       "gpufabric_validate_record_dir": str(tmp_path / "records" / host),
                       "discovery_node": _record((kernels or {}).get(host, "6.1.0-28-amd64")),
                       "gpufabric_applied": {"run": (ran or {}).get(host, {}), "unchanged": [], "phases": PHASES,
                                             "facts": {}, "changed": False}}
    (tmp_path / "inventory.json").write_text(json.dumps({"gpu_nodes": {"hosts": hosts}}))
    bindir = stub_bin(tmp_path / "nccl-tests", {"all_reduce_perf": "misbehave"})
    settings = {"nccl_tests_build": False, "nccl_tests_mpi": False, "nccl_tests_bin_dir": bindir,
                "nccl_tests_gpus_per_node": 1, "nccl_tests_timeout": 60, "nccl_tests_min_busbw": "0",
                "nccl_tests_nccl_debug": False, "gpufabric_report_root": str(tmp_path / "report"),
                "gpufabric_code_fingerprint": "c" * 64, "gpufabric_local_facts_dir": "",
                "nccl_tests_runs": [{"name": "all_reduce_perf", "args": "-b 1K -e 64M -f 8", "mode": "single"}]}
    environ = dict(os.environ, ANSIBLE_NOCOLOR="1", STUB_LOG=str(tmp_path / "calls.jsonl"),
                   STUB_ALL_REDUCE_PERF_MODE="file:" + GOOD)
    if (tmp_path / "calls.jsonl").exists():
        (tmp_path / "calls.jsonl").unlink()
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), "gpufabric.rdma.site",
                           "--tags", "validate", "--skip-tags", "always", "-e", json.dumps(settings)] + list(extra),
                          capture_output=True, text=True, timeout=600, check=False, env=environ, cwd=str(tmp_path))
    return proc.returncode, proc.stdout + proc.stderr


def _kept(tmp_path, host):
    return json.loads((tmp_path / "records" / host / "validation.json").read_text())


def _measured(tmp_path):
    """The hosts whose nccl-tests run ran (runs.json's labels) and how many runs the stub saw."""
    runs = json.loads((tmp_path / "report" / "nccl-tests" / "runs.json").read_text())
    return sorted(run["host"] for run in runs), len(calls(tmp_path / "calls.jsonl"))


def test_site_measures_what_changed_and_reports_the_rest_from_their_records(tmp_path):
    # Every node, as asked: both measured, each keeps its record.
    rc, out = _site(tmp_path, extra=["-e", "gpufabric_validate=all"])
    assert rc == 0, out[-3000:]
    assert _measured(tmp_path) == (["n1", "n2"], 2)
    first = dict((host, _kept(tmp_path, host)) for host in HOSTS)
    assert all(record["passed"] and record["node"] == host for host, record in first.items())
    assert first["n1"]["figures"]["nccl_tests"][0]["unit"] == "GB/s"

    # n1's nccl_env phase ran for drift; n2 changed nothing: n1 measured, n2 reported from its record, not run.
    rc, out = _site(tmp_path, ran={"n1": {"nccl_env": DRIFT}})
    assert rc == 0, out[-3000:]
    assert _measured(tmp_path) == (["n1"], 1)
    assert "n1: measured: configuration phase nccl_env ran: " + DRIFT in out
    line = "n2: not measured again: last validated %s, n2: all_reduce_perf" % first["n2"]["validated_at"]
    assert line in out
    summary = (tmp_path / "report" / "nccl-tests" / "summary.md").read_text()
    assert "## Not measured again" in summary and "- " + line in summary, summary
    assert _kept(tmp_path, "n2") == first["n2"]
    assert _kept(tmp_path, "n1")["validated_at"] >= first["n1"]["validated_at"]

    # A stale record (n2: 30 days old) and one measured on other hardware (n1: another kernel): both measured again.
    stale = dict(_kept(tmp_path, "n2"), validated_at="2020-01-01T00:00:00Z")
    (tmp_path / "records" / "n2" / "validation.json").write_text(json.dumps(stale))
    rc, out = _site(tmp_path, kernels={"n1": "6.12.0-1-amd64"})
    assert rc == 0, out[-3000:]
    assert _measured(tmp_path) == (["n1", "n2"], 2)
    assert "n1: measured: its hardware, OS, kernel or drivers changed since it was validated" in out
    assert "n2: measured: its last validation is older than 7 days (2020-01-01T00:00:00Z)" in out

    # Nothing changed: nothing measured, summary.md says so with each node's last validation; runs.json is the last.
    runs_before = (tmp_path / "report" / "nccl-tests" / "runs.json").read_text()
    rc, out = _site(tmp_path, kernels={"n1": "6.12.0-1-amd64"})
    assert rc == 0, out[-3000:]
    assert calls(tmp_path / "calls.jsonl") == []
    summary = (tmp_path / "report" / "nccl-tests" / "summary.md").read_text()
    assert "no run measured: every node's last validation still holds" in summary, summary
    assert summary.count("not measured again: last validated") == 2, summary
    assert (tmp_path / "report" / "nccl-tests" / "runs.json").read_text() == runs_before
