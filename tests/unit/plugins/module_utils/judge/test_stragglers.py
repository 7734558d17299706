"""judge/stragglers and judge/slow_job: the ranks that hold a running job back, from the Inspector's figures (the
constructed jobs of fixtures/nccl_inspector/, in the plugin's exact layout: no real slowed-rank capture exists yet),
each joined with its node's health as hang.yml joins a hung job's suspects."""

import glob
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import slow_job, stragglers
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_inspector as inspector
from paths import fixture_path

HERE = fixture_path("nccl_inspector")
PLACEMENT = {"n2": {"hostnames": ["gpu-a02"], "processes": {"52002": {"index": 1, "bus_id": "00000000:00:07.0"}},
                    "gpu_nics": {"GPU1": ["mlx5_1"]}}}
THROTTLE = {"check": "gpu_clock_throttle", "severity": "warning", "target": "n2/GPU 00000000:00:07.0",
            "detail": "clocks held down by hw_slowdown (00000000:00:07.0)"}
PORT = {"check": "port_errors", "severity": "critical", "target": "n2/mlx5_5/1", "detail": "symbol errors rising"}


def parsed(folder, limits=None):
    return inspector.parse_nccl_inspector([{"name": os.path.basename(p), "content": open(p).read()}
                                           for p in sorted(glob.glob(os.path.join(HERE, folder, "*")))], limits)


def test_the_rank_that_comes_last_to_every_collective_is_named_with_its_gpu_and_nic():
    judged = stragglers.nccl_stragglers(parsed("job_8rank_rank5_late_constructed"), placement=PLACEMENT)
    (late,) = judged["stragglers"]
    assert (judged["verdict"], late["kind"], late["rank"], late["node"], late["pid"], late["nvml_gpu"], late["nics"]) == (
        "stragglers", "late", 5, "gpu-a02", 52002, 1, ["mlx5_1"])
    assert (late["compared"], late["late_share"]) == (120, 1.0) and 1500 <= late["wait_us"] <= 4000
    assert late["why"].startswith("last to arrive at 120 of 120 collectives of communicator 0x1f2e3d4c5b6a7980 "
                                  "compared (100%); the others waited a median ")
    assert late["why"].endswith("; GPU 1; its rail's NIC mlx5_1")
    (comm,) = judged["communicators"]
    assert [r["late_share"] for r in comm["ranks"]] == [0.0] * 5 + [1.0] + [0.0] * 2
    assert judged["summary"] == "1 straggler(s): gpu-a02 rank 5"


def test_a_job_whose_ranks_agree_names_nobody_through_its_slower_phase():
    judged = stragglers.nccl_stragglers(parsed("job_8rank_agree_constructed"))
    assert (judged["verdict"], judged["stragglers"]) == ("agree", [])
    assert judged["summary"] == "the ranks of 1 communicator(s) agree: none comes late"
    # The second half of the job is 1.6x slower for every rank: the same ranks' times, compared half by half.
    (comm,) = judged["communicators"]
    assert comm["compared"] == 120 and max(r["late"] for r in comm["ranks"]) == 0


def test_a_host_in_every_slow_communicator_and_no_fast_one_is_named():
    judged = stragglers.nccl_stragglers(parsed("comms_5x2rank_gpu_b03_slow_constructed"))
    (group,) = judged["slow_communicators"]
    assert (group["hosts"], len(group["slow"]), group["fast"]) == (["gpu-b03"], 2, 3)
    assert sorted((s["node"], s["kind"]) for s in judged["stragglers"]) == [("gpu-b03", "slow"), ("gpu-b03", "slow")]
    assert "50% of the 24.0 GB/s median of 5 communicators of 2 ranks; gpu-b03 is in every slow one and in no fast " \
           "one" in judged["stragglers"][0]["why"]


def test_the_prometheus_textfiles_name_the_late_gpu_by_node_and_gpu():
    judged = stragglers.nccl_stragglers(parsed("prom_8gpu_gpu_a02_gpu1_late_constructed"))
    (late,) = judged["stragglers"]
    assert (late["node"], late["gpu"], late["rank"], late["nvml_gpu"], late["compared"]) == ("gpu-a02", "GPU1", None, 1, 2)
    assert judged["communicators"][0]["id"] == "DP Group 0 (job 4242)"


def test_too_few_collectives_or_ranks_not_read_are_unknown_never_agree():
    job = [{"name": os.path.basename(p), "content": open(p).read()}
           for p in sorted(glob.glob(os.path.join(HERE, "job_8rank_agree_constructed", "*")))]
    half = stragglers.nccl_stragglers(inspector.parse_nccl_inspector(job[:4]))
    assert half["verdict"] == "unknown" and half["summary"] == (
        "the ranks read agree, but 4 of the 8 ranks of communicator 0x1f2e3d4c5b6a7980 were not read")
    few = stragglers.nccl_stragglers(inspector.parse_nccl_inspector(job), {"min_collectives": 500})
    assert few["verdict"] == "unknown" and few["summary"].startswith("too few collectives to compare: communicator ")
    assert stragglers.nccl_stragglers({"communicators": []})["verdict"] == "unknown"


def test_a_rank_late_in_fewer_than_late_share_of_the_collectives_is_not_named():
    data = parsed("job_8rank_rank5_late_constructed")
    for entry in data["communicators"][0]["collectives"][:70]:    # rank 5 on time for 70 of 120
        times = entry["ranks"]
        own = times["5"][0]
        for rank in times:
            times[rank][0] = own
    assert stragglers.nccl_stragglers(data)["verdict"] == "agree"
    assert stragglers.nccl_stragglers(data, {"late_share": 0.4})["stragglers"][0]["rank"] == 5


@pytest.mark.parametrize("rules, message", [
    ({"late_share": 1.5}, "rule late_share must be a fraction above 0 and at most 1, got 1.5"),
    ({"min_collectives": 2.5}, "rule min_collectives must be a whole number of at least 1, got 2.5"),
    ({"min_wait": 5}, "unknown rule 'min_wait'"),
    ({"min_wait_us": "fast"}, "rule min_wait_us must be a number, got 'fast'"),
])
def test_a_bad_rule_is_refused_naming_it_and_what_would_be_right(rules, message):
    with pytest.raises(ValueError) as error:
        stragglers.check_rules(rules)
    assert message in str(error.value)


def test_the_report_joins_each_straggler_with_its_nodes_health_its_gpus_findings_first():
    judged = stragglers.nccl_stragglers(parsed("job_8rank_rank5_late_constructed"), placement=PLACEMENT)
    read = [{"node": "n1", "read": True, "hostnames": ["gpu-a01"], "files": ["a"]},
            {"node": "n2", "read": True, "hostnames": ["gpu-a02"], "files": ["b"]}]
    report = slow_job.slow_report(judged, {"n2": {"findings": [PORT, THROTTLE], "complete": True}}, {}, "4242", read)
    (suspect,) = report["suspects"]
    assert (report["verdict"], suspect["host"], suspect["verdict"]) == ("stragglers", "n2", "hardware")
    assert [f["check"] for f in suspect["hardware"]] == ["gpu_clock_throttle", "port_errors"]
    assert suspect["line"].startswith("rank 5 late on node n2, GPU 1 (last to arrive at 120 of 120 ")
    assert report["summary"] == "1 straggler(s): 1 with a hardware finding, 0 without (the application), 0 unknown"
    clean = slow_job.slow_report(judged, {"n2": {"findings": [], "complete": True}}, {}, "4242", read)
    assert clean["suspects"][0]["verdict"] == "application"
    markdown = slow_job.render_markdown(report)
    assert markdown.startswith("# gpufabric.rdma slow-job report - job 4242\n\n**STRAGGLERS**: 1 straggler(s)")
    assert "| 5 | n2 | 1 | mlx5_1 | late | 1.0 |" in markdown


def test_a_node_whose_dumps_were_not_read_makes_agree_unknown():
    judged = stragglers.nccl_stragglers(parsed("job_8rank_agree_constructed"))
    read = [{"node": "n1", "read": True, "hostnames": ["gpu-a01", "gpu-a02"]},
            {"node": "n3", "read": False, "msg": "no Inspector dump directory /x"}]
    report = slow_job.slow_report(judged, {}, {}, None, read)
    assert (report["verdict"], report["summary"]) == (
        "unknown", "the ranks read agree, but not every node's dumps were read: n3: no Inspector dump directory /x")


def test_a_name_two_nodes_read_on_shared_storage_is_left_to_the_addresses():
    read = [{"node": "n1", "hostnames": ["gpu-a01", "gpu-a02"]}, {"node": "n2", "hostnames": ["gpu-a02"]}]
    assert slow_job.host_map(read) == {"gpu-a01": "n1"}
    assert slow_job.host_map(read, {"gpu-a02": "n2"}) == {"gpu-a01": "n1", "gpu-a02": "n2"}
    assert slow_job.gpu_target("00000000:3B:00.0") == "0000:3b:00" and slow_job.gpu_target("x") is None


def test_one_gpus_real_textfile_compares_nothing_and_says_so():
    judged = stragglers.nccl_stragglers(parsed_file("blog_prom_nvl72_job1670760.prom"))
    assert judged["verdict"] == "unknown" and judged["stragglers"] == []
    assert judged["summary"] == (
        "too few collectives to compare: communicator unknown (job 1670760) 0 compared of the 1 needed")


def parsed_file(name):
    return inspector.parse_nccl_inspector([{"name": name, "content": open(os.path.join(HERE, name)).read()}])
