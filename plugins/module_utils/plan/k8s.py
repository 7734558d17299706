# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Kubernetes manifests for RDMA device plugins and RDMA workloads, as plain dicts.

Pure functions, standard library only: the device_plugin and k8s_workloads roles render these,
and the unit tests validate every one against the Kubernetes schemas.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import inspect
import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.k8s_names import ManifestError, count, dns_label
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import dcgm_diag
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nccl

# Seed 002: the eRDMA device plugin on ACK, exactly as Alibaba Cloud publishes it.
ERDMA_PLUGIN_IMAGE = "registry-cn-beijing.ack.aliyuncs.com/acs/k8s-rdma-sriov-dev-plugin:v1.0.0-b3dcbc5-aliyun"
SHARED_PLUGIN_IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:latest"
PLUGIN_RESOURCES = {"limits": {"memory": "300Mi", "cpu": "300m"}, "requests": {"memory": "300Mi", "cpu": "300m"}}
ERDMA_NODE_LABEL = "aliyun.accelerator/erdma"
SELECTOR_KEYS = ("vendors", "deviceIDs", "drivers", "ifNames", "linkTypes")
# Seed 000: pods opt into the RDMA network with this label; the GPU model with the next one.
ACS_HPN_LABEL = "alibabacloud.com/hpn-type"
ACS_GPU_MODEL_LABEL = "alibabacloud.com/gpu-model-series"
ACS_COMPUTE_CLASS_LABEL = "alibabacloud.com/compute-class"
# Seed 000: which RDMA NIC type (and so which NCCL profile) each ACS GPU model series has.
ACS_NCCL_PROFILES = {"GU8TF": "acs_rdma_type1", "GU8TEF": "acs_rdma_type1", "GX8SF": "acs_rdma_type1",
                     "P16EN": "acs_rdma_type2"}
# The pod's claim (resource.k8s.io) on the ResourceClaimTemplate of its GPUs and RDMA NICs.
POD_CLAIM = "gpus-nics"
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_.]*(/[A-Za-z0-9][-A-Za-z0-9_.]*)?$")


def _env(env):
    """{'NCCL_IB_HCA': ''} -> [{'name': 'NCCL_IB_HCA', 'value': ''}], sorted; None becomes ''."""
    if not isinstance(env, dict):
        raise ManifestError("env must be a mapping of variable to value, got %r" % (env,))
    return [{"name": name, "value": "" if env[name] is None else str(env[name])} for name in sorted(env)]


def _plugin_daemonset(name, namespace, labels, image, pull_policy, resources, node_selector, tolerations,
                      mounts, volumes, priority_class=None):
    spec = {
        "hostNetwork": True,
        "nodeSelector": dict(node_selector or {}),
        "tolerations": copy.deepcopy(tolerations or []),
        "containers": [{
            "image": image,
            "name": "k8s-" + name,
            "imagePullPolicy": pull_policy,
            "resources": copy.deepcopy(resources),
            "securityContext": {"privileged": True},
            "volumeMounts": mounts,
        }],
        "volumes": volumes,
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if not spec["nodeSelector"]:
        del spec["nodeSelector"]
    if not spec["tolerations"]:
        del spec["tolerations"]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels, name=name)}, "spec": spec},
        },
    }


def _config_volume(name):
    return {"name": "config", "configMap": {"name": name, "items": [{"key": "config.json", "path": "config.json"}]}}


def erdma_device_plugin(namespace="kube-system", image=ERDMA_PLUGIN_IMAGE, pull_policy="Always",
                        resources=None, node_selector=None, tolerations=None, mode="hca", device_type="eRDMA"):
    """Seed 002's ConfigMap ``rdma-devices`` and DaemonSet ``rdma-sriov-dp-ds``; defaults are the seed's."""
    dns_label(namespace, "namespace")
    config = {"mode": mode, "deviceType": device_type}
    configmap = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "rdma-devices", "namespace": namespace},
        "data": {"config.json": json.dumps(config, indent=4) + "\n"},
    }
    daemonset = _plugin_daemonset(
        "rdma-sriov-dp-ds", namespace, {"app": "rdma-device-plugin"}, image, pull_policy,
        PLUGIN_RESOURCES if resources is None else resources,
        {ERDMA_NODE_LABEL: "true"} if node_selector is None else node_selector,
        [{"key": "CriticalAddonsOnly", "operator": "Exists"}] if tolerations is None else tolerations,
        [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
         {"name": "config", "mountPath": "/k8s-rdma-sriov-dev-plugin"}],
        [{"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
         _config_volume("rdma-devices")])
    return [configmap, daemonset]


def shared_device_plugin(namespace="kube-system", image=SHARED_PLUGIN_IMAGE, pull_policy="IfNotPresent",
                         resources=None, node_selector=None, tolerations=None, resource_prefix="rdma",
                         resource_name="hca_shared_devices_a", hca_max=1000, selectors=None,
                         update_interval=300):
    """Mellanox k8s-rdma-shared-dev-plugin for mlx5: one shared resource of the selected HCAs."""
    dns_label(namespace, "namespace")
    if not _RESOURCE_NAME.match("%s/%s" % (resource_prefix, resource_name)):
        raise ManifestError("resource %s/%s is not a valid extended resource name" % (resource_prefix, resource_name))
    selectors = {"vendors": ["15b3"], "drivers": ["mlx5_core"]} if selectors is None else selectors
    unknown = sorted(set(selectors) - set(SELECTOR_KEYS))
    if unknown:
        raise ManifestError("unknown device selector %s; known: %s" % (", ".join(unknown), ", ".join(SELECTOR_KEYS)))
    chosen = dict((key, list(values)) for key, values in selectors.items() if values)
    if not chosen:
        raise ManifestError("the device selectors choose nothing: give vendors, deviceIDs, drivers, ifNames or linkTypes")
    config = {
        "periodicUpdateInterval": count(update_interval, "update_interval", 1),
        "resourcePrefix": resource_prefix,
        "configList": [{"resourceName": resource_name, "rdmaHcaMax": count(hca_max, "hca_max", 1),
                        "selectors": chosen}],
    }
    configmap = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "rdma-devices", "namespace": namespace},
        "data": {"config.json": json.dumps(config, indent=4, sort_keys=True) + "\n"},
    }
    host_paths = [("device-plugin", "/var/lib/kubelet/device-plugins"),
                  ("plugins-registry", "/var/lib/kubelet/plugins_registry"), ("devs", "/dev/")]
    daemonset = _plugin_daemonset(
        "rdma-shared-dp-ds", namespace, {"app": "rdma-shared-device-plugin"}, image, pull_policy,
        PLUGIN_RESOURCES if resources is None else resources,
        {"gpufabric.io/rdma": "true"} if node_selector is None else node_selector,
        tolerations or [],
        [{"name": n, "mountPath": p} for n, p in host_paths[:2]] + [
            {"name": "config", "mountPath": "/k8s-rdma-shared-dev-plugin"}, {"name": "devs", "mountPath": "/dev/"}],
        [{"name": n, "hostPath": {"path": p}} for n, p in host_paths] + [_config_volume("rdma-devices")],
        priority_class="system-node-critical")
    return [configmap, daemonset]


def is_erdma(device):
    """An RDMA device (rdma_devices' entry) is Alibaba's eRDMA: driver erdma (sysfs), transport eRDMA or vendor
    0x1ded (Alibaba) in ibv_devinfo."""
    return device.get("driver") == "erdma" or device.get("transport") == "eRDMA" or device.get("vendor_id") == "0x1ded"


def node_labels(record, erdma_label=True):
    """A discovery node record -> the labels that steer device plugins and workloads to the node."""
    devices = (record or {}).get("rdma_devices") or []
    active = [d for d in devices if any((p.get("state") or "").upper() == "ACTIVE" for p in d.get("ports") or [])]
    link_layers = sorted(set(p.get("link_layer") for d in devices for p in d.get("ports") or [] if p.get("link_layer")))
    labels = {
        "gpufabric.io/rdma": "true" if active else "false",
        "gpufabric.io/rdma-devices": str(len(devices)),
        "gpufabric.io/rdma-active-devices": str(len(active)),
    }
    if link_layers:
        labels["gpufabric.io/rdma-link-layer"] = "-".join(link_layers).lower()
    gpu = (record or {}).get("gpu") or {}
    if gpu.get("count"):
        labels["gpufabric.io/gpu-count"] = str(gpu["count"])
    if erdma_label and any(is_erdma(d) for d in devices):
        labels[ERDMA_NODE_LABEL] = "true"
    return labels


def _container(name, image, command, env, gpus, rdma_resource, cpu=None, memory=None, claims=None):
    """A container with its GPUs and RDMA NIC as extended resources (a device plugin's), or, with ``claims`` (the
    pod's claims, resource.k8s.io), the devices those claims allocate."""
    limits = {}
    if cpu:
        limits["cpu"] = cpu
    if memory:
        limits["memory"] = memory
    if gpus and not claims:
        limits["nvidia.com/gpu"] = gpus
    if rdma_resource and not claims:
        if not _RESOURCE_NAME.match(rdma_resource) or "/" not in rdma_resource:
            raise ManifestError("rdma_resource must be an extended resource like rdma/hca or aliyun/erdma, got %r" % rdma_resource)
        limits[rdma_resource] = 1
    resources = {"limits": limits, "requests": dict(limits)} if limits or not claims else {}
    if claims:
        resources["claims"] = [{"name": claim} for claim in sorted(claims)]
    container = {"name": name, "image": image, "env": _env(env), "resources": resources}
    if command:
        container["command"] = list(command)
    if rdma_resource or claims:
        # RDMA pins memory: without IPC_LOCK the verbs library cannot register buffers.
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    return container


def pod_claims(claim_template):
    """The pod's claims ({claim name: ResourceClaimTemplate}) when its GPUs and NICs come from a DRA claim, else None.
    One claim today; a ComputeDomain's channel claim is one more entry."""
    if claim_template in (None, ""):
        return None
    return {POD_CLAIM: dns_label(claim_template, "claim_template")}


def _host_network(host_network, claims):
    """The pod's host networking: on by default with extended resources; off with a DRA claim, which dranet refuses
    to give a host-network pod (its NICs move into the pod's network namespace; pkg/driver/nri_hooks.go)."""
    if host_network is None:
        return not claims
    if claims and host_network:
        raise ManifestError("host_network true with claim_template: dranet refuses to give RDMA NICs to a pod on the "
                            "host network (it moves them into the pod's own namespace); leave host_network unset")
    return bool(host_network)


def _pod_spec(containers, host_network, restart_policy=None, claims=None):
    spec = {"containers": containers}
    if host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    if claims:
        spec["resourceClaims"] = [{"name": name, "resourceClaimTemplateName": claims[name]} for name in sorted(claims)]
    return spec


def acs_deployment(name, image, gpu_model_series, env=None, gpus=8, cpu=128, memory="512Gi", command=None,
                   compute_class="gpu", replicas=1, claim_template=None):
    """Seed 000: a Deployment on ACS whose pods join the RDMA network (hpn-type rdma).

    Without ``env`` the NCCL variables are those of the GPU model's RDMA NIC type (type 1 or 2). With
    ``claim_template`` the GPUs come from that ResourceClaimTemplate instead of nvidia.com/gpu.
    """
    dns_label(name, "name")
    if env is None:
        if gpu_model_series not in ACS_NCCL_PROFILES:
            raise ManifestError("no NCCL profile known for ACS GPU model %r (known: %s): give env" % (
                gpu_model_series, ", ".join(sorted(ACS_NCCL_PROFILES))))
        env = nccl.compute_env(ACS_NCCL_PROFILES[gpu_model_series])["env"]
    labels = {"app": name, ACS_COMPUTE_CLASS_LABEL: compute_class, "alibabacloud.com/compute-qos": "default",
              ACS_GPU_MODEL_LABEL: gpu_model_series, ACS_HPN_LABEL: "rdma"}
    claims = pod_claims(claim_template)
    container = _container("main", image, command or ["sleep", "1000h"], env, count(gpus, "gpus", 1), None,
                           cpu=cpu, memory=memory, claims=claims)
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": count(replicas, "replicas", 1), "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": labels}, "spec": _pod_spec([container], False, claims=claims)}},
    }


def _replica(replicas, container, host_network, restart_policy="OnFailure", claims=None):
    return {"replicas": replicas, "restartPolicy": restart_policy,
            "template": {"spec": _pod_spec([container], host_network, claims=claims)}}


def pytorchjob(name, image, command, env, workers=2, gpus_per_worker=8, rdma_resource="rdma/hca", host_network=None,
               namespace=None, claim_template=None):
    """Kubeflow PyTorchJob: one Master and workers-1 Workers, each with its GPUs and one RDMA resource on the host
    network, or with the GPUs and NICs of ``claim_template`` (a ResourceClaimTemplate) in the pod's own network."""
    dns_label(name, "name")
    nodes = count(workers, "workers", 1)
    gpus = count(gpus_per_worker, "gpus_per_worker", 0)
    claims = pod_claims(claim_template)
    host_network = _host_network(host_network, claims)
    container = _container("pytorch", image, command, env, gpus, rdma_resource, claims=claims)
    specs = {"Master": _replica(1, container, host_network, claims=claims)}
    if nodes > 1:
        specs["Worker"] = _replica(nodes - 1, copy.deepcopy(container), host_network, claims=claims)
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
                "spec": {"pytorchReplicaSpecs": specs}}
    if namespace:
        manifest["metadata"]["namespace"] = dns_label(namespace, "namespace")
    return manifest


def mpijob(name, image, env, workers=2, gpus_per_worker=8, rdma_resource="rdma/hca", host_network=None,
           binary="/opt/nccl-tests/build/all_reduce_perf", args="-b 8 -e 4G -f 2", namespace=None, claim_template=None):
    """Kubeflow MPIJob (v2beta1) running nccl-tests: one launcher, a rank per GPU on each worker (on the host network);
    the workers' GPUs and NICs from ``claim_template`` (a ResourceClaimTemplate of gpus_per_worker GPUs, the pods in
    their own network) where given."""
    dns_label(name, "name")
    nodes = count(workers, "workers", 1)
    gpus = count(gpus_per_worker, "gpus_per_worker", 1)
    exports = []
    for item in _env(env):
        exports += ["-x", item["name"]]
    command = (["mpirun", "--allow-run-as-root", "-np", str(nodes * gpus), "--bind-to", "none"] + exports
               + [binary] + args.split() + ["-g", "1"])
    launcher = _container("launcher", image, command, env, 0, None)
    claims = pod_claims(claim_template)
    host_network = _host_network(host_network, claims)
    worker = _container("worker", image, None, env, gpus, rdma_resource, claims=claims)
    manifest = {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": gpus,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": _replica(1, launcher, False),
                "Worker": _replica(nodes, worker, host_network, claims=claims),
            },
        },
    }
    if namespace:
        manifest["metadata"]["namespace"] = dns_label(namespace, "namespace")
    return manifest


def tfjob(name, image, command, env, workers=1, ps=1, gpus_per_worker=8, rdma_resource="rdma/hca", host_network=True,
          namespace=None):
    """Seed 002's ``arena submit tfjob --rdma --hostNetwork true`` as a Kubeflow TFJob: PS and Workers
    on the host network with an RDMA resource, GPUs on the workers only."""
    dns_label(name, "name")
    specs = {"Worker": _replica(count(workers, "workers", 1),
                                _container("tensorflow", image, command, env, count(gpus_per_worker, "gpus_per_worker", 0),
                                           rdma_resource), host_network, "Never")}
    if count(ps, "ps", 0):
        specs["PS"] = _replica(int(ps), _container("tensorflow", image, command, env, 0, rdma_resource), host_network,
                               "Never")
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
                "spec": {"tfReplicaSpecs": specs}}
    if namespace:
        manifest["metadata"]["namespace"] = dns_label(namespace, "namespace")
    return manifest


# NVIDIA's DCGM container (NGC, nvcr.io/nvidia/cloud-native/dcgm): nv-hostengine and dcgmi.
DCGM_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04"


def dcgm_diag_job(name, image=DCGM_IMAGE, level=2, gpus=8, node_name=None, namespace=None, timeout=None):
    """A Job that runs DCGM's diagnostic level on one node: its own host engine, then ``dcgmi diag -r <level>``,
    killed after the level's time limit (activeDeadlineSeconds), never retried. ``node_name`` pins it to a node,
    bypassing the scheduler, so it runs on a cordoned node - where level 2 and up belong."""
    dns_label(name, "name")
    try:
        level = dcgm_diag.check_level(level)
    except ValueError as exc:
        raise ManifestError(str(exc))
    limit = dcgm_diag.TIMEOUTS[level] if timeout is None else count(timeout, "timeout", 1)
    container = _container("dcgm-diag", image, ["/bin/sh", "-c", "nv-hostengine && exec dcgmi diag -r %d" % level], {},
                           count(gpus, "gpus", 1), None)
    # the diagnostics read GPU state DCGM's host engine reaches only with this capability (NVIDIA's DCGM docs)
    container["securityContext"] = {"capabilities": {"add": ["SYS_ADMIN"]}}
    spec = _pod_spec([container], False, "Never")
    if node_name:
        if not isinstance(node_name, str) or not re.match(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", node_name):
            raise ManifestError("node_name must be a Kubernetes node name, got %r" % (node_name,))
        spec["nodeName"] = node_name
    manifest = {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "dcgm-diag",
                                                      "gpufabric.rdma/dcgm-level": str(level)}},
                "spec": {"backoffLimit": 0, "activeDeadlineSeconds": limit, "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": "dcgm-diag"}}, "spec": spec}}}
    if namespace:
        manifest["metadata"]["namespace"] = dns_label(namespace, "namespace")
    return manifest


def pod_templates(manifest):
    """Every pod template inside a manifest (Deployment, DaemonSet or a Kubeflow job), by path."""
    spec = manifest.get("spec") or {}
    found = []
    if "template" in spec:
        found.append(("spec.template", spec["template"]))
    for key, replicas in spec.items():
        if key.endswith("ReplicaSpecs") and isinstance(replicas, dict):
            for role in sorted(replicas):
                found.append(("spec.%s.%s.template" % (key, role), replicas[role].get("template") or {}))
    return found


_PLUGINS = {"erdma": erdma_device_plugin, "shared": shared_device_plugin}
_WORKLOADS = {"acs_deployment": acs_deployment, "pytorchjob": pytorchjob, "mpijob": mpijob, "tfjob": tfjob,
              "dcgm_diag_job": dcgm_diag_job}


def _call(function, options, what):
    accepted = inspect.signature(function).parameters
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ManifestError("%s does not take %s; it takes %s" % (what, ", ".join(unknown), ", ".join(accepted)))
    try:
        return function(**options)
    except TypeError as exc:
        raise ManifestError("%s: %s" % (what, exc))


def device_plugin_manifests(plugin, options=None):
    """'erdma' or 'shared' plus keyword options -> [ConfigMap, DaemonSet]."""
    if plugin not in _PLUGINS:
        raise ManifestError("device plugin must be one of %s, got %r" % (", ".join(sorted(_PLUGINS)), plugin))
    given = dict((k, v) for k, v in (options or {}).items() if v is not None)
    return _call(_PLUGINS[plugin], given, "the %s device plugin" % plugin)


def workload_manifest(kind, options):
    """'acs_deployment', 'pytorchjob', 'mpijob', 'tfjob' or 'dcgm_diag_job' plus keyword options -> one manifest.
    ``inspector`` ({plugin, dump_dir, prom, interval}, plan/nccl.py) switches NCCL's Inspector on in every pod
    (with_inspector)."""
    if kind not in _WORKLOADS:
        raise ManifestError("workload kind must be one of %s, got %r" % (", ".join(sorted(_WORKLOADS)), kind))
    given = dict((k, v) for k, v in (options or {}).items() if v is not None)
    inspector = given.pop("inspector", None)
    if inspector and kind == "dcgm_diag_job":
        raise ManifestError("dcgm_diag_job runs no NCCL: the Inspector is for training and nccl-tests workloads")
    if inspector and kind == "mpijob":   # mpirun passes the launcher's variables to the ranks (-x)
        given["env"] = dict(given.get("env") or {}, **_inspector_env(inspector, given.get("name")))
    manifest = _call(_WORKLOADS[kind], given, "workload %s" % kind)
    return with_inspector(manifest, inspector) if inspector else manifest


def _inspector_env(inspector, name):
    try:
        checked = nccl.check_inspector(inspector)
    except ValueError as exc:
        raise ManifestError(str(exc))
    return nccl.inspector_job_env(checked, "%s/%s" % (checked["dump_dir"], dns_label(name, "name")))


def with_inspector(manifest, inspector):
    """The workload with NCCL's Inspector on in every container of every pod: its variables, the dump folder the
    workload's own (``<dump_dir>/<name>`` on the node, where the playbook gpufabric.rdma.slow reads it; with ``prom``
    node_exporter's textfile directory itself), both through hostPath volumes - the plugin's folder read-only, at the
    same path as on the node (its link to the build of the node's NCCL version resolves inside the pod)."""
    env = _inspector_env(inspector, manifest["metadata"]["name"])
    plugin_dir = env["NCCL_PROFILER_PLUGIN"].rpartition("/")[0] or "/"
    dumps = env["NCCL_INSPECTOR_DUMP_DIR"]
    mounts = [{"name": "nccl-inspector-plugin", "mountPath": plugin_dir, "readOnly": True},
              {"name": "nccl-inspector-dumps", "mountPath": dumps}]
    volumes = [{"name": "nccl-inspector-plugin", "hostPath": {"path": plugin_dir, "type": "Directory"}},
               {"name": "nccl-inspector-dumps", "hostPath": {"path": dumps, "type": "DirectoryOrCreate"}}]
    for ignored, template in pod_templates(manifest):
        spec = template.setdefault("spec", {})
        for container in spec.get("containers") or []:
            kept = [item for item in container.get("env") or [] if item.get("name") not in env]
            container["env"] = sorted(kept + _env(env), key=lambda item: item["name"])
            container["volumeMounts"] = [m for m in container.get("volumeMounts") or []
                                         if m.get("name") not in ("nccl-inspector-plugin", "nccl-inspector-dumps")] + mounts
        spec["volumes"] = [v for v in spec.get("volumes") or []
                           if v.get("name") not in ("nccl-inspector-plugin", "nccl-inspector-dumps")] + volumes
    return manifest
