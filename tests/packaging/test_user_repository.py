"""A new user's first hour: the built tarball installed with `ansible-galaxy collection install` into a
directory of their own, run from there with Ansible's default callback and no ansible.cfg of ours.

Each case was a defect of issue 25: a relative report directory written inside the installed
collection, the node table printed as one escaped JSON string, discover ending rc 0 on NOT READY,
the Kubernetes render-only example failing on a directory that did not exist, a stray log shipped.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
from installing import install

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="module")
def user(tarball, tmp_path_factory):
    """The user's repository: the collection installed under ./collections, nothing else."""
    repo = tmp_path_factory.mktemp("user-repo")
    env = install(tarball, repo / "collections")
    for name in ("ANSIBLE_STDOUT_CALLBACK", "ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_LOAD_CALLBACK_PLUGINS"):
        env.pop(name, None)
    assert not (repo / "ansible.cfg").exists()
    return repo, env


def playbook(user, *args):
    repo, env = user
    run = subprocess.run(["ansible-playbook", *args, "-e", "ansible_become=false",
                          "-e", "discovery_facts_dir=%s" % (repo / "facts"),
                          "-e", "gpufabric_local_facts_dir=%s" % (repo / "facts.d")],
                         capture_output=True, text=True, env=env, cwd=str(repo), timeout=600, check=False)
    return run.returncode, run.stdout + run.stderr


def installed_copy(user):
    return user[0] / "collections" / "ansible_collections" / "gpufabric" / "rdma"


def test_discover_gates_on_not_ready_and_reports_where_the_user_stands(user):
    repo = user[0]
    rc, out = playbook(user, "gpufabric.rdma.discover", "-e", "gpufabric_report_root=./report",
                       "-e", "gpufabric_expected_gpu_count=8")
    assert rc == 2, out[-3000:]  # a failed play: what an AWX workflow's on-failure path and a script's `||` see
    assert "NOT READY: 1 critical finding(s) (nvidia_smi); see readiness.md in the report directory" in out
    assert (repo / "report" / "readiness.md").is_file() and (repo / "report" / "readiness.json").is_file()
    assert not (installed_copy(user) / "playbooks" / "report").exists()
    # The default callback prints the table and the verdict as lines, not one escaped string.
    assert "\\n" not in out, [line for line in out.splitlines() if "\\n" in line][:3]
    assert any(line.strip().strip('",').startswith("NOT READY: 1 critical") for line in out.splitlines())


def test_discover_reports_only_when_told_and_reads_the_old_names_with_a_warning(user):
    """report_dir and expected_gpu_count, the names before gpufabric_report_root and gpufabric_expected_gpu_count,
    are still read; Ansible prints a deprecation warning for each."""
    repo = user[0]
    rc, out = playbook(user, "gpufabric.rdma.discover", "-e", "report_dir=report-only", "-e", "expected_gpu_count=8",
                       "-e", "discover_fail_when_not_ready=false")
    assert rc == 0, out[-3000:]
    report = json.loads((repo / "report-only" / "readiness.json").read_text())
    assert report["ready"] is False and report["expected_gpu_count"] == 8
    flat = " ".join(out.split())
    for old, new in (("report_dir", "gpufabric_report_root"), ("expected_gpu_count", "gpufabric_expected_gpu_count")):
        assert ("[DEPRECATION WARNING]: %s is renamed %s: set the new name (the old one is still read). This feature will"
                " be removed from collection 'gpufabric.rdma' version 1.0.0." % (old, new)) in flat, out[-3000:]


def test_the_kubernetes_render_only_example_writes_into_the_users_directory(user):
    repo = user[0]
    workloads = [{"name": "nccl-allreduce", "kind": "mpijob", "image": "my/nccl-tests:2.19", "workers": 2},
                 {"name": "dep-demo-hpn-gpu", "kind": "acs_deployment", "image": "my/app", "gpu_model_series": "GU8TF"}]
    rc, out = playbook(user, "gpufabric.rdma.kubernetes", "-e", "device_plugin_apply=false", "-e", "gpufabric_report_root=./report-k8s",
                       "-e", "device_plugin_manifest_dir=k8s", "-e", "k8s_workloads_manifest_dir=k8s",
                       "-e", json.dumps({"k8s_workloads_list": workloads}))
    assert rc == 0, out[-3000:]
    assert sorted(p.name for p in (repo / "k8s").iterdir()) == [
        "deployment-dep-demo-hpn-gpu.yaml", "mpijob-nccl-allreduce.yaml", "rdma-device-plugin-erdma.yaml"]
    assert not (installed_copy(user) / "playbooks" / "k8s").exists()


def test_a_gpu_on_the_bus_that_no_driver_answers_is_not_ready(user):
    """Issue 34: discovery said READY with 0 GPUs. The PCI tree is the one captured on the GPU machine (an H100 and a
    virtio NIC, tests/unit/fixtures/pcie/links_h100_vm.tsv), with no driver bound; this machine has no nvidia-smi."""
    repo = user[0]
    with open(os.path.join(ROOT, "tests", "unit", "fixtures", "pcie", "links_h100_vm.tsv")) as handle:
        for line in handle:
            if line.startswith("#"):
                continue
            address, klass, vendor, device = line.rstrip("\n").split("\t")[:4]
            node = repo / "sys" / "bus" / "pci" / "devices" / address
            node.mkdir(parents=True)
            for name, value in (("class", klass), ("vendor", vendor), ("device", device)):
                (node / name).write_text(value + "\n")
    rc, out = playbook(user, "gpufabric.rdma.discover", "-e", "gpufabric_report_root=./report-gpu", "-e", "discovery_sysfs_root=%s" % (repo / "sys"))
    assert rc == 2, out[-3000:]
    assert "NOT READY" in out and "gpu_driver" in out
    report = json.loads((repo / "report-gpu" / "readiness.json").read_text())
    (found,) = [f for node in report["nodes"].values() for f in node["findings"] if f["check"] == "gpu_driver"]
    assert found["severity"] == "critical" and "0000:00:06.0 (driver none)" in found["detail"]


@pytest.mark.parametrize("args, message", [
    (["gpufabric.rdma.discover", "-e", "gpufabric_expected_gpu_count=eight", "-e", "gpufabric_report_root=./report-eight"],
     'gpufabric_expected_gpu_count is "eight", expected a whole number (role gpufabric.rdma._common) - nothing has run yet'),
    (["gpufabric.rdma.burnin", "-e", "burnin_group=gpus"], "burnin_group=gpus matches no host of the inventory"),
    (["gpufabric.rdma.topology", "--check", "--diff"], "this playbook needs a group slurm_controller in the inventory"),
], ids=["gpu-count-eight", "group-typo", "topology-without-controller"])
def test_a_mistake_fails_naming_the_variable_and_the_value(user, args, message):
    rc, out = playbook(user, *args)
    assert rc != 0 and message in " ".join(out.split()), out[-3000:]


def test_a_burnin_without_nccl_tests_says_not_run_with_the_launchers_message_and_names_no_host(user):
    repo = user[0]
    (repo / "two-nodes.ini").write_text("".join("%s ansible_connection=local ansible_python_interpreter=%s\n"
                                                % (host, sys.executable) for host in ("h1", "h2")))
    rc, out = playbook(user, "-i", "two-nodes.ini", "gpufabric.rdma.burnin", "-e", "burnin_gpus_per_node=1",
                       "-e", "burnin_mpirun=/nonexistent/mpirun", "-e", "burnin_report_dir=./report-burnin")
    said = " ".join(out.split())
    assert rc != 0 and "burn-in not run: not run (1 of 1 runs): exited " in said, said[-3000:]
    # Ansible 2.19 keeps only "Error executing command." of a launcher that is not there: the run names the command
    assert "Error executing command. (/nonexistent/mpirun " in said
    assert "slow host h" not in said and "bad link h1-h2" not in said
    assert (repo / "report-burnin" / "burnin.md").read_text().splitlines()[2].startswith("NOT RUN: 2 hosts")


def test_nothing_stray_ships(tmp_path):
    """A copy of the checkout with what a working tree collects (a run log, a report directory, an editor
    backup) builds a tarball without any of it: galaxy.yml's build_ignore."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=False)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    tree = tmp_path / "tree"
    for name in tracked.stdout.split("\0"):
        if name and os.path.isfile(os.path.join(ROOT, name)):
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), tree / name)
    stray = ["run2.log", "playbooks/site.retry", "gpufabric-report/readiness.md", "report/summary.md",
             "roles/discovery/tasks/main.yml~", "roles/burnin/tasks/.main.yml.swp", "nohup.out"]
    for name in stray:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("[ERROR] left behind\n")
    out = tmp_path / "dist"
    subprocess.run(["ansible-galaxy", "collection", "build", "--output-path", str(out), str(tree)],
                   check=True, capture_output=True, text=True)
    (built,) = list(out.iterdir())
    with tarfile.open(built) as tar:
        names = set(tar.getnames())
    assert [n for n in stray if n in names] == []
    assert [n for n in names if n.endswith(".log")] == []
