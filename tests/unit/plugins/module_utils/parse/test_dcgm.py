"""dcgmi diag read (issue 37, point 1): real public outputs of DCGM 2.x, 3.x and 4.x tables, cut and doubled ones,
and JSON (tests/unit/fixtures/README.md, dcgm/, cites each)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.parsers import parse_dcgmi_diag as parse_filter
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import dcgm


def _parse(read_fixture, name):
    return dcgm.parse_dcgmi_diag(read_fixture("dcgm", name))


def _test(parsed, name):
    (test,) = [t for t in parsed["tests"] if t["name"] == name]
    return test


@pytest.mark.parametrize("name, version, driver, gpus, overall, tests, complete", [
    ("dcgm3_r2_pass_p4de_awsome.txt", "3.3.3", "535.104.12", 8, "pass", 11, True),
    ("dcgm3_r3_skip_printed_twice_srun.txt", "3.3.9", "570.172.08", 2, "pass", 15, True),
    ("dcgm3_r2_fail_pcie_nolebase.txt", "3.3.0", "530.30.02", 8, "fail", 11, True),
    ("dcgm3_r3_fail_gpu_memory_cuinit_h100.txt", "3.3.8", "560.35.03", 8, "fail", 13, True),
    ("dcgm3_r3_fail_targeted_power_a10g.txt", "3.3.9", "570.195.03", 4, "fail", 16, True),
    ("dcgm3_r1_fail_persistence_h200.txt", "3.1.8", "550.127.08", 8, "fail", 9, True),
    ("dcgm4_r2_pass_1gpu.txt", "4.4.2", "580.105.08", 1, "pass", 3, True),
    ("dcgm4_r2_fail_pcie_internal_error.txt", "4.2.3", "570.148.08", 4, "fail", 3, False),
    ("dcgm4_r2_fail_pcie_b200.txt", "4.4.1", "570.172.08", 8, "fail", 3, True),
    ("dcgm4_r3_pass_4gpu_docs_indented.txt", "4.0.0", "550.90.07", 4, "pass", 7, True),
    ("dcgm4_r3_skip_gb10_cut_top.txt", "4.4.2", "580.95.05", 1, "pass", 8, True),
    ("dcgm2_r4_pass_blacklist_gcm.txt", None, None, None, "pass", 18, True),
])
def test_every_table_layout_gives_the_version_and_the_verdict(read_fixture, name, version, driver, gpus, overall, tests,
                                                              complete):
    parsed = _parse(read_fixture, name)
    assert (parsed["format"], parsed["dcgm_version"], parsed["driver_version"], parsed["gpu_count"]) == (
        "text", version, driver, gpus)
    assert (parsed["overall"], len(parsed["tests"]), parsed["complete"]) == (overall, tests, complete)


def test_a_failing_gpu_is_named_with_dcgm_s_words_unwrapped(read_fixture):
    power = _test(_parse(read_fixture, "dcgm3_r3_fail_targeted_power_a10g.txt"), "Targeted Power")
    assert power["category"] == "Stress" and power["result"] == "fail"
    assert [(g["gpu"], g["result"]) for g in power["gpus"]] == [(0, "pass"), (1, "fail"), (2, "pass"), (3, "pass")]
    # DCGM wraps at 45 characters, mid-word ("desire|d power", "of 224|.2") or at a space it drops ("average power|usage")
    assert power["gpus"][1]["message"] == ("GPU 1 Max power of 224.1 did not reach desired power minimum "
                                           "target_power_min_ratio of 224.2 for GPU 1 Verify that the clock speeds "
                                           "and GPU utilization are high.")
    assert power["info"][0] == "GPU 0 GPU 0 max power: 299.5 W average power usage: 299.0 W"


def test_gpu_memory_failing_on_every_gpu_keeps_each_gpu_s_warning(read_fixture):
    parsed = _parse(read_fixture, "dcgm3_r3_fail_gpu_memory_cuinit_h100.txt")
    memory = _test(parsed, "GPU Memory")
    assert memory["category"] == "Hardware" and len(memory["gpus"]) == 8
    assert all(g["result"] == "fail" and g["message"].startswith("GPU %d Error using CUDA API cuInit" % g["gpu"])
               for g in memory["gpus"])
    assert "Unable to initialize CUDA library: 'system not yet initialized'" in memory["gpus"][0]["message"]
    assert _test(parsed, "PCIe")["result"] == "skip"
    # an Info row under a passing test is kept, and the test still passes
    persistence = _test(parsed, "Persistence Mode")
    assert persistence["result"] == "pass" and persistence["info"][0].startswith(
        'Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 "')


def test_dcgm4_per_gpu_rows_and_a_failure_no_gpu_carries(read_fixture):
    parsed = _parse(read_fixture, "dcgm4_r2_fail_pcie_internal_error.txt")
    assert [(t["category"], t["name"], t["result"]) for t in parsed["tests"]] == [
        ("Deployment", "software", "pass"), ("Hardware", "memory", "pass"), ("Integration", "pcie", "fail")]
    pcie = _test(parsed, "pcie")
    assert [g["result"] for g in pcie["gpus"]] == ["pass"] * 4 and len(pcie["warnings"]) == 4
    assert pcie["warnings"][0] == ("There was an internal error during the test: 'A child process (152) exited with "
                                   "non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart DCGM. "
                                   "Rerun diagnostics.")


def test_skipped_tests_a_cut_top_and_a_table_printed_twice(read_fixture):
    gb10 = _parse(read_fixture, "dcgm4_r3_skip_gb10_cut_top.txt")
    assert [t["result"] for t in gb10["tests"]].count("skip") == 7 and gb10["overall"] == "pass"
    twice = _parse(read_fixture, "dcgm3_r3_skip_printed_twice_srun.txt")
    assert twice["tables"] == 2 and len(twice["tests"]) == 15   # the last table, not both
    assert _test(twice, "EUD Test")["gpus"] == [{"gpu": 0, "result": "skip", "message": None},
                                                {"gpu": 1, "result": "skip", "message": None}]


def test_fragments_an_author_cut_are_read_as_far_as_they_go(read_fixture):
    remap = _parse(read_fixture, "dcgm_fragment_error_row_remap.txt")   # an Error row: a failure (test_dcgm_coverage)
    assert remap["overall"] == "fail" and remap["errors"] == [] and not remap["complete"]
    thermal = _parse(read_fixture, "dcgm_fragment_fail_thermal.txt")
    memory = _test(thermal, "GPU Memory")
    assert memory["result"] == "fail" and memory["gpus"][0]["message"].endswith("and any other components.")
    assert [g["gpu"] for g in memory["gpus"] if g["result"] == "pass"] == [1, 2, 3, 4, 5, 6, 7]
    persistence = _parse(read_fixture, "dcgm3_r1_fail_persistence_h200.txt")
    assert _test(persistence, "Persistence Mode")["errors"][0].startswith(
        "Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode to be enabled.")


def test_json_of_dcgm_s_own_test_data_and_real_cut_json(read_fixture):
    parsed = _parse(read_fixture, "dcgm_repo_testdata_per_gpu.json")
    assert (parsed["format"], parsed["overall"], parsed["gpu_count"]) == ("json", "fail", 4)
    stress = _test(parsed, "sm_stress")
    assert stress["category"] == "Stress" and [g["gpu"] for g in stress["gpus"] if g["result"] == "fail"] == [0, 2, 3]
    assert stress["gpus"][0]["message"].startswith("Max stress level of 2128.7 did not exceed desired stress level")
    nvvs = _parse(read_fixture, "dcgm_repo_testdata_nvvs.txt")   # a WARNING line before the JSON, null between tests
    assert nvvs["format"] == "json" and nvvs["overall"] == "pass" and nvvs["gpu_count"] == 8
    for name in ("dcgm3_r3_json_cut.txt", "dcgm4_r4_json_fragment.txt"):
        cut = _parse(read_fixture, name)
        assert cut["overall"] is None and cut["tests"] == [] and cut["errors"][0].startswith("not complete JSON")


def test_launcher_prefixes_crlf_and_colour_read_the_same(read_fixture):
    text = read_fixture("dcgm", "dcgm3_r3_fail_targeted_power_a10g.txt")
    noisy = "".join("0: \x1b[1m%s\x1b[0m\r\n" % line for line in text.splitlines())
    assert dcgm.parse_dcgmi_diag(noisy) == dcgm.parse_dcgmi_diag(text)


def test_text_that_is_no_diagnostic_is_refused_by_name():
    with pytest.raises(dcgm.DcgmDiagError, match="no dcgmi diag table"):
        dcgm.parse_dcgmi_diag("dcgmi: command not found\n")
    assert dcgm.parse_dcgmi_diag("Error: Unable to complete diagnostic for group 2147483647. Return: (-3)")["errors"] == [
        "Error: Unable to complete diagnostic for group 2147483647. Return: (-3)"]
    with pytest.raises(AnsibleFilterError, match="parse_dcgmi_diag"):
        parse_filter(42)
    assert parse_filter({"stdout": "Error: Host engine connection invalid/disconnected."})["overall"] is None


def test_a_test_is_as_bad_as_its_worst_row():
    """Constructed in the real 3.x layout (no public output shows a Warn row under a Pass): the test takes the worst."""
    table = ("+---------------------------+------------------------------------------------+\n"
             "| Diagnostic                | Result                                         |\n"
             "|-----  Stress  ------------+------------------------------------------------|\n"
             "| Targeted Power            | Pass - GPUs: 0, 2                              |\n"
             "|                           | Warn - GPU: 1                                  |\n"
             "| EUD Test                  | Skip - GPU: 0                                  |\n"
             "|                           | Pass - GPUs: 1, 2                              |\n"
             "+---------------------------+------------------------------------------------+\n")
    parsed = dcgm.parse_dcgmi_diag(table)
    assert [(t["name"], t["result"]) for t in parsed["tests"]] == [("Targeted Power", "warn"), ("EUD Test", "pass")]
    assert parsed["overall"] == "warn"
