# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Kubernetes Dynamic Resource Allocation (resource.k8s.io/v1, GA in Kubernetes 1.34): the DeviceClasses and the
ResourceClaimTemplates that claim GPUs (NVIDIA's GPU DRA driver, driver gpu.nvidia.com) and RDMA NICs (dranet, driver
dra.net) together, aligned the way discovery found each node type's rails, every choice with its reason.

How a claim is aligned, from the node's discovery record (nvidia-smi topo -m, each GPU's bus ID and NUMA affinity,
each RDMA NIC's PCI address and NUMA node):

- GPU and NIC under one PCIe root complex (topo -m PIX, PXB or PHB): one request pair per rail, matched on
  ``resource.kubernetes.io/pcieRoot``, which both drivers publish; no GPU is pinned, so any rail of any node serves.
- They meet only through the CPU or C2C (NODE, SYS: Grace systems, where the GPUs' and NICs' roots never overlap
  and dranet publishes none for Azure's IB VFs, so a matchAttribute there can never be met): per-rail requests that
  pin the GPU by ``resource.kubernetes.io/pciBusID`` and select the NICs of its rail with CEL on what dranet
  publishes - ``dra.net/numaNode`` where the rail is the GPU's NUMA node, else ``dra.net/pciAddress``.
- One NIC on the node (an eRDMA instance): every GPU uses it, nothing to align.
- Nothing known to align by (no topology, no NUMA, no bus ID): GPUs and NICs by count, with a warning.

Only attribute names the real drivers publish are read (tests/unit/fixtures/dra/ holds their ResourceSlices), each
behind has(): a CEL expression that reads an attribute a device lacks aborts the allocation. Later additions fit the
same shapes: a ComputeDomain's channel claim is one more pod claim (the workloads take claim names), device taints
are tolerations on a request (_request).

Pure functions, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.report import markdown_table
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import k8s_names
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import k8s

DRA_API = "resource.k8s.io/v1"
DRA_SINCE = (1, 34)
RESOURCE_APIS = ("device_plugin", "dra")
GPU_DRIVER = "gpu.nvidia.com"
NIC_DRIVER = "dra.net"
# (domain, name) of the attributes the claims read, as the drivers publish them.
GPU_TYPE = ("gpu.nvidia.com", "type")
PCI_BUS_ID = ("resource.kubernetes.io", "pciBusID")
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NIC_RDMA = ("dra.net", "rdma")
NIC_VIRTUAL = ("dra.net", "virtual")
NIC_NUMA = ("dra.net", "numaNode")
NIC_PCI = ("dra.net", "pciAddress")
NIC_RDMA_DEVICE = ("dra.net", "rdmaDevice")
ERDMA = ("alibaba.dra.net", "erdma")
CLASS_NAMES = {"gpu": "gpu.gpufabric.io", "rdma": "rdma.gpufabric.io", "erdma": "erdma.gpufabric.io"}
# nvidia-smi topo -m's links, nearest first; the first three stay under one PCIe root complex (one pcieRoot).
LINKS = ("PIX", "PXB", "PHB", "NODE", "SYS")
SAME_ROOT = ("PIX", "PXB", "PHB")
_LINK_WORDS = {"PIX": "one PCIe switch", "PXB": "PCIe switches below one root port", "PHB": "one PCIe host bridge",
               "NODE": "different PCIe host bridges of one NUMA node", "SYS": "the CPU interconnect (or C2C)"}
_VERSION_RE = re.compile(r"^v?([0-9]{1,3})\.([0-9]{1,3})(?:\.[0-9]{1,5})?(?:[-+][0-9A-Za-z.+-]{0,80})?$")
_PCI_RE = re.compile(r"^([0-9a-fA-F]{1,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")
_ID_RANGE_RE = re.compile(r"^([0-9]{1,7})(?:-([0-9]{1,7}))?$")
_CLAIM_KEYS = ("name", "gpus", "nics", "nodes")


def kubernetes_version(value):
    """'1.34', 'v1.33.2', '1.34.1-eks-113cf36' -> (1, 34); '' or None (not known) -> None."""
    if value in (None, ""):
        return None
    match = _VERSION_RE.match(str(value).strip())
    if isinstance(value, bool) or not match:
        raise k8s.ManifestError("the Kubernetes version must read like 1.34 or v1.34.2, got %r" % (value,))
    return int(match.group(1)), int(match.group(2))


def resource_api(api, version=None):
    """The resource API asked for, checked: device_plugin (extended resources) or dra; dra is refused where the
    cluster's version is known and older than 1.34, which first serves resource.k8s.io/v1."""
    if api not in RESOURCE_APIS:
        raise k8s.ManifestError("k8s_resource_api must be device_plugin or dra, got %r" % (api,))
    known = kubernetes_version(version)
    if api == "dra" and known is not None and known < DRA_SINCE:
        raise k8s.ManifestError(
            "k8s_resource_api dra needs Kubernetes 1.34 or later (resource.k8s.io/v1 is served from 1.34); the cluster "
            "is %s: keep k8s_resource_api=device_plugin there, or upgrade the cluster first" % version)
    return api


# --- CEL, as the claims write it ---------------------------------------------------------------------------------

def _attr(pair):
    return 'device.attributes["%s"].%s' % pair


def _literal(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def _is(pair, values):
    """The attribute is there and is the value (or one of the values): has() first, so a device without it is not
    chosen instead of aborting the allocation."""
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    test = ("%s == %s" % (_attr(pair), _literal(values[0])) if len(values) == 1 else
            "%s in [%s]" % (_attr(pair), ", ".join(_literal(v) for v in values)))
    return "has(%s) && %s" % (_attr(pair), test)


def _class(name, selectors, description):
    return {"apiVersion": DRA_API, "kind": "DeviceClass",
            "metadata": {"name": name, "annotations": {"gpufabric.io/selects": description}},
            "spec": {"selectors": [{"cel": {"expression": expression}} for expression in selectors]}}


def class_names(names=None):
    """The three DeviceClasses' names: CLASS_NAMES, each replaced by ``names`` (gpu, rdma, erdma) where given."""
    chosen = dict(CLASS_NAMES)
    unknown = sorted(set(names or {}) - set(chosen))
    if unknown:
        raise k8s.ManifestError("classes takes gpu, rdma and erdma, got %s" % ", ".join(map(str, unknown)))
    for key, value in (names or {}).items():
        if value in (None, ""):
            continue
        chosen[key] = k8s_names.dns_subdomain(value, "the %s DeviceClass name" % key)
    return chosen


def device_classes(names=None):
    """DeviceClasses of NVIDIA's GPU DRA driver's GPUs, dranet's RDMA NICs (virtual devices left out) and the
    eRDMA NICs alone (dranet on Alibaba Cloud)."""
    names = class_names(names)
    rdma = ['device.driver == "%s"' % NIC_DRIVER, _is(NIC_RDMA, True), "!(%s)" % _is(NIC_VIRTUAL, True)]
    return [
        _class(names["gpu"], ['device.driver == "%s"' % GPU_DRIVER, _is(GPU_TYPE, "gpu")],
               "GPUs of NVIDIA's GPU DRA driver (gpu.nvidia.com)"),
        _class(names["rdma"], rdma, "RDMA NICs of dranet (dra.net), virtual devices left out"),
        _class(names["erdma"], rdma + [_is(ERDMA, True)], "Alibaba Cloud eRDMA NICs of dranet (alibaba.dra.net/erdma)"),
    ]


# --- What discovery found: each GPU's rail -----------------------------------------------------------------------

def pci_address(value):
    """nvidia-smi's 00000008:06:00.0 and sysfs' 0008:06:00.0 as the drivers publish them: 0008:06:00.0, lower case."""
    match = _PCI_RE.match(str(value or "").strip())
    if not match:
        return None
    return "%04x:%s:%s.%s" % (int(match.group(1), 16), match.group(2).lower(), match.group(3).lower(), match.group(4))


def _numa_set(value):
    """A NUMA Affinity cell as parse_nvidia_topo keeps it (0, or '0,3-9,11-17') -> {0, 3, ...}; empty when unknown."""
    if isinstance(value, int) and not isinstance(value, bool):
        return {value}
    found = set()
    for part in str(value or "").split(","):
        match = _ID_RANGE_RE.match(part.strip())
        if not match:
            return set()
        low = int(match.group(1))
        high = int(match.group(2) or low)
        found.update(range(low, min(high, low + 1024) + 1))
    return found


def _nics(record):
    nics = {}
    for device in record.get("rdma_devices") or []:
        if not isinstance(device, dict) or not device.get("name"):
            continue
        numa = device.get("numa_node")
        nics[str(device["name"])] = {
            "pci_address": pci_address(device.get("pci_address")),
            "numa_node": numa if isinstance(numa, int) and not isinstance(numa, bool) and numa >= 0 else None,
            "erdma": k8s.is_erdma(device)}
    return nics


def _gpu_entries(gpu, topology):
    entries = [g for g in gpu.get("gpus") or [] if isinstance(g, dict) and isinstance(g.get("index"), int)]
    if entries:
        return [("GPU%d" % g["index"], pci_address(g.get("pci_bus_id"))) for g in sorted(entries, key=lambda g: g["index"])]
    rows = sorted((row for row in topology.get("matrix") or {} if re.match(r"^GPU[0-9]+$", row)), key=lambda r: int(r[3:]))
    if rows:
        return [(row, None) for row in rows]
    count = gpu.get("count") if isinstance(gpu.get("count"), int) else 0
    return [("GPU%d" % index, None) for index in range(count)]


def _links(topology, gpu_name, nic_names):
    """{NIC name: link} of one GPU's row of topo -m, for the NICs the record knows (all the row names, when none)."""
    legend = topology.get("nics") or {}
    links = {}
    for column, link in ((topology.get("matrix") or {}).get(gpu_name) or {}).items():
        name = legend.get(column, column)
        if column.startswith("GPU") or link not in LINKS or (nic_names and name not in nic_names):
            continue
        links[name] = link
    return links


def _rail(links, numa, nics):
    """One GPU's rail: basis (pcie_root, numa, closest or None), its NICs, the nearest link and the NUMA nodes."""
    link = min(links.values(), key=LINKS.index) if links else None
    closest = sorted((n for n in links if links[n] == link), key=_natural)
    if link in SAME_ROOT:
        return {"basis": "pcie_root", "nics": closest, "link": link, "numa": []}
    nic_numa = set(n["numa_node"] for n in nics.values() if n["numa_node"] is not None)
    shared = sorted(numa & nic_numa)
    if shared:
        pool = sorted((name for name in nics if nics[name]["numa_node"] in shared), key=_natural)
        return {"basis": "numa", "nics": pool, "link": link, "numa": shared}
    if closest and len(closest) < len(links):
        return {"basis": "closest", "nics": closest, "link": link, "numa": []}
    return {"basis": None, "nics": [], "link": link, "numa": []}


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r"([0-9]+)", name)]


def node_rails(record, host="node"):
    """A discovery record (the discovery role's facts.json) -> {gpus: [{name, bus_id, numa, basis, nics, link}],
    nics: {name: {pci_address, numa_node, erdma}}}: each GPU's rail as nvidia-smi topo -m and the NUMA nodes say."""
    if not isinstance(record, dict):
        raise k8s.ManifestError("the discovery record of %s must be a mapping (the discovery role's facts.json), got %s"
                                % (host, type(record).__name__))
    gpu = record.get("gpu") if isinstance(record.get("gpu"), dict) else {}
    topology = gpu.get("topology") if isinstance(gpu.get("topology"), dict) else {}
    nics = _nics(record)
    gpus = []
    for name, bus_id in _gpu_entries(gpu, topology):
        numa = _numa_set((topology.get("numa_affinity") or {}).get(name))
        rail = _rail(_links(topology, name, set(nics)), numa, nics)
        rail.update(name=name, bus_id=bus_id)
        gpus.append(rail)
    return {"gpus": gpus, "nics": nics}


def node_type(rails):
    """What makes two nodes one node type for a claim: the same GPUs, rails and NICs (JSON text, to compare)."""
    return json.dumps(rails, sort_keys=True)


# --- A claim: N GPUs and M NICs, aligned as the node type allows ----------------------------------------------------

def _request(name, device_class, count, selectors=()):
    """One request of a claim (device taints will come as tolerations here)."""
    exactly = {"deviceClassName": device_class, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": expression}} for expression in selectors]
    return {"name": name, "exactly": exactly}


def _gpu_text(gpus):
    return ", ".join("%s (%s)" % (g["name"], g["bus_id"]) if g.get("bus_id") else g["name"] for g in gpus)


def _counts(node, gpus, nics, claim):
    """(N GPUs, M NICs) of the claim, checked against what the node has."""
    have_gpus, have_nics = len(node["gpus"]), len(node["nics"])
    wanted = have_gpus if gpus in (None, "") else k8s.count(gpus, "claim %s: gpus" % claim, 1)
    if wanted > have_gpus:
        raise k8s.ManifestError("claim %s asks for %d GPUs; the node type has %d" % (claim, wanted, have_gpus))
    if nics in (None, ""):
        return wanted, min(wanted, have_nics)
    nic_count = k8s.count(nics, "claim %s: nics" % claim, 0)
    if nic_count > have_nics:
        raise k8s.ManifestError("claim %s asks for %d RDMA NICs; the node type has %d (%s)" % (
            claim, nic_count, have_nics, ", ".join(sorted(node["nics"], key=_natural)) or "none"))
    return wanted, nic_count


def _pcie_root_plan(node, groups, per_gpus, per_nics, classes):
    """Unpinned request pairs matched on pcieRoot, when the node's PCIe-local rails hold enough of them."""
    rails = {}
    for gpu in node["gpus"]:
        if gpu["basis"] == "pcie_root":
            rails.setdefault(tuple(gpu["nics"]), []).append(gpu)
    if sum(min(len(g) // per_gpus, len(n) // per_nics) for n, g in rails.items()) < groups:
        return None
    requests, constraints = [], []
    for index in range(groups):
        requests += [_request("gpu-%d" % index, classes["gpu"], per_gpus),
                     _request("nic-%d" % index, classes["nic"], per_nics)]
        constraints.append({"requests": ["gpu-%d" % index, "nic-%d" % index], "matchAttribute": PCIE_ROOT})
    found = "; ".join("%s - %s (%s)" % (_gpu_text(g), ", ".join(n), g[0]["link"]) for n, g in rails.items())
    reason = ("each request pair takes %d GPU(s) and %d NIC(s) under one PCIe root complex: discovery found the rails "
              "%s in nvidia-smi topo -m (PIX: one PCIe switch, PXB: switches below one root port, PHB: one host "
              "bridge), and both drivers publish %s, so no GPU needs pinning" % (per_gpus, per_nics, found, PCIE_ROOT))
    choices = [{"requests": ["gpu-%d" % i, "nic-%d" % i], "gpus": "any %d" % per_gpus, "nics": "any %d" % per_nics,
                "attribute": PCIE_ROOT, "reason": reason if i == 0 else "as gpu-0 and nic-0"} for i in range(groups)]
    return {"mode": "pcie_root", "requests": requests, "constraints": constraints, "choices": choices, "warnings": []}


def _nic_selector(rail, nics):
    """CEL choosing the NICs of one rail, and the attribute and words for the report."""
    pool = rail["nics"]
    if rail["basis"] == "numa" and set(pool) == set(n for n in nics if nics[n]["numa_node"] in rail["numa"]):
        where = "NUMA node %s" % ", ".join(map(str, rail["numa"]))
        return _is(NIC_NUMA, rail["numa"]), "dra.net/numaNode", where
    addresses = [nics[n]["pci_address"] for n in pool]
    if all(addresses):
        return _is(NIC_PCI, addresses), "dra.net/pciAddress", "PCI address %s" % ", ".join(addresses)
    return _is(NIC_RDMA_DEVICE, pool), "dra.net/rdmaDevice", "device name %s" % ", ".join(pool)


def _chunks(node, per_gpus):
    """GPUs with a rail and a bus ID, in order, in runs of per_gpus that share their rail's NICs."""
    chunks, current = [], []
    for gpu in node["gpus"]:
        if not gpu["basis"] or not gpu["bus_id"] or not gpu["nics"]:
            continue
        if current and current[0]["nics"] != gpu["nics"]:
            current = []
        current.append(gpu)
        if len(current) == per_gpus:
            chunks.append(current)
            current = []
    return chunks


def _pinned_reason(chunk, where):
    rail = chunk[0]
    link = ("nvidia-smi topo -m: %s, %s" % (rail["link"], _LINK_WORDS[rail["link"]])) if rail["link"] else \
        "no NIC column in nvidia-smi topo -m"
    if rail["basis"] == "pcie_root":
        return ("%s shares a PCIe root with %s (%s), but too few GPUs do for unpinned pairs: the GPU is pinned by "
                "resource.kubernetes.io/pciBusID and its NIC chosen by %s" % (
                    _gpu_text(chunk), ", ".join(rail["nics"]), link, where))
    rail_words = "the NICs on its NUMA node" if rail["basis"] == "numa" else "the NICs nearest it"
    return ("%s reaches the RDMA NICs only through the CPU or C2C (%s), so it shares no pcieRoot with them: the GPU is "
            "pinned by resource.kubernetes.io/pciBusID and its rail is %s, chosen by %s" % (
                _gpu_text(chunk), link, rail_words, where))


def _pinned_plan(node, groups, per_gpus, per_nics, classes):
    """Per-rail requests: the GPUs pinned by bus ID, the NICs of their rail by CEL; None when too few rails."""
    taken, left = [], {}
    for chunk in _chunks(node, per_gpus):
        pool = tuple(chunk[0]["nics"])
        if left.setdefault(pool, len(pool)) >= per_nics:
            left[pool] -= per_nics
            taken.append(chunk)
        if len(taken) == groups:
            break
    if len(taken) < groups:
        return None
    requests, choices = [], []
    for index, chunk in enumerate(taken):
        rail = chunk[0]
        nic_cel, attribute, where = _nic_selector(rail, node["nics"])
        requests += [_request("gpu-%d" % index, classes["gpu"], per_gpus, [_is(PCI_BUS_ID, [g["bus_id"] for g in chunk])]),
                     _request("nic-%d" % index, classes["nic"], per_nics, [nic_cel])]
        choices.append({"requests": ["gpu-%d" % index, "nic-%d" % index], "gpus": _gpu_text(chunk),
                        "nics": ", ".join(rail["nics"]), "attribute": "resource.kubernetes.io/pciBusID + %s" % attribute,
                        "reason": _pinned_reason(chunk, where)})
    warnings = []
    if groups * per_gpus < len(node["gpus"]):
        warnings.append("the claim pins %s by bus ID: the node type's other GPUs need a claim of their own"
                        % _gpu_text([g for chunk in taken for g in chunk]))
    return {"mode": "pinned", "requests": requests, "constraints": [], "choices": choices, "warnings": warnings}


def _by_count(gpus, nics, classes, mode, reason, warning=None):
    """GPUs and NICs by count only: one NIC shared by every GPU, no NIC asked, or nothing to align by."""
    requests = [_request("gpus", classes["gpu"], gpus)]
    if nics:
        requests.append(_request("nics", classes["nic"], nics))
    choices = [{"requests": [r["name"] for r in requests], "gpus": "any %d" % gpus,
                "nics": "any %d" % nics if nics else "none", "attribute": "none", "reason": reason}]
    return {"mode": mode, "requests": requests, "constraints": [], "choices": choices,
            "warnings": [warning] if warning else []}


def _why_not(node, per_gpus, per_nics):
    """Why no alignment can be expressed on this node type, in one sentence."""
    if not any(g["basis"] for g in node["gpus"]):
        if not any(g["link"] for g in node["gpus"]) and not any(n["numa_node"] is not None for n in node["nics"].values()):
            return "discovery found neither NIC columns in nvidia-smi topo -m nor the NICs' NUMA nodes"
        return "no GPU shares a PCIe root, a NUMA node or a nearest NIC with the RDMA NICs discovery found"
    if not all(g["bus_id"] for g in node["gpus"] if g["basis"] != "pcie_root"):
        return "the GPUs' bus IDs are unknown (no nvidia-smi -q in the record), so no GPU can be pinned to its rail"
    return "the rails hold fewer than %d NIC(s) for each %d GPU(s) asked" % (per_nics, per_gpus)


def plan_claim(node, gpus=None, nics=None, classes=None, claim="claim"):
    """The requests of one claim on a node type (node_rails' result) and the reason for each choice:
    {mode: pcie_root|pinned|shared|gpus_only|unaligned, requests, constraints, choices, warnings}."""
    names = class_names(classes)
    all_erdma = bool(node["nics"]) and all(n["erdma"] for n in node["nics"].values())
    chosen = {"gpu": names["gpu"], "nic": names["erdma"] if all_erdma else names["rdma"]}
    wanted, nic_count = _counts(node, gpus, nics, claim)
    if nic_count == 0:
        if node["nics"]:
            return _by_count(wanted, 0, chosen, "gpus_only", "no NIC asked for: GPUs only")
        return _by_count(wanted, 0, chosen, "gpus_only", "discovery found no RDMA NIC on the node type: GPUs only",
                         "discovery found no RDMA NIC on the node type: the claim asks for GPUs only")
    if len(node["nics"]) == 1:
        (name,) = node["nics"]
        return _by_count(wanted, 1, chosen, "shared", "%s is the node's one RDMA NIC%s: every GPU's traffic goes "
                         "through it, nothing to align" % (name, " (eRDMA, class %s)" % chosen["nic"] if all_erdma else ""))
    if nic_count % wanted == 0:
        per_gpus, per_nics = 1, nic_count // wanted
    elif wanted % nic_count == 0:
        per_gpus, per_nics = wanted // nic_count, 1
    else:
        raise k8s.ManifestError("claim %s: %d NICs do not divide among %d GPUs; ask for a multiple or a divisor of the "
                                "GPU count, so that every rail gets the same" % (claim, nic_count, wanted))
    groups = wanted // per_gpus
    plan = _pcie_root_plan(node, groups, per_gpus, per_nics, chosen) or \
        _pinned_plan(node, groups, per_gpus, per_nics, chosen)
    if plan:
        return plan
    why = _why_not(node, per_gpus, per_nics)
    return _by_count(wanted, nic_count, chosen, "unaligned", "by count only: %s" % why,
                     "no GPU-NIC alignment can be expressed: %s; the claim takes %d GPU(s) and %d NIC(s) wherever the "
                     "scheduler finds them" % (why, wanted, nic_count))


def claim_template(name, plan, namespace=None):
    """The ResourceClaimTemplate of a planned claim."""
    devices = {"requests": plan["requests"]}
    if plan["constraints"]:
        devices["constraints"] = plan["constraints"]
    metadata = {"name": k8s.dns_label(name, "claim name")}
    if namespace:
        metadata["namespace"] = k8s.dns_label(namespace, "namespace")
    metadata.update(labels={"app.kubernetes.io/managed-by": "gpufabric.rdma"}, annotations={"gpufabric.io/alignment": plan["mode"]})
    return {"apiVersion": DRA_API, "kind": "ResourceClaimTemplate", "metadata": metadata, "spec": {"spec": {"devices": devices}}}


# --- Every claim of a fleet ----------------------------------------------------------------------------------------

def _claims(claims):
    if claims in (None, "", []):
        return [{"name": "gpus-nics"}]
    if not isinstance(claims, list) or not all(isinstance(c, dict) for c in claims):
        raise k8s.ManifestError("claims must be a list of {name, gpus, nics, nodes}, got %r" % (claims,))
    for claim in claims:
        unknown = sorted(set(claim) - set(_CLAIM_KEYS))
        if unknown or not claim.get("name"):
            raise k8s.ManifestError("each claim takes name (required), gpus, nics and nodes; got %r" % (claim,))
    return claims


def _one_type(claim, hosts, records):
    """The node type every host of a claim shares (node_rails' result); the error names the types found."""
    if not hosts:
        raise k8s.ManifestError("claim %s has no node with a discovery record (run discovery first, or name nodes that "
                                "have one)" % claim["name"])
    types = {}
    for host in hosts:
        if host not in records:
            raise k8s.ManifestError("claim %s names node %s, which has no discovery record; nodes with one: %s" % (
                claim["name"], host, ", ".join(sorted(records, key=_natural)) or "none"))
        rails = node_rails(records[host], host)
        types.setdefault(node_type(rails), (rails, []))[1].append(host)
    if len(types) > 1:
        described = ["%s (%d GPUs, %d RDMA NICs)" % (", ".join(h), len(r["gpus"]), len(r["nics"]))
                     for r, h in types.values()]
        raise k8s.ManifestError("the nodes of claim %s are not one node type: %s; give each type its own claim with "
                                "nodes" % (claim["name"], " and ".join(described)))
    return next(iter(types.values()))


def dra_claims(records, options=None):
    """{host: discovery record} and options (claims, classes, namespace) -> {manifests: the DeviceClasses and one
    ResourceClaimTemplate per claim, report: per claim its nodes, mode, choices and warnings, warnings, markdown}."""
    options = dict(options or {})
    unknown = sorted(set(options) - {"claims", "classes", "namespace"})
    if unknown:
        raise k8s.ManifestError("the DRA claims take claims, classes and namespace, got %s" % ", ".join(unknown))
    if not isinstance(records, dict):
        raise k8s.ManifestError("records must map each node to its discovery record, got %s" % type(records).__name__)
    records = dict((str(h), r) for h, r in records.items() if r is not None)
    classes = class_names(options.get("classes"))
    manifests, report = device_classes(classes), []
    for claim in _claims(options.get("claims")):
        hosts = [str(h) for h in claim.get("nodes") or sorted(records, key=_natural)]
        rails, hosts = _one_type(claim, hosts, records)
        plan = plan_claim(rails, claim.get("gpus"), claim.get("nics"), classes, claim["name"])
        manifests.append(claim_template(claim["name"], plan, options.get("namespace") or None))
        report.append({"claim": claim["name"], "nodes": hosts, "mode": plan["mode"], "choices": plan["choices"],
                       "warnings": ["claim %s: %s" % (claim["name"], w) for w in plan["warnings"]]})
    result = {"manifests": manifests, "report": report, "warnings": [w for entry in report for w in entry["warnings"]]}
    result["markdown"] = report_markdown(result, classes)
    return result


_MODE_WORDS = {"pcie_root": "aligned on %s" % PCIE_ROOT, "pinned": "aligned per rail: GPUs pinned by bus ID, NICs by CEL",
               "shared": "one NIC shared by every GPU", "gpus_only": "GPUs only", "unaligned": "NOT aligned"}


def report_markdown(result, classes=None):
    """The claims' report for people: each claim's nodes, how it is aligned, and each choice with its reason."""
    names = class_names(classes)
    lines = ["# GPUs and RDMA NICs claimed together (resource.k8s.io/v1)", "",
             "DeviceClasses: `%s` (GPUs of NVIDIA's GPU DRA driver), `%s` (dranet's RDMA NICs), `%s` (eRDMA NICs only)."
             % (names["gpu"], names["rdma"], names["erdma"]), ""]
    for entry in result["report"]:
        lines += ["## %s: %s" % (entry["claim"], _MODE_WORDS[entry["mode"]]), "",
                  "Nodes: %s." % ", ".join(entry["nodes"]), ""]
        lines += markdown_table(["requests", "GPUs", "NICs", "attribute", "why"], [
            [" + ".join(c["requests"]), c["gpus"], c["nics"], c["attribute"], c["reason"]] for c in entry["choices"]])
        lines += [""] + ["WARNING: %s" % w for w in entry["warnings"]] + ([""] if entry["warnings"] else [])
    return "\n".join(lines).rstrip() + "\n"
