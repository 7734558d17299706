# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Health as device taints (Kubernetes DRA): a drain the decider decided for findings that each name one device - an
RDMA port down or below its rate, a GPU with an Xid or a degraded NVLink fabric - is carried out as one
DeviceTaintRule per device (resource.k8s.io; effect NoSchedule, the deviceSelector naming the driver, the pool - the
node - and the device as its driver publishes it in its ResourceSlice) instead of cordoning the whole node; the
resume deletes them. A drain with any finding that names no device the drivers publish (a node-level finding, a
device no slice lists) keeps today's cordon, saying why.

Which API serves DeviceTaintRule: v1alpha3 from Kubernetes 1.33 (feature gate DRADeviceTaints), v1beta2 from 1.36,
v1 from 1.37 (the schemas kubernetes-validate bundles; the Kubernetes docs' device-taints page). The setting
``kubernetes.device_taints`` (policy.check_config) names one, or ``auto`` reads the API's resource lists; unset keeps the cordon.

Pure: kubectl is run by decider.py; the rules carry no time, so a shadow decision renders the same objects.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.k8s_nodes import taint_value
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import DEVICE_TAINT_APIS, TAINT_KEY
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import k8s_names as k8s

GROUP = "resource.k8s.io"
# Newest first: ``auto`` takes the first the API serves DeviceTaintRule in (policy.py checks the setting).
API_VERSIONS = DEVICE_TAINT_APIS
SLICE_VERSIONS = ("v1", "v1beta2", "v1beta1")
MANAGED_BY = ("app.kubernetes.io/managed-by", "gpufabric")
NODE_LABEL = "gpufabric.io/node"
FINDING_ANNOTATION = "gpufabric.io/finding"
GPU_DRIVER, NIC_DRIVER = "gpu.nvidia.com", "dra.net"
PCI_BUS_ID, RDMA_DEVICE = "resource.kubernetes.io/pciBusID", "dra.net/rdmaDevice"
# The checks whose finding names one device, and which: a GPU by its bus ID, an RDMA port by its device.
DEVICE_CHECKS = {"gpu_xid": "gpu", "nvlink_fabric_health": "gpu", "nvlink_fabric_registration": "gpu",
                 "rdma_port_state": "nic", "rdma_port_rate": "nic"}
_GPU_TARGET = re.compile(r"/GPU (?:[0-9A-Fa-f]{1,8}:)?([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})(?:\.[0-7])?$")
_NIC_TARGET = re.compile(r"/([A-Za-z0-9_.-]{1,64})/[0-9]{1,3}$")
_BUS = re.compile(r"^([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})(?:\.[0-7])?$")


def served_version(resource_lists):
    """{version: the APIResourceList of /apis/resource.k8s.io/<version>, or None where not served} -> the newest of
    API_VERSIONS that lists devicetaintrules, or None."""
    for api in API_VERSIONS:
        listing = resource_lists.get(api.split("/", 1)[1]) or {}
        names = [r.get("name") for r in listing.get("resources") or [] if isinstance(r, dict)]
        if "devicetaintrules" in names:
            return api
    return None


def _bus_key(text):
    match = _BUS.match(str(text or "").strip())
    return (int(match.group(1), 16), int(match.group(2), 16), int(match.group(3), 16)) if match else None


def _attribute(device, name):
    value = (device.get("attributes") or {}).get(name)
    return value.get("string") if isinstance(value, dict) else None


def _items(listing, kind):
    items = listing.get("items") if isinstance(listing, dict) else None
    if not isinstance(items, list):
        raise ValueError("the %s list has no items list" % kind)
    return items


def slice_devices(slices):
    """A ResourceSliceList (kubectl get resourceslices -o json) -> {node: {"gpu": {bus key: device}, "nic": {RDMA device:
    device}}}, each device {driver, pool, device}: the GPU driver's by pciBusID, dranet's by rdmaDevice. A slice of
    another shape raises ValueError."""
    found = {}
    for item in _items(slices, "ResourceSlice"):
        spec = item.get("spec") if isinstance(item, dict) else None
        if not isinstance(spec, dict) or not isinstance(spec.get("pool"), dict) or not isinstance(spec.get("devices", []), list):
            raise ValueError("a ResourceSlice without a spec, a pool or a devices list: %r" % (item,))
        node, driver, pool = spec.get("nodeName"), spec.get("driver"), spec["pool"].get("name")
        if not node or driver not in (GPU_DRIVER, NIC_DRIVER) or not pool:
            continue       # another driver's, or not one node's
        mine = found.setdefault(node, {"gpu": {}, "nic": {}})
        for device in spec.get("devices") or []:
            if not isinstance(device, dict) or not device.get("name"):
                continue
            chosen = {"driver": driver, "pool": pool, "device": device["name"]}
            if driver == GPU_DRIVER and _bus_key(_attribute(device, PCI_BUS_ID)):
                mine["gpu"].setdefault(_bus_key(_attribute(device, PCI_BUS_ID)), chosen)
            elif driver == NIC_DRIVER and _attribute(device, RDMA_DEVICE):
                mine["nic"].setdefault(_attribute(device, RDMA_DEVICE), chosen)
    return found


def finding_device(key, devices):
    """A finding's key ('check|target') and the node's slice_devices entry -> (the device, None) or (None, why not)."""
    check, _sep, target = str(key).partition("|")
    kind = DEVICE_CHECKS.get(check)
    if kind is None:
        return None, "%s names no one device" % check
    if kind == "gpu":
        match = _GPU_TARGET.search(target)
        wanted = (int(match.group(1), 16), int(match.group(2), 16), int(match.group(3), 16)) if match else None
    else:
        match = _NIC_TARGET.search(target)
        wanted = match.group(1) if match else None
    if wanted is None:
        return None, "%s's target %s names no %s" % (check, target, "GPU bus ID" if kind == "gpu" else "RDMA port")
    device = ((devices or {}).get(kind) or {}).get(wanted)
    if device is None:
        return None, "no ResourceSlice of %s lists %s" % (GPU_DRIVER if kind == "gpu" else NIC_DRIVER, target)
    return device, None


def rule_name(node, device):
    """The DeviceTaintRule's name: gpufabric-<node>-<device>, lower-case, or with a digest where that is not a name."""
    name = re.sub(r"[^a-z0-9.-]", "-", ("gpufabric-%s-%s" % (node, device)).lower()).strip("-.")
    try:
        return k8s.dns_subdomain(name, "the DeviceTaintRule name")
    except k8s.ManifestError:
        return "gpufabric-" + hashlib.sha256(("%s/%s" % (node, device)).encode()).hexdigest()[:32]


def node_label(node):
    """The node as a label value (its digest where the name is longer or not one)."""
    try:
        return k8s.label_value(str(node), "the node label")
    except k8s.ManifestError:
        return hashlib.sha256(str(node).encode()).hexdigest()[:63]


def taint_rules(node, findings, devices, api_version):
    """The DeviceTaintRules of a drain of ``node`` for ``findings`` (its keys), one per device (the first finding of a
    device names its taint) -> (rules, None), or (None, why the node is cordoned instead)."""
    if not findings:
        return None, "the drain names no finding"
    rules, seen = [], set()
    for key in findings:
        device, why = finding_device(key, devices)
        if device is None:
            return None, why
        ident = (device["driver"], device["pool"], device["device"])
        if ident in seen:
            continue
        seen.add(ident)
        check = str(key).split("|", 1)[0]
        name = rule_name(node, "%s-%s" % (device["driver"].split(".")[0], device["device"]))
        rules.append({
            "apiVersion": api_version, "kind": "DeviceTaintRule",
            "metadata": {"name": name, "labels": {MANAGED_BY[0]: MANAGED_BY[1], NODE_LABEL: node_label(node)},
                         "annotations": {FINDING_ANNOTATION: str(key)[:1000], NODE_LABEL: str(node)}},
            "spec": {"deviceSelector": dict(device),
                     "taint": {"key": TAINT_KEY, "value": taint_value(check), "effect": "NoSchedule"}}})
    return rules, None


def ours(rule_list):
    """A DeviceTaintRuleList -> {node: [our rules]}: ours by the managed-by label, the node by our annotation (else the
    pool, which both drivers name after the node)."""
    found = {}
    for item in _items(rule_list, "DeviceTaintRule"):
        metadata = item.get("metadata") if isinstance(item, dict) else None
        spec = item.get("spec") if isinstance(item, dict) else None
        if not isinstance(metadata, dict) or not isinstance(spec, dict):
            raise ValueError("a DeviceTaintRule without metadata or spec: %r" % (item,))
        if (metadata.get("labels") or {}).get(MANAGED_BY[0]) != MANAGED_BY[1]:
            continue
        node = (metadata.get("annotations") or {}).get(NODE_LABEL) or (spec.get("deviceSelector") or {}).get("pool")
        if node:
            found.setdefault(node, []).append(item)
    return found


def collection_path(api_version, name=None):
    """The API path of the DeviceTaintRules (cluster-scoped), or of one."""
    return "/apis/%s/devicetaintrules%s" % (api_version, "/" + name if name else "")
