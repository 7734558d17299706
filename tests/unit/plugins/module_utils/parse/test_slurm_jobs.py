import re

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs


def summary(read_fixture, name):
    return slurm_jobs.job_summary(slurm_jobs.parse_job_record(read_fixture("slurm", name)))


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
    record = slurm_jobs.parse_job_record(read_fixture("slurm", "scontrol_job_completed.txt"))
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
    record = slurm_jobs.parse_job_record(read_fixture("slurm", "scontrol_job_running_multiline.txt"))
    assert record["Command"] == "/scratch/tdegeus/front-dynamics/Run/sims_A=900/python_PinAndTrigger.py-00.slurm"
    assert record["JobName"] == "velocity_python_PinAndTrigger.py-00"
    job = slurm_jobs.job_summary(record)
    assert (job["nodes"], job["run_time_s"], job["partition"]) == (["f006"], 20 * 3600 + 27 * 60 + 30, "serial")


@pytest.mark.parametrize("name", ["scontrol_job_invalid.txt", "sbatch_error_gres.txt"])
def test_error_text_is_not_a_record(read_fixture, name):
    with pytest.raises(slurm_jobs.SlurmParseError):
        slurm_jobs.parse_job_record(read_fixture("slurm", name))


@pytest.mark.parametrize("text, expected", [
    ("1\n", ("1", None)),
    ("4711;cluster-b\n", ("4711", "cluster-b")),
    ("sbatch: warning: can't honor --ntasks-per-node\n123\n", ("123", None)),
])
def test_parse_submit(text, expected):
    assert slurm_jobs.parse_submit(text) == expected


def test_parse_submit_refuses_an_error(read_fixture):
    with pytest.raises(slurm_jobs.SlurmParseError, match="no job id"):
        slurm_jobs.parse_submit(read_fixture("slurm", "sbatch_error_gres.txt"))


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
    assert slurm_jobs.expand_hostlist(expression) == hosts


@pytest.mark.parametrize("expression", ["n[1-2", "n1-2]", "n[3-1]", "n[a-b]"])
def test_expand_hostlist_refuses_broken_lists(expression):
    with pytest.raises(slurm_jobs.SlurmParseError):
        slurm_jobs.expand_hostlist(expression)


@pytest.mark.parametrize("text, seconds", [
    ("00:00:01", 1), ("20:27:30", 73650), ("2-00:00:00", 172800), ("05:07", 307), ("UNLIMITED", None)])
def test_duration_seconds(text, seconds):
    assert slurm_jobs.duration_seconds(text) == seconds


def test_sacct_line_for_a_forgotten_job():
    text = "41|nccl|CANCELLED by 0|0:15|gpu-a[08-09]|00:03:10|gpu\n41.batch|batch|CANCELLED|0:15|gpu-a08|00:03:10|\n"
    job = slurm_jobs.job_summary(slurm_jobs.parse_sacct(text, "41"))
    assert (job["state"], job["signal"], job["nodes"], job["run_time_s"]) == ("CANCELLED", 15, ["gpu-a08", "gpu-a09"], 190)
    assert slurm_jobs.parse_sacct("Slurm accounting storage is disabled\n", "41") is None


def test_job_runs_keeps_only_nccl_tests_jobs():
    jobs = [
        {"name": "allreduce", "template": "nccl_tests", "script": "/var/tmp/a.sbatch", "output": "text",
         "job": {"job_id": "7", "nodes": ["n1", "n2"], "exit_code": 0}},
        {"name": "ddp", "template": "torchrun", "output": "x", "job": {"job_id": "8"}},
    ]
    (run,) = slurm_jobs.job_runs(jobs)
    assert run == {"label": "slurm allreduce (job 7, 2 nodes)", "host": "n1,n2", "mode": "slurm",
                   "command": "sbatch /var/tmp/a.sbatch", "rc": 0, "output": "text", "not_run": None, "env": {}}


@pytest.mark.parametrize("expression, message", [
    ("n[1-100001]", "hostlist 'n[1-100001]' names more than 100000 hosts: refusing to expand it"),
    ("n[1-1000]-g[1-1000]", "names more than 100000 hosts"),
    ("n[0-99999999999999999]", "names more than 100000 hosts"),
    ("n[1-9999999999999999999999]", "bad range '1-9999999999999999999999'"),
])
def test_absurd_hostlists_are_refused(expression, message):
    with pytest.raises(slurm_jobs.SlurmParseError, match=re.escape(message)):
        slurm_jobs.expand_hostlist(expression)


def test_the_largest_allowed_hostlist_expands():
    hosts = slurm_jobs.expand_hostlist("gpu-[00001-50000],cpu-[1-50000]")
    assert len(hosts) == 100000 and hosts[0] == "gpu-00001" and hosts[-1] == "cpu-50000"


@pytest.mark.parametrize("node_list, problem", [
    ("gpu[01-", "unbalanced '[' in hostlist 'gpu[01-'"),
    ("node[3-1]", "range '3-1' runs backwards in hostlist 'node[3-1]'"),
    ("a[1-99999999]", "hostlist 'a[1-99999999]' names more than 100000 hosts: refusing to expand it"),
    ("gpu[0\u00b2]", "bad range '0\u00b2' in hostlist 'gpu[0\u00b2]'"),
    ("gpu[\u0663]", "bad range '\u0663' in hostlist 'gpu[\u0663]'"),   # int() would read it as 3
])
def test_a_malformed_nodelist_in_a_job_record_is_named(read_fixture, node_list, problem):
    text = read_fixture("slurm", "scontrol_job_completed.txt")
    assert "NodeList=gpufabric-slurm-node[1-2] " in text
    record = slurm_jobs.parse_job_record(text.replace("NodeList=gpufabric-slurm-node[1-2] ", "NodeList=%s " % node_list))
    with pytest.raises(slurm_jobs.SlurmParseError) as error:
        slurm_jobs.job_summary(record)
    assert str(error.value) == "job 1: NodeList is not a Slurm hostlist: %s" % problem


def test_numbers_in_a_job_record_are_ascii_digits(read_fixture):
    text = read_fixture("slurm", "scontrol_job_completed.txt")
    for old, new in (("ExitCode=0:0 ", "ExitCode=\u00b2:0 "), ("NumNodes=2 ", "NumNodes=\u00b2 "),
                     ("NumTasks=4 ", "NumTasks=%s " % ("4" * 5000)), ("RunTime=00:00:01 ", "RunTime=%s:01 " % ("1" * 5000))):
        assert old in text
        text = text.replace(old, new)
    job = slurm_jobs.job_summary(slurm_jobs.parse_job_record(text))   # before: int('\u00b2') raised ValueError
    assert (job["exit_code"], job["num_nodes"], job["num_tasks"], job["run_time_s"]) == (None, None, None, None)
    assert job["nodes"] == ["gpufabric-slurm-node1", "gpufabric-slurm-node2"]


def test_sacct_none_assigned_is_no_node():
    job = slurm_jobs.job_summary(slurm_jobs.parse_sacct("42|nccl|PENDING|0:0|None assigned|00:00:00|gpu\n", "42"))
    assert (job["state"], job["node_list"], job["nodes"]) == ("PENDING", None, [])


@pytest.mark.parametrize("value", ["1", "4711", "4294967293"])
def test_check_job_id_takes_slurm_job_ids(value):
    assert slurm_jobs.check_job_id(value) == value


@pytest.mark.parametrize("value", [u"\u00b2", u"\u0664\u0667", "0", "4294967294", "4294967295", "12345678901",
                                   "12_3", "1+0", "-5", " 1", "1\n", "", 7])
def test_check_job_id_refuses_what_is_not_one(value):
    with pytest.raises(ValueError) as error:
        slurm_jobs.check_job_id(value)
    assert str(error.value) == ("job_id must be a Slurm job id, a whole number from 1 to 4294967293 in ASCII digits, "
                                "got %r" % (value,))


@pytest.mark.parametrize("text", [u"\u0664\u0667\n", "0\n", "4294967295\n", "9" * 5000 + "\n"])
def test_parse_submit_refuses_what_is_no_job_id(text):
    with pytest.raises(slurm_jobs.SlurmParseError, match="sbatch --parsable printed no job id"):
        slurm_jobs.parse_submit(text)


@pytest.mark.parametrize("nodes, message", [
    ("gpu[01-", "slurm job allreduce: nodes is not a Slurm hostlist: unbalanced '[' in hostlist 'gpu[01-'"),
    ([1, 2], "slurm job allreduce: nodes must be a list of host names (slurm_job's nodes) or a Slurm hostlist, got [1, 2]"),
])
def test_job_runs_names_nodes_that_are_not_hosts(nodes, message):
    jobs = [{"name": "allreduce", "template": "nccl_tests", "output": "", "job": {"job_id": "7", "nodes": nodes}}]
    with pytest.raises(ValueError) as error:
        slurm_jobs.job_runs(jobs)
    assert str(error.value) == message


def test_job_runs_expands_nodes_given_as_a_hostlist():
    jobs = [{"name": "allreduce", "template": "nccl_tests", "output": "", "job": {"job_id": "7", "nodes": "gpu-a[08-09]"}}]
    (run,) = slurm_jobs.job_runs(jobs)   # before: "g,p,u,-,a,[,0,8,-,0,9,]"
    assert run["host"] == "gpu-a08,gpu-a09" and run["label"] == "slurm allreduce (job 7, 2 nodes)"
