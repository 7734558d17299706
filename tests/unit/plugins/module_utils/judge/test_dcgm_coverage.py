"""A DCGM run is a pass only when it ran, ended well and covered the node (issues 52 and 53): the version of DCGM 3.x
and 4.x JSON, an Error row as a failure of the run, a non-zero exit status after a table with no failure, a GPU
whose result cannot be read, a run that saw fewer GPUs than the node has, and an output too long to read within
the command's time limit. Real public outputs (tests/unit/fixtures/README.md, dcgm/)."""

import re
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import dcgm_diag
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, dcgmi
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import dcgm


def _parse(read_fixture, name):
    return dcgm.parse_dcgmi_diag(read_fixture("dcgm", name))


def _runner(stdout, rc=0, seconds=1.0):
    """A run(argv, timeout) that answers as dcgmi did: its output and its exit status."""
    def run(argv, timeout):
        return commands.CommandResult(argv, rc, stdout, "", seconds=seconds, timeout=timeout)
    return run


def test_the_version_of_dcgm_3_and_4_json_is_read(read_fixture):
    """3.x keeps it under "DCGM GPU Diagnostic" -> "version", 4.x under metadata.version (and its driver there)."""
    nvvs = _parse(read_fixture, "dcgm_repo_testdata_nvvs.txt")
    assert (nvvs["format"], nvvs["dcgm_version"]) == ("json", "3.1.0")
    assert _parse(read_fixture, "dcgm_repo_testdata_per_gpu.json")["dcgm_version"] == "1.7"
    gb10 = _parse(read_fixture, "dcgm4_r1_json_gb10_software_fail.txt")
    assert (gb10["dcgm_version"], gb10["driver_version"], gb10["gpu_count"], gb10["overall"]) == (
        "4.2.3", "580.82.09", 1, "fail")
    judged = dcgm_diag.verdict(gb10, 1, host="spark")
    assert judged["status"] == "fail" and judged["failures"][0]["gpu"] == 0
    assert judged["failures"][0]["message"].startswith("Persistence Mode: Persistence mode for GPU 0 is disabled")


def test_an_error_row_is_a_failure_of_the_run(read_fixture):
    """dcgmi diag -r 3 on a GPU with pending row remaps: an Error row in Deployment, the output cut after it."""
    remap = _parse(read_fixture, "dcgm_fragment_error_row_remap.txt")
    assert remap["overall"] == "fail" and not remap["complete"]
    (row,) = remap["tests"]
    assert (row["category"], row["name"], row["result"]) == ("Deployment", "Error", "fail")
    assert row["gpus"] == [{"gpu": 3, "result": "fail", "message": (
        "GPU 3 has uncorrectable memory errors and row remappings are pending")}]
    judged = dcgm_diag.verdict(remap, 3, host="n7")
    assert judged["status"] == "fail" and judged["failures"] == [{"test": "Deployment/Error", "gpu": 3, "message": (
        "GPU 3 has uncorrectable memory errors and row remappings are pending")}]
    assert judged["findings"][0]["target"] == "n7 GPU 3"
    # An Error row under a test's own row fails that test too (DCGM 3.1.8 on an H200: Persistence Mode).
    persistence = _parse(read_fixture, "dcgm3_r1_fail_persistence_h200.txt")
    assert [t["result"] for t in persistence["tests"] if t["name"] == "Persistence Mode"] == ["fail"]


def test_a_non_zero_exit_after_a_table_with_no_failure_is_not_a_pass(read_fixture):
    """dcgmi exits 226 after a table in which every test passed: DCGM says the run failed, so it is not a pass."""
    table = read_fixture("dcgm", "dcgm3_r2_pass_p4de_awsome.txt")
    parsed, not_run, result = dcgmi.diagnose("/usr/bin/dcgmi", ["diag", "-r", "2"], 1200, run=_runner(table, rc=226))
    assert parsed["overall"] == "pass" and result.rc == 226
    assert not_run == ("dcgmi exited 226 after a table in which no test failed: DCGM says the run did not succeed, "
                       "so it is not a pass")
    judged = dcgm_diag.verdict(parsed, 2, not_run)
    assert judged["status"] == "not run" and judged["reason"] == not_run
    # A failing table exits non-zero too: that is the failure, read as one.
    failing = read_fixture("dcgm", "dcgm3_r3_fail_targeted_power_a10g.txt")
    parsed, not_run, result = dcgmi.diagnose("/usr/bin/dcgmi", ["diag", "-r", "3"], 5400, run=_runner(failing, rc=226))
    assert not_run is None and dcgm_diag.verdict(parsed, 3, not_run)["status"] == "fail"
    assert dcgmi.diagnose("/usr/bin/dcgmi", ["diag"], 300, run=_runner(table))[1] is None   # exit 0: read


def test_a_gpu_whose_json_status_cannot_be_read_is_not_a_pass(read_fixture):
    """nvvs's 8-GPU output (every test PASS) with one GPU's status unreadable: that GPU was not certified."""
    text = read_fixture("dcgm", "dcgm_repo_testdata_nvvs.txt")
    last = list(re.finditer(r'"status" : "PASS"', text))[-1]
    for word in ("", "Pass?"):
        broken = text[:last.start()] + '"status" : "%s"' % word + text[last.end():]
        parsed = dcgm.parse_dcgmi_diag(broken)
        assert parsed["unread"] == ["Custom/software GPU 7: status %r" % word]
        judged = dcgm_diag.verdict(parsed, 2, expected_gpus=8)
        assert judged["status"] == "not run" and judged["reason"] == (
            "DCGM's result for Custom/software GPU 7: status %r is unreadable: that GPU is not certified" % word)
    assert dcgm_diag.verdict(dcgm.parse_dcgmi_diag(text), 2, expected_gpus=8)["status"] == "pass"


def test_a_run_that_saw_fewer_gpus_than_the_node_has_is_not_a_pass(read_fixture):
    """DCGM 4.0.0 passing on 4 GPUs, on a node that has 8: the 4 it did not see are not certified."""
    parsed = _parse(read_fixture, "dcgm4_r3_pass_4gpu_docs_indented.txt")
    judged = dcgm_diag.verdict(parsed, 3, expected_gpus=8)
    assert judged["status"] == "not run" and judged["reason"] == (
        "DCGM tested 4 of the node's 8 GPUs (0, 1, 2, 3): a GPU it did not test is not certified")
    assert (judged["gpus"], judged["expected_gpus"]) == ([0, 1, 2, 3], 8)
    assert dcgm_diag.verdict(parsed, 3, expected_gpus=4)["status"] == "pass"
    assert dcgm_diag.verdict(parsed, 3)["status"] == "pass"   # no count known: what DCGM saw
    # The GPUs asked for with -i: each must be in the run.
    asked = dcgm_diag.verdict(parsed, 3, gpu_ids=[0, 5])
    assert asked["status"] == "not run" and asked["reason"] == (
        "DCGM tested GPUs 0, 1, 2, 3, not GPU 5 that the run asked for: a GPU it did not test is not certified")
    # A table that names no GPU (DCGM 2.x 'Pass' rows, no metadata) cannot show it covered the node.
    old = dcgm_diag.verdict(_parse(read_fixture, "dcgm2_r4_pass_blacklist_gcm.txt"), 4, expected_gpus=8)
    assert old["status"] == "not run" and old["reason"] == (
        "DCGM's output does not say which GPUs it tested, and the node has 8: a GPU it did not test is not certified")
    # A failure stays a failure whatever the coverage.
    assert dcgm_diag.verdict(_parse(read_fixture, "dcgm3_r3_fail_targeted_power_a10g.txt"), 3,
                             expected_gpus=8)["status"] == "fail"


def test_a_million_row_table_is_read_within_the_command_s_time_limit(read_fixture):
    """The rows of a real 3.x table repeated 10^6 times: reading stops at a bound, well inside the limit, and a table
    not read whole is not a pass."""
    lines = read_fixture("dcgm", "dcgm3_r2_pass_p4de_awsome.txt").splitlines(True)
    row = [line for line in lines if line.startswith("| Inforom")][0]
    huge = "".join(lines[:-1]) + row * 10 ** 6 + lines[-1]
    started = time.time()
    parsed, not_run, result = dcgmi.diagnose("/usr/bin/dcgmi", ["diag", "-r", "2"], 60, run=_runner(huge))
    took = time.time() - started
    assert took < 10, took
    assert not parsed["complete"] and parsed["errors"][-1] == (
        "the output holds more than %d lines: only the first %d were read" % (dcgm.MAX_LINES, dcgm.MAX_LINES))
    assert dcgm_diag.verdict(parsed, 2, not_run)["status"] == "not run"
    # The run and the reading together past the command's limit: no verdict.
    parsed, not_run, result = dcgmi.diagnose("/usr/bin/dcgmi", ["diag", "-r", "2"], 60,
                                             run=_runner("".join(lines), seconds=60.5))
    assert not_run == "the run and the reading of its output took 60.5 s, past the time limit of 60 s"


def test_the_report_of_a_plan_is_not_a_failure():
    """Check mode runs nothing: dcgm.md says it is a plan, not FAIL; a node not run beside passes is not FAIL either."""
    planned = [{"host": "n1", "level": 2, "status": "not run", "planned": True, "failures": [], "skipped": [],
                "reason": "check mode: the diagnostic stresses the GPUs, so it runs only for real"}]
    text = dcgm_diag.summary_markdown(planned)
    assert "**FAIL**" not in text and "**PLAN** (check mode): nothing ran on 1 node(s)." in text
    assert "## Would run (check mode)" in text and "## Not run" not in text
    mixed = [dict(planned[0], planned=False, reason="dcgmi is not installed"),
             {"host": "n2", "level": 2, "status": "pass", "failures": [], "skipped": []}]
    text = dcgm_diag.summary_markdown(mixed)
    assert "**FAIL**" not in text and "**NOT RUN**: 1 of 2 node(s) passed; 1 not run (neither a pass nor a failure)." in text
    failed = mixed + [{"host": "n3", "level": 2, "status": "fail", "skipped": [],
                       "failures": [{"test": "Memory", "gpu": 1, "message": "GPU 1 failed"}]}]
    assert "**FAIL**: 1 of 3 node(s) passed." in dcgm_diag.summary_markdown(failed)
