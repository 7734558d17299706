"""_common's run_report (the nccl_tests and slurm_jobs roles include it) for real, with ansible-playbook."""

import json
import os
import subprocess
import sys


RUN_REPORT = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Judge and report runs of no known platform (as slurm_jobs does)
      ansible.builtin.include_role:
        name: gpufabric.rdma._common
        tasks_from: run_report
      vars:
        run_report_dir: {tmp}/report
        run_report_baselines_file: {tmp}/baselines.json
        run_report_runs:
          - {{label: a slurm job, host: n1, mode: slurm, command: sbatch, rc: 0, output: "{{{{ lookup('file', '{capture}') }}}}"}}
"""


def test_run_report_without_a_platform_says_each_run_has_no_baseline(tmp_path):
    """The judging pass with baselines inside, for runs of no platform (slurm_jobs passes none): every run still has
    its baseline key (None), so the report's steps that read it run - the first CI run of this change failed here."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    capture = os.path.join(root, "tests", "unit", "fixtures", "nccl_tests", "all_reduce_g8_h200x8.txt")
    play = tmp_path / "play.yml"
    play.write_text(RUN_REPORT.format(tmp=tmp_path, capture=capture))
    run = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play),
                          "-e", "ansible_python_interpreter=%s" % sys.executable],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ, ANSIBLE_NOCOLOR="1"), check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    runs = json.loads((tmp_path / "report" / "runs.json").read_text())
    assert [r["baseline"] for r in runs] == [None] and runs[0]["passed"] is True
    assert runs[0]["figure"] == {"size": 4294967296, "busbw": 364.98}
