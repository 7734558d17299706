"""slurm.conf as slurmctld and slurmd read it (Include lines followed), and the plan of slurm_conf_settings."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_conf

MAIN = "/etc/slurm/slurm.conf"
OURS = "/usr/local/sbin/gpufabric-"
WANTED = {"HealthCheckProgram": OURS + "healthcheck", "HealthCheckInterval": "300", "HealthCheckNodeState": "ANY",
          "Prolog": OURS + "prolog"}


def settings_of(text):
    return [(e["line"], e["key"], e["value"]) for e in slurm_conf.parse_conf(text) if "key" in e]


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
    entries = slurm_conf.parse_conf(text)
    assert [e for e in entries if "include" in e] == [{"line": 9, "last": 9, "include": "conf.d/site.conf"}]
    assert [e["last"] for e in entries if e.get("key") == "PrologFlags"] == [6]
    assert [e["op"] for e in entries if e.get("key") == "MaxJobCount"] == ["+"]


def test_parse_conf_reads_crlf_bom_and_bytes_that_are_not_utf8():
    data = b"\xef\xbb\xbfClusterName=alpha\r\nProlog=/opt/caf\xe9/prolog\r\nInclude site.conf\r\n"
    entries = slurm_conf.parse_conf(data)
    assert entries[0]["key"] == "ClusterName" and entries[0]["value"] == "alpha"
    assert entries[1]["value"].encode("utf-8", "surrogateescape") == b"/opt/caf\xe9/prolog"
    assert entries[2]["include"] == "site.conf"
    assert slurm_conf.shown(entries[1]["value"]) == u"/opt/caf\ufffd/prolog"


def test_a_continued_line_keeps_an_escaped_backslash_and_a_comment_stops_the_continuation():
    assert settings_of("A=x\\\\\nB=y\n") == [(1, "A", "x\\"), (2, "B", "y")]
    assert settings_of("A=x \\\n  y\nB=z # not continued \\\nC=w\n") == [(1, "A", "x"), (3, "B", "z"), (4, "C", "w")]


@pytest.mark.parametrize("version, base", [((22, 5), "including"), ((20, 11), "including"), ((23, 2), "main"),
                                           ((24, 11), "main"), (None, None)])
def test_include_base_by_release(version, base):
    assert slurm_conf.include_base(version) == base


@pytest.mark.parametrize("text, version", [("slurm 24.11.5\n", (24, 11)), ("slurm-wlm 22.05.8", (22, 5)),
                                           ("command not found", None), ("slurm %s.05\n" % ("2" * 5000), None)])
def test_parse_version(text, version):
    assert slurm_conf.parse_version(text) == version


def test_include_path_follows_each_release_rule():
    nested = "/etc/slurm/conf.d/site.conf"
    assert slurm_conf.include_path("gpu.conf", nested, MAIN, "main") == "/etc/slurm/gpu.conf"
    assert slurm_conf.include_path("gpu.conf", nested, MAIN, "including") == "/etc/slurm/conf.d/gpu.conf"
    assert slurm_conf.include_path("/abs/gpu.conf", nested, MAIN, "main") == "/abs/gpu.conf"
    assert slurm_conf.include_path("gpu.conf", nested, "slurm.conf", "main") == "gpu.conf"


def tree(files, base="main"):
    return slurm_conf.conf_tree(MAIN, files, base)


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
    for depth in range(1, slurm_conf.MAX_INCLUDE_DEPTH + 3):
        files["/etc/slurm/d%d.conf" % depth] = "Include d%d.conf\n" % (depth + 1)
    problems = tree(files)["problems"]
    assert [(p["kind"], p["file"]) for p in problems] == [("depth", "/etc/slurm/d%d.conf" % slurm_conf.MAX_INCLUDE_DEPTH)]


def test_an_unknown_release_refuses_a_relative_include_only_where_the_rules_differ():
    files = {MAIN: "Include conf.d/a.conf\n", "/etc/slurm/conf.d/a.conf": "Include b.conf\nInclude /abs.conf\n",
             "/abs.conf": ""}
    problems = tree(files, base=None)["problems"]
    assert [(p["kind"], p["line"], p["paths"]) for p in problems] == [
        ("ambiguous", 1, ["/etc/slurm/b.conf", "/etc/slurm/conf.d/b.conf"])]


def plan(files, settings=None, state="present", base="main", owned=slurm_conf.DEFAULT_OWNED):
    result = slurm_conf.plan_conf(MAIN, files, WANTED if settings is None else settings, owned, OURS, state, base)
    assert result["unread"] == []
    return result


def test_a_site_prolog_in_an_included_file_is_a_conflict_and_nothing_changes():
    files = {MAIN: "ClusterName=a\nInclude conf.d/site.conf\n", "/etc/slurm/conf.d/site.conf": "\n\nProlog=/etc/slurm/prolog.sh\n"}
    result = plan(files)
    assert [slurm_conf.describe_conflict(c) for c in result["conflicts"]] == ["/etc/slurm/conf.d/site.conf:3 Prolog=/etc/slurm/prolog.sh"]
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
        line = slurm_conf.render_setting("Prolog", value)
        assert [(e["key"], e["value"]) for e in slurm_conf.parse_conf(line)] == [("Prolog", value)]


def test_a_huge_slurm_conf_is_planned_in_linear_time():
    import time
    lines = ["NodeName=gpu%05d CPUs=64 RealMemory=512000 Gres=gpu:8 # rack %d" % (i, i // 40) for i in range(100000)]
    text = "ClusterName=big\n" + "\n".join(lines) + "\nSiteNote=\\\n" + "\\" * 100000 + "#" * 1000 + "\n"
    started = time.time()
    result = plan({MAIN: text})
    assert result["changed"] is True and time.time() - started < 10
