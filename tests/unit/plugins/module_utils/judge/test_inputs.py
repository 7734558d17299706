"""The rules between a role's inputs (judge/inputs.py), called directly: the same function serves a role's assert (all
its variables) and the playbooks' preflight (only those the user set), so a rule whose variables are absent is not
checked, and each sentence names the variable and the value (issue 52)."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import inputs


def test_only_what_was_given_is_checked():
    for role in ("nccl_tests", "perftest", "burnin", "_common", "openmpi"):
        assert inputs.errors(role, {}) == []
    with pytest.raises(ValueError):
        inputs.errors("nccl_tests", ["nccl_tests_min_busbw"])


@pytest.mark.parametrize("role, values, expected", [
    ("nccl_tests", {"nccl_tests_min_busbw": "abc"}, ["nccl_tests_min_busbw must be a non-negative number or unset, got 'abc'"]),
    ("nccl_tests", {"nccl_tests_runs": [{"name": "all_reduce", "mode": "single"}]},
     ["each nccl_tests_runs entry needs name: <collective>_perf, mode single, mpirun or slurm, args and label on one line "
      "(no newline or control character), and env (if any) a mapping; got {'name': 'all_reduce', 'mode': 'single'}"]),
    ("nccl_tests", {"nccl_tests_runs": [{"name": "all_reduce_perf", "mode": "mpirun", "args": "-b 8\n-e 1G"}]},
     ["each nccl_tests_runs entry needs name: <collective>_perf, mode single, mpirun or slurm, args and label on one line "
      "(no newline or control character), and env (if any) a mapping; got {'name': 'all_reduce_perf', 'mode': 'mpirun', "
      "'args': '-b 8\\n-e 1G'}"]),
    ("perftest", {"perftest_tests": [{"name": "ib_write_bw"}, {"name": "ib_write"}, {}]},
     ["perftest_tests: ib_write is not one of ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat",
      "perftest_tests: (no name) is not one of ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat"]),
    ("burnin", {"burnin_tolerance": "2", "burnin_timeout": 0, "burnin_strategy": "binary", "burnin_search_max_rounds": "0",
                "burnin_args": "-b 8\n", "burnin_expected_busbw": 0},
     ["burnin_expected_busbw must be above 0, got 0", "burnin_tolerance must be a fraction between 0 and 1, got '2'",
      "burnin_timeout must be a positive number of seconds, got 0", "burnin_strategy must be pairwise or search, got 'binary'",
      "burnin_search_max_rounds must be 1 or more, got '0'", "burnin_args must be nccl-tests' arguments on one line, got '-b 8\\n'"]),
    ("_common", {"gpufabric_known_good": {"*": {"floors": {"drvier": "535.104"}}}},
     ["gpufabric_known_good[*].floors: unknown key 'drvier' (known: driver, cuda, kernel, vbios, nic_fw, ofed)"]),
    ("_common", {"gpufabric_known_good": {"H100 x MT4129": {"floor": {"driver": "535"}}}},
     ["gpufabric_known_good[H100 x MT4129] must be a mapping with floors and pins, got {'floor': {'driver': '535'}}"]),
])
def test_each_broken_rule_names_the_variable_and_the_value(role, values, expected):
    assert inputs.errors(role, values) == expected


def test_the_defaults_break_no_rule():
    assert inputs.errors("nccl_tests", {"nccl_tests_min_busbw": None, "nccl_tests_min_busbw_by_size": {}, "nccl_tests_max_wrong": 0,
                                        "nccl_tests_runs": [{"name": "all_reduce_perf", "args": "-b 8 -e 4G -f 2", "mode": "single"}]}) == []
    assert inputs.errors("burnin", {"burnin_tolerance": 0.1, "burnin_timeout": 1800, "burnin_strategy": "pairwise",
                                    "burnin_search_max_rounds": 160, "burnin_args": "-b 8 -e 1G -f 2", "burnin_min_busbw": None,
                                    "burnin_expected_busbw": None}) == []
    assert inputs.errors("perftest", {"perftest_tests": [{"name": "ib_write_bw", "args": "-F --report_gbits", "size": 65536}],
                                      "perftest_min_bw_gbps": None, "perftest_max_lat_us": None}) == []
    assert inputs.errors("_common", {"gpufabric_known_good": {"*": {"floors": {"driver": "535.183.06"}}}}) == []
