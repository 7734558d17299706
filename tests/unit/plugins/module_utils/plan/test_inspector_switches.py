"""NCCL's Inspector switched on (issue 57): the variables and one reason each (plan/nccl.py), written by the nccl_env
module into /etc/nccl.conf, set for one Slurm job in a dump folder of its own (roles/slurm_jobs' template, run by bash)
and in every pod of a Kubernetes workload with the plugin and the dumps through hostPath volumes; off, nothing of it."""

import os
import shlex
import subprocess

import jinja2
import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import k8s, nccl
from ansible_collections.gpufabric.rdma.plugins.modules import nccl_env
from moduletest import run_module
from paths import ROOT

PLUGIN = "/opt/nccl-inspector/libnccl-profiler-inspector.so"
ROOT_DIR = "/var/lib/gpufabric/nccl-inspector"
INSPECTOR = {"plugin": PLUGIN, "dump_dir": ROOT_DIR}


def test_the_variables_each_with_its_reason_json_lines_and_textfiles():
    env = nccl.inspector_env(INSPECTOR)
    assert [(name, value) for name, value, reason in env] == [
        ("NCCL_PROFILER_PLUGIN", PLUGIN), ("NCCL_INSPECTOR_ENABLE", "1"),
        ("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "1000000"), ("NCCL_INSPECTOR_DUMP_DIR", ROOT_DIR)]
    assert all(reason for name, value, reason in env)
    prom = dict((n, v) for n, v, r in nccl.inspector_env(dict(INSPECTOR, prom=True, dump_dir="/var/lib/node-exporter")))
    assert (prom["NCCL_INSPECTOR_PROM_DUMP"], prom["NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS"]) == ("1", "30000000")
    assert nccl.inspector_job_env(INSPECTOR, ROOT_DIR + "/train")["NCCL_INSPECTOR_DUMP_DIR"] == ROOT_DIR + "/train"


@pytest.mark.parametrize("inspector, message", [
    (dict(INSPECTOR, prom=True, interval=5), "inspector.interval must be whole seconds from 30 to 86400 (the plugin "
                                             "writes its textfiles at most every 30 s), got 5"),
    (dict(INSPECTOR, plugin="lib.so"), "inspector.plugin must be an absolute path"),
    (dict(INSPECTOR, plugin="/opt/x/libnccl-net.txt"), "inspector.plugin must be the plugin's shared library"),
    (dict(INSPECTOR, dump_dir="/var/lib/a b"), "inspector.dump_dir must be an absolute path"),
    (dict(INSPECTOR, enable=True), "inspector has unknown key(s) enable"),
])
def test_settings_that_cannot_be_used_are_refused_naming_them(inspector, message):
    with pytest.raises(ValueError) as error:
        nccl.inspector_env(inspector)
    assert message in str(error.value)


def test_nccl_env_writes_them_into_nccl_conf_without_a_typo_warning(tmp_path):
    conf = tmp_path / "nccl.conf"
    result = run_module(nccl_env, {"profile": "socket", "socket_ifname": "lo", "rdma_devices": [], "dest": str(conf),
                                   "inspector": INSPECTOR})
    text = conf.read_text()
    assert "NCCL_PROFILER_PLUGIN=%s\n" % PLUGIN in text and "NCCL_INSPECTOR_ENABLE=1\n" in text
    assert "# NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000000: written every 1 s while the job runs" in text
    assert result["warnings"] == [] and result["env"]["NCCL_INSPECTOR_DUMP_DIR"] == ROOT_DIR
    off = run_module(nccl_env, {"profile": "socket", "socket_ifname": "lo", "rdma_devices": []})
    assert not [name for name in off["env"] if "INSPECTOR" in name or "PROFILER" in name]
    bad = run_module(nccl_env, {"profile": "socket", "rdma_devices": [], "inspector": {"plugin": "x"}})
    assert bad["failed"] and "inspector.plugin must be an absolute path" in bad["msg"]


def test_a_kubernetes_workload_writes_into_a_folder_of_its_own_on_the_node(kube_validate):
    manifest = k8s.workload_manifest("pytorchjob", {"name": "ddp", "image": "pytorch:24.10", "env": {"NCCL_DEBUG": "WARN"},
                                                    "command": ["torchrun", "/opt/b.py"], "inspector": INSPECTOR})
    pod = manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    env = dict((item["name"], item["value"]) for item in pod["containers"][0]["env"])
    assert (env["NCCL_INSPECTOR_DUMP_DIR"], env["NCCL_PROFILER_PLUGIN"], env["NCCL_DEBUG"]) == (
        ROOT_DIR + "/ddp", PLUGIN, "WARN")
    assert pod["volumes"] == [{"name": "nccl-inspector-plugin", "hostPath": {"path": "/opt/nccl-inspector", "type": "Directory"}},
                              {"name": "nccl-inspector-dumps", "hostPath": {"path": ROOT_DIR + "/ddp",
                                                                            "type": "DirectoryOrCreate"}}]
    assert pod["containers"][0]["volumeMounts"][0] == {"name": "nccl-inspector-plugin", "mountPath": "/opt/nccl-inspector",
                                                       "readOnly": True}
    kube_validate(manifest)
    mpijob = k8s.workload_manifest("mpijob", {"name": "allreduce", "image": "nccl-tests", "env": {}, "inspector": INSPECTOR})
    command = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert ["-x", "NCCL_PROFILER_PLUGIN"] == command[command.index("NCCL_PROFILER_PLUGIN") - 1:
                                                     command.index("NCCL_PROFILER_PLUGIN") + 1]
    kube_validate(mpijob)
    with pytest.raises(k8s.ManifestError) as error:
        k8s.workload_manifest("dcgm_diag_job", {"name": "d", "inspector": INSPECTOR})
    assert "dcgm_diag_job runs no NCCL" in str(error.value)


def _render_job(inspector, env=None):
    """roles/slurm_jobs' job template for an nccl_tests job under mpirun, rendered as the role renders it."""
    from ansible.plugins.filter.core import FilterModule
    environment = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                     loader=jinja2.FileSystemLoader(os.path.join(ROOT, "roles", "slurm_jobs", "templates")))
    environment.filters.update(FilterModule().filters())
    environment.filters["quote"] = shlex.quote
    job = {"name": "nccl-all-reduce", "template": "nccl_tests", "gpus_per_node": 8, "ntasks_per_node": None,
           "output_dir": "/tmp", "nodes": 2, "cpus_per_task": 1, "time_limit": "01:00:00", "partition": "",
           "directives": [], "cuda_home": "", "mpi_home": "", "nccl_home": "", "env": env or {}, "launcher": "mpirun",
           "mpirun_args": ["--allow-run-as-root"], "nccl_tests_binary": "/opt/nccl-tests/build/all_reduce_perf",
           "nccl_tests_args": "-b 8 -e 4G -f 2", "inspector": inspector}
    return environment.get_template("job.sbatch.j2").render(
        job=job, ansible_managed="managed", gpufabric_nccl_inspector_dump_root=ROOT_DIR,
        __slurm_jobs_inspector_env=dict((n, v) for n, v, r in nccl.inspector_env(INSPECTOR)) if inspector else {})


def test_a_slurm_job_writes_into_its_own_folder_and_passes_the_variables_to_every_rank(tmp_path):
    script = _render_job(True, {"NCCL_DEBUG": "WARN"})
    assert "  -x NCCL_DEBUG \\\n  -x NCCL_INSPECTOR_DUMP_DIR \\\n  -x NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS" \
           " \\\n  -x NCCL_INSPECTOR_ENABLE \\\n  -x NCCL_PROFILER_PLUGIN \\\n" in script
    exports = "\n".join(line for line in script.splitlines() if line.startswith("export "))
    shown = subprocess.run(["bash", "-c", exports + "\nenv"], env={"SLURM_JOB_ID": "4242", "PATH": os.environ["PATH"]},
                           capture_output=True, text=True, check=True).stdout
    assert "NCCL_INSPECTOR_DUMP_DIR=%s/4242\n" % ROOT_DIR in shown and "NCCL_INSPECTOR_ENABLE=1\n" in shown
    assert subprocess.run(["bash", "-n", "-c", script], check=False).returncode == 0
    assert "INSPECTOR" not in _render_job(False)
