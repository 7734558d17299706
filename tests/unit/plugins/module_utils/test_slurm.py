import re

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm


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
                   "command": "sbatch /var/tmp/a.sbatch", "rc": 0, "output": "text", "not_run": None, "env": {}}


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
    record = slurm.parse_job_record(text.replace("NodeList=gpufabric-slurm-node[1-2] ", "NodeList=%s " % node_list))
    with pytest.raises(slurm.SlurmParseError) as error:
        slurm.job_summary(record)
    assert str(error.value) == "job 1: NodeList is not a Slurm hostlist: %s" % problem


def test_numbers_in_a_job_record_are_ascii_digits(read_fixture):
    text = read_fixture("slurm", "scontrol_job_completed.txt")
    for old, new in (("ExitCode=0:0 ", "ExitCode=\u00b2:0 "), ("NumNodes=2 ", "NumNodes=\u00b2 "),
                     ("NumTasks=4 ", "NumTasks=%s " % ("4" * 5000)), ("RunTime=00:00:01 ", "RunTime=%s:01 " % ("1" * 5000))):
        assert old in text
        text = text.replace(old, new)
    job = slurm.job_summary(slurm.parse_job_record(text))   # before: int('\u00b2') raised ValueError
    assert (job["exit_code"], job["num_nodes"], job["num_tasks"], job["run_time_s"]) == (None, None, None, None)
    assert job["nodes"] == ["gpufabric-slurm-node1", "gpufabric-slurm-node2"]


def test_sacct_none_assigned_is_no_node():
    job = slurm.job_summary(slurm.parse_sacct("42|nccl|PENDING|0:0|None assigned|00:00:00|gpu\n", "42"))
    assert (job["state"], job["node_list"], job["nodes"]) == ("PENDING", None, [])


@pytest.mark.parametrize("value", ["1", "4711", "4294967293"])
def test_check_job_id_takes_slurm_job_ids(value):
    assert slurm.check_job_id(value) == value


@pytest.mark.parametrize("value", [u"\u00b2", u"\u0664\u0667", "0", "4294967294", "4294967295", "12345678901",
                                   "12_3", "1+0", "-5", " 1", "1\n", "", 7])
def test_check_job_id_refuses_what_is_not_one(value):
    with pytest.raises(ValueError) as error:
        slurm.check_job_id(value)
    assert str(error.value) == ("job_id must be a Slurm job id, a whole number from 1 to 4294967293 in ASCII digits, "
                                "got %r" % (value,))


@pytest.mark.parametrize("text", [u"\u0664\u0667\n", "0\n", "4294967295\n", "9" * 5000 + "\n"])
def test_parse_submit_refuses_what_is_no_job_id(text):
    with pytest.raises(slurm.SlurmParseError, match="sbatch --parsable printed no job id"):
        slurm.parse_submit(text)


@pytest.mark.parametrize("nodes, message", [
    ("gpu[01-", "slurm job allreduce: nodes is not a Slurm hostlist: unbalanced '[' in hostlist 'gpu[01-'"),
    ([1, 2], "slurm job allreduce: nodes must be a list of host names (slurm_job's nodes) or a Slurm hostlist, got [1, 2]"),
])
def test_job_runs_names_nodes_that_are_not_hosts(nodes, message):
    jobs = [{"name": "allreduce", "template": "nccl_tests", "output": "", "job": {"job_id": "7", "nodes": nodes}}]
    with pytest.raises(ValueError) as error:
        slurm.job_runs(jobs)
    assert str(error.value) == message


def test_job_runs_expands_nodes_given_as_a_hostlist():
    jobs = [{"name": "allreduce", "template": "nccl_tests", "output": "", "job": {"job_id": "7", "nodes": "gpu-a[08-09]"}}]
    (run,) = slurm.job_runs(jobs)   # before: "g,p,u,-,a,[,0,8,-,0,9,]"
    assert run["host"] == "gpu-a08,gpu-a09" and run["label"] == "slurm allreduce (job 7, 2 nodes)"


# --- slurm.conf as Slurm reads it ------------------------------------------------------------------

MAIN = "/etc/slurm/slurm.conf"
OURS = "/usr/local/sbin/gpufabric-"
WANTED = {"HealthCheckProgram": OURS + "healthcheck", "HealthCheckInterval": "300", "HealthCheckNodeState": "ANY",
          "Prolog": OURS + "prolog"}


def settings_of(text):
    return [(e["line"], e["key"], e["value"]) for e in slurm.parse_conf(text) if "key" in e]


def test_parse_conf_reads_lines_as_slurm_does():
    text = ("# cluster\n"
            "ClusterName=Alpha   # trailing comment\n"
            "prolog = /etc/slurm/prolog.sh\n"
            'Epilog="/opt/site/epilog with space"\n'
            "PrologFlags=Alloc,\\\n"
            "  Contain\n"
            "Comment=a\\#b#c\n"
            "  include not-an-include.conf\n"
            "INCLUDE\tconf.d/site.conf  \n"
            "Included=x\n"
            "MaxJobCount+=5\n"
            "Empty=\n")
    assert settings_of(text) == [(2, "ClusterName", "Alpha"), (3, "prolog", "/etc/slurm/prolog.sh"),
                                 (4, "Epilog", "/opt/site/epilog with space"), (5, "PrologFlags", "Alloc,"),
                                 (7, "Comment", "a#b"), (10, "Included", "x"), (11, "MaxJobCount", "5")]
    entries = slurm.parse_conf(text)
    assert [e for e in entries if "include" in e] == [{"line": 9, "last": 9, "include": "conf.d/site.conf"}]
    assert [e["last"] for e in entries if e.get("key") == "PrologFlags"] == [6]
    assert [e["op"] for e in entries if e.get("key") == "MaxJobCount"] == ["+"]


def test_parse_conf_reads_crlf_bom_and_bytes_that_are_not_utf8():
    data = b"\xef\xbb\xbfClusterName=alpha\r\nProlog=/opt/caf\xe9/prolog\r\nInclude site.conf\r\n"
    entries = slurm.parse_conf(data)
    assert entries[0]["key"] == "ClusterName" and entries[0]["value"] == "alpha"
    assert entries[1]["value"].encode("utf-8", "surrogateescape") == b"/opt/caf\xe9/prolog"
    assert entries[2]["include"] == "site.conf"
    assert slurm.shown(entries[1]["value"]) == u"/opt/caf\ufffd/prolog"


def test_a_continued_line_keeps_an_escaped_backslash_and_a_comment_stops_the_continuation():
    assert settings_of("A=x\\\\\nB=y\n") == [(1, "A", "x\\"), (2, "B", "y")]
    assert settings_of("A=x \\\n  y\nB=z # not continued \\\nC=w\n") == [(1, "A", "x"), (3, "B", "z"), (4, "C", "w")]


@pytest.mark.parametrize("version, base", [((22, 5), "including"), ((20, 11), "including"), ((23, 2), "main"),
                                           ((24, 11), "main"), (None, None)])
def test_include_base_by_release(version, base):
    assert slurm.include_base(version) == base


@pytest.mark.parametrize("text, version", [("slurm 24.11.5\n", (24, 11)), ("slurm-wlm 22.05.8", (22, 5)),
                                           ("command not found", None), ("slurm %s.05\n" % ("2" * 5000), None)])
def test_parse_version(text, version):
    assert slurm.parse_version(text) == version


def test_include_path_follows_each_release_rule():
    nested = "/etc/slurm/conf.d/site.conf"
    assert slurm.include_path("gpu.conf", nested, MAIN, "main") == "/etc/slurm/gpu.conf"
    assert slurm.include_path("gpu.conf", nested, MAIN, "including") == "/etc/slurm/conf.d/gpu.conf"
    assert slurm.include_path("/abs/gpu.conf", nested, MAIN, "main") == "/abs/gpu.conf"
    assert slurm.include_path("gpu.conf", nested, "slurm.conf", "main") == "gpu.conf"


def tree(files, base="main"):
    return slurm.conf_tree(MAIN, files, base)


def test_conf_tree_reads_includes_in_slurms_order_and_asks_for_unread_files():
    files = {MAIN: "ClusterName=Alpha\nInclude conf.d/a.conf\nProlog=/p/main\n"}
    first = tree(files)
    assert first["unread"] == [{"path": "/etc/slurm/conf.d/a.conf", "file": MAIN, "line": 2}]
    files["/etc/slurm/conf.d/a.conf"] = "Include cluster-%c.conf\nEpilog=/e\n"
    files["/etc/slurm/cluster-alpha.conf"] = "Prolog=/p/included\n"
    done = tree(files)
    assert done["unread"] == [] and done["problems"] == []
    assert done["files"] == [MAIN, "/etc/slurm/conf.d/a.conf", "/etc/slurm/cluster-alpha.conf"]
    assert [(d["file"], d["key"]) for d in done["defs"]] == [
        (MAIN, "ClusterName"), ("/etc/slurm/cluster-alpha.conf", "Prolog"), ("/etc/slurm/conf.d/a.conf", "Epilog"),
        (MAIN, "Prolog")]


@pytest.mark.parametrize("files, kind", [
    ({MAIN: "Include /etc/slurm/%c.conf\nClusterName=a\n"}, "cluster"),
    ({MAIN: "Include conf.d/*.conf\n"}, "glob"),
    ({MAIN: "Include gone.conf\n", "/etc/slurm/gone.conf": None}, "missing"),
    ({MAIN: "Include a.conf\n", "/etc/slurm/a.conf": "Include b.conf\n", "/etc/slurm/b.conf": "Include ./a.conf\n"}, "loop"),
])
def test_conf_tree_names_what_slurm_would_fail_on(files, kind):
    problems = tree(files)["problems"]
    assert [p["kind"] for p in problems] == [kind]
    assert problems[0]["file"] in files and problems[0]["line"] == 1


def test_an_include_loop_ends_and_names_the_chain():
    files = {MAIN: "Include a.conf\n", "/etc/slurm/a.conf": "Include slurm.conf\n"}
    problem = tree(files)["problems"][0]
    assert problem["chain"] == [MAIN, "/etc/slurm/a.conf", MAIN]


def test_nesting_deeper_than_the_limit_is_a_problem():
    files = {MAIN: "Include d1.conf\n"}
    for depth in range(1, slurm.MAX_INCLUDE_DEPTH + 3):
        files["/etc/slurm/d%d.conf" % depth] = "Include d%d.conf\n" % (depth + 1)
    problems = tree(files)["problems"]
    assert [(p["kind"], p["file"]) for p in problems] == [("depth", "/etc/slurm/d%d.conf" % slurm.MAX_INCLUDE_DEPTH)]


def test_an_unknown_release_refuses_a_relative_include_only_where_the_rules_differ():
    files = {MAIN: "Include conf.d/a.conf\n", "/etc/slurm/conf.d/a.conf": "Include b.conf\nInclude /abs.conf\n",
             "/abs.conf": ""}
    problems = tree(files, base=None)["problems"]
    assert [(p["kind"], p["line"], p["paths"]) for p in problems] == [
        ("ambiguous", 1, ["/etc/slurm/b.conf", "/etc/slurm/conf.d/b.conf"])]


def plan(files, settings=None, state="present", base="main", owned=slurm.DEFAULT_OWNED):
    result = slurm.plan_conf(MAIN, files, WANTED if settings is None else settings, owned, OURS, state, base)
    assert result["unread"] == []
    return result


def test_a_site_prolog_in_an_included_file_is_a_conflict_and_nothing_changes():
    files = {MAIN: "ClusterName=a\nInclude conf.d/site.conf\n", "/etc/slurm/conf.d/site.conf": "\n\nProlog=/etc/slurm/prolog.sh\n"}
    result = plan(files)
    assert [slurm.describe_conflict(c) for c in result["conflicts"]] == ["/etc/slurm/conf.d/site.conf:3 Prolog=/etc/slurm/prolog.sh"]
    assert result["conflicts"][0]["kind"] == "site_hook" and result["conflicts"][0]["wanted"] == OURS + "prolog"
    assert result["changed"] is False and result["text"] == files[MAIN]


def test_nhc_in_the_main_file_is_a_conflict_but_only_when_we_set_that_key():
    files = {MAIN: "HealthCheckProgram=/usr/sbin/nhc\nHealthCheckInterval=300\n"}
    assert [c["kind"] for c in plan(files)["conflicts"]] == ["site_hook"]
    result = plan(files, {"Prolog": OURS + "prolog"})
    assert result["conflicts"] == [] and result["changed"] is True
    assert result["text"] == files[MAIN] + "Prolog=%sprolog # managed by gpufabric.rdma\n" % OURS


def test_a_key_we_set_in_an_included_file_is_refused_even_with_our_value():
    files = {MAIN: "Include site.conf\n", "/etc/slurm/site.conf": "HealthCheckInterval=60\nProlog=%sprolog\n" % OURS}
    conflicts = plan(files)["conflicts"]
    assert [(c["kind"], c["line"], c["key"]) for c in conflicts] == [("included", 1, "HealthCheckInterval"),
                                                                     ("included", 2, "Prolog")]


def test_present_replaces_in_place_appends_the_rest_and_keeps_every_other_byte():
    before = ("# site header\r\n"
              "ClusterName=alpha\r\n"
              "HealthCheckInterval=600   # the site's interval\r\n"
              "Prolog=%sprolog\r\n"
              "NodeName=gpu[01-04] CPUs=64 # caf\udce9\r\n"
              "PartitionName=gpu Nodes=ALL" % OURS)
    result = plan({MAIN: u"\ufeff" + before})
    assert result["changed"] is True and result["conflicts"] == [] and result["problems"] == []
    assert result["text"] == (u"\ufeff# site header\r\n"
                              "ClusterName=alpha\r\n"
                              "HealthCheckInterval=300 # managed by gpufabric.rdma, replaced: HealthCheckInterval=600   # the site's interval\r\n"
                              "Prolog=%sprolog\r\n"
                              "NodeName=gpu[01-04] CPUs=64 # caf\udce9\r\n"
                              "PartitionName=gpu Nodes=ALL\r\n"
                              "HealthCheckProgram=%shealthcheck # managed by gpufabric.rdma\r\n"
                              "HealthCheckNodeState=ANY # managed by gpufabric.rdma\r\n" % (OURS, OURS))
    assert result["settings"]["HealthCheckInterval"] == {"value": "300", "file": MAIN, "line": 3}
    assert result["settings"]["HealthCheckProgram"] == {"value": OURS + "healthcheck", "file": MAIN, "line": 7}
    again = plan({MAIN: result["text"]})
    assert again["changed"] is False and again["text"] == result["text"]


def test_an_earlier_line_of_ours_is_removed_and_a_site_value_equal_to_ours_is_left_alone():
    text = "Prolog=%sprolog\nHealthCheckNodeState=ANY\nProlog=%sold-prolog\n" % (OURS, OURS)
    result = plan({MAIN: text}, {"Prolog": OURS + "prolog", "HealthCheckNodeState": "ANY"})
    assert result["text"] == "HealthCheckNodeState=ANY\nProlog=%sprolog # managed by gpufabric.rdma\n" % OURS


def test_absent_removes_only_ours_and_puts_back_the_line_we_replaced():
    site = "ClusterName=alpha\nHealthCheckInterval=600  # site\nHealthCheckNodeState=IDLE\nEpilog=/site/epilog\n"
    installed = plan({MAIN: site})["text"]
    assert "HealthCheckNodeState=ANY # managed by gpufabric.rdma, replaced: HealthCheckNodeState=IDLE\n" in installed
    removed = plan({MAIN: installed}, state="absent")
    assert removed["changed"] is True and removed["text"] == site
    assert removed["settings"]["Prolog"] is None and removed["settings"]["HealthCheckInterval"]["value"] == "600"
    assert plan({MAIN: site}, state="absent")["changed"] is False


def test_absent_leaves_a_site_line_and_reports_ours_in_an_included_file():
    files = {MAIN: "Prolog=/etc/slurm/site-prolog.sh\nHealthCheckProgram=%shealthcheck\nInclude x.conf\n" % OURS,
             "/etc/slurm/x.conf": "HealthCheckInterval=300 # managed by gpufabric.rdma\n"}
    result = plan(files, {"HealthCheckInterval": ""}, state="absent")
    assert result["text"] == "Prolog=/etc/slurm/site-prolog.sh\nInclude x.conf\n"
    assert [(e["file"], e["key"]) for e in result["elsewhere"]] == [("/etc/slurm/x.conf", "HealthCheckInterval")]


def test_values_are_written_so_slurm_reads_them_back():
    for value in ("/opt/a b/prolog", "a#b", "back\\slash", ""):
        line = slurm.render_setting("Prolog", value)
        assert [(e["key"], e["value"]) for e in slurm.parse_conf(line)] == [("Prolog", value)]


def test_a_huge_slurm_conf_is_planned_in_linear_time():
    import time
    lines = ["NodeName=gpu%05d CPUs=64 RealMemory=512000 Gres=gpu:8 # rack %d" % (i, i // 40) for i in range(100000)]
    text = "ClusterName=big\n" + "\n".join(lines) + "\nSiteNote=\\\n" + "\\" * 100000 + "#" * 1000 + "\n"
    started = time.time()
    result = plan({MAIN: text})
    assert result["changed"] is True and time.time() - started < 10
