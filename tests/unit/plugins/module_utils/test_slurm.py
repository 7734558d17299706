import re

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils import slurm


def summary(read_fixture, name):
    return slurm.job_summary(slurm.parse_job_record(read_fixture("slurm", name)))


def test_completed_two_node_job(read_fixture):
    job = summary(read_fixture, "scontrol_job_completed.txt")
    assert (job["job_id"], job["name"], job["state"], job["terminal"], job["succeeded"]) == (
        "1", "nccl-probe", "COMPLETED", True, True)
    assert job["nodes"] == ["gpufabric-slurm-node1", "gpufabric-slurm-node2"]
    assert (job["node_list"], job["batch_host"], job["num_nodes"], job["num_tasks"]) == (
        "gpufabric-slurm-node[1-2]", "gpufabric-slurm-node1", 2, 4)
    assert (job["std_out"], job["work_dir"], job["exit_code"], job["signal"], job["reason"]) == (
        "/tmp/nccl-probe-1.out", "/tmp", 0, 0, None)
    assert job["run_time_s"] == 1 and job["time_limit"] == "UNLIMITED"


def test_record_keeps_values_with_equals_and_keys_with_colons(read_fixture):
    record = slurm.parse_job_record(read_fixture("slurm", "scontrol_job_completed.txt"))
    assert record["TRES"] == "cpu=4,node=2,billing=4"
    assert record["AllocNode:Sid"] == "gpufabric-slurm-ctl:1314"
    assert record["NtasksPerN:B:S:C"] == "2:0:*:*"
    assert record["Power"] == ""


def test_failed_job_exit_code(read_fixture):
    job = summary(read_fixture, "scontrol_job_failed.txt")
    assert (job["state"], job["reason"], job["exit_code"], job["succeeded"], job["terminal"]) == (
        "FAILED", "NonZeroExitCode", 3, False, True)


def test_running_and_pending_are_not_final(read_fixture):
    running = summary(read_fixture, "scontrol_job_running.txt")
    pending = summary(read_fixture, "scontrol_job_pending.txt")
    assert (running["state"], running["terminal"], running["never_starts"]) == ("RUNNING", False, None)
    # Waiting for resources resolves by itself; nothing to cancel.
    assert (pending["state"], pending["reason"], pending["terminal"], pending["never_starts"]) == (
        "PENDING", "Resources", False, None)
    assert pending["nodes"] == [] and pending["batch_host"] is None


def test_job_too_big_for_the_partition_never_starts(read_fixture):
    job = summary(read_fixture, "scontrol_job_pending_nodes.txt")
    assert (job["state"], job["reason"]) == ("PENDING", "PartitionNodeLimit")
    assert "more (or fewer) nodes than the partition" in job["never_starts"]


def test_cancelled_job_reports_signal_15(read_fixture):
    job = summary(read_fixture, "scontrol_job_cancelled.txt")
    assert (job["state"], job["exit_code"], job["signal"], job["succeeded"]) == ("CANCELLED", 0, 15, False)


def test_multiline_record_from_a_production_cluster(read_fixture):
    record = slurm.parse_job_record(read_fixture("slurm", "scontrol_job_running_multiline.txt"))
    assert record["Command"] == "/scratch/tdegeus/front-dynamics/Run/sims_A=900/python_PinAndTrigger.py-00.slurm"
    assert record["JobName"] == "velocity_python_PinAndTrigger.py-00"
    job = slurm.job_summary(record)
    assert (job["nodes"], job["run_time_s"], job["partition"]) == (["f006"], 20 * 3600 + 27 * 60 + 30, "serial")


@pytest.mark.parametrize("name", ["scontrol_job_invalid.txt", "sbatch_error_gres.txt"])
def test_error_text_is_not_a_record(read_fixture, name):
    with pytest.raises(slurm.SlurmParseError):
        slurm.parse_job_record(read_fixture("slurm", name))


@pytest.mark.parametrize("text, expected", [
    ("1\n", ("1", None)),
    ("4711;cluster-b\n", ("4711", "cluster-b")),
    ("sbatch: warning: can't honor --ntasks-per-node\n123\n", ("123", None)),
])
def test_parse_submit(text, expected):
    assert slurm.parse_submit(text) == expected


def test_parse_submit_refuses_an_error(read_fixture):
    with pytest.raises(slurm.SlurmParseError, match="no job id"):
        slurm.parse_submit(read_fixture("slurm", "sbatch_error_gres.txt"))


@pytest.mark.parametrize("expression, hosts", [
    # What scontrol show hostnames printed for the same expression on the lab's Slurm 22.05.8.
    ("gpufabric-slurm-node[1-2],gpu-a[08-10]",
     ["gpufabric-slurm-node1", "gpufabric-slurm-node2", "gpu-a08", "gpu-a09", "gpu-a10"]),
    ("f006", ["f006"]),
    ("n[1,3-4]", ["n1", "n3", "n4"]),
    ("n[09-11]", ["n09", "n10", "n11"]),
    ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
    ("", []),
])
def test_expand_hostlist(expression, hosts):
    assert slurm.expand_hostlist(expression) == hosts


@pytest.mark.parametrize("expression", ["n[1-2", "n1-2]", "n[3-1]", "n[a-b]"])
def test_expand_hostlist_refuses_broken_lists(expression):
    with pytest.raises(slurm.SlurmParseError):
        slurm.expand_hostlist(expression)


@pytest.mark.parametrize("text, seconds", [
    ("00:00:01", 1), ("20:27:30", 73650), ("2-00:00:00", 172800), ("05:07", 307), ("UNLIMITED", None)])
def test_duration_seconds(text, seconds):
    assert slurm.duration_seconds(text) == seconds


def test_sacct_line_for_a_forgotten_job():
    text = "41|nccl|CANCELLED by 0|0:15|gpu-a[08-09]|00:03:10|gpu\n41.batch|batch|CANCELLED|0:15|gpu-a08|00:03:10|\n"
    job = slurm.job_summary(slurm.parse_sacct(text, "41"))
    assert (job["state"], job["signal"], job["nodes"], job["run_time_s"]) == ("CANCELLED", 15, ["gpu-a08", "gpu-a09"], 190)
    assert slurm.parse_sacct("Slurm accounting storage is disabled\n", "41") is None


def test_job_runs_keeps_only_nccl_tests_jobs():
    jobs = [
        {"name": "allreduce", "template": "nccl_tests", "script": "/var/tmp/a.sbatch", "output": "text",
         "job": {"job_id": "7", "nodes": ["n1", "n2"], "exit_code": 0}},
        {"name": "ddp", "template": "torchrun", "output": "x", "job": {"job_id": "8"}},
    ]
    (run,) = slurm.job_runs(jobs)
    assert run == {"label": "slurm allreduce (job 7, 2 nodes)", "host": "n1,n2", "mode": "slurm",
                   "command": "sbatch /var/tmp/a.sbatch", "rc": 0, "output": "text", "not_run": None}


@pytest.mark.parametrize("expression, message", [
    ("n[1-100001]", "hostlist 'n[1-100001]' names more than 100000 hosts: refusing to expand it"),
    ("n[1-1000]-g[1-1000]", "names more than 100000 hosts"),
    ("n[0-99999999999999999]", "names more than 100000 hosts"),
    ("n[1-9999999999999999999999]", "bad range '1-9999999999999999999999'"),
])
def test_absurd_hostlists_are_refused(expression, message):
    with pytest.raises(slurm.SlurmParseError, match=re.escape(message)):
        slurm.expand_hostlist(expression)


def test_the_largest_allowed_hostlist_expands():
    hosts = slurm.expand_hostlist("gpu-[00001-50000],cpu-[1-50000]")
    assert len(hosts) == 100000 and hosts[0] == "gpu-00001" and hosts[-1] == "cpu-50000"
