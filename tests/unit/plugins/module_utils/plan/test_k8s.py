import json

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import k8s

NCCL_TYPE1 = {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "mlx5", "NCCL_DEBUG": "INFO"}
NCCL_TYPE2 = {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "", "NCCL_DEBUG": "INFO"}


def test_erdma_plugin_is_seed_002(kube_validate):
    configmap, daemonset = k8s.erdma_device_plugin()
    assert configmap["metadata"] == {"name": "rdma-devices", "namespace": "kube-system"}
    assert json.loads(configmap["data"]["config.json"]) == {"mode": "hca", "deviceType": "eRDMA"}
    assert daemonset["metadata"]["name"] == "rdma-sriov-dp-ds"
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["nodeSelector"] == {"aliyun.accelerator/erdma": "true"}
    assert pod["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    (container,) = pod["containers"]
    assert container["image"] == "registry-cn-beijing.ack.aliyuncs.com/acs/k8s-rdma-sriov-dev-plugin:v1.0.0-b3dcbc5-aliyun"
    assert (container["imagePullPolicy"], container["securityContext"]) == ("Always", {"privileged": True})
    assert container["resources"]["limits"] == {"memory": "300Mi", "cpu": "300m"}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/var/lib/kubelet/device-plugins", "/k8s-rdma-sriov-dev-plugin"}
    assert pod["volumes"][1]["configMap"] == {"name": "rdma-devices", "items": [{"key": "config.json", "path": "config.json"}]}
    for manifest in (configmap, daemonset):
        kube_validate(manifest)


def test_shared_plugin_for_mlx5_with_prefix_and_selectors(kube_validate):
    configmap, daemonset = k8s.shared_device_plugin(
        namespace="rdma", image="registry.local/rdma-shared:v1.5.2", resource_prefix="nvidia.com",
        resource_name="rdma_roce", hca_max=64, selectors={"vendors": ["15b3"], "ifNames": ["ens1f0", "ens1f1"], "drivers": []},
        node_selector={"gpufabric.io/rdma": "true"})
    config = json.loads(configmap["data"]["config.json"])
    assert config["resourcePrefix"] == "nvidia.com"
    assert config["configList"] == [{"resourceName": "rdma_roce", "rdmaHcaMax": 64,
                                     "selectors": {"vendors": ["15b3"], "ifNames": ["ens1f0", "ens1f1"]}}]
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-node-critical" and "tolerations" not in pod
    assert {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v} == {
        "/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins_registry", "/dev/"}
    for manifest in (configmap, daemonset):
        kube_validate(manifest)


@pytest.mark.parametrize("kwargs, message", [
    ({"selectors": {"pciAddress": ["0000:3b:00.0"]}}, "unknown device selector pciAddress"),
    ({"selectors": {"vendors": []}}, "choose nothing"),
    ({"hca_max": 0}, "hca_max must be a whole number >= 1"),
    ({"resource_name": "bad name"}, "not a valid extended resource name"),
    ({"namespace": "Kube_System"}, "namespace must be a DNS label"),
])
def test_shared_plugin_refuses_bad_input(kwargs, message):
    with pytest.raises(k8s.ManifestError, match=message):
        k8s.shared_device_plugin(**kwargs)


def test_acs_deployment_is_seed_000(kube_validate):
    manifest = k8s.acs_deployment("dep-demo-hpn-gpu", "registry-cn-wulanchabu.ack.aliyuncs.com/acs/stress:v1.0.4",
                                  "GU8TF", NCCL_TYPE1)
    labels = manifest["spec"]["template"]["metadata"]["labels"]
    assert labels["alibabacloud.com/hpn-type"] == "rdma"
    assert labels["alibabacloud.com/gpu-model-series"] == "GU8TF"
    assert labels["alibabacloud.com/compute-class"] == "gpu"
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_IB_HCA", "value": "mlx5"},
                                {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}]
    assert container["resources"]["limits"] == {"cpu": 128, "memory": "512Gi", "nvidia.com/gpu": 8}
    assert container["command"] == ["sleep", "1000h"]
    kube_validate(manifest)


def test_acs_type2_keeps_the_empty_hca():
    # No env given: the P16EN's NIC type 2 profile, exactly as seed 000 lists it.
    manifest = k8s.acs_deployment("p16en", "img", "P16EN", gpus=16)
    env = manifest["spec"]["template"]["spec"]["containers"][0]["env"]
    # P16EN must have NCCL_IB_HCA set and empty (seed 000), not left out.
    assert env == [{"name": n, "value": v} for n, v in sorted(NCCL_TYPE2.items())]
    type1 = k8s.acs_deployment("gu8tf", "img", "GU8TF")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert type1 == [{"name": n, "value": v} for n, v in sorted(NCCL_TYPE1.items())]
    with pytest.raises(k8s.ManifestError, match="no NCCL profile known for ACS GPU model 'L20X'"):
        k8s.acs_deployment("x", "img", "L20X")


def test_pytorchjob_torchrun_with_rdma(kube_validate):
    manifest = k8s.pytorchjob("ddp", "pytorch:24.10", ["torchrun", "--nproc_per_node=8", "/opt/benchmark.py"],
                              NCCL_TYPE1, workers=4, rdma_resource="rdma/hca_shared_devices_a")
    specs = manifest["spec"]["pytorchReplicaSpecs"]
    assert (specs["Master"]["replicas"], specs["Worker"]["replicas"]) == (1, 3)
    pod = specs["Worker"]["template"]["spec"]
    assert (pod["hostNetwork"], pod["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": 8, "rdma/hca_shared_devices_a": 1}
    assert pod["containers"][0]["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    kube_validate(manifest)


def test_mpijob_runs_nccl_tests_one_rank_per_gpu(kube_validate):
    manifest = k8s.mpijob("nccl-allreduce", "nccl-tests:2.19", NCCL_TYPE1, workers=2, gpus_per_worker=8,
                          rdma_resource="aliyun/erdma", args="-b 1 -e 512M -f 2 -n 1000 -w 1000 -c 0 -z 0 -o sum")
    spec = manifest["spec"]
    assert manifest["apiVersion"] == "kubeflow.org/v2beta1" and spec["slotsPerWorker"] == 8
    command = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert command[:4] == ["mpirun", "--allow-run-as-root", "-np", "16"]
    assert ["-x", "NCCL_IB_HCA"] == command[command.index("NCCL_IB_HCA") - 1:command.index("NCCL_IB_HCA") + 1]
    assert command[-3:] == ["sum", "-g", "1"]
    worker = spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8, "aliyun/erdma": 1}
    assert "hostNetwork" not in spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    kube_validate(manifest)


def test_a_dcgm_diagnostic_job_on_a_cordoned_node(kube_validate):
    manifest = k8s.workload_manifest("dcgm_diag_job", {"name": "dcgm-diag-gpu7", "level": 2, "gpus": 8, "node_name": "gpu7"})
    spec = manifest["spec"]
    assert (manifest["kind"], spec["backoffLimit"], spec["activeDeadlineSeconds"]) == ("Job", 0, 1200)
    pod = spec["template"]["spec"]
    assert (pod["nodeName"], pod["restartPolicy"]) == ("gpu7", "Never")
    assert pod["containers"][0]["command"] == ["/bin/sh", "-c", "nv-hostengine && exec dcgmi diag -r 2"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}
    kube_validate(manifest)
    for options, message in (({"level": "2; rm -rf /"}, "level must be 1, 2, 3 or 4"),
                             ({"node_name": "gpu7\nx"}, "node_name must be a Kubernetes node name")):
        with pytest.raises(k8s.ManifestError, match=message):
            k8s.workload_manifest("dcgm_diag_job", dict({"name": "d"}, **options))


def test_tfjob_is_arena_rdma_hostnetwork(kube_validate):
    command = ["python", "benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py", "--server_protocol=grpc+verbs",
               "--model=resnet50", "--batch_size=16", "--data_format=NHWC"]
    manifest = k8s.tfjob("tf-ps-benchmark", "registry.cn-beijing.aliyuncs.com/acs/tf-benchmark:1.0", command, {},
                         workers=1, ps=1, gpus_per_worker=8)
    specs = manifest["spec"]["tfReplicaSpecs"]
    assert set(specs) == {"PS", "Worker"}
    assert specs["PS"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"rdma/hca": 1}
    assert specs["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8, "rdma/hca": 1}
    assert all(s["template"]["spec"]["hostNetwork"] for s in specs.values())
    kube_validate(manifest)


def test_validation_catches_a_broken_manifest(kube_validate):
    import kubernetes_validate.utils

    manifest = k8s.acs_deployment("demo", "img", "GU8TF", NCCL_TYPE1)
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = ["128"]
    with pytest.raises(kubernetes_validate.utils.ValidationError):
        kube_validate(manifest)
    job = k8s.pytorchjob("ddp", "img", ["torchrun"], {})
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["ports"] = "29500"
    with pytest.raises(kubernetes_validate.utils.ValidationError):
        kube_validate(job)


@pytest.mark.parametrize("kind, options, message", [
    ("deployment", {}, "workload kind must be one of"),
    ("mpijob", {"name": "x", "image": "i", "env": {}, "gpus": 8}, "does not take gpus"),
    ("pytorchjob", {"name": "ddp", "image": "i", "command": ["t"], "env": {}, "rdma_resource": "hca"},
     "rdma_resource must be an extended resource"),
    ("tfjob", {"name": "TF", "image": "i", "command": [], "env": {}}, "name must be a DNS label"),
    ("mpijob", {"name": "x", "image": "i", "env": {}, "workers": "two"}, "workers must be a whole number"),
])
def test_workload_refuses_bad_input(kind, options, message):
    with pytest.raises(k8s.ManifestError, match=message):
        k8s.workload_manifest(kind, options)


def test_node_labels_from_an_erdma_node(read_fixture):
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import rdma
    devices = rdma.parse_ibv_devinfo(read_fixture("ibv_devinfo", "erdma_seed002.txt"))
    labels = k8s.node_labels({"rdma_devices": devices, "gpu": {"count": 8}})
    assert labels["aliyun.accelerator/erdma"] == "true"
    # Seed 002's node: rocep156s0 PORT_DOWN, rocep26s0 PORT_ACTIVE.
    assert (labels["gpufabric.io/rdma"], labels["gpufabric.io/rdma-devices"], labels["gpufabric.io/rdma-active-devices"]) == (
        "true", "2", "1")
    assert labels["gpufabric.io/rdma-link-layer"] == "ethernet"
    assert labels["gpufabric.io/gpu-count"] == "8"


def test_node_labels_without_rdma():
    labels = k8s.node_labels({"rdma_devices": [], "gpu": {"count": 0}})
    assert labels == {"gpufabric.io/rdma": "false", "gpufabric.io/rdma-devices": "0",
                      "gpufabric.io/rdma-active-devices": "0"}


@pytest.mark.parametrize("kind, options, claiming", [
    ("pytorchjob", {"name": "ddp", "image": "pytorch:24.10", "command": ["torchrun", "--nproc_per_node=8", "/opt/b.py"],
                    "env": NCCL_TYPE1, "workers": 2},
     ["spec.pytorchReplicaSpecs.Master.template", "spec.pytorchReplicaSpecs.Worker.template"]),
    ("mpijob", {"name": "nccl", "image": "nccl-tests:2.19", "env": NCCL_TYPE1, "workers": 2},
     ["spec.mpiReplicaSpecs.Worker.template"]),
    ("acs_deployment", {"name": "dep", "image": "img", "gpu_model_series": "GU8TF"}, ["spec.template"]),
])
def test_workloads_take_their_gpus_and_nics_from_a_dra_claim(kube_validate, kind, options, claiming):
    """With claim_template the pods claim the ResourceClaimTemplate's GPUs and NICs (resource.k8s.io) in place of the
    extended resources nvidia.com/gpu and rdma/hca, which cannot say which NIC goes with which GPU."""
    manifest = k8s.workload_manifest(kind, dict(options, claim_template="gb200-4gpu-8nic"))
    kube_validate(manifest)     # against 1.34 and 1.37, the versions that serve DRA
    templates = dict(k8s.pod_templates(manifest))
    for path, template in sorted(templates.items()):
        pod = template["spec"]
        (container,) = pod["containers"]
        if path not in claiming:    # MPI's launcher claims nothing
            assert "resourceClaims" not in pod and "claims" not in container["resources"]
            continue
        assert pod["resourceClaims"] == [{"name": "gpus-nics", "resourceClaimTemplateName": "gb200-4gpu-8nic"}]
        assert container["resources"]["claims"] == [{"name": "gpus-nics"}]
        limits = container["resources"].get("limits", {})
        assert "nvidia.com/gpu" not in limits and "rdma/hca" not in limits
        assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
        # dranet gives no NIC to a pod on the host network (pkg/driver/nri_hooks.go): the pods keep their own
        assert "hostNetwork" not in pod
    assert set(claiming) <= set(templates)
    if kind == "mpijob":   # one rank per GPU of the claim, as before
        assert manifest["spec"]["slotsPerWorker"] == 8
    with pytest.raises(k8s.ManifestError, match="claim_template must be a DNS label"):
        k8s.workload_manifest(kind, dict(options, claim_template="GB200 claim"))
    if kind != "acs_deployment":
        with pytest.raises(k8s.ManifestError, match="host_network true with claim_template: dranet refuses"):
            k8s.workload_manifest(kind, dict(options, claim_template="x", host_network=True))


def test_a_tfjob_keeps_extended_resources():
    with pytest.raises(k8s.ManifestError, match="workload tfjob does not take claim_template"):
        k8s.workload_manifest("tfjob", {"name": "tf", "image": "i", "command": [], "env": {}, "claim_template": "x"})
