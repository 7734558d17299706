"""One nccl-tests run has one verdict (judge/nccl_run.py): validation, burn-in and the tuner read the same runs -
real captures - and agree on whether each ran, whether it is a measurement, and its figure."""

import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin, nccl_run, validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import tuning
from paths import ROOT


def _nan(text):
    """The capture with the out-of-place busbw of its largest size made nan (a failed measurement)."""
    lines = text.splitlines()
    last = max(i for i, line in enumerate(lines) if line.split() and line.split()[0].isdigit())
    cells = lines[last].split()
    cells[7] = "nan"
    lines[last] = "  ".join(cells)
    return "\n".join(lines)


@pytest.fixture
def runs(read_fixture):
    good = read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    return {
        "good": ({"rc": 0, "stdout": good}, None, 364.98),
        "skipped": ({"skipped": True, "msg": "Command would have run if not in check mode"},
                    "not run: Command would have run if not in check mode: check mode measures nothing", None),
        "never started": ({"rc": 132, "stdout": read_fixture("nccl_tests", "launch", "mpirun_executable_missing_ompi414.stdout"),
                           "stderr": read_fixture("nccl_tests", "launch", "mpirun_executable_missing_ompi414.stderr")},
                          "not run: exited 132 before nccl-tests started", None),
        "aborted": ({"rc": 1, "stdout": read_fixture("nccl_tests", "aborted_before_table_nccltests219.txt")}, "exited 1", None),
        "no rows": ({"rc": 0, "stdout": read_fixture("nccl_tests", "aborted_before_table_nccltests219.txt")}, "no result rows", None),
        "nan": ({"rc": 0, "stdout": _nan(good)}, "busbw is nan or inf at 1 size(s): a failed measurement", None),
        # nccl-tests built without MPI=1 under mpirun -np 4 on 4x H200: four single-rank runs, busbw 0, exit 0
        "separate runs": ({"rc": 0, "stdout": _capture("mpirun_without_mpi_build.txt")},
                          "4 separate nccl-tests runs in one output, each its own rank 0", None),
        # a launch that asked for 8 ranks and shows 4 (the 4x H200 capture under a command asking for 8)
        "fewer ranks": ({"rc": 0, "stdout": _capture("mpirun_p2p_on_r1.txt"),
                         "cmd": ["mpirun", "--allow-run-as-root", "-np", "8", "-x", "NCCL_DEBUG=INFO",
                                 "/opt/nccl-tests/build/all_reduce_perf", "-b", "8M", "-e", "512M", "-n", "20", "-g", "1"]},
                        "the command asked for 8 ranks and the output shows 4", None),
    }


def _capture(name):
    root = ROOT
    with open(os.path.join(root, "docs", "benchmarks", "2026-11-27-h200x4-p2p", name)) as handle:
        return handle.read()


@pytest.mark.parametrize("case", ["good", "skipped", "never started", "aborted", "no rows", "nan", "separate runs",
                                  "fewer ranks"])
def test_validation_burnin_and_the_tuner_agree_on_every_run(runs, case):
    registered, why, figure = runs[case]
    run = nccl_run.from_registered(registered)
    found = nccl_run.verdict(run)
    assert (found["error"] or "").startswith(why or "") and bool(found["error"]) == bool(why), found["error"]
    assert found["busbw"] == figure
    # burn-in (pairs and search groups) keeps the same error and figure
    record = burnin.judge_run(burnin.run_record(registered), nccl_tests.parse)
    assert (record["error"], record["busbw"]) == (found["error"], found["busbw"])
    # the tuner counts the same runs as failed, with the same words
    if not registered.get("skipped"):
        assert tuning.run_failure(dict(registered, stdout=registered.get("stdout"))) == found["error"]
    # validation: not run exactly when the verdict says so, and never a pass without a figure
    judged = validation.judge([dict(run, label=case, mode="single")])[0]
    assert bool(judged.get("not_run")) == bool(found["not_run"])
    assert not judged["passed"] or found["busbw"] is not None
    if case == "separate runs":   # a launch that measured nothing fails, saying the binary lacks MPI
        assert not judged["passed"] and any("built without MPI (build it with MPI=1)" in f for f in judged["failures"])
    if case == "fewer ranks":
        assert not judged["passed"] and judged["failures"] == [found["error"]]


@pytest.mark.parametrize("command, ranks", [
    ("mpirun --allow-run-as-root -np 16 -x NCCL_DEBUG=INFO /opt/build/all_reduce_perf -b 8 -e 4G -n 20 -g 1", 16),
    ("/opt/build/all_reduce_perf -b 8 -e 4G -f 2 -g 8", 8),
    ("srun --ntasks=4 all_gather_perf_mpi -g 2 -t 2", 16),
    ("mpirun -n 2 all_reduce_perf", 2),
    ("mpirun -np many all_reduce_perf", None),
    ("sbatch job.sh", None),
    ("", None),
])
def test_the_ranks_a_command_asks_for(command, ranks):
    assert nccl_run.asked_ranks(command) == ranks


def test_the_same_ranks_as_asked_pass(read_fixture):
    found = nccl_run.verdict({"rc": 0, "output": _capture("mpirun_p2p_on_r1.txt"),
                              "command": "mpirun -np 4 /b/all_reduce_perf -b 8M -e 512M -g 1"})
    assert found["error"] is None and found["ranks"] == 4


def test_one_rank_is_a_note_and_a_figure_beyond_any_link_is_a_failure(read_fixture):
    one = nccl_run.verdict({"rc": 0, "output": read_fixture("nccl_tests", "all_reduce_g1_h100.txt")})
    assert one["notes"] and one["notes"][0].startswith("1 rank: no data crosses a link") and not one["implausible"]
    result = dict(nccl_tests.parse(read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")), peak_busbw=5000.0)
    assert nccl_run.implausible(result)[0].startswith("peak busbw 5000 GB/s is beyond what any link carries")
