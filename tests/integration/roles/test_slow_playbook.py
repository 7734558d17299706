"""playbooks/slow.yml from a job's NCCL Inspector dumps on two nodes to the decider (issue 57).

Two inventory hosts on this machine (local connection), n1 and n2, each with its own dump folder: the constructed
8-rank job of tests/unit/fixtures/nccl_inspector/job_8rank_rank5_late_constructed/ (the Inspector's exact layout,
figures made up - no real slowed-rank capture exists yet), ranks 0-3 written on host gpu-a01 (n1), ranks 4-7 on gpu-a02
(n2), rank 5 coming last to every collective. Each node's nvidia-smi is the lab's stand-in over the project's real
8x H200 capture (tests/unit/fixtures/nvidia_smi/q_h200x8.xml), n2's with GPU 1's clocks held down (hw_slowdown
Active), and it says which GPU each of the job's processes computes on (the real capture's bus ids). The decider (the
remediate module, on n1) talks through kubectl (tests/stubs/fake_kubectl.py) to the Kubernetes stand-in
(tests/lab/kube-api-standin/server.py). slow.yml must name rank 5 on n2, GPU 1, with its node's finding, and the
decider must cordon n2 with that finding as its reason; a check run changes nothing."""

import csv
import glob
import json
import os
import shutil
import sys

import pytest

import kube_standin
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
JOB = os.path.join(FIXTURES, "nccl_inspector", "job_8rank_rank5_late_constructed")
STANDIN_SMI = os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi")
PIDS = {"n1": ("gpu-a01", (41001, 41002, 41003, 41004)), "n2": ("gpu-a02", (52001, 52002, 52003, 52004))}

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")


def _bus_ids():
    """index -> PCI bus id of the real 8x H200 capture (--query-gpu=index,name,uuid,pci.bus_id,...)."""
    with open(os.path.join(FIXTURES, "nvidia_smi", "query_gpu_h200x8.csv")) as handle:
        rows = list(csv.reader(handle, skipinitialspace=True))[1:]
    return dict((int(row[0]), row[3]) for row in rows)


def _node(tmp_path, host):
    """The host's dump folder (its ranks' files), its nvidia-smi, its kernel log."""
    written, pids = PIDS[host]
    dumps = tmp_path / host / "dumps"
    dumps.mkdir(parents=True)
    for path in glob.glob(os.path.join(JOB, "%s-pid*.log" % written)):
        shutil.copy(path, str(dumps))
    capture = tmp_path / host / "capture"
    capture.mkdir()
    xml = open(os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml")).read()
    if host == "n2":   # GPU 1's clocks held down by the hardware: the second GPU's hw_slowdown
        first = xml.index("<clocks_event_reason_hw_slowdown>Not Active")
        second = xml.index("<clocks_event_reason_hw_slowdown>Not Active", first + 1)
        xml = xml[:second] + xml[second:].replace("<clocks_event_reason_hw_slowdown>Not Active",
                                                  "<clocks_event_reason_hw_slowdown>Active", 1)
    (capture / "q.xml").write_text(xml)
    buses = _bus_ids()
    (capture / "apps.csv").write_text("".join("%d, %s\n" % (pid, buses[gpu]) for gpu, pid in enumerate(pids)))
    (capture / "gpus.csv").write_text("".join("%d, %s\n" % (gpu, bus) for gpu, bus in sorted(buses.items())))
    smi = tmp_path / host / "nvidia-smi"
    smi.write_text("#!/bin/sh\ncase \"$*\" in\n"
                   "  '--query-compute-apps=pid,gpu_bus_id --format=csv,noheader') exec cat %s/apps.csv ;;\n"
                   "  '--query-gpu=index,pci.bus_id --format=csv,noheader') exec cat %s/gpus.csv ;;\n"
                   "esac\nNVIDIA_SMI_CAPTURE=%s exec %s \"$@\"\n" % (capture, capture, capture, STANDIN_SMI))
    smi.chmod(0o755)
    (tmp_path / host / "kern.log").write_text("")
    return {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "slow_dump_dir": str(dumps), "gpufabric_local_facts_dir": "",
            "health_monitor_checks": {"expected_gpu_count": 8, "nvidia_smi_path": str(smi),
                                      "kernel_log": str(tmp_path / host / "kern.log"),
                                      "sysfs_root": str(tmp_path / "nosys"), "command_timeout": 10}}


@pytest.fixture
def job(tmp_path):
    server = kube_standin.start(tmp_path, [{"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "resourceVersion": "1", "annotations": {}}, "spec": {}} for name in ("n1", "n2")])
    (tmp_path / "inventory.yml").write_text(json.dumps({"all": {"hosts": dict(
        (host, _node(tmp_path, host)) for host in ("n1", "n2"))}}))
    (tmp_path / "vars.yml").write_text(json.dumps(kube_standin.decider_vars(
        tmp_path, [{"check": "gpu_clock_throttle", "action": "drain"}], slow_nodes=["n1", "n2"])))
    yield tmp_path
    server.terminate()
    server.wait()


def run(path, *extra):
    return kube_standin.run_playbook(path, "gpufabric.rdma.slow", *extra)


_patches = kube_standin.patches


def test_the_late_rank_is_named_with_its_gpu_and_its_nodes_throttle_and_the_decider_drains_its_node(job):
    before = (job / "nodes.json").read_text()
    out = run(job, "--check")
    assert "Kubernetes: cordoned and tainted n2 (gpufabric: gpu_clock_throttle " in out, out[-3000:]
    assert (job / "nodes.json").read_text() == before and _patches(job) == [] and not (job / "decider").exists()

    out = run(job)
    report = json.loads((job / "report" / "slow" / "slow.json").read_text())
    (suspect,) = report["suspects"]
    assert (report["verdict"], suspect["rank"], suspect["host"], suspect["nvml_gpu"], suspect["verdict"]) == (
        "stragglers", 5, "n2", 1, "hardware")
    assert suspect["line"].startswith("rank 5 late on node n2, GPU 1 (last to arrive at 120 of 120 collectives of "
                                      "communicator 0x1f2e3d4c5b6a7980 compared (100%); the others waited a median ")
    assert "; node n2: gpu_clock_throttle clocks held down by hw_slowdown (00000000:00:07.0)" in suspect["line"]
    assert [row["read"] for row in report["read"]] == [True, True]
    (patch,) = _patches(job)
    assert patch["path"] == "/api/v1/nodes/n2"
    ledger = json.loads(json.loads((job / "nodes.json").read_text())[1]["metadata"]["annotations"]
                        ["gpufabric.io/remediation"])
    assert ledger["drains"][0]["findings"] == ["gpu_clock_throttle|n2/GPU 00000000:00:07.0"], ledger
    markdown = (job / "report" / "slow" / "slow.md").read_text()
    assert markdown.startswith("# gpufabric.rdma slow-job report\n\n**STRAGGLERS**: 1 straggler(s): 1 with a hardware")
    prom = (job / "report" / "slow" / "gpufabric_slow.prom").read_text()
    assert ('gpufabric_slow_rank_late_ratio{cluster="gpufabric",comm="communicator 0x1f2e3d4c5b6a7980",gpu="GPU1",'
            'node="gpu-a02",rank="5"} 1') in prom, prom
    assert 'gpufabric_slow_straggler{' in prom and 'kind="late"' in prom and 'verdict="hardware"' in prom
