"""The rest of validation end to end - burn-in (both strategies), tuning and the DDP benchmark - run as a
user runs them: from a fresh directory on the controller, with the default callback, no ansible.cfg of
ours and no report directory given, so every report must land under ./gpufabric-report of that directory.

The nodes have no GPU: nvidia-smi, nccl-tests and torchrun are stand-ins printing real captures
(8x H200 nvidia-smi and all_reduce_perf, 1 and 2 H200 DDP runs), installed by standins.yml. Each role
must find the 8 GPUs in the node's record (role node_facts, no discovery in these plays).
"""

import json
import os
import subprocess

import pytest

SCENARIO = os.environ.get("MOLECULE_SCENARIO_DIRECTORY", os.path.dirname(os.path.dirname(__file__)))
STANDIN = ["-e", "nccl_tests_bin_dir=/opt/nccl-tests-standin", "-e", "nccl_tests_build=false",
           "-e", "gpufabric_replayed_from=tests/unit/fixtures (stand-ins)"]


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_STDOUT_CALLBACK"):
        env.pop(name, None)
    proc = subprocess.run(["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], os.path.join(SCENARIO, "standins.yml")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    where = tmp_path_factory.mktemp("fresh-controller-dir")
    return where, env


def play(user_dir, *args):
    where, env = user_dir
    proc = subprocess.run(["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], *args],
                          capture_output=True, text=True, env=env, cwd=str(where), timeout=900, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("strategy", ["pairwise", "search"])
def test_burnin_alone_burns_in_every_gpu_and_reports_here(user_dir, strategy):
    where = user_dir[0]
    rc, out = play(user_dir, "gpufabric.rdma.burnin", "-e", "burnin_strategy=%s" % strategy,
                   "-e", "burnin_report_dir=gpufabric-report/burnin-%s" % strategy, *STANDIN)
    assert rc == 0, out[-4000:]
    report = json.loads((where / "gpufabric-report" / ("burnin-%s" % strategy) / "burnin.json").read_text())
    markdown = (where / "gpufabric-report" / ("burnin-%s" % strategy) / "burnin.md").read_text()
    assert "PASSED: 2 hosts" in markdown, markdown[:1500]
    # One record shape for both strategies; 8 ranks per host from the node's record (the nvidia-smi
    # stand-in's 8 GPUs), not one per host.
    assert report["results"] and all(r["ranks"] == 16 and r["rc"] == 0 and r["nccl_tests_passed"] for r in report["results"]), \
        report["results"]
    assert "REPLAYED" in markdown
    assert "reports in %s" % (where / "gpufabric-report" / ("burnin-%s" % strategy)) in out


TUNE = ["gpufabric.rdma.tune", "-e", "tune_hosts=gpufabric-validate-node1", "-e", "nccl_tests_mpi=false",
        "-e", '{"nccl_tune_collectives": ["all_reduce"]}', "-e", "nccl_tune_repeats=2", "-e", "nccl_tune_confirm=false"]


def test_tune_in_check_mode_prints_its_plan_and_measures_nothing(user_dir, tmp_path):
    """--check reaches the tuning step (the smoke run is not run and fails nothing) and says what would run."""
    where = user_dir[0]
    rc, out = play(user_dir, *TUNE, "--check", "-e", "nccl_tune_report_dir=%s" % tmp_path, *STANDIN)
    assert rc == 0, out[-4000:]
    said = " ".join(out.split())
    assert "1 collective(s) x" in said and "nccl-tests runs within 1800 s" in said, said[-3000:]
    assert not list(tmp_path.glob("*-tune.md"))   # nothing measured
    assert not (where / "gpufabric-report" / "nccl-tests").exists()


def test_tune_with_default_report_dir_creates_it(user_dir):
    """The nccl-tests settings are the nccl_tests role's (STANDIN's nccl_tests_bin_dir, no nccl_tune_bin_dir), and
    tune reports into its own directory, validate's is not touched."""
    where = user_dir[0]
    rc, out = play(user_dir, *TUNE, *STANDIN)
    assert rc == 0, out[-4000:]
    tune = (where / "gpufabric-report" / "tune" / "gpufabric-validate-node1-tune.md").read_text()
    assert "Search (" in tune and "measured" in tune, tune[:2000]
    assert "reports in %s" % (where / "gpufabric-report" / "tune") in out
    assert (where / "gpufabric-report" / "tune" / "smoke-run" / "summary.md").is_file()
    assert not (where / "gpufabric-report" / "nccl-tests").exists()


def test_ddp_benchmark_with_default_report_dir_creates_it(user_dir):
    where = user_dir[0]
    (where / "ddp.yml").write_text(
        "- name: DDP benchmark\n  hosts: gpufabric-validate-node1\n  gather_facts: false\n  roles:\n"
        "    - role: gpufabric.rdma.ddp_benchmark\n      vars:\n        ddp_benchmark_torchrun: /opt/standin/torchrun-ddp\n"
        "        ddp_benchmark_gpus: 2\n        ddp_benchmark_rounds: 1\n")
    rc, out = play(user_dir, "ddp.yml")
    assert rc == 0, out[-4000:]
    result = json.loads((where / "gpufabric-report" / "ddp" / "gpufabric-validate-node1-ddp.json").read_text())
    assert result["failures"] == [] and result["world_size"] == 2, result
    assert (where / "gpufabric-report" / "ddp" / "gpufabric-validate-node1-ddp.md").is_file()
