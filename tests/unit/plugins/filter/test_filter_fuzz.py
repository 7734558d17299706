"""Every filter of the collection, fed junk: it returns a value or raises an AnsibleFilterError that
starts with its own name - never a Python exception from inside a parser. The filters are found by
loading every plugins/filter/*.py, so a new filter is fuzzed without being listed here."""

import glob
import importlib
import inspect
import os

import pytest
from ansible.errors import AnsibleFilterError

FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")


def _all_filters():
    found = {}
    for path in sorted(glob.glob(os.path.join(FILTER_DIR, "*.py"))):
        module = importlib.import_module("ansible_collections.gpufabric.rdma.plugins.filter."
                                         + os.path.basename(path)[:-3])
        found.update(module.FilterModule().filters())
    return found


FILTERS = _all_filters()
JUNK = [
    None, 0, -1, 3.5, float("nan"), True, "", "junk", "\x00\x01\x02", b"\xff\xfe\x80binary", "x" * 1000000,
    [], [1, "x", None], [{}], [{"a": None, "b": [], "result": "x"}], {}, {"a": 1}, {"results": "x"},
    {"stdout": 5}, {"stdout_lines": [None]}, object(),
]


def _call(name, *args):
    try:
        FILTERS[name](*args)
    except AnsibleFilterError as exc:
        message = str(exc)
        assert message.startswith("gpufabric.rdma.%s" % name), message
        assert "Traceback" not in message
        return message
    return None


def test_every_filter_is_found():
    assert len(FILTERS) >= 33, sorted(FILTERS)
    assert {"parse_nccl_tests", "burnin_report", "threshold_errors", "slurm_job_errors"} <= set(FILTERS)


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_junk_as_the_input(name):
    for junk in JUNK:
        _call(name, junk)


@pytest.mark.parametrize("name", sorted(n for n in FILTERS
                                        if len(inspect.signature(FILTERS[n]).parameters) > 1))
def test_junk_as_the_other_arguments(name):
    parameters = [p for p in inspect.signature(FILTERS[name]).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for plausible in ([], {}, ""):
        for position in range(1, len(parameters)):
            for junk in JUNK[:14]:
                args = [plausible] + [None] * (position - 1) + [junk]
                _call(name, *args)


@pytest.mark.parametrize("document, message", [
    ('{"results": [', "nccl-tests -J output is not valid JSON"),
    ('{"results": [{"size": 8}]}', "results[0] has no whole-number size and count"),
    ({"results": [{"size": 8, "count": 2, "out_of_place": "fast"}]}, "results[0].out_of_place is not an object"),
])
def test_malformed_json_documents(document, message):
    assert message in _call("parse_nccl_tests", document)


@pytest.mark.parametrize("name, args, message", [
    ("nccl_tests_judge", ([], "fast"), "min_busbw must be a non-negative number or unset, got 'fast'"),
    ("nccl_tests_judge", ([], None, {"1M": 10}), "min_busbw_by_size: size '1M' is not a whole number of bytes"),
    ("nccl_tests_judge", ([], -5), "min_busbw must be a non-negative number or unset, got -5"),
    ("perftest_judge", ([], None, "slow"), "max_lat_us must be a non-negative number or unset, got 'slow'"),
    ("burnin_report", ([], 0.1, [350]), "min_busbw must be a non-negative number or unset, got [350]"),
    ("burnin_rank", ([{"a": "n1", "b": "n2", "busbw": 1}], 7), "tolerance must be a number between 0 and 1, got 7"),
    ("mpirun_env_args", ({"NCCL_DEBUG": "WARN\n-x LD_PRELOAD=/tmp/x.so"},), "NCCL_DEBUG contains a newline"),
    ("mpirun_env_args", ({"A B": "1"},), "'A B' is not an environment variable name"),
    ("parse_ibv_devinfo", (5,), "expects the tool's text (or a registered result), got an integer"),
    ("node_summary", ([],), "expects a mapping of host name to node record, got a list of 0"),
    ("readiness_report", ({"n1": "x"},), "expects a node record for host n1, got a string"),
    ("nccl_tests_summary", ([{"label": "x"}],), "item 0 has no result and passed"),
    ("slurm_hostlist", ("n[1-1000000]",), "names more than 100000 hosts"),
    ("slurm_job_runs", ([{"name": "ar", "job": {"job_id": "7", "nodes": "gpu[01-"}}],),
     "slurm job ar: nodes is not a Slurm hostlist: unbalanced '[' in hostlist 'gpu[01-'"),
    ("slurm_job_runs", ([{"name": "ar", "job": "7"}],), "slurm job ar: job must be slurm_job's result (a mapping), got '7'"),
    ("burnin_rounds", (["a", "a"],), "hosts must be unique: a"),
])
def test_the_message_says_what_was_wrong(name, args, message):
    assert message in _call(name, *args)
