"""Health as device taints: the decider's per-device verdicts (an RDMA port down or below its rate, a GPU with an Xid or
a degraded fabric) as DeviceTaintRules naming the device as its driver publishes it - the ResourceSlices of a real AKS
ND GB300 v6 node (NVIDIA's GPU DRA driver: gpu-N by pciBusID; dranet: pci-0101-00-00-0 ... by rdmaDevice mlx5_N;
tests/unit/fixtures/dra/, README) - valid against the Kubernetes schemas of each version that serves them, and the
whole path run by the decider through kubectl against the stand-in API server (tests/lab/kube-api-standin): the
taint added on a port finding and removed after the certificate, in shadow and enforce mode, with today's cordon
where the API does not serve DeviceTaintRule or the finding names no device."""

import json
import time

import kubernetes_validate
import pytest
import yaml

import kube_standin
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import (
    certificate, decider, decider_settings, k8s_device_taints, policy, protocol, remediation)

NODE = "aks-gpu-45139532-vmss000081"
PORT_DOWN = {"check": "rdma_port_state", "severity": "critical", "target": NODE + "/mlx5_1/1",
             "detail": "port is DOWN (physical state Disabled)", "fix_hint": "check the cable"}
XID = {"check": "gpu_xid", "severity": "critical", "target": NODE + "/GPU 0009:06:00", "detail": "Xid 79", "fix_hint": "-"}


@pytest.fixture(scope="module")
def slices():
    """The node's real ResourceSlices: the GPU driver's (a List) and dranet's."""
    from conftest import fixture_path
    with open(fixture_path("dra", "gpu_slices_azure_gb300_dranet.txt")) as handle:
        gpus = yaml.safe_load(handle)["items"]
    with open(fixture_path("dra", "dranet_slice_azure_gb300.txt")) as handle:
        nics = [yaml.safe_load(handle)]
    return gpus + nics


def _devices(slices):
    return k8s_device_taints.slice_devices({"items": slices})


def test_the_devices_are_named_as_the_drivers_publish_them(slices):
    devices = _devices(slices)[NODE]
    assert devices["nic"]["mlx5_1"] == {"driver": "dra.net", "pool": NODE, "device": "pci-0102-00-00-0"}
    gpu = k8s_device_taints.finding_device("gpu_xid|%s/GPU 0009:06:00" % NODE, devices)[0]
    assert gpu["driver"] == "gpu.nvidia.com" and gpu["pool"] == NODE and gpu["device"].startswith("gpu-")
    published = [d for s in slices if s["spec"]["driver"] == "gpu.nvidia.com" for d in s["spec"]["devices"]
                 if d["attributes"]["resource.kubernetes.io/pciBusID"]["string"] == "0009:06:00.0"]
    assert [d["name"] for d in published] == [gpu["device"]]
    # nvidia-smi's 8-digit domain and a function are the same GPU.
    assert k8s_device_taints.finding_device("nvlink_fabric_health|%s/GPU 00000009:06:00.0" % NODE, devices)[0] == gpu


@pytest.mark.parametrize("api, versions", [("resource.k8s.io/v1alpha3", ("1.33.0", "1.34.0", "1.35.0", "1.37.0")),
                                           ("resource.k8s.io/v1beta2", ("1.36.0", "1.37.0")),
                                           ("resource.k8s.io/v1", ("1.37.0",))])
def test_the_rules_validate_where_their_api_is_served(slices, api, versions):
    findings = ["rdma_port_state|%s/mlx5_1/1" % NODE, "rdma_port_rate|%s/mlx5_1/1" % NODE, "gpu_xid|%s/GPU 0009:06:00" % NODE]
    rules, why = k8s_device_taints.taint_rules(NODE, findings, _devices(slices)[NODE], api)
    assert why is None and len(rules) == 2         # one rule per device: the port's two findings taint one NIC
    nic = rules[0]
    assert nic["spec"] == {"deviceSelector": {"driver": "dra.net", "pool": NODE, "device": "pci-0102-00-00-0"},
                           "taint": {"key": "gpufabric.io/unhealthy", "value": "rdma_port_state", "effect": "NoSchedule"}}
    assert nic["metadata"]["name"] == "gpufabric-%s-dra-pci-0102-00-00-0" % NODE
    assert nic["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpufabric", "gpufabric.io/node": NODE}
    for version in versions:
        for rule in rules:
            kubernetes_validate.validate(rule, version, strict=True)
    # A field the API does not know (a node selector on the device) is refused: the check can fail.
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dict(nic, spec=dict(nic["spec"], deviceSelector=dict(
            nic["spec"]["deviceSelector"], nodeName=NODE))), versions[0], strict=True)


def test_names_and_labels_are_valid_for_any_node_name():
    long_node = "ip-192-168-153-160.ec2.internal" + ".x" * 120
    name = k8s_device_taints.rule_name(long_node, "gpu-gpu-0")
    assert name.startswith("gpufabric-") and len(name) <= 253
    assert k8s_device_taints.rule_name("Node_A", "dra-pci-0101-00-00-0") == "gpufabric-node-a-dra-pci-0101-00-00-0"
    label = k8s_device_taints.node_label(long_node)
    assert len(label) <= 63 and label.isalnum()
    assert k8s_device_taints.node_label("ip-192-168-153-160.ec2.internal") == "ip-192-168-153-160.ec2.internal"


@pytest.mark.parametrize("finding, why", [
    ("rdma_device_count|%s" % NODE, "rdma_device_count names no one device"),
    ("rdma_port_state|%s/mlx5_7/1" % NODE, "no ResourceSlice of dra.net lists %s/mlx5_7/1" % NODE),
    ("gpu_xid|%s/GPU 0042:01:00" % NODE, "no ResourceSlice of gpu.nvidia.com lists"),
    ("gpu_xid|%s" % NODE, "names no GPU bus ID"),
])
def test_a_finding_without_its_device_keeps_the_cordon_saying_why(slices, finding, why):
    rules, said = k8s_device_taints.taint_rules(NODE, ["gpu_xid|%s/GPU 0009:06:00" % NODE, finding],
                                                _devices(slices)[NODE], "resource.k8s.io/v1alpha3")
    assert rules is None and why in said


def test_the_oci_nics_publish_no_rdma_device_so_a_port_there_is_cordoned(read_fixture):
    oci = yaml.safe_load(read_fixture("dra", "dranet_slice_oci_gb200.txt"))
    devices = k8s_device_taints.slice_devices({"items": [oci]})
    assert devices["10.140.65.248"]["nic"] == {}
    assert k8s_device_taints.taint_rules("10.140.65.248", ["rdma_port_state|10.140.65.248/mlx5_0/1"],
                                         devices["10.140.65.248"], "resource.k8s.io/v1")[0] is None


@pytest.mark.parametrize("value", ["v1alpha3", "resource.k8s.io/v1alpha2", "yes"])
def test_a_bad_device_taints_setting_is_refused_naming_it(value):
    with pytest.raises(policy.PolicyError, match=r"device_taints must be auto .* got %r" % value):
        policy.check_config({"kubernetes": {"enabled": True, "device_taints": value}})
    assert policy.check_config({"kubernetes": {"enabled": True}})["kubernetes"]["device_taints"] is None


# --- the decider against the stand-in API server -----------------------------------------------------------------

@pytest.fixture
def cluster(tmp_path, slices):
    """The stand-in over the node (and n2, another one), DeviceTaintRule served in v1alpha3, the node's real slices."""
    # As Kubernetes 1.34 serves them: ResourceSlices in v1, DeviceTaintRules in v1alpha3 (feature gate DRADeviceTaints).
    (tmp_path / "resource-apis.json").write_text(json.dumps({"v1": ["resourceslices"], "v1alpha3": ["devicetaintrules"]}))
    (tmp_path / "resourceslices.json").write_text(json.dumps(slices))
    server = kube_standin.start(tmp_path, [{"apiVersion": "v1", "kind": "Node", "spec": {}, "metadata": {
        "name": name, "resourceVersion": "3", "annotations": {}}} for name in (NODE, "n2")])
    yield tmp_path
    server.terminate()
    server.wait()


def _config(path, mode, device_taints="auto"):
    (path / ("decider-" + mode)).mkdir(exist_ok=True)
    return decider_settings.check_config({
        "cluster": "lab", "name": "decider@k8s", "state_dir": str(path / ("decider-" + mode)), "remediation": {
            "mode": mode, "policy": [{"severity": "critical", "action": "drain"}],
            "rate_limit": {"max_nodes": 1, "max_percent": 100}, "circuit_breaker": {"max_percent": 100},
            "certification": {"checks": ["dcgm"]},
            "kubernetes": dict(kube_standin.kubernetes_settings(path), device_taints=device_taints)}})


def _report(findings):
    return {NODE: protocol.check_report({"node": NODE, "findings": findings, "complete": True, "unreadable": [],
                                         "source": "awx"})}


def _certified():
    """remediate.yml's certificate of the node: DCGM level 2 passed, measured now (after the drain)."""
    return {NODE: certificate.check_certificate({"checks": [{"name": "dcgm", "status": "pass", "level": 2}],
                                                 "measured_at": time.time()}, NODE)}


def _requests(path, method):
    lines = (path / "requests.jsonl").read_text().splitlines() if (path / "requests.jsonl").exists() else []
    return [e for e in map(json.loads, lines) if e["method"] == method]


def _rules(path):
    return json.loads((path / "devicetaintrules.json").read_text()) if (path / "devicetaintrules.json").exists() else []


def _node(path):
    return json.loads((path / "nodes.json").read_text())[0]


def test_enforce_taints_the_port_and_the_certificate_removes_it(cluster):
    config, lines = _config(cluster, "enforce"), []
    result = decider.decide(_report([PORT_DOWN]), config, time.time, lines.append)
    (decision,) = result["decisions"]
    assert decision["action"] == "drain" and decision["done"], lines
    (post,) = _requests(cluster, "POST")
    assert post["path"] == "/apis/resource.k8s.io/v1alpha3/devicetaintrules"
    assert post["body"]["spec"]["deviceSelector"] == {"driver": "dra.net", "pool": NODE, "device": "pci-0102-00-00-0"}
    assert [r["metadata"]["name"] for r in _rules(cluster)] == ["gpufabric-%s-dra-pci-0102-00-00-0" % NODE]
    # The node stays schedulable (no cordon, no node taint): only its ledger record is patched.
    node = _node(cluster)
    assert "unschedulable" not in node["spec"] and "taints" not in node["spec"]
    (drain,) = json.loads(node["metadata"]["annotations"]["gpufabric.io/remediation"])["drains"]
    assert drain["findings"] == ["rdma_port_state|%s/mlx5_1/1" % NODE]
    assert remediation.decision_text("kubernetes", decision).startswith(
        "Kubernetes: tainted pci-0102-00-00-0 (DeviceTaintRule, NoSchedule) on %s (gpufabric: rdma_port_state" % NODE)
    assert any("ran create devicetaintrule gpufabric-%s-dra-pci-0102-00-00-0" % NODE in line for line in lines), lines

    # Still faulty: the rule is there, counted as one drain of gpufabric; nothing more is sent.
    decider.decide(_report([PORT_DOWN]), config, time.time, lines.append)
    assert len(_requests(cluster, "POST")) == 1 and len(_requests(cluster, "PATCH")) == 1
    # n2 reports a fault: the rate limit (one node) counts the tainted node and holds n2 back.
    n2 = {"n2": protocol.check_report({"node": "n2", "findings": [dict(XID, target="n2/GPU 0008:06:00")], "complete": True,
                                       "unreadable": [], "source": "awx"})}
    held = decider.decide(n2, config, time.time, lines.append)["decisions"][0]
    assert held["held"] and "rate limit" in held["why"] and not _node(cluster).get("spec")

    # Cleared but not certified: the rule stays. Certified: it is deleted and the resume recorded on the Node.
    cleared = decider.decide(_report([]), config, time.time, lines.append)["decisions"][0]
    assert cleared["action"] == "none" and cleared["certify"] and len(_rules(cluster)) == 1
    resumed = decider.decide(_report([]), config, time.time, lines.append, certificates=_certified())["decisions"][0]
    assert resumed["action"] == "resume" and resumed["done"], lines
    (delete,) = _requests(cluster, "DELETE")
    assert delete["path"] == "/apis/resource.k8s.io/v1alpha3/devicetaintrules/gpufabric-%s-dra-pci-0102-00-00-0" % NODE
    assert _rules(cluster) == []
    assert len(json.loads(_node(cluster)["metadata"]["annotations"]["gpufabric.io/remediation"])["resumes"]) == 1


def test_shadow_renders_and_reports_the_taint_and_changes_nothing(cluster):
    config, lines = _config(cluster, "shadow"), []
    before = (cluster / "nodes.json").read_text()
    result = decider.decide(_report([PORT_DOWN]), config, time.time, lines.append)
    (decision,) = result["decisions"]
    assert decision["action"] == "drain" and decision["shadow"]
    (rule,) = decision["device_taints"]
    assert rule["spec"]["deviceSelector"]["device"] == "pci-0102-00-00-0"
    kubernetes_validate.validate(rule, "1.33.0", strict=True)
    assert remediation.decision_text("kubernetes", decision).startswith(
        "Kubernetes: shadow mode, would have tainted pci-0102-00-00-0 (DeviceTaintRule, NoSchedule) on %s" % NODE)
    assert _requests(cluster, "POST") == [] and _requests(cluster, "PATCH") == [] and _rules(cluster) == []
    assert (cluster / "nodes.json").read_text() == before
    # The shadow drain is in the decider's ledger, so the limits behave as they would for real; the certificate path
    # in shadow mode resumes in shadow too and deletes nothing.
    state = json.loads((cluster / "decider-shadow" / "decider.json").read_text())
    assert state["ledger"]["nodes"][NODE]["drains"][-1]["shadow"] is True
    again = decider.decide(_report([]), config, time.time, lines.append)["decisions"][0]
    assert again["shadow"] and again["certify"] and again["why"].startswith("would stay drained: no return-to-service")
    resumed = decider.decide(_report([]), config, time.time, lines.append, certificates=_certified())["decisions"][0]
    assert (resumed["action"], resumed["shadow"]) == ("resume", True), resumed
    assert _requests(cluster, "DELETE") == [] and _requests(cluster, "PATCH") == []


def test_a_node_level_finding_or_no_api_keeps_todays_cordon(cluster):
    count = dict(PORT_DOWN, check="rdma_device_count", target=NODE, detail="3 of 4 expected RDMA devices found")
    config, lines = _config(cluster, "enforce"), []
    decision = decider.decide(_report([count]), config, time.time, lines.append)["decisions"][0]
    assert decision["done"] and decision["device_taints"] is None
    assert decision["device_taints_why"] == "cordoned, not tainted by device: rdma_device_count names no one device"
    assert _node(cluster)["spec"]["unschedulable"] is True and _requests(cluster, "POST") == []


def test_auto_without_the_api_served_cordons_as_today(cluster):
    (cluster / "resource-apis.json").write_text(json.dumps({"v1": ["resourceslices"]}))
    config, lines = _config(cluster, "enforce"), []
    decision = decider.decide(_report([PORT_DOWN]), config, time.time, lines.append)["decisions"][0]
    assert decision["done"] and "device_taints" not in decision
    assert _node(cluster)["spec"]["taints"] == [{"key": "gpufabric.io/unhealthy", "value": "rdma_port_state",
                                                 "effect": "NoSchedule"}]
    assert _requests(cluster, "POST") == []
