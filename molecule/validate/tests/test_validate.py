"""nccl-tests orchestration in the two-node lab: OpenMPI from Debian, mpirun over SSH between the
containers, outputs parsed and judged on the controller, reports written, thresholds enforced."""

import json
import os
import subprocess

import pytest

REPORT = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"), "nccl-tests")
NODES = {"gpufabric-validate-node1", "gpufabric-validate-node2"}


def _runs():
    with open(os.path.join(REPORT, "runs.json")) as handle:
        return json.load(handle)


def test_openmpi_from_debian(host):
    assert host.package("openmpi-bin").is_installed
    assert "Open MPI" in host.check_output("mpirun --version")
    assert host.file("/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h").exists


def test_passwordless_root_ssh_between_nodes(host):
    me = host.check_output("hostname")
    other = (NODES - {me}).pop()
    assert host.check_output("ssh -o BatchMode=yes -o StrictHostKeyChecking=no %s hostname" % other) == other


def test_single_node_runs_on_each_host():
    single = [r for r in _runs() if r["mode"] == "single"]
    assert sorted(r["host"] for r in single) == sorted(NODES)
    for run in single:
        assert run["passed"] is True and run["failures"] == []
        assert run["command"].endswith("all_reduce_perf -b 8 -e 4G -f 2 -g 1")
        assert run["result"]["rows"][-1]["out_of_place"]["busbw"] == 364.98


def test_mpirun_ran_one_rank_on_each_node():
    (run,) = [r for r in _runs() if r["mode"] == "mpirun"]
    assert run["label"] == "mpirun across the lab"
    assert "-np 2" in run["command"] and "-x NCCL_IB_DISABLE=1" in run["command"]
    assert {r["host"] for r in run["result"]["ranks"]} == NODES
    assert run["passed"] is True


def test_reports_on_the_controller():
    with open(os.path.join(REPORT, "summary.md")) as handle:
        summary = handle.read()
    assert summary.startswith("# gpufabric.rdma validation\n\n**PASS**: 3 of 3 run(s) passed.")
    with open(os.path.join(REPORT, "busbw.svg")) as handle:
        svg = handle.read()
    assert svg.startswith("<svg") and "min busbw 350" in svg and svg.count("<polyline") == 6


@pytest.mark.parametrize("threshold", ["400"])
def test_a_missed_threshold_fails_the_play_naming_the_numbers(threshold, tmp_path):
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    playbook = os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "converge.yml")
    proc = subprocess.run(
        ["ansible-playbook", "-i", inventory, playbook, "-e", "nccl_tests_min_busbw=" + threshold,
         "-e", "nccl_tests_report_dir=" + str(tmp_path), "-e", "openmpi_ssh_mesh=false"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode != 0
    assert "size 4294967296 B: busbw 364.98 GB/s, expected at least 400 GB/s" in proc.stdout
    assert (tmp_path / "summary.md").read_text().startswith("# gpufabric.rdma validation\n\n**FAIL**")
