"""Multi-node NVLink on Kubernetes: the ComputeDomain (resource.nvidia.com/v1beta1) of a job across the trays of one
NVLink domain, taken from discovery's fabric facts of real nvidia-smi captures (GB200 and GB300 trays of
NVIDIA/k8s-test-infra, an 8x H100 HGX board with no multi-node domain), validated against the CRD NVIDIA's GPU DRA
driver publishes (tests/unit/fixtures/k8s_crds/, README), and the workloads that claim its channel against the
Kubernetes schemas."""

import copy

import jsonschema
import pytest
import yaml

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import k8s, k8s_compute_domain, nccl
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink

GB200_DOMAIN = "00000001-0000-0000-0000-000000000001/2"


def _record(read_fixture, name):
    return {"gpu": {"fabric": nvlink.fabric_fact(read_fixture("nvidia_smi_fabric", name))}}


@pytest.fixture
def records(read_fixture):
    gb200 = _record(read_fixture, "qx_gb200x4_k8stestinfra.xml")
    return {"tray1": gb200, "tray2": copy.deepcopy(gb200), "tray10": copy.deepcopy(gb200),
            "gb300": _record(read_fixture, "qx_gb300x4_k8stestinfra.xml"),
            "hgx": _record(read_fixture, "qx_h100x8_k8stestinfra.xml")}


def _strict(schema):
    """The CRD's structural schema with unknown fields refused: the API server prunes them silently, which would hide a
    misspelt field of ours."""
    if isinstance(schema, dict):
        out = dict((k, _strict(v)) for k, v in schema.items())
        if schema.get("type") == "object" and "properties" in schema:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@pytest.fixture(scope="module")
def crd_schema():
    from conftest import fixture_path
    with open(fixture_path("k8s_crds", "computedomain_crd_nvidia_dra_driver.txt")) as handle:
        crd = yaml.safe_load(handle)
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"]) == ("resource.nvidia.com", "ComputeDomain")
    (version,) = [v for v in crd["spec"]["versions"] if v["served"] and v["storage"]]
    assert "resource.nvidia.com/" + version["name"] == k8s_compute_domain.COMPUTE_DOMAIN_API
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"]["metadata"] = {"type": "object"}
    return _strict(schema)


def test_a_job_on_three_trays_of_one_domain_gets_its_compute_domain_and_the_mnnvl_env(records, crd_schema):
    result = k8s_compute_domain.compute_domain(records, {"name": "train", "nodes": ["tray10", "tray1", "tray2"],
                                                         "namespace": "ml"})
    domain = result["compute_domain"]
    assert domain == {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                      "metadata": {"name": "train", "namespace": "ml", "labels": {"app.kubernetes.io/managed-by": "gpufabric"}},
                      "spec": {"numNodes": 3, "channel": {"resourceClaimTemplate": {"name": "train-channel"}}}}
    jsonschema.validate(domain, crd_schema)
    assert result["domain"] == GB200_DOMAIN and result["nodes"] == ["tray1", "tray2", "tray10"]
    assert result["claims"] == {"imex-channel": "train-channel"}
    # The NCCL variables are the nccl_env planner's, one owner: the same names, values and reasons.
    owner = nccl.nvlink_entries(records["tray1"]["gpu"], None)
    assert result["env"] == {"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1"} == dict((e[0], e[1]) for e in owner)
    assert result["reasons"]["NCCL_MNNVL_ENABLE"].startswith("the GPUs are in NVLink domain %s" % GB200_DOMAIN)
    assert "numNodes 3" in result["markdown"] and "NCCL_CUMEM_ENABLE=1: MNNVL needs" in result["markdown"]


def test_the_crd_schema_refuses_what_the_driver_would_not_take(crd_schema):
    good = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain", "metadata": {"name": "x"},
            "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "x-channel"}, "allocationMode": "All"}}}
    jsonschema.validate(good, crd_schema)
    for bad in ({"numNodes": -1, "channel": {"resourceClaimTemplate": {"name": "c"}}},
                {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "c"}, "allocationMode": "Many"}},
                {"numNodes": 2, "channel": {"resourceClaimTemplateName": "c"}},
                {"numNodes": 2}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(dict(good, spec=bad), crd_schema)


def test_all_channels_is_rendered_and_valid(records, crd_schema):
    result = k8s_compute_domain.compute_domain(records, {"name": "x", "nodes": ["tray1"], "allocation_mode": "All"})
    assert result["compute_domain"]["spec"] == {"numNodes": 1, "channel": {
        "resourceClaimTemplate": {"name": "x-channel"}, "allocationMode": "All"}}
    jsonschema.validate(result["compute_domain"], crd_schema)


def test_a_job_across_two_domains_is_refused_naming_both(records):
    with pytest.raises(k8s.ManifestError, match=r"span 2 NVLink domains: 00000001-0000-0000-0000-000000000001/32766 "
                                                r"\(gb300\); 00000001-0000-0000-0000-000000000001/2 \(tray1, tray2\)"):
        k8s_compute_domain.compute_domain(records, {"name": "x", "nodes": ["tray1", "gb300", "tray2"]})


def test_a_node_without_a_domain_is_refused_naming_it_and_why(records):
    with pytest.raises(k8s.ManifestError, match=r"this node has none: hgx \(.+\); leave hgx out of the job") as caught:
        k8s_compute_domain.compute_domain(records, {"name": "x", "nodes": ["tray1", "hgx"]})
    assert "tray1" not in str(caught.value).split("none:")[1]
    records["old"] = {"gpu": {}}
    with pytest.raises(k8s.ManifestError, match=r"these nodes have none: hgx \(.+\); old \(no NVLink facts"):
        k8s_compute_domain.compute_domain(records, {"name": "x", "nodes": ["old", "hgx"]})


@pytest.mark.parametrize("options, message", [
    ({"name": "Train"}, "name must be a DNS label"),
    ({"name": "x", "nodes": ["tray9"]}, "no discovery record for tray9"),
    ({"name": "x", "nodes": "tray1"}, "nodes must be a list"),
    ({"name": "x", "nodes": ["tray1", "tray1"]}, "names a node twice"),
    ({"name": "x", "nodes": ["tray1"], "allocation_mode": "one"}, "allocation_mode must be Single .* or All, got 'one'"),
    ({"name": "x", "racks": 1}, "does not take racks"),
    ({"name": "a" * 60}, "the channel template's name"),
])
def test_bad_options_are_refused_naming_the_value(records, options, message):
    with pytest.raises(k8s.ManifestError, match=message):
        k8s_compute_domain.compute_domain(records, options)


@pytest.mark.parametrize("kind, options", [
    ("pytorchjob", {"name": "train", "image": "pytorch:24.05", "command": ["torchrun"], "env": {}, "workers": 3,
                    "gpus_per_worker": 4, "claim_template": "gb200-4gpu"}),
    ("mpijob", {"name": "nccl", "image": "nccl-tests:2.19", "env": {}, "workers": 3, "gpus_per_worker": 4}),
])
def test_the_workloads_claim_the_channel_and_carry_the_env(records, kube_validate, kind, options):
    domain = k8s_compute_domain.compute_domain(records, {"name": "train", "nodes": ["tray1", "tray2", "tray10"]})
    manifest = k8s_compute_domain.workload_manifest(kind, dict(options, compute_domain=domain))
    kube_validate(manifest)
    for path, template in k8s.pod_templates(manifest):
        spec = template["spec"]
        env = dict((e["name"], e["value"]) for e in spec["containers"][0]["env"])
        assert env["NCCL_MNNVL_ENABLE"] == "1" and env["NCCL_CUMEM_ENABLE"] == "1", path
        if path.endswith("Launcher.template"):   # the MPI launcher takes no GPU, so no channel
            assert "resourceClaims" not in spec
            continue
        assert {"name": "imex-channel", "resourceClaimTemplateName": "train-channel"} in spec["resourceClaims"], path
        assert {"name": "imex-channel"} in spec["containers"][0]["resources"]["claims"], path
    assert k8s_compute_domain.workload_manifest(kind, options) == k8s.workload_manifest(kind, options)


def test_the_pod_claims_the_channel_as_the_drivers_own_example_does(read_fixture, records):
    """The driver's demo (demo/specs/imex/channel-injection.yaml): the pod names the template the ComputeDomain names."""
    example = list(yaml.safe_load_all(read_fixture("dra", "computedomain_channel_injection_example.txt")))
    cd, pod = example
    assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == cd["spec"]["channel"]["resourceClaimTemplate"]["name"]
    domain = k8s_compute_domain.compute_domain(records, {"name": "train", "nodes": ["tray1"]})
    manifest = k8s_compute_domain.with_compute_domain({"kind": "Pod", "spec": {"template": {"spec": {
        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}}, domain)
    claim = manifest["spec"]["template"]["spec"]["resourceClaims"][0]
    assert claim["resourceClaimTemplateName"] == domain["compute_domain"]["spec"]["channel"]["resourceClaimTemplate"]["name"]
    with pytest.raises(k8s.ManifestError, match="compute_domain must be rdma_compute_domain's result"):
        k8s_compute_domain.with_compute_domain(manifest, {"name": "x"})
