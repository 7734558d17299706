"""dcgm_diag on a node: dcgmi replayed from real public outputs (tests/unit/fixtures/dcgm, cited in its README)
through the stub tool, and dcgmi misbehaving as it does on sick nodes: missing, hung, refused by its host engine,
printing nonsense or half a table. Only a closed table with no failure passes; what could not run says why."""

import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.modules import dcgm_diag
from moduletest import calls, run_module, stub_bin, stub_path
from paths import fixture_path

FIXTURES = fixture_path("dcgm")


@pytest.fixture
def dcgmi(tmp_path, monkeypatch):
    bindir = stub_path(tmp_path, monkeypatch)
    stub_bin(bindir, {"dcgmi": "misbehave"})

    def mode(value):
        monkeypatch.setenv("STUB_DCGMI_MODE", value)
    return mode


def test_a_failing_gpu_is_a_critical_finding_in_dcgm_s_words(tmp_path, dcgmi):
    dcgmi("file:" + os.path.join(FIXTURES, "dcgm3_r3_fail_targeted_power_a10g.txt"))
    result = run_module(dcgm_diag, {"level": 3, "gpu_ids": [0, 1, 2, 3], "parameters": {"targeted_power.test_duration": 30}})
    assert calls(tmp_path / "calls.jsonl") == [("dcgmi", ["diag", "-r", "3", "-i", "0,1,2,3", "-p",
                                                          "targeted_power.test_duration=30"])]
    assert (result["status"], result["changed"], result["exit_status"]) == ("fail", False, 0)
    assert result["failures"] == [{"test": "Stress/Targeted Power", "gpu": 1, "message": (
        "GPU 1 Max power of 224.1 did not reach desired power minimum target_power_min_ratio of 224.2 for GPU 1 "
        "Verify that the clock speeds and GPU utilization are high.")}]
    (critical,) = [f for f in result["findings"] if f["severity"] == "critical"]
    assert critical["target"] == "GPU 1" and critical["detail"].startswith("dcgmi diag -r 3: Stress/Targeted Power failed")
    assert result["skipped"] == ["Stress/EUD Test"]


@pytest.mark.parametrize("fixture, status", [
    ("dcgm3_r2_pass_p4de_awsome.txt", "pass"),
    ("dcgm4_r2_pass_1gpu.txt", "pass"),
    ("dcgm4_r2_fail_pcie_b200.txt", "fail"),
    ("dcgm3_r3_skip_printed_twice_srun.txt", "pass"),
    ("dcgm4_r2_fail_pcie_internal_error.txt", "fail"),   # cut after its failure: still a failure
])
def test_real_outputs(dcgmi, fixture, status):
    dcgmi("file:" + os.path.join(FIXTURES, fixture))
    result = run_module(dcgm_diag, {"level": 2})
    assert result["status"] == status, result["reason"]
    if status == "fail":
        assert result["failures"][0]["gpu"] is None and result["findings"][0]["target"] == "node"   # no GPU carries it


@pytest.mark.parametrize("mode, reason", [
    ("hang", "it did not finish within 2 s and was killed with its children"),
    ("fail:255:Error: Unable to connect to host engine. Host engine connection invalid/disconnected.",
     "Error: Unable to connect to host engine. Host engine connection invalid/disconnected."),
    ("garbage", "no dcgmi diag table"),
    ("truncated:" + os.path.join(FIXTURES, "dcgm3_r2_pass_p4de_awsome.txt"), "the output was cut before its table closed"),
])
def test_what_could_not_run_is_not_run_and_says_why(dcgmi, mode, reason):
    dcgmi(mode)
    result = run_module(dcgm_diag, {"level": 1, "timeout": 2})
    assert result["status"] == "not run" and reason in result["reason"], result["reason"]
    (found,) = result["findings"]
    assert (found["check"], found["severity"]) == ("dcgm_diag_not_run", "warning")
    assert found["detail"].startswith("dcgmi diag -r 1 did not run: ")


def test_missing_dcgmi_and_check_mode_run_nothing(tmp_path, monkeypatch):
    stub_path(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    missing = run_module(dcgm_diag, {"level": 2, "dcgmi_path": "/nonexistent/dcgmi"})
    assert missing["status"] == "not run" and missing["reason"] == (
        "/nonexistent/dcgmi is not installed (DCGM: datacenter-gpu-manager-4)")
    checked = run_module(dcgm_diag, {"level": 2}, check_mode=True)
    assert checked["status"] == "not run" and checked["reason"].startswith("check mode")
    assert calls(tmp_path / "calls.jsonl") == []


@pytest.mark.parametrize("args, message", [
    ({"level": 5}, "the DCGM diagnostic level must be 1, 2, 3 or 4, got 5"),
    ({"level": 1, "hostengine": "h;rm -rf /"}, "hostengine must be host[:port], got 'h;rm -rf /'"),
    ({"level": 1, "parameters": {"pcie.x": "1;-r 4"}}, "parameters must map test.parameter to a plain value"),
    ({"level": 1, "parameters": {"pcie x": "1"}}, "parameters must map test.parameter to a plain value"),
    ({"level": 1, "gpu_ids": [-1]}, "gpu_ids must be GPU indices from 0 to 1023"),
    ({"level": 1, "timeout": 0}, "timeout must be a whole number of seconds from 1 to 21600, got 0"),
])
def test_bad_input_fails_naming_the_value(tmp_path, dcgmi, args, message):
    result = run_module(dcgm_diag, args)
    assert result.get("failed") is True and message in result["msg"], result
    assert calls(tmp_path / "calls.jsonl") == []


def test_a_run_that_did_not_cover_the_node_is_not_a_pass(dcgmi):
    """DCGM 4.0.0 passing on 4 GPUs of a node that has 8 (issue 53): not run, naming the GPUs it tested; the same run
    on a node of 4 passes. Check mode says it is a plan."""
    dcgmi("file:" + os.path.join(FIXTURES, "dcgm4_r3_pass_4gpu_docs_indented.txt"))
    short = run_module(dcgm_diag, {"level": 3, "expected_gpus": 8})
    assert short["status"] == "not run" and short["reason"] == (
        "DCGM tested 4 of the node's 8 GPUs (0, 1, 2, 3): a GPU it did not test is not certified")
    assert (short["gpus"], short["expected_gpus"], short["planned"]) == ([0, 1, 2, 3], 8, False)
    assert run_module(dcgm_diag, {"level": 3, "expected_gpus": 4})["status"] == "pass"
    assert run_module(dcgm_diag, {"level": 3, "gpu_ids": [0, 6]})["reason"].startswith(
        "DCGM tested GPUs 0, 1, 2, 3, not GPU 6 that the run asked for")
    assert run_module(dcgm_diag, {"level": 3}, check_mode=True)["planned"] is True
    bad = run_module(dcgm_diag, {"level": 3, "expected_gpus": 0})
    assert bad.get("failed") and "expected_gpus must be the number of GPUs the node has, 1 to 1024, got 0" in bad["msg"]
