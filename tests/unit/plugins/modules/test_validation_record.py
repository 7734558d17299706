"""validation_record: a node's record of its last validation (issue 58), read without following links, never blocking
and bounded; a damaged or odd record is never used, names its path and what is wrong, and is left for a person until
the next record replaces it (a link replaced, never written through). Check mode writes and removes nothing."""

import json
import os
import signal

import pytest

from ansible_collections.gpufabric.rdma.plugins.modules import validation_record
from moduletest import run_module

RECORD = {"schema": 1, "node": "gpu-01", "validated_at": "2026-12-07T12:00:00Z", "passed": True, "hardware": "a" * 64,
          "configuration": "b" * 64, "failures": [],
          "figures": {"nccl_tests": [{"label": "gpu-01: all_reduce_perf -g 8", "value": 480.1, "unit": "GB/s", "passed": True}],
                      "perftest": []}}


def _run(directory, check_mode=False, **args):
    return run_module(validation_record, dict(args, dir=str(directory)), check_mode=check_mode, diff=True)


def test_a_record_is_written_read_back_kept_when_the_same_and_set_aside(tmp_path):
    state = tmp_path / "validated"
    nothing = _run(state)
    assert (nothing["changed"], nothing["record"], nothing["problem"]) == (False, None, None)
    assert nothing["path"] == str(state / "validation.json")
    assert not state.exists()
    planned = _run(state, check_mode=True, state="record", record=RECORD)
    assert planned["changed"] and planned["diff"]["after"] == json.dumps(RECORD, indent=1, sort_keys=True) + "\n"
    assert not state.exists()
    assert _run(state, state="record", record=RECORD)["changed"]
    assert oct(os.stat(str(state)).st_mode & 0o777) == "0o700"
    assert (state / ".gpufabric-owner").read_text() == "validated\n"
    assert _run(state)["record"] == RECORD
    assert _run(state, state="record", record=RECORD)["changed"] is False
    assert _run(state, check_mode=True, state="absent")["changed"] and (state / "validation.json").exists()
    assert _run(state, state="absent")["changed"] and not (state / "validation.json").exists()
    assert _run(state, state="absent")["changed"] is False


def test_a_record_of_another_shape_is_refused_before_it_is_written(tmp_path):
    result = _run(tmp_path / "validated", state="record", record=dict(RECORD, hardware="abc"))
    assert result["failed"] and result["msg"] == "record: hardware must be a fingerprint (64 hex digits), got 'abc'"
    assert not (tmp_path / "validated").exists()


def test_a_directory_of_someone_else_is_refused(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / ".gpufabric-owner").write_text("applied\n")
    result = _run(tmp_path / "other", state="record", record=RECORD)
    assert result["failed"] and "is not gpufabric's record of validations (its marker names applied)" in result["msg"]
    assert _run("/var", state="absent")["msg"] == "dir: /var is a system directory (a role may own only a directory of its own inside it)"


class Blocked(Exception):
    pass


@pytest.mark.parametrize("odd, why", [
    ("fifo", "it is a FIFO, not a regular file"),
    ("link to a good record", "it is a symbolic link (to "),
    ("directory", "it is a directory, not a regular file"),
    ("too large", "it is larger than 1048576 bytes"),
    ("not json", "not a state file of ours"),
    ("another shape", "not a state file of ours: not a validation record: unknown inventory_hostname"),
    ("nan", "not a state file of ours: figures.nccl_tests[0].value must be a finite number or null, got nan"),
])
def test_an_odd_record_is_never_used_names_its_path_and_never_hangs(tmp_path, odd, why):
    state = tmp_path / "validated"
    _run(state, state="record", record=RECORD)
    path = state / "validation.json"
    good = path.read_text()
    path.unlink()
    if odd == "fifo":
        os.mkfifo(str(path))
    elif odd == "link to a good record":
        (tmp_path / "elsewhere.json").write_text(good)
        os.symlink(str(tmp_path / "elsewhere.json"), str(path))
    elif odd == "directory":
        path.mkdir()
    elif odd == "too large":
        path.write_text(good[:-2] + " " * (1 << 20) + "}")
    elif odd == "not json":
        path.write_text(good[:40])
    elif odd == "another shape":
        path.write_text(json.dumps(dict(RECORD, inventory_hostname="gpu-01")))
    else:
        path.write_text(good.replace("480.1", "NaN"))

    def expired(signum, frame):
        raise Blocked("the read blocked")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(5)
    try:
        result = _run(state)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert result["record"] is None and result["problem"].startswith("%s: %s" % (path, why)), result
    assert os.path.lexists(str(path))
    again = _run(state, state="record", record=RECORD)
    if odd == "directory":
        assert again["failed"] and again["msg"].startswith("writing the validation record: could not save %s: " % path)
    else:
        assert again["changed"] and path.is_file() and not path.is_symlink() and _run(state)["record"] == RECORD
    if odd == "link to a good record":
        assert (tmp_path / "elsewhere.json").read_text() == good
