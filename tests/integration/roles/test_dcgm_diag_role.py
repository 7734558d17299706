"""The dcgm_diag role end to end with ansible-playbook on two local hosts: a dcgmi stand-in replays real public
outputs (tests/unit/fixtures/dcgm), chosen by the host engine each host names, so one node passes and one fails;
the reports, the figures and the play's verdict name the failing GPU in DCGM's words."""

import json
import os
import subprocess
import sys

import pytest
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "dcgm")
pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
DCGMI = """#!/bin/sh
# stand-in dcgmi: the capture named by --host (hang: never answers, with a child that must be killed too)
host=""
while [ $# -gt 0 ]; do [ "$1" = "--host" ] && host="$2"; shift; done
echo "$host" >> "$GPUFABRIC_LOG"
case "$host" in
  hang) sleep 3600 & sleep 3600 ;;
  *) cat "$GPUFABRIC_FIXTURES/$host" ;;
esac
"""
PLAY = """- hosts: all
  gather_facts: false
  roles:
    - role: gpufabric.rdma.dcgm_diag
"""


def play(tmp_path, engines, *extra, check=False):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "dcgmi").write_text(DCGMI)
    (bindir / "dcgmi").chmod(0o755)
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": dict(
        (host, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                "dcgm_diag_hostengine": engine}) for host, engine in engines.items())}}))
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), GPUFABRIC_FIXTURES=FIXTURES,
               GPUFABRIC_LOG=str(tmp_path / "calls.log"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml"),
                           "-e", "dcgm_diag_report_dir=%s" % (tmp_path / "report"), *extra] + (["--check"] if check else []),
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    out = " ".join((proc.stdout + proc.stderr).split())
    return proc.returncode, out


def _report(tmp_path, name):
    return (tmp_path / "report" / name).read_text()


def test_one_node_passes_one_fails_and_the_play_names_the_gpu(tmp_path):
    rc, out = play(tmp_path, {"n1": "dcgm4_r2_pass_1gpu.txt", "n2": "dcgm3_r3_fail_targeted_power_a10g.txt"},
                   "-e", "dcgm_diag_level=3")
    assert rc != 0
    assert ("DCGM level 3: n2 GPU 1: Stress/Targeted Power failed: GPU 1 Max power of 224.1 did not reach desired "
            "power minimum") in out, out[-3000:]
    records = json.loads(_report(tmp_path, "dcgm.json"))
    assert [(r["host"], r["status"], r["level"]) for r in records] == [("n1", "pass", 3), ("n2", "fail", 3)]
    markdown = _report(tmp_path, "dcgm.md")
    assert "**FAIL**: 1 of 2 node(s) passed." in markdown and "| n2 | fail | 3.3.9 | Stress/Targeted Power on GPU 1 |" in markdown
    prom = _report(tmp_path, "gpufabric_dcgm_diag.prom")
    assert 'gpufabric_dcgm_diag_gpu_failed{cluster="gpufabric",gpu="1",level="3",node="n2",test="Stress/Targeted Power"} 1' in prom
    assert 'gpufabric_dcgm_diag_passed{cluster="gpufabric",level="3",node="n1"} 1' in prom


def test_a_hung_dcgmi_is_killed_and_its_node_is_not_run_not_failed(tmp_path):
    rc, out = play(tmp_path, {"n1": "dcgm3_r2_pass_p4de_awsome.txt", "n2": "hang"},
                   "-e", "dcgm_diag_timeout=3", "-e", "dcgm_diag_fail=false")
    assert rc == 0, out[-3000:]
    records = dict((r["host"], r) for r in json.loads(_report(tmp_path, "dcgm.json")))
    assert records["n1"]["status"] == "pass"
    assert (records["n2"]["status"], records["n2"]["reason"]) == (
        "not run", "it did not finish within 3 s and was killed with its children")
    assert "## Not run (neither a pass nor a failure)" in _report(tmp_path, "dcgm.md")
    assert 'gpufabric_dcgm_diag_not_run{cluster="gpufabric",level="1",node="n2"} 1' in _report(tmp_path, "gpufabric_dcgm_diag.prom")


def test_check_mode_runs_nothing_shows_the_plan_and_keeps_the_last_real_report(tmp_path):
    """A check run measures nothing: it prints the plan, and the last real run's dcgm.md, dcgm.json and figures stay
    as that run wrote them. Before (issue 52), the check run replaced them with a report of nodes 'not run'."""
    report = tmp_path / "report"
    report.mkdir()
    kept = {"dcgm.md": "# DCGM diagnostics\n\n**PASS**: 1 of 1 node(s) passed.\n", "dcgm.json": '[{"host": "n1", "status": "pass"}]\n',
            "gpufabric_dcgm_diag.prom": 'gpufabric_dcgm_diag_passed{cluster="gpufabric",level="2",node="n1"} 1\n'}
    for name, content in kept.items():
        (report / name).write_text(content)
    rc, out = play(tmp_path, {"n1": "dcgm3_r2_pass_p4de_awsome.txt"}, "-e", "dcgm_diag_level=2", check=True)
    assert rc == 0, out[-3000:]
    assert ("check mode measures nothing: the reports in %s (dcgm.json, dcgm.md, gpufabric_dcgm_diag.prom) are left as "
            "the last real run wrote them; a real run would:\", \"run dcgmi diag -r 2 on n1, killed after 1200 s\"" % report) in out, out[-3000:]
    assert not (tmp_path / "calls.log").exists()
    assert dict((p.name, p.read_text()) for p in report.iterdir()) == kept
    assert "FAIL" not in out and "not run" not in out


def test_a_run_that_saw_fewer_gpus_than_the_node_has_fails_the_play_naming_them(tmp_path):
    """DCGM 4.0.0 passing on 4 GPUs where the site says each node has 8 (gpufabric_expected_gpu_count): not a pass."""
    rc, out = play(tmp_path, {"n1": "dcgm4_r3_pass_4gpu_docs_indented.txt"}, "-e", "gpufabric_expected_gpu_count=8")
    assert rc != 0 and ("n1: not run: DCGM tested 4 of the node's 8 GPUs (0, 1, 2, 3): a GPU it did not test is not "
                        "certified") in out, out[-3000:]
    record = json.loads(_report(tmp_path, "dcgm.json"))[0]
    assert (record["status"], record["gpus"], record["expected_gpus"]) == ("not run", [0, 1, 2, 3], 8)
    assert "**NOT RUN**: 0 of 1 node(s) passed; 1 not run" in _report(tmp_path, "dcgm.md")
