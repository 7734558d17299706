"""The device_plugin and k8s_workloads roles for real (ansible-playbook, no cluster): every file
they write is a manifest the Kubernetes schemas accept, built from the node's discovery record."""

import json
import os
import subprocess

import pytest
import yaml

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import rdma

HERE = os.path.dirname(__file__)


def _run(tmp_path, read_fixture, extra, cwd=None, record=None):
    devices = rdma.parse_ibv_devinfo(read_fixture("ibv_devinfo", "erdma_seed002.txt"))
    inventory = {"all": {"children": {"gpu_nodes": {"hosts": {"ebmgn8v-0": {
        "ansible_connection": "local",
        "discovery_node": record or {"rdma_devices": devices, "gpu": {"count": 8},
                                     "nccl": {"env": {"NCCL_SOCKET_IFNAME": "eth1", "NCCL_IB_GID_INDEX": "3"}}},
        # What the one accessor (_common's node_facts) named: nccl_env wrote this, unlike discovery's recommendation.
        "node_facts_nccl_env": {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_GID_INDEX": "1"}}}}}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    variables = {"device_plugin_manifest_dir": str(tmp_path), "k8s_workloads_manifest_dir": str(tmp_path)}
    variables.update(extra)
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.json"), os.path.join(HERE, "k8s_render.yml"),
                           "-e", json.dumps(variables)], capture_output=True, text=True, timeout=180, check=False,
                          cwd=cwd)
    return proc.returncode, proc.stdout + proc.stderr


WORKLOADS = [
    {"name": "dep-demo-hpn-gpu", "kind": "acs_deployment", "image": "registry-cn-wulanchabu.ack.aliyuncs.com/acs/stress:v1.0.4",
     "gpu_model_series": "GU8TF"},
    {"name": "ddp-resnet50", "kind": "pytorchjob", "image": "pytorch:24.10", "workers": 2,
     "command": ["torchrun", "--nproc_per_node=8", "/opt/benchmark.py"]},
    {"name": "nccl-allreduce", "kind": "mpijob", "image": "nccl-tests:2.19", "workers": 2, "gpus_per_worker": 8},
    {"name": "tf-ps-benchmark", "kind": "tfjob", "image": "registry.cn-beijing.aliyuncs.com/acs/tf-benchmark:1.0",
     "command": ["python", "tf_cnn_benchmarks.py", "--server_protocol=grpc+verbs"]},
]


@pytest.mark.parametrize("plugin", ["erdma", "shared"])
def test_roles_write_valid_manifests_from_facts(tmp_path, read_fixture, kube_validate, plugin):
    rc, out = _run(tmp_path, read_fixture, {"device_plugin_type": plugin, "k8s_workloads_list": WORKLOADS,
                                            "k8s_workloads_rdma_resource": "aliyun/erdma"})
    assert rc == 0, out[-3000:]
    with open(tmp_path / ("rdma-device-plugin-%s.yaml" % plugin)) as handle:
        plugin_docs = [d for d in yaml.safe_load_all(handle) if d]
    assert [d["kind"] for d in plugin_docs] == ["ConfigMap", "DaemonSet"]
    workload_files = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".yaml") and "device-plugin" not in p.name)
    assert workload_files == ["deployment-dep-demo-hpn-gpu.yaml", "mpijob-nccl-allreduce.yaml",
                              "pytorchjob-ddp-resnet50.yaml", "tfjob-tf-ps-benchmark.yaml"]
    docs = plugin_docs
    for name in workload_files:
        with open(tmp_path / name) as handle:
            docs.append(yaml.safe_load(handle))
    for doc in docs:
        kube_validate(doc)
    mpijob = next(d for d in docs if d["kind"] == "MPIJob")
    worker = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    # The NCCL environment in effect on the node (what nccl_env wrote, not discovery's recommendation), and the RDMA
    # resource asked for.
    assert worker["env"] == [{"name": "NCCL_IB_GID_INDEX", "value": "1"}, {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}]
    assert worker["resources"]["limits"]["aliyun/erdma"] == 1
    labels = json.loads((tmp_path / "labels.json").read_text())
    assert labels["ebmgn8v-0"]["aliyun.accelerator/erdma"] == "true"
    assert labels["ebmgn8v-0"]["gpufabric.io/rdma-active-devices"] == "1"


@pytest.mark.parametrize("extra, message", [
    ({"device_plugin_type": "sriov"}, "sriov"),
    ({"device_plugin_type": "shared", "device_plugin_selectors": {"pciAddress": ["0000:3b:00.0"]}},
     "unknown device selector pciAddress"),
    ({"k8s_workloads_list": [{"name": "x", "kind": "mpijob", "image": "i", "gpus": 8}]}, "does not take gpus"),
    ({"k8s_workloads_list": [{"name": "TF", "kind": "tfjob", "image": "i", "command": []}]}, "name must be a DNS label"),
], ids=["unknown-plugin", "unknown-selector", "unknown-option", "bad-name"])
def test_bad_input_fails_before_writing(tmp_path, read_fixture, extra, message):
    rc, out = _run(tmp_path, read_fixture, extra)
    assert rc != 0
    assert message in out
    # Each role renders everything before it writes: a bad plugin setting writes no plugin file,
    # a bad workload no workload file.
    written = [p.name for p in tmp_path.iterdir() if p.name.endswith(".yaml")]
    if "device_plugin_type" in extra:
        assert written == []
    else:
        assert written == ["rdma-device-plugin-erdma.yaml"]


def test_a_relative_manifest_directory_is_made_where_the_user_runs(tmp_path, read_fixture):
    """The render-only example from a user's own directory: 'k8s' does not exist yet and is made there,
    not in the installed collection's playbooks/ directory."""
    user = tmp_path / "user-repo"
    user.mkdir()
    rc, out = _run(tmp_path, read_fixture, {"device_plugin_type": "erdma", "k8s_workloads_list": WORKLOADS[:1],
                                            "device_plugin_manifest_dir": "k8s", "k8s_workloads_manifest_dir": "k8s"},
                   cwd=str(user))
    assert rc == 0, out[-3000:]
    written = sorted(p.name for p in (user / "k8s").iterdir())
    assert written == ["deployment-dep-demo-hpn-gpu.yaml", "labels.json", "rdma-device-plugin-erdma.yaml"]


def _grace_record(read_fixture):
    """A GB200 node's discovery record: a real GB200 nvidia-smi -q -x and topo -m (SYS from every GPU to every NIC),
    its eight NICs four to a Grace (NUMA nodes and addresses constructed, as in test_k8s_dra.py)."""
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu

    facts = gpu.parse_nvidia_smi_xml(read_fixture("nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml"))
    facts.update(present=True, topology=gpu.parse_nvidia_topo(read_fixture("nvidia_smi", "topo_gb200x4_8nic_sys.txt")))
    nics = [{"name": "mlx5_%d" % i, "driver": "mlx5_core", "transport": "RoCE", "numa_node": i // 4,
             "pci_address": "00%02x:03:00.0" % i, "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "Ethernet"}]}
            for i in range(8)]
    return {"rdma_devices": nics, "gpu": facts, "nccl": {"env": {"NCCL_IB_HCA": "mlx5"}}}


def test_dra_renders_the_claims_from_discovery_and_the_workloads_claim_them(tmp_path, read_fixture, kube_validate):
    """k8s_resource_api=dra on a 1.34 cluster: the DeviceClasses and the claim of 4 GPUs and 8 NICs, each GPU pinned
    with the NICs of its Grace (rdma-dra.yaml, the reasons in rdma-dra-claims.md), no device plugin, and the MPIJob's
    and PyTorchJob's pods claiming it; the whole run is one ansible-playbook."""
    workloads = [w for w in WORKLOADS if w["kind"] in ("mpijob", "pytorchjob", "acs_deployment")]
    rc, out = _run(tmp_path, read_fixture, {
        "k8s_resource_api": "dra", "k8s_version": "v1.34.1", "k8s_workloads_list": workloads,
        "device_plugin_dra_claims": [{"name": "gpus-nics", "nics": 8}]}, record=_grace_record(read_fixture))
    assert rc == 0, out[-3000:]
    written = sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".yaml", ".md"))
    assert written == ["deployment-dep-demo-hpn-gpu.yaml", "mpijob-nccl-allreduce.yaml", "pytorchjob-ddp-resnet50.yaml",
                       "rdma-dra-claims.md", "rdma-dra.yaml"]
    with open(tmp_path / "rdma-dra.yaml") as handle:
        dra = [d for d in yaml.safe_load_all(handle) if d]
    assert [(d["kind"], d["metadata"]["name"]) for d in dra] == [
        ("DeviceClass", "gpu.gpufabric.io"), ("DeviceClass", "rdma.gpufabric.io"), ("DeviceClass", "erdma.gpufabric.io"),
        ("ResourceClaimTemplate", "gpus-nics")]
    requests = dict((r["name"], r["exactly"]) for r in dra[3]["spec"]["spec"]["devices"]["requests"])
    assert requests["nic-2"]["selectors"][0]["cel"]["expression"].endswith("numaNode == 1")
    report_text = (tmp_path / "rdma-dra-claims.md").read_text()
    assert "## gpus-nics: aligned per rail: GPUs pinned by bus ID, NICs by CEL" in report_text
    assert "| gpu-0 + nic-0 | GPU0 (0000:29:00.0) | mlx5_0, mlx5_1, mlx5_2, mlx5_3 |" in report_text
    assert "so it shares no pcieRoot with them" in out      # the reasons printed in the run too
    for name in written:
        if name.endswith(".yaml"):
            with open(tmp_path / name) as handle:
                for doc in yaml.safe_load_all(handle):
                    if doc:
                        kube_validate(doc)
    with open(tmp_path / "mpijob-nccl-allreduce.yaml") as handle:
        worker = yaml.safe_load(handle)["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["resourceClaims"] == [{"name": "gpus-nics", "resourceClaimTemplateName": "gpus-nics"}]
    assert worker["containers"][0]["resources"] == {"claims": [{"name": "gpus-nics"}]}
    assert "hostNetwork" not in worker      # dranet gives no NIC to a host-network pod


def test_dra_on_a_cluster_older_than_1_34_is_refused_before_anything_is_written(tmp_path, read_fixture):
    rc, out = _run(tmp_path, read_fixture, {"k8s_resource_api": "dra", "k8s_version": "1.33.4",
                                            "k8s_workloads_list": WORKLOADS[:1]})
    assert rc != 0
    assert "k8s_resource_api dra needs Kubernetes 1.34 or later" in out and "the cluster is 1.33.4" in out
    assert [p.name for p in tmp_path.iterdir() if p.suffix in (".yaml", ".md")] == []
