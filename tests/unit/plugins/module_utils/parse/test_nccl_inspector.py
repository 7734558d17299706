"""parse/nccl_inspector: the NCCL Inspector's two output forms - NVIDIA's published examples (README of
plugins/profiler/inspector/, pretty-printed there) and the constructed jobs in the plugin's exact on-disk layout
(one compact object per line, one file per process; one textfile per GPU) - read into per-communicator, per-rank
figures, bounded on a long job, every record left out counted."""

import glob
import json
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_inspector as inspector
from paths import fixture_path

HERE = fixture_path("nccl_inspector")


def files(folder):
    return [{"name": os.path.basename(path), "content": open(path, "rb").read()}
            for path in sorted(glob.glob(os.path.join(HERE, folder, "*")))]


def one(name):
    return [{"name": name, "content": open(os.path.join(HERE, name)).read()}]


def test_nvidias_readme_example_reads_as_one_allreduce_of_rank_2(read_fixture):
    parsed = inspector.parse_nccl_inspector(one("readme_example_coll.json"))
    (comm,) = parsed["communicators"]
    assert (comm["id"], comm["n_ranks"], comm["nnodes"], comm["name"]) == ("0x7f8c496ae9f661", 8, 1, None)
    assert comm["ranks"] == [{"rank": 2, "host": "example-hostname", "pid": 1639453, "collectives": 1, "p2p": 0,
                              "timing": []}]
    assert comm["collectives"] == [{"sn": 1407, "op": "AllReduce", "size": 17179869184,
                                    "ranks": {"2": [61974.0, 485.119099, 1748030377748202]}}]
    assert parsed["formats"] == ["json"] and parsed["problems"] == [] and parsed["counts"]["records"] == 1


def test_the_verbose_example_and_the_exporters_4_node_example_read_the_same_way():
    verbose = inspector.parse_nccl_inspector(one("readme_example_coll_verbose.json"))["communicators"][0]
    assert verbose["collectives"][0]["ranks"] == {"4": [41057.0, 366.134533, 1752867229276385]}
    assert verbose["ranks"][0]["timing"] == ["kernel_gpu"]
    exporter = inspector.parse_nccl_inspector(one("exporter_readme_example_coll_4node.json"))["communicators"][0]
    assert (exporter["n_ranks"], exporter["nnodes"], exporter["collectives"][0]["op"],
            exporter["collectives"][0]["size"]) == (32, 4, "ReduceScatter", 65536)


def test_the_readme_prometheus_example_reads_as_buckets_with_both_figures():
    parsed = inspector.parse_nccl_inspector(one("readme_example_metrics.prom"))
    coll, p2p = parsed["buckets"]
    assert (coll["kind"], coll["node"], coll["gpu"], coll["comm_name"], coll["nranks"], coll["collective"],
            coll["message_size"], coll["algo_proto"], coll["busbw"], coll["exec_us"]) == (
        "coll", "nvl72004-T01", "GPU0", "DP Group 0", "4", "AllReduce", "4-5GB", "Ring_ll", 678.263, 9498.47)
    assert (p2p["kind"], p2p["p2p_operation"], p2p["message_size"], p2p["busbw"], p2p["exec_us"]) == (
        "p2p", "Send", "512-513MB", 464.9, 1154.87)
    assert parsed["formats"] == ["prom"] and parsed["counts"]["prom_samples"] == 4


def test_a_constructed_8_rank_job_reads_every_rank_of_every_collective():
    parsed = inspector.parse_nccl_inspector(files("job_8rank_rank5_late_constructed"))
    (comm,) = parsed["communicators"]
    assert [(r["rank"], r["host"], r["pid"], r["collectives"]) for r in comm["ranks"]][4:6] == [
        (4, "gpu-a02", 52001, 120), (5, "gpu-a02", 52002, 120)]
    assert len(comm["collectives"]) == 120 and all(len(c["ranks"]) == 8 for c in comm["collectives"])
    assert parsed["dropped"] == dict((k, 0) for k in parsed["dropped"])


def test_a_file_read_twice_counts_each_record_once_and_a_cut_last_line_is_not_a_problem():
    job = files("job_8rank_rank5_late_constructed")
    cut = dict(job[0], content=job[0]["content"][:-200])   # the plugin was writing its last line
    parsed = inspector.parse_nccl_inspector(job + [job[1], cut])
    assert parsed["dropped"]["duplicates"] == 120 + 119 and parsed["dropped"]["cut_lines"] == 1
    assert parsed["problems"] == []


def test_a_long_job_is_kept_within_its_bounds_and_what_is_left_out_is_counted():
    line = json.dumps({"header": {"id": "0xabc", "rank": 0, "n_ranks": 2, "nnodes": 1},
                       "metadata": {"hostname": "h", "pid": 7},
                       "coll_perf": {"coll": "AllReduce", "coll_sn": 0, "coll_msg_size_bytes": 8192,
                                     "coll_exec_time_us": 10, "coll_busbw_gbs": 1.0}}, separators=(",", ":"))
    text = "\n".join(line.replace('"coll_sn":0', '"coll_sn":%d' % sn) for sn in range(5000)) + "\n"
    parsed = inspector.parse_nccl_inspector([{"name": "h-pid7.log", "content": text}], {"max_collectives": 100})
    sns = [c["sn"] for c in parsed["communicators"][0]["collectives"]]
    assert len(sns) <= 200 and sns[-1] == 4999 and min(sns) >= 4800
    assert parsed["dropped"]["collectives"] == 5000 - len(sns)
    capped = inspector.parse_nccl_inspector([{"name": "h-pid7.log", "content": text}], {"max_samples": 50})
    assert capped["counts"]["samples"] <= 50 and capped["dropped"]["collectives"] == 5000 - capped["counts"]["samples"]
    many = "\n".join(line.replace("0xabc", "0x%x" % n) for n in range(10)) + "\n"
    few = inspector.parse_nccl_inspector([{"name": "h-pid7.log", "content": many}], {"max_communicators": 3})
    assert len(few["communicators"]) == 3 and few["dropped"]["communicators"] == 7


def test_crlf_colour_and_bytes_that_are_not_utf8_are_read_as_far_as_they_go():
    job = files("job_8rank_agree_constructed")[0]["content"]
    noisy = b"\xff\xfe garbage\r\n" + job.replace(b"\n", b"\r\n").replace(b"AllReduce", b"\x1b[1mAllReduce\x1b[0m", 1)
    parsed = inspector.parse_nccl_inspector([{"name": "gpu-a01-pid41001.log", "content": noisy}])
    assert parsed["counts"]["records"] == 120 and parsed["communicators"][0]["collectives"][0]["op"] == "AllReduce"
    assert parsed["problems"] == ["gpu-a01-pid41001.log line 1: not JSON (Expecting value: line 1 column 1 (char 0))"]


@pytest.mark.parametrize("content, message", [
    ("hello world\n", "no NCCL Inspector record in x.log: x.log line 1: not JSON"),
    ('{"header": {"id": "0x1", "rank": 9, "n_ranks": 8}, "coll_perf": {"coll_sn": 1}}\n',
     "header id '0x1', rank 9 of n_ranks 8, coll_sn 1: not a communicator's rank and operation"),
    ('{"a": 1}\n', "an object without the Inspector's header"),
])
def test_text_that_is_no_inspector_output_fails_saying_what_it_was(content, message):
    with pytest.raises(inspector.InspectorError) as error:
        inspector.parse_nccl_inspector([{"name": "x.log", "content": content}])
    assert message in str(error.value)


def test_an_empty_file_is_no_dump_yet_not_an_error():
    parsed = inspector.parse_nccl_inspector([{"name": "gpu-a01-pid1.log", "content": ""}])
    assert parsed["counts"]["records"] == 0 and parsed["communicators"] == [] and parsed["problems"] == []


def test_prometheus_samples_of_another_job_are_left_out_and_labels_are_unescaped():
    text = ('nccl_bus_bandwidth_gbs{slurm_job_id="7",node="n\\"1",gpu="GPU0",comm_name="a,b",nranks="2",'
            'collective="AllReduce",message_size="1-2MB",algo_proto="Ring_ll"} 10\n'
            'nccl_bus_bandwidth_gbs{slurm_job_id="8",node="n2",gpu="GPU0"} 11\n'
            'node_load1 3\n')
    parsed = inspector.parse_nccl_inspector([{"name": "m.prom", "content": text}], job="7")
    (bucket,) = parsed["buckets"]
    assert (bucket["node"], bucket["comm_name"], bucket["busbw"], bucket["exec_us"]) == ('n"1', "a,b", 10.0, None)


def test_results_of_two_nodes_merge_into_one_job():
    job = files("job_8rank_rank5_late_constructed")
    first = inspector.parse_nccl_inspector(job[:4])
    second = inspector.parse_nccl_inspector(job[4:])
    merged = inspector.merge([first, second, second])
    (comm,) = merged["communicators"]
    assert len(comm["ranks"]) == 8 and all(len(c["ranks"]) == 8 for c in comm["collectives"])
    assert merged["dropped"]["duplicates"] == 4 * 120
    assert merged == inspector.merge([json.loads(json.dumps(first)), json.loads(json.dumps(second)), second])


@pytest.mark.parametrize("limits, message", [
    ({"max_rows": 1}, "unknown limit 'max_rows'"),
    ({"max_collectives": 0}, "limit max_collectives must be a whole number of at least 1, got 0"),
    ({"max_samples": True}, "limit max_samples must be a whole number of at least 1, got True"),
])
def test_a_bad_limit_is_refused_naming_it(limits, message):
    with pytest.raises(ValueError) as error:
        inspector.check_limits(limits)
    assert message in str(error.value)


def test_a_real_textfile_of_a_64_gpu_job_published_by_nvidia_reads_as_three_buckets():
    parsed = inspector.parse_nccl_inspector(one("blog_prom_nvl72_job1670760.prom"))
    send, recv, scatter = sorted(parsed["buckets"], key=lambda b: (b["kind"] == "coll", b["p2p_operation"] != "Send"))
    assert (send["p2p_operation"], send["nranks"], send["busbw"], send["exec_us"]) == ("Send", "64", 19.1634, 92.8984)
    assert (recv["p2p_operation"], recv["busbw"], recv["exec_us"]) == ("Recv", 19.2396, 92.5781)
    assert (scatter["collective"], scatter["slurm_job_id"], scatter["node"], scatter["n_nodes"], scatter["nranks"],
            scatter["message_size"], scatter["algo_proto"], scatter["busbw"], scatter["exec_us"]) == (
        "ReduceScatter", "1670760", "nvl72033-T01", "4", "32", "134-135MB", "RING_SIMPLE", 44.1181, 104164.0)
    assert parsed["problems"] == [] and parsed["counts"]["prom_samples"] == 6


def test_a_newer_textfile_with_counts_sums_and_ranks_gives_each_buckets_mean_and_rank():
    # The labels and metrics a newer inspector_prom.cc writes (comm_id, comm_rank; count and time sum, no mean).
    labels = ('version="v5.1",slurm_job_id="9",world_rank="3",local_rank="3",node="n1",gpu="GPU3",comm_id="0xab",'
              'comm_name="unknown",comm_rank="3",n_nodes="1",nranks="4",collective="AllReduce",message_size="1-2MB",'
              'message_size_bytes="1048576",algo_proto="RING_LL",timing_source="kernel_gpu"')
    text = ("nccl_bus_bandwidth_gbs{%s} 10\nnccl_collective_count{%s} 4\n"
            "nccl_collective_exec_time_sum_microseconds{%s} 400\n" % (labels, labels, labels))
    (bucket,) = inspector.parse_nccl_inspector([{"name": "m.prom", "content": text}])["buckets"]
    assert (bucket["comm_id"], bucket["comm_rank"], bucket["count"], bucket["exec_us"]) == ("0xab", "3", 4.0, 100.0)
