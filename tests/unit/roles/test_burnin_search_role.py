"""The burnin role's search strategy end to end with ansible-playbook: four local hosts, a stand-in mpirun
that prints a real 8x H200 all_reduce capture, 40 % slower when a chosen host is in the group. The role must
name that host, and only it, from the groups' figures."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CAPTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "nccl_tests", "all_reduce_g8_h200x8.txt")
pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
MPIRUN = """#!/bin/sh
# stand-in mpirun: the capture, its busbw columns x0.6 when -H names the slow host
slow="$GPUFABRIC_SLOW"
hosts=""
while [ $# -gt 0 ]; do [ "$1" = "-H" ] && hosts="$2"; shift; done
echo "$hosts" >> "$GPUFABRIC_LOG"
case ",$hosts," in
  *",$slow:"*) awk '/^ +[0-9]+ +[0-9]+ +float/ { $8 = $8 * 0.6; $12 = $12 * 0.6 } { print }' "$GPUFABRIC_CAPTURE" ;;
  *) cat "$GPUFABRIC_CAPTURE" ;;
esac
"""


def run(tmp_path, slow, *extra):
    mpirun = tmp_path / "mpirun"
    mpirun.write_text(MPIRUN)
    mpirun.chmod(0o755)
    hosts = ["h%d" % n for n in range(1, 5)]
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": dict(
        (h, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}) for h in hosts)}}))
    env = dict(os.environ, GPUFABRIC_SLOW=slow, GPUFABRIC_LOG=str(tmp_path / "groups.log"), GPUFABRIC_CAPTURE=CAPTURE,
               ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), "gpufabric.rdma.burnin",
                           "-e", "ansible_become=false", "-e", "burnin_strategy=search", "-e", "burnin_gpus_per_node=1",
                           "-e", "burnin_mpirun=%s" % mpirun, "-e", "burnin_report_dir=%s" % (tmp_path / "report"),
                           "-e", "burnin_fail=false", "-e", "burnin_search_max_rounds=8", *extra],
                          capture_output=True, text=True, env=env, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return (tmp_path / "report" / "burnin.md").read_text(), (tmp_path / "groups.log").read_text().splitlines()


def test_the_search_names_the_slow_host(tmp_path):
    report, groups = run(tmp_path, "h3")
    assert "FAILED: 4 hosts" in report and "slow host h3" in report
    assert "slow host h4" not in report and "bad link" not in report
    assert "## Search tree" in report and "h3 against a known-good host" in report
    assert sorted(groups[:2]) == ["h1:1,h2:1", "h3:1,h4:1"]  # the first round: two groups at once


def test_replayed_figures_are_labelled_on_the_verdict_line(tmp_path):
    # The lab's stand-ins print a capture: the verdict line itself must say so (and keep its own text).
    report = run(tmp_path, "none", "-e", json.dumps({"burnin_replayed_from": "the capture a\\b.txt"}))[0]
    verdict = [line for line in report.splitlines() if line.startswith(("PASSED", "FAILED"))]
    assert len(verdict) == 1, report
    assert verdict[0].startswith("PASSED: 4 hosts, ")
    assert verdict[0].endswith(" [figures REPLAYED from the capture a\\b.txt, not measured]"), verdict[0]
