"""The nccl_tests role's judge, tasks/report.yml (the role's main and the slurm_jobs role include it; it was _common's
run_report until issue 54), for real, with ansible-playbook."""

import json
import os
import subprocess
import sys
from paths import ROOT


RUN_REPORT = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Judge and report runs of no known platform (as slurm_jobs does)
      ansible.builtin.include_role:
        name: gpufabric.rdma.nccl_tests
        tasks_from: report
      vars:
        nccl_tests_report_dir: {tmp}/report
        nccl_tests_baselines_file: {tmp}/baselines.json
        nccl_tests_report_runs:
          - {{label: a slurm job, host: n1, mode: slurm, command: sbatch, rc: 0, output: "{{{{ lookup('file', '{capture}') }}}}"}}
"""


def _play(tmp_path, text, *extra):
    root = ROOT
    capture = os.path.join(root, "tests", "unit", "fixtures", "nccl_tests", "all_reduce_g8_h200x8.txt")
    play = tmp_path / "play.yml"
    play.write_text(text.format(tmp=tmp_path, capture=capture))
    return subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play),
                           "-e", "ansible_python_interpreter=%s" % sys.executable] + list(extra),
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, ANSIBLE_NOCOLOR="1"), check=False)


def test_run_report_without_a_platform_says_each_run_has_no_baseline(tmp_path):
    """The judging pass with baselines inside, for runs of no platform (slurm_jobs passes none): every run still has
    its baseline key (None), so the report's steps that read it run - the first CI run of this change failed here."""
    run = _play(tmp_path, RUN_REPORT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    runs = json.loads((tmp_path / "report" / "runs.json").read_text())
    assert [r["baseline"] for r in runs] == [None] and runs[0]["passed"] is True
    assert runs[0]["figure"] == {"size": 4294967296, "busbw": 364.98}


def test_the_judges_old_setting_is_still_read_with_a_deprecation_warning(tmp_path):
    """run_report_baselines_file was _common's; the setting went to the nccl_tests role with the judge
    (nccl_tests_baselines_file). A site that still sets the old name has its baseline recorded there, and is told."""
    play = RUN_REPORT.replace("        nccl_tests_baselines_file: {tmp}/baselines.json\n", "")
    run = _play(tmp_path, play, "-e", "run_report_baselines_file=%s" % (tmp_path / "old.json"),
                "-e", "gpufabric_record_baseline=true")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (tmp_path / "old.json").exists()
    warning = next(line for line in run.stderr.splitlines() if "run_report_baselines_file" in line)
    assert "DEPRECATION" in warning and "nccl_tests_baselines_file" in warning, run.stderr
