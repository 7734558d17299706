"""GPUs and RDMA NICs claimed together (resource.k8s.io/v1): the DeviceClasses and ResourceClaimTemplates rendered
from real discovery records, the attribute and the reason chosen per node type, every object against the Kubernetes
schemas of the versions that serve it, and every claim allocated on the ResourceSlices the two real drivers published
(tests/unit/fixtures/dra/, README)."""

import re

import kubernetes_validate
import pytest
import yaml

import dra_allocator
from conftest import DRA_VERSIONS, fixture_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import report
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import k8s, k8s_dra


def _gpu_facts(read_fixture, xml=None, topo=None):
    """What gpu_facts returns: nvidia-smi -q -x's GPUs and topo -m's topology."""
    facts = gpu.parse_nvidia_smi_xml(read_fixture(*xml)) if xml else {"count": 0, "gpus": []}
    facts.update(present=True, topology=gpu.parse_nvidia_topo(read_fixture(*topo)) if topo else {})
    if not xml:
        facts["count"] = len([row for row in facts["topology"].get("matrix", {}) if row.startswith("GPU")])
    return facts


def _record(lab_facts, devices, gpu_facts):
    """The discovery record the discovery role writes (facts.json), through the one function that builds it."""
    return report.node_record(lab_facts, devices, gpu_facts)


def _nics(names, numa, addresses=None):
    return [{"name": name, "driver": "mlx5_core", "transport": "RoCE", "numa_node": numa[i],
             "pci_address": addresses[i] if addresses else None, "ports": []} for i, name in enumerate(names)]


@pytest.fixture
def pcie_switch_node(read_fixture, lab_facts):
    """8 GPUs (NV18) each with a ConnectX on its own PCIe switch (topo -m PIX): tpgds-aihub0007's real topo -m, the
    NICs its legend names, on the NUMA node topo -m gives every GPU (0)."""
    facts = _gpu_facts(read_fixture, topo=("nvidia_smi_fabric", "topo_nv18x8_12nic_aihub0007.txt"))
    names = ["mlx5_%d" % i for i in range(12)]
    return _record(lab_facts, _nics(names, [0] * 12), facts)


@pytest.fixture
def grace_node(read_fixture, lab_facts):
    """4x GB200 (Grace): nvidia-smi -q -x of a real GB200 tray (bus IDs), a real GB200 topo -m with SYS from every GPU
    to every NIC (NUMA affinity 0,3-9,11-17 and 1,19-25,27-33), and its eight mlx5 NICs four to a Grace (NUMA 0, 1):
    the NICs' NUMA nodes and addresses are constructed (no public GB200 sysfs), in the layout topo -m shows (NIC2-NIC3
    and NIC6-NIC7 dual-port pairs)."""
    facts = _gpu_facts(read_fixture, ("nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml"),
                       ("nvidia_smi", "topo_gb200x4_8nic_sys.txt"))
    addresses = ["0000:03:00.0", "0002:03:00.0", "0003:03:00.0", "0003:03:00.1",
                 "0010:03:00.0", "0012:03:00.0", "0013:03:00.0", "0013:03:00.1"]
    return _record(lab_facts, _nics(["mlx5_%d" % i for i in range(8)], [0, 0, 0, 0, 1, 1, 1, 1], addresses), facts)


@pytest.fixture
def h200_node(read_fixture, lab_facts):
    """The project's 8x H200 host as discovery records it: nvidia-smi -q -x and topo -m (NV18, NUMA 0), no RDMA NIC."""
    facts = _gpu_facts(read_fixture, ("nvidia_smi", "q_h200x8.xml"), ("nvidia_smi", "topo_h200x8.txt"))
    return _record(lab_facts, [], facts)


@pytest.fixture
def erdma_node(read_fixture, lab_facts, h200_node):
    """An eRDMA node: the eRDMA device sysfs gives (tests/unit/fixtures/sysfs/erdma: erdma_0, NUMA 0) beside 8 GPUs."""
    devices = sysfs.read_rdma_devices(fixture_path("sysfs", "erdma"))
    return dict(h200_node, rdma_devices=devices)


def _template(result, name):
    return next(m for m in result["manifests"] if m["kind"] == "ResourceClaimTemplate" and m["metadata"]["name"] == name)


def _requests(template):
    return dict((r["name"], r["exactly"]) for r in template["spec"]["spec"]["devices"]["requests"])


def _validate_all(result):
    for manifest in result["manifests"]:
        for version in DRA_VERSIONS:
            kubernetes_validate.validate(manifest, version, strict=True)


def test_a_pcie_switch_node_pairs_each_gpu_with_the_nic_on_its_switch(pcie_switch_node):
    result = k8s_dra.dra_claims({"aihub0007": pcie_switch_node})
    (entry,) = result["report"]
    assert (entry["claim"], entry["mode"], entry["nodes"], result["warnings"]) == ("gpus-nics", "pcie_root", ["aihub0007"], [])
    template = _template(result, "gpus-nics")
    requests = _requests(template)
    assert sorted(requests) == sorted(["gpu-%d" % i for i in range(8)] + ["nic-%d" % i for i in range(8)])
    # no GPU pinned: any rail of any node of the type serves
    assert all("selectors" not in r and r["count"] == 1 for r in requests.values())
    assert template["spec"]["spec"]["devices"]["constraints"][3] == {
        "requests": ["gpu-3", "nic-3"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
    choice = entry["choices"][0]
    assert choice["attribute"] == "resource.kubernetes.io/pcieRoot"
    # the rails discovery found, in GPU order, GPU3's on mlx5_5 (the NIC legend, not the column order)
    assert "GPU0 - mlx5_0 (PIX); GPU1 - mlx5_1 (PIX); GPU2 - mlx5_2 (PIX); GPU3 - mlx5_5 (PIX)" in choice["reason"]
    assert "both drivers publish resource.kubernetes.io/pcieRoot, so no GPU needs pinning" in choice["reason"]
    _validate_all(result)


def test_a_grace_node_pins_each_gpu_and_takes_the_nics_of_its_numa_node(grace_node):
    result = k8s_dra.dra_claims({"gb200-0": grace_node}, {"claims": [{"name": "gb200-4gpu-8nic", "nics": 8}]})
    (entry,) = result["report"]
    assert entry["mode"] == "pinned" and result["warnings"] == []
    requests = _requests(_template(result, "gb200-4gpu-8nic"))
    assert requests["gpu-0"]["selectors"][0]["cel"]["expression"] == (
        'has(device.attributes["resource.kubernetes.io"].pciBusID) && '
        'device.attributes["resource.kubernetes.io"].pciBusID == "0000:29:00.0"')
    assert requests["nic-0"]["count"] == 2
    assert requests["nic-0"]["selectors"][0]["cel"]["expression"] == (
        'has(device.attributes["dra.net"].numaNode) && device.attributes["dra.net"].numaNode == 0')
    assert requests["nic-3"]["selectors"][0]["cel"]["expression"].endswith("numaNode == 1")
    assert "constraints" not in _template(result, "gb200-4gpu-8nic")["spec"]["spec"]["devices"]
    choice = entry["choices"][2]
    assert (choice["gpus"], choice["nics"]) == ("GPU2 (0000:9c:00.0)", "mlx5_4, mlx5_5, mlx5_6, mlx5_7")
    assert choice["attribute"] == "resource.kubernetes.io/pciBusID + dra.net/numaNode"
    assert choice["reason"] == (
        "GPU2 (0000:9c:00.0) reaches the RDMA NICs only through the CPU or C2C (nvidia-smi topo -m: SYS, the CPU "
        "interconnect (or C2C)), so it shares no pcieRoot with them: the GPU is pinned by "
        "resource.kubernetes.io/pciBusID and its rail is the NICs on its NUMA node, chosen by NUMA node 1")
    _validate_all(result)


def test_a_claim_for_part_of_a_grace_node_says_which_gpus_it_pins(grace_node):
    result = k8s_dra.dra_claims({"gb200-0": grace_node}, {"claims": [{"name": "two", "gpus": 2, "nics": 2}]})
    assert result["warnings"] == ["claim two: the claim pins GPU0 (0000:29:00.0), GPU1 (0000:3f:00.0) by bus ID: the "
                                  "node type's other GPUs need a claim of their own"]
    assert "WARNING: claim two: the claim pins GPU0" in result["markdown"]


def test_an_erdma_node_shares_its_one_nic_through_the_erdma_class(erdma_node):
    result = k8s_dra.dra_claims({"ecs-gn8is": erdma_node})
    (entry,) = result["report"]
    assert (entry["mode"], result["warnings"]) == ("shared", [])
    requests = _requests(_template(result, "gpus-nics"))
    assert requests == {"gpus": {"deviceClassName": "gpu.gpufabric.io", "count": 8},
                        "nics": {"deviceClassName": "erdma.gpufabric.io", "count": 1}}
    assert entry["choices"][0]["reason"] == ("erdma_0 is the node's one RDMA NIC (eRDMA, class erdma.gpufabric.io): "
                                             "every GPU's traffic goes through it, nothing to align")
    erdma_class = next(m for m in result["manifests"] if m["metadata"]["name"] == "erdma.gpufabric.io")
    assert [s["cel"]["expression"] for s in erdma_class["spec"]["selectors"]] == [
        'device.driver == "dra.net"',
        'has(device.attributes["dra.net"].rdma) && device.attributes["dra.net"].rdma == true',
        '!(has(device.attributes["dra.net"].virtual) && device.attributes["dra.net"].virtual == true)',
        'has(device.attributes["alibaba.dra.net"].erdma) && device.attributes["alibaba.dra.net"].erdma == true']
    _validate_all(result)


def test_the_h200_host_without_an_rdma_nic_claims_gpus_only_with_a_warning(h200_node):
    result = k8s_dra.dra_claims({"h200": h200_node})
    assert result["report"][0]["mode"] == "gpus_only"
    assert result["warnings"] == ["claim gpus-nics: discovery found no RDMA NIC on the node type: the claim asks for "
                                  "GPUs only"]
    assert _requests(_template(result, "gpus-nics")) == {"gpus": {"deviceClassName": "gpu.gpufabric.io", "count": 8}}
    with pytest.raises(k8s.ManifestError, match=r"claim g asks for 8 RDMA NICs; the node type has 0 \(none\)"):
        k8s_dra.dra_claims({"h200": h200_node}, {"claims": [{"name": "g", "nics": 8}]})


def test_no_alignment_to_express_is_a_warning_and_a_claim_by_count(lab_facts):
    """Bus IDs and NUMA nodes unknown, topo -m without NIC columns: by count only, and the report says why."""
    record = _record(lab_facts, _nics(["mlx5_0", "mlx5_1"], [None, None]),
                     {"present": True, "count": 2, "gpus": [], "topology": {}})
    result = k8s_dra.dra_claims({"n1": record})
    assert result["report"][0]["mode"] == "unaligned"
    assert result["warnings"] == [
        "claim gpus-nics: no GPU-NIC alignment can be expressed: discovery found neither NIC columns in nvidia-smi "
        "topo -m nor the NICs' NUMA nodes; the claim takes 2 GPU(s) and 2 NIC(s) wherever the scheduler finds them"]
    assert "## gpus-nics: NOT aligned" in result["markdown"]


# --- The claims on the ResourceSlices the real drivers published --------------------------------------------------

def _slices(read_fixture, *names):
    return [d for name in names for d in dra_allocator.load(read_fixture("dra", name))]


def _record_from_slices(gpus, nics, links, numa):
    """The discovery record of the node those slices came from (values from the slices; topo -m links and the GPUs'
    NUMA nodes as the example's README gives them)."""
    rails = {"gpus": [], "rdma_devices": []}
    legend = {}
    for index, nic in enumerate(nics):
        legend["NIC%d" % index] = nic["attributes"]["dra.net"].get("rdmaDevice") or nic["attributes"]["dra.net"].get(
            "ifName") or nic["name"]
        rails["rdma_devices"].append({"name": legend["NIC%d" % index], "numa_node": nic["attributes"]["dra.net"]["numaNode"],
                                      "pci_address": nic["attributes"]["dra.net"]["pciAddress"], "ports": []})
    matrix = dict(("GPU%d" % g, dict(("NIC%d" % n, links(g, gpu_dev, n, nic)) for n, nic in enumerate(nics)))
                  for g, gpu_dev in enumerate(gpus))
    topology = {"matrix": matrix, "nics": legend, "numa_affinity": dict(("GPU%d" % g, numa(gpu_dev)) for g, gpu_dev in enumerate(gpus))}
    gpu_list = [{"index": g, "pci_bus_id": d["attributes"]["resource.kubernetes.io"]["pciBusID"]} for g, d in enumerate(gpus)]
    return {"gpu": {"count": len(gpus), "gpus": gpu_list, "topology": topology}, "rdma_devices": rails["rdma_devices"]}


def _root(device):
    return device["attributes"].get("resource.kubernetes.io", {}).get("pcieRoot")


# Azure ND GB300 v6 (dranet's README): NODE to the two NICs of the GPU's NUMA node, SYS to the other two.
def _gb300_links(g, gpu_dev, n, nic):
    return "NODE" if nic["attributes"]["dra.net"]["numaNode"] == g // 2 else "SYS"


def _pcie_or_sys(g, gpu_dev, n, nic):
    return "PXB" if _root(gpu_dev) and _root(gpu_dev) == _root(nic) else "SYS"


def _numa_by_domain(gpu_dev):   # 0008/0009 -> NUMA 0, 0018/0019 -> NUMA 1 (the OCI slice's header)
    return 0 if gpu_dev["attributes"]["resource.kubernetes.io"]["pciBusID"][:4] in ("0008", "0009") else 1


SLICES = {
    "azure-gb300": (("gpu_slices_azure_gb300_dranet.txt", "dranet_slice_azure_gb300.txt"), _gb300_links,
                    lambda d: int(d["name"][-1]) // 2, "pinned"),
    "oci-gb200": (("gpu_slice_oci_gb200_dranet.txt", "dranet_slice_oci_gb200.txt"), lambda *a: "SYS",
                  _numa_by_domain, "pinned"),
    "eks-p4d": (("gpu_slices_eks_p4d_dranet.txt", "dranet_slices_eks_p4d_efa.txt"), _pcie_or_sys,
                lambda d: 0 if int(d["name"][-1]) < 4 else 1, "pcie_root"),
}


@pytest.mark.parametrize("platform", sorted(SLICES))
def test_every_claim_allocates_on_the_real_drivers_slices(read_fixture, platform):
    names, links, numa, mode = SLICES[platform]
    devices = _slices(read_fixture, *names)
    gpus = [d for d in devices if d["driver"] == "gpu.nvidia.com"]
    nics = [d for d in devices if d["driver"] == "dra.net" and d["attributes"]["dra.net"].get("rdma")]
    result = k8s_dra.dra_claims({platform: _record_from_slices(gpus, nics, links, numa)})
    assert result["report"][0]["mode"] == mode
    classes = dict((m["metadata"]["name"], m) for m in result["manifests"] if m["kind"] == "DeviceClass")
    (allocation,) = dra_allocator.allocate(_template(result, "gpus-nics"), classes, devices).values()
    chosen = dict((d["name"], d) for d in devices)
    for request, taken in sorted(allocation.items()):
        if request.startswith("nic-"):
            gpu_dev = chosen[allocation["gpu-" + request[4:]][0]]
            for nic in taken:
                if mode == "pcie_root":    # EFA and its GPUs under one PCIe root
                    assert _root(chosen[nic]) == _root(gpu_dev), allocation
                else:                      # the NIC on its GPU's NUMA node
                    assert chosen[nic]["attributes"]["dra.net"]["numaNode"] == numa(gpu_dev), allocation
    taken = [n for request, names in allocation.items() if request.startswith("nic-") for n in names]
    assert len(taken) == len(set(taken)) == min(len(gpus), len(nics))


@pytest.mark.parametrize("platform, allocates", [("azure-gb300", False), ("oci-gb200", False), ("eks-p4d", True)])
def test_the_obvious_rule_fails_on_grace_slices(read_fixture, platform, allocates):
    """matchAttribute on pcieRoot, as if every GPU shared a switch with a NIC: on Grace the GPUs' and NICs' roots never
    overlap (OCI GB200) or the NICs publish none (Azure GB300's IB VFs), so the claim is never allocated there."""
    names = SLICES[platform][0]
    devices = _slices(read_fixture, *names)
    gpus = [d for d in devices if d["driver"] == "gpu.nvidia.com"]
    nics = [d for d in devices if d["driver"] == "dra.net" and d["attributes"]["dra.net"].get("rdma")]
    naive = _record_from_slices(gpus, nics, lambda *a: "PIX", lambda d: 0)
    result = k8s_dra.dra_claims({platform: naive}, {"claims": [{"name": "gpus-nics", "gpus": 1, "nics": 1}]})
    assert result["report"][0]["mode"] == "pcie_root"
    classes = dict((m["metadata"]["name"], m) for m in result["manifests"] if m["kind"] == "DeviceClass")
    assert (dra_allocator.allocate(_template(result, "gpus-nics"), classes, devices) is not None) is allocates


def test_the_allocator_reads_dranets_own_gb300_claims_as_dranet_reports(read_fixture):
    """The stand-in allocator is no yes-man: dranet's published GB300 claims land where dranet's live ResourceClaim
    says (1nic-unaligned: gpu-0 with pci-0103-00-00-0, mlx5_2 on NUMA 1), and an unguarded attribute a device lacks
    aborts, as the scheduler does."""
    devices = _slices(read_fixture, "gpu_slices_azure_gb300_dranet.txt", "dranet_slice_azure_gb300.txt")
    classes = {"gpu.nvidia.com": k8s_dra.device_classes({"gpu": "gpu.nvidia.com"})[0],
               "dranet.net": {"spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]}}}
    templates = dict((t["metadata"]["name"], t) for t in yaml.safe_load_all(read_fixture("dra", "dranet_claim_templates_azure_gb300.txt")))
    assert dra_allocator.allocate(templates["1nic-unaligned"], classes, devices) == {
        "aks-gpu-45139532-vmss000081": {"gpu": ["gpu-0"], "nic": ["pci-0103-00-00-0"]}}
    assert dra_allocator.allocate(templates["2nic-aligned"], classes, devices)[
        "aks-gpu-45139532-vmss000081"]["nic"] == ["pci-0101-00-00-0", "pci-0102-00-00-0"]
    ifname = {"cel": {"expression": 'device.attributes["dra.net"].ifName == "rdma0"'}}
    templates["1nic-aligned"]["spec"]["spec"]["devices"]["requests"][1]["exactly"]["selectors"] = [ifname]
    with pytest.raises(dra_allocator.CelError, match="no such key: ifName"):
        dra_allocator.allocate(templates["1nic-aligned"], classes, devices)


_REFERENCE = re.compile(r'device\.attributes\["([^"]+)"\]\.([A-Za-z]+)')


def test_every_attribute_the_claims_read_is_one_the_real_drivers_publish(
        read_fixture, pcie_switch_node, grace_node, erdma_node):
    published = {}
    for name in ("gpu_slices_azure_gb300_dranet.txt", "gpu_slice_oci_gb200_dranet.txt", "gpu_slices_eks_p4d_dranet.txt",
                 "gpu_slices_vks_a100_cncf.txt", "dranet_slice_azure_gb300.txt", "dranet_slice_oci_gb200.txt",
                 "dranet_slices_eks_p4d_efa.txt", "dranet_slice_azure_mi300x.txt"):
        for device in dra_allocator.load(read_fixture("dra", name)):
            for domain, values in device["attributes"].items():
                published.setdefault(device["driver"], set()).update((domain, key) for key in values)
    # dranet on Alibaba Cloud: its documentation's attribute list of one eRDMA device
    for line in read_fixture("dra", "dranet_erdma_attributes_alibaba_doc.txt").splitlines():
        domain, key = line.split(":")[0].rpartition("/")[::2]
        published["dra.net"].add((domain, key))
    result = k8s_dra.dra_claims({"a": pcie_switch_node}, {"claims": [{"name": "a", "nodes": ["a"]}]})
    manifests = result["manifests"]
    for node in (grace_node, erdma_node):
        manifests += k8s_dra.dra_claims({"b": node})["manifests"]
    read = set()
    for manifest in manifests:
        text = str(manifest)
        read.update(("class" if manifest["kind"] == "DeviceClass" else "claim", m) for m in _REFERENCE.findall(text))
        read.update(("match", tuple(c["matchAttribute"].rsplit("/", 1))) for c in
                    manifest.get("spec", {}).get("spec", {}).get("devices", {}).get("constraints", []))
    attributes = set(pair for where, pair in read)
    assert attributes == {("gpu.nvidia.com", "type"), ("resource.kubernetes.io", "pciBusID"),
                          ("resource.kubernetes.io", "pcieRoot"), ("dra.net", "rdma"), ("dra.net", "virtual"),
                          ("dra.net", "numaNode"), ("alibaba.dra.net", "erdma")}
    every = published["gpu.nvidia.com"] | published["dra.net"]
    assert attributes <= every, attributes - every
    # pcieRoot is what both drivers publish; the NIC's NUMA node only dranet, the bus ID only the GPU driver
    assert ("resource.kubernetes.io", "pcieRoot") in published["gpu.nvidia.com"] & published["dra.net"]
    assert ("dra.net", "numaNode") not in published["gpu.nvidia.com"]


# --- Versions, names and counts ------------------------------------------------------------------------------------

def test_dra_objects_validate_only_where_resource_k8s_io_v1_is_served(pcie_switch_node):
    result = k8s_dra.dra_claims({"a": pcie_switch_node})
    _validate_all(result)
    for manifest in result["manifests"]:
        with pytest.raises(kubernetes_validate.utils.SchemaNotFoundError):
            kubernetes_validate.validate(manifest, "1.33.0", strict=True)


@pytest.mark.parametrize("api, version, message", [
    ("dra", "1.33.2", "k8s_resource_api dra needs Kubernetes 1.34 or later .* the cluster is 1.33.2: keep "
                      "k8s_resource_api=device_plugin there"),
    ("dra", "v1.28.15-eks-2f46c53", "the cluster is v1.28.15-eks-2f46c53"),
    ("dra", "latest", "the Kubernetes version must read like 1.34 or v1.34.2, got 'latest'"),
    ("plugins", "", "k8s_resource_api must be device_plugin or dra, got 'plugins'"),
])
def test_dra_is_refused_below_kubernetes_1_34_naming_the_version(api, version, message):
    with pytest.raises(k8s.ManifestError, match=message):
        k8s_dra.resource_api(api, version)


@pytest.mark.parametrize("api, version", [("dra", "1.34"), ("dra", "v1.37.0"), ("dra", ""), ("dra", None),
                                          ("device_plugin", "1.28.0"), ("device_plugin", "1.37")])
def test_the_resource_api_where_it_is_served_or_the_version_unknown(api, version):
    assert k8s_dra.resource_api(api, version) == api


@pytest.mark.parametrize("options, message", [
    ({"claims": [{"name": "x", "gpus": 9}]}, "claim x asks for 9 GPUs; the node type has 8"),
    ({"claims": [{"name": "x", "gpus": 8, "nics": 3}]}, "claim x: 3 NICs do not divide among 8 GPUs"),
    ({"claims": [{"name": "x", "gpus": "all"}]}, "claim x: gpus must be a whole number"),
    ({"claims": [{"name": "X_1"}]}, "claim name must be a DNS label"),
    ({"claims": [{"name": "x", "count": 8}]}, "each claim takes name .required., gpus, nics and nodes"),
    ({"claims": [{"name": "x", "nodes": ["ghost"]}]}, "claim x names node ghost, which has no discovery record"),
    ({"classes": {"gpu": "GPU"}}, "the gpu DeviceClass name must be a DNS subdomain"),
    ({"classes": {"tpu": "tpu.example.com"}}, "classes takes gpu, rdma and erdma, got tpu"),
    ({"namespace": "ML"}, "namespace must be a DNS label"),
    ({"claim": []}, "the DRA claims take claims, classes and namespace, got claim"),
])
def test_bad_claims_fail_naming_the_value(pcie_switch_node, options, message):
    with pytest.raises(k8s.ManifestError, match=message):
        k8s_dra.dra_claims({"a": pcie_switch_node}, options)


def test_one_claim_over_two_node_types_is_refused_naming_both(pcie_switch_node, grace_node):
    with pytest.raises(k8s.ManifestError, match=r"the nodes of claim gpus-nics are not one node type: a \(8 GPUs, 12 "
                                                r"RDMA NICs\) and b \(4 GPUs, 8 RDMA NICs\); give each type its own claim"):
        k8s_dra.dra_claims({"a": pcie_switch_node, "b": grace_node})
    result = k8s_dra.dra_claims({"a": pcie_switch_node, "b": grace_node}, {"namespace": "ml", "claims": [
        {"name": "hgx", "nodes": ["a"]}, {"name": "gb200", "nodes": ["b"], "nics": 8}]})
    assert [(e["claim"], e["mode"]) for e in result["report"]] == [("hgx", "pcie_root"), ("gb200", "pinned")]
    assert _template(result, "gb200")["metadata"]["namespace"] == "ml"


def test_eight_gpus_over_four_nics_pair_two_gpus_with_the_nic_of_their_root(read_fixture):
    devices = _slices(read_fixture, *SLICES["eks-p4d"][0])
    gpus = [d for d in devices if d["driver"] == "gpu.nvidia.com"]
    nics = [d for d in devices if d["driver"] == "dra.net" and d["attributes"]["dra.net"].get("rdma")]
    result = k8s_dra.dra_claims({"p4d": _record_from_slices(gpus, nics, _pcie_or_sys, lambda d: 0)})
    requests = _requests(_template(result, "gpus-nics"))
    assert [(name, r["count"]) for name, r in sorted(requests.items())] == [
        ("gpu-0", 2), ("gpu-1", 2), ("gpu-2", 2), ("gpu-3", 2), ("nic-0", 1), ("nic-1", 1), ("nic-2", 1), ("nic-3", 1)]
    assert "GPU0 (0000:10:1c.0), GPU1 (0000:10:1d.0) - rdmap16s27 (PXB)" in result["report"][0]["choices"][0]["reason"]


def test_pci_addresses_as_the_drivers_publish_them():
    assert k8s_dra.pci_address("00000008:06:00.0") == "0008:06:00.0"
    assert k8s_dra.pci_address("00000000:3F:00.0") == "0000:3f:00.0"
    assert k8s_dra.pci_address("0000:10:1c.0") == "0000:10:1c.0"
    assert k8s_dra.pci_address("N/A") is None
