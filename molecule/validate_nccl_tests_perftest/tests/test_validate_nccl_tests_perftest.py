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
    # nccl_tests_build is false here: nothing is built, so neither mpi.h nor the C and Fortran compilers it brings
    assert not host.package("libopenmpi-dev").is_installed
    assert not host.file("/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h").exists
    assert not host.exists("gfortran") and not host.exists("gcc")


def test_passwordless_root_ssh_between_nodes(host):
    me = host.check_output("hostname")
    other = (NODES - {me}).pop()
    assert host.check_output("ssh -o BatchMode=yes -o StrictHostKeyChecking=no %s hostname" % other) == other


def test_single_node_runs_on_each_host():
    single = [r for r in _runs() if r["mode"] == "single"]
    assert sorted(r["host"] for r in single) == sorted(NODES)
    for run in single:
        assert run["passed"] is True and run["failures"] == []
        assert run["command"].endswith("all_reduce_perf -b 8 -e 4G -f 2 -g 8")
        assert len(run["result"]["ranks"]) == 8
        assert run["result"]["rows"][-1]["out_of_place"]["busbw"] == 364.98


def test_mpirun_ran_one_rank_per_gpu_on_each_node():
    (run,) = [r for r in _runs() if r["mode"] == "mpirun"]
    assert run["label"] == "mpirun across the lab"
    assert "-np 16" in run["command"] and "-x NCCL_IB_DISABLE=1" in run["command"]
    assert len(run["result"]["ranks"]) == 16
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
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode != 0
    # ansible.cfg's YAML result format folds a long message over lines: compare with the white space collapsed
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "mpirun across the lab: size 4294967296 B: busbw 364.98 GB/s, expected at least 400 GB/s" in said
    assert (tmp_path / "summary.md").read_text().startswith("# gpufabric.rdma validation\n\n**FAIL**")


@pytest.fixture(scope="module")
def perftest_run(tmp_path_factory):
    """perftest.yml once for the module: ib_write_bw between the lab nodes, which have no RDMA."""
    report = tmp_path_factory.mktemp("perftest")
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    playbook = os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "perftest.yml")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, playbook], capture_output=True, text=True,
                          timeout=600, check=False, env=dict(os.environ, GPUFABRIC_PERFTEST_REPORT=str(report)))
    return proc, report


def test_perftest_without_rdma_fails_with_what_perftest_said(perftest_run):
    proc, report = perftest_run
    assert proc.returncode != 0
    # the callback folds and escapes long messages, so read the whole sentence from the report
    output = proc.stdout + proc.stderr
    assert "perftest failed: ib_write_bw gpufabric-validate-node2 -> gpufabric-validate-node1" in output
    assert "Did not detect devices" in output
    failures = (report / "perftest.md").read_text().split("## Failures")[1]
    assert ("- ib_write_bw gpufabric-validate-node2 -> gpufabric-validate-node1: no result (client exit 1); "
            "perftest printed: Did not detect devices; If device exists, check if driver is up; "
            "Unable to find the Infiniband/RoCE device") in failures
    # no RDMA device is final: the client is not retried for the whole timeout
    assert "RETRYING" not in "".join(line for line in proc.stdout.splitlines(True) if "Run the client" in line)
    summary = (report / "perftest.md").read_text()
    assert "| ib_write_bw | gpufabric-validate-node2 -> gpufabric-validate-node1 | - | no result | FAIL |" in summary


def test_perftest_installed_and_nothing_left_running(host, perftest_run):
    assert host.package("perftest").is_installed
    # by process name: "pgrep -f" would find the shell that runs it
    assert host.run("pgrep -x ib_write_bw").rc != 0


def test_the_lab_run_says_what_nccl_used_and_the_bytes_per_port():
    (run,) = [r for r in _runs() if r["mode"] == "mpirun"]
    assert "-x NCCL_DEBUG=INFO" in run["command"] and "-x NCCL_DEBUG_SUBSYS=INIT,NET,ENV" in run["command"]
    # IB is off in the lab's environment: the replayed socket log is what it promises
    assert (run["nccl"]["net"], run["nccl"]["expected"]["rdma"], run["nccl"]["passed"]) == ("Socket", False, True)
    ports = dict((p["port"], p["bytes"]) for p in run["traffic"]["ports"])
    assert ports == dict(("%s:mlx5_%d/1" % (node, n), 2 * 10737418240) for node in NODES for n in (0, 1))
    with open(os.path.join(REPORT, "summary.md")) as handle:
        summary = handle.read()
    assert "## What NCCL used" in summary
    assert "## mpirun across the lab: bytes per RDMA port during the run - REPLAYED: counters advanced" in summary


def test_what_nccl_used_decides_the_verdict(tmp_path):
    """Four mpirun runs over a real NCCL log each: the RoCE/GDR one passes, the others fail saying why."""
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    scenario = os.environ["MOLECULE_SCENARIO_DIRECTORY"]
    proc = subprocess.run(
        ["ansible-playbook", "-i", inventory, os.path.join(scenario, "converge.yml"),
         "-e", "@" + os.path.join(scenario, "vars", "nccl-verdicts.yml"), "-e", "nccl_tests_report_dir=" + str(tmp_path),
         "-e", "openmpi_ssh_mesh=false"],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    runs = dict((r["label"], r) for r in json.loads((tmp_path / "runs.json").read_text()) if r["mode"] == "mpirun")
    assert runs["roce with gdr"]["passed"] is True and runs["roce with gdr"]["nccl"]["gdr"] is True
    assert "NCCL: inter-node traffic fell back to sockets (NET/Socket) although the profile expects RDMA" in \
        runs["socket fallback"]["failures"]
    assert "NCCL: NCCL ran without GPUDirect RDMA although peermem/DMA-BUF is expected" in runs["gdr disabled"]["failures"]
    wrong = runs["wrong hca and an idle rail"]["failures"]
    assert "NCCL: NCCL used mlx5_2:1, outside NCCL_IB_HCA=^=mlx5_2" in wrong
    for node in NODES:
        assert ("port %s:mlx5_1/1 carried no bytes while 2 port(s) carried traffic although NCCL_IB_HCA=^=mlx5_2 "
                "lets NCCL use it: a rail down or unused" % node) in wrong
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("# gpufabric.rdma validation\n\n**FAIL**: 1 of 4 run(s) passed.")
    assert "via NET/IB/2" in summary.split("## What NCCL used")[1]   # the NCCL line quoted as evidence
