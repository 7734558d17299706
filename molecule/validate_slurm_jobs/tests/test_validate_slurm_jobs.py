"""The slurm_jobs role against a real Slurm (slurmctld + two slurmd, Debian's slurm-wlm)."""

import json
import os
import re
import subprocess

import pytest

testinfra_hosts = ["gpufabric-slurm-ctl"]

NODES = ["gpufabric-slurm-node1", "gpufabric-slurm-node2"]


def _results():
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "slurm-results.json")) as handle:
        return json.load(handle)


def _finished(name):
    return next(job for job in _results()["finished"] if job["name"] == name)


def test_nccl_tests_job_ran_on_both_nodes():
    entry = _finished("nccl-all-reduce")
    job = entry["job"]
    assert (job["state"], job["exit_code"], job["succeeded"]) == ("COMPLETED", 0, True)
    assert job["nodes"] == NODES and job["num_tasks"] == 4
    # Every rank printed its own line: mpirun started two ranks on each node through Slurm.
    ranks = re.findall(r"#  Rank +(\d+) .* on +(\S+) device", entry["output"])
    assert sorted(ranks) == [("0", NODES[0]), ("1", NODES[0]), ("2", NODES[1]), ("3", NODES[1])]


def test_nccl_tests_job_output_parsed_and_judged():
    (run,) = _results()["judged"]
    assert run["mode"] == "slurm" and run["host"] == ",".join(NODES)
    assert run["passed"] is True and run["failures"] == []
    result = run["result"]
    assert len(result["ranks"]) == 4
    # The stand-in prints the 8x H200 capture: its peak busbw and last size.
    assert result["rows"][-1]["size"] == 4294967296
    assert result["peak_busbw"] > 350


def test_torchrun_job_started_once_per_node_with_one_master():
    entry = _finished("ddp-resnet50")
    assert entry["job"]["succeeded"] is True
    lines = re.findall(r"torchrun stand-in host=(\S+) node_rank=(\d+) nnodes=(\d+) nproc_per_node=(\d+) "
                       r"master=(\S+) script=(.*)", entry["output"])
    assert sorted((line[0], line[1]) for line in lines) == [(NODES[0], "0"), (NODES[1], "1")]
    assert {line[2:5] for line in lines} == {("2", "1", NODES[0] + ":9901")}
    assert {line[5] for line in lines} == {"/opt/benchmark.py --batch-size=320 --model=resnet50"}


def test_a_torchrun_job_without_a_script_carries_the_ddp_benchmark(host):
    entry = _finished("ddp-default")
    assert entry["job"]["succeeded"] is True
    scripts = re.findall(r"torchrun stand-in host=\S+ node_rank=\d+ nnodes=2 nproc_per_node=\d+ master=\S+ script=(\S+) (.*)",
                         entry["output"])
    assert len(scripts) == 2
    path, args = scripts[0]
    assert re.match(r"^/tmp/gpufabric-ddp-\d+\.py$", path)
    assert "--world-size=2" in args and "--master-port=9901" in args and "--bucket-size=25" in args
    shipped = open(os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "roles", "ddp_benchmark", "files",
                                "ddp_benchmark.py")).read()
    for node in NODES:
        copy = subprocess.run(["docker", "exec", node, "cat", path], capture_output=True, text=True, check=False).stdout
        assert copy == shipped  # written on every node of the allocation, byte for byte


def test_scripts_follow_seed_004(host):
    script = host.file("/var/tmp/gpufabric-slurm/nccl-all-reduce.sbatch").content_string
    assert script.startswith("#!/bin/bash\n# ")  # sbatch reads the interpreter from the first line
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n" in script
    assert "--gres" not in script
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" > "$hostfile"' in script
    assert "export NCCL_IB_DISABLE=1\n" in script and "-x NCCL_IB_DISABLE" in script
    # The job really ran as sbatch saw it: bash accepts the script.
    assert host.run("bash -n /var/tmp/gpufabric-slurm/ddp-resnet50.sbatch").rc == 0


def test_reports_on_the_controller():
    report = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "slurm-report")
    names = sorted(os.listdir(report))
    assert {"jobs.json", "summary.md", "runs.json", "busbw.svg"} <= set(names)
    outputs = [n for n in names if n.endswith(".out")]
    assert sorted({re.sub(r"-\d+\.out$", "", n) for n in outputs}) == ["ddp-default", "ddp-resnet50", "nccl-all-reduce"]
    with open(os.path.join(report, "summary.md")) as handle:
        assert "slurm nccl-all-reduce" in handle.read()


def _play(job, *extra):
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    playbook = os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "failing_job.yml")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, playbook, "-e", json.dumps({"failing_job": job})]
                          + list(extra), capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("job, extra, message", [
    ({"name": "too-big", "template": "script", "nodes": 3, "script": "hostname"}, [],
     # slurmctld names the partition's node limit (PartitionNodeLimit) or its configuration (PartitionConfig).
     "can never start: PENDING (Partition"),
    ({"name": "exit-3", "template": "script", "nodes": 1, "script": "echo broken; exit 3"}, [],
     "ended FAILED (exit code 3, reason NonZeroExitCode)"),
    ({"name": "slow", "template": "script", "nodes": 1, "script": "sleep 120"}, ["-e", "failing_timeout=6"],
     "still RUNNING after 6 s; cancelled it"),
    ({"name": "bad name!", "template": "script", "script": "true"}, [], "name must match"),
], ids=["never-starts", "non-zero-exit", "timeout", "bad-name"])
def test_failing_jobs_fail_the_play_naming_why(host, job, extra, message):
    rc, out = _play(job, *extra)
    assert rc != 0
    assert message in " ".join(out.split())
    # Nothing is left queued or running behind the failure.
    assert host.run("squeue --noheader").stdout.strip() == ""


def test_nccl_tests_role_runs_through_slurm():
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "nccl-tests-slurm.json")) as handle:
        (run,) = json.load(handle)
    assert (run["label"], run["mode"], run["host"], run["rc"]) == (
        "all_reduce_perf through sbatch", "slurm", ",".join(NODES), 0)
    # nccl_tests_gpus_per_node 2 on each of the two nodes: four ranks, two per node.
    hosts = sorted(rank["host"] for rank in run["result"]["ranks"])
    assert hosts == [NODES[0], NODES[0], NODES[1], NODES[1]]
    assert run["passed"] is True
    # the Slurm job ran with NCCL_DEBUG=INFO: what NCCL used (the replayed socket log) is judged against IB off
    assert (run["nccl"]["net"], run["nccl"]["expected"]["rdma"], run["nccl"]["passed"]) == ("Socket", False, True)
