"""The nccl_inspector module on a node: a job's Inspector dumps read (each file's tail, bounded), the GPU of each
process from nvidia-smi - one that hangs is killed and said, never waited for; a missing folder, a FIFO named like a
dump and files that are not the Inspector's are said, never a traceback; check mode the same."""

import glob
import os
import shutil

import pytest

from ansible_collections.gpufabric.rdma.plugins.modules import nccl_inspector
from moduletest import run_module, stub_bin, stub_path
from paths import fixture_path

JOB = fixture_path("nccl_inspector", "job_8rank_rank5_late_constructed")


@pytest.fixture
def dumps(tmp_path):
    folder = tmp_path / "4242"
    folder.mkdir()
    for path in glob.glob(os.path.join(JOB, "gpu-a02-*.log")):
        shutil.copy(path, str(folder))
    return folder


def _smi(bindir, apps):
    bindir.mkdir(exist_ok=True)
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\ncase \"$1\" in\n  --query-compute-apps=*) printf '%s' ;;\n"
                   "  --query-gpu=*) printf '0, 00000000:18:00.0\\n1, 00000000:2A:00.0\\n' ;;\nesac\n" % apps)
    smi.chmod(0o755)
    return str(smi)


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_nodes_dumps_are_read_with_the_gpu_of_each_process(dumps, tmp_path, check_mode):
    smi = _smi(tmp_path / "bin", "52001, 00000000:18:00.0\\n52002, 00000000:2A:00.0\\n")
    result = run_module(nccl_inspector, {"path": str(dumps), "nvidia_smi_path": smi}, check_mode=check_mode)
    assert (result["read"], result["changed"], result["hostnames"], result["files_left_out"]) == (True, False, ["gpu-a02"], 0)
    assert result["msg"] == "4 file(s) read in %s: 480 record(s)" % dumps
    assert result["processes"] == {"52001": {"index": 0, "bus_id": "00000000:18:00.0"},
                                   "52002": {"index": 1, "bus_id": "00000000:2A:00.0"}}
    assert result["placement_problem"] is None
    (comm,) = result["parsed"]["communicators"]
    assert [r["rank"] for r in comm["ranks"]] == [4, 5, 6, 7] and len(comm["collectives"]) == 120


def test_each_file_is_read_from_its_end_within_max_bytes(dumps, tmp_path):
    result = run_module(nccl_inspector, {"path": str(dumps), "max_bytes": 4096, "placement": False})
    assert all(row["cut"] and row["read_bytes"] <= 4096 for row in result["files"])
    parsed = result["parsed"]
    assert parsed["problems"] == [] and 4 * 5 <= parsed["counts"]["records"] <= 4 * 10
    assert result["processes"] == {} and result["placement_problem"] is None


def test_a_hung_nvidia_smi_is_killed_and_said(dumps, tmp_path, monkeypatch):
    bindir = stub_path(tmp_path, monkeypatch)
    stub_bin(bindir, {"nvidia-smi": "misbehave"})
    monkeypatch.setenv("STUB_NVIDIA_SMI_MODE", "hang")
    result = run_module(nccl_inspector, {"path": str(dumps), "command_timeout": 1})
    assert result["read"] is True and result["processes"] == {}
    assert result["placement_problem"].endswith("did not answer within 1 s")


def test_pids_that_nvidia_smi_does_not_list_are_said_as_a_container_would(dumps, tmp_path):
    smi = _smi(tmp_path / "bin", "7, 00000000:18:00.0\\n")
    result = run_module(nccl_inspector, {"path": str(dumps), "nvidia_smi_path": smi})
    assert result["placement_problem"].startswith("none of the job's processes (52001, 52002, 52003, 52004) is one "
                                                  "nvidia-smi lists")


def test_no_folder_a_fifo_and_foreign_files_are_not_read_saying_why(tmp_path):
    missing = run_module(nccl_inspector, {"path": str(tmp_path / "none"), "placement": False})
    assert missing["read"] is False and missing["msg"].startswith("no Inspector dump directory %s: the job did not "
                                                                  "run with the Inspector on this node" % (tmp_path / "none"))
    fifo_dir = tmp_path / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(str(fifo_dir / "gpu-a01-pid1.log"))
    fifo = run_module(nccl_inspector, {"path": str(fifo_dir), "placement": False})
    assert fifo["read"] is False and "gpu-a01-pid1.log: it is a FIFO, not a regular file" in fifo["msg"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "gpu-a01-pid1.log").write_text("Segmentation fault\n")
    result = run_module(nccl_inspector, {"path": str(foreign), "placement": False})
    assert result["read"] is False and result["msg"].startswith("the files in %s are not the Inspector's: no NCCL "
                                                                "Inspector record in gpu-a01-pid1.log" % foreign)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_module(nccl_inspector, {"path": str(empty), "placement": False})["msg"] == (
        "0 file(s) read in %s: 0 record(s) (no dump yet)" % empty)


@pytest.mark.parametrize("args, message", [
    ({"max_bytes": 10}, "max_bytes must be 4096 to 1073741824 bytes, got 10"),
    ({"max_files": 0}, "max_files must be 1 to 65536, got 0"),
    ({"limits": {"max_collectives": -1}}, "limits: limit max_collectives must be a whole number of at least 1, got -1"),
    ({"pids": [0]}, "pids must be process ids (1 or more), got [0]"),
])
def test_a_bad_option_fails_naming_it(tmp_path, args, message):
    result = run_module(nccl_inspector, dict({"path": str(tmp_path)}, **args))
    assert result["failed"] and result["msg"] == message
