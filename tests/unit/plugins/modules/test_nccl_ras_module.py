"""The nccl_ras module over a real TCP connection to the RAS stand-in (tests/lab/nccl-ras-standin) replaying replies
captured on the GPU machine: the suspect named; a port where nothing listens, and one that never answers, are
"not answered" with their own stage and kind (never a healthy job); a remote address refused unless allowed."""
import os
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.modules import nccl_ras
from moduletest import run_module
from paths import fixture_path, ROOT

STANDIN = os.path.join(ROOT, "tests", "lab", "nccl-ras-standin", "nccl_ras_standin.py")
FIXTURES = fixture_path("nccl_ras")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def standin():
    procs = []

    def start(name, *extra):
        port = _free_port()
        proc = subprocess.Popen([sys.executable, STANDIN, os.path.join(FIXTURES, name), "--port", str(port)] + list(extra),
                                stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout.readline().startswith("listening on")
        return port
    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def test_the_rank_a_hung_job_waits_for_is_named(standin):
    port = standin("hang_rank1_stopped_calling_2.28.9.txt")
    result = run_module(nccl_ras, {"port": port, "collective_timeout": 5, "timeout": 20})
    assert result["answered"] is True and result["changed"] is False
    assert [(s["rank"], s["node"], s["nvml_gpu"], s["kind"]) for s in result["suspects"]] == [(1, "192.0.2.2", 1, "behind")]
    assert result["msg"] == ("1 suspect(s): rank 1 on 192.0.2.2 GPU 1: behind: launched AllReduce up to operation 29, "
                             "others up to 30")


def test_a_healthy_job_says_so(standin):
    result = run_module(nccl_ras, {"port": standin("healthy_2rank_h200_2.28.9.txt"), "host": "127.0.0.1"})
    assert (result["answered"], result["suspects"], result["msg"]) == (True, [], "no communicator in trouble")


def test_no_job_and_a_stuck_job_are_not_answers(standin):
    nothing = run_module(nccl_ras, {"port": _free_port()})
    assert (nothing["answered"], nothing["stage"], nothing["kind"]) == (False, "connect", "refused")
    port = standin("healthy_2rank_h200_2.28.9.txt", "--silent")
    started = time.time()
    stuck = run_module(nccl_ras, {"port": port, "timeout": 2})
    assert time.time() - started < 10
    assert (stuck["answered"], stuck["stage"], stuck["kind"]) == (False, "handshake", "timeout")
    assert stuck.get("failed") is not True and stuck["suspects"] == []


def test_a_remote_address_is_refused_unless_allowed():
    refused = run_module(nccl_ras, {"host": "10.0.0.7"})
    assert refused["failed"] is True and "not a loopback address" in refused["msg"]
    tight = run_module(nccl_ras, {"timeout": 5, "collective_timeout": 5})
    assert tight["failed"] is True and "leaves no room" in tight["msg"]
