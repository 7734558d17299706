# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The Fabric section of `nvidia-smi -q` (text) and `nvidia-smi -q -x` (XML): each GPU's NVLink fabric
state, status, clique ID, cluster UUID and Health rows, its Platform Info (the rack's chassis, the tray, the module),
and the node's NVLink domain or why it has none.

Pure functions, standard library only, Python 3.8. The parser reads line by line with anchored regular
expressions whose repetitions cannot overlap, so its time is linear in the input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as _gpu
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError, short
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text


# The cluster UUID of a GPU whose NVLink ends at its node (HGX boards) or that has no domain yet; what a UUID looks like.
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_ZERO_UUID = ZERO_UUID
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_GPU_LINE_RE = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KV_LINE_RE = re.compile(r"^( *)([A-Za-z][A-Za-z0-9 ()/_.-]{0,60}?)\s*:\s?(.*)$")
_NUMBER_RE = re.compile(r"^[0-9]{1,10}\Z")
_FABRIC_KEYS = {"State": "state", "Status": "status", "CliqueId": "clique_id", "ClusterUUID": "cluster_uuid"}
# The Health rows under Fabric, as the text prints them and as the XML names them; R550/R560 print Bandwidth alone,
# R570 four or five rows, R575 and later seven (Incorrect Configuration, Partition Assigned where the driver has them).
HEALTH_ROWS = (("Summary", "summary"), ("Bandwidth", "bandwidth"), ("Route Recovery in progress", "route_recovery_in_progress"),
               ("Route Unhealthy", "route_unhealthy"), ("Access Timeout Recovery", "access_timeout_recovery"),
               ("Incorrect Configuration", "incorrect_configuration"), ("Partition Assigned", "partition_assigned"))
HEALTH_KEYS = tuple(key for label, key in HEALTH_ROWS)
# Platform Info (R560 and later): where the GPU sits - the rack's chassis, the tray and its slot, the module on it.
PLATFORM_ROWS = (("Chassis Serial Number", "chassis_serial", "chassis_serial_number"), ("Slot Number", "slot_number", "slot_number"),
                 ("Tray Index", "tray_index", "tray_index"), ("Host ID", "host_id", "host_id"),
                 ("Peer Type", "peer_type", "peer_type"), ("Module Id", "module_id", "module_id"),
                 ("GPU Fabric GUID", "gpu_fabric_guid", "gpu_fabric_guid"))
PLATFORM_NUMBERS = ("slot_number", "tray_index", "host_id", "module_id")
_SECTION_KEYS = {"fabric": _FABRIC_KEYS, "health": dict(HEALTH_ROWS),
                 "platform": dict((label, key) for label, key, tag in PLATFORM_ROWS)}
_NA = ("", "N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown")


def _fabric_value(value):
    value = (value or "").strip()
    return None if value in _NA else value


def _platform(values):
    """The Platform Info values read, the numbers as numbers; every key present."""
    platform = dict((key, values.get(key)) for label, key, tag in PLATFORM_ROWS)
    for key in PLATFORM_NUMBERS:
        if platform[key] is not None:
            platform[key] = int(platform[key]) if _NUMBER_RE.match(platform[key]) else None
    return platform


def _open_section(gpus, gpu, name):
    """The GPU a 'Fabric' or 'Platform Info' line belongs to: the current one, or a new one without a bus id when
    the text has no GPU line (`nvidia-smi -q | grep -C3 CliqueId` keeps the blocks and drops the GPU lines)."""
    if gpu is None or name in gpu:
        gpu = {"bus_id": None, "name": None}
        gpus.append(gpu)
    gpu[name] = {}
    return gpu


def _fabric_text(lines):
    """One pass: GPU lines open a GPU; 'Fabric', 'Health' under it and 'Platform Info' open a section that lasts
    while the lines are indented deeper than its own line."""
    gpus = []
    gpu = None
    sections = []   # (name, indent) from the outermost open section in
    for line in lines:
        match = _GPU_LINE_RE.match(line.strip()) if not line.startswith(" ") else None
        if match:
            gpu = {"bus_id": match.group(1), "name": None}
            gpus.append(gpu)
            sections = []
            continue
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip(" "))
        while sections and indent <= sections[-1][1]:
            sections.pop()
        if stripped in ("Fabric", "Platform Info") and not sections:
            name = "fabric" if stripped == "Fabric" else "platform"
            gpu = _open_section(gpus, gpu, name)
            sections = [(name, indent)]
            continue
        if gpu is None:
            continue
        if stripped == "Health" and [s for s, i in sections] == ["fabric"]:
            gpu["health"] = {}
            sections.append(("health", indent))
            continue
        match = _KV_LINE_RE.match(line)
        if not match:
            continue
        if not sections:
            if match.group(2) == "Product Name" and gpu["name"] is None:
                gpu["name"] = _fabric_value(match.group(3))
            continue
        section = sections[-1][0]
        key = _SECTION_KEYS[section].get(match.group(2))
        if key:
            gpu[section][key] = _fabric_value(match.group(3))
    return gpus


def _fabric_xml(root):
    gpus = []
    for element in root.findall("gpu"):
        gpu = {"bus_id": element.get("id"), "name": _gpu.xml_text(element, "product_name")}
        fabric = element.find("fabric")
        if fabric is not None:
            gpu["fabric"] = {"state": _fabric_value(_gpu.xml_text(fabric, "state")),
                             "status": _fabric_value(_gpu.xml_text(fabric, "status")),
                             "clique_id": _fabric_value(_gpu.xml_text(fabric, "cliqueId")),
                             "cluster_uuid": _fabric_value(_gpu.xml_text(fabric, "clusterUuid"))}
            gpu["health"] = dict((key, _fabric_value(_gpu.xml_text(fabric, "health/" + key))) for key in HEALTH_KEYS)
        platform = element.find("platformInfo")
        if platform is not None:
            gpu["platform"] = dict((key, _fabric_value(_gpu.xml_text(platform, tag))) for label, key, tag in PLATFORM_ROWS)
        gpus.append(gpu)
    return gpus


def _fabric_problem(fabric, record):
    """Why this GPU gives no NVLink domain, or None when it gives one."""
    if fabric is None:
        return "no Fabric section (a driver before R550, or no NVLink fabric)"
    if record["state"] is None:
        return "fabric State is N/A (no NVLink fabric)"
    if record["state"] != "Completed":
        return "fabric registration is %s, not Completed" % record["state"]
    if record["status"] != "Success":
        return "fabric Status is %s" % record["status"]
    uuid = (record["cluster_uuid"] or "").lower()
    if not UUID_RE.match(uuid):
        return "ClusterUUID %r is not a UUID" % short(record["cluster_uuid"] or "")
    if uuid == ZERO_UUID:
        return ("ClusterUUID is all zeros: NVLink ends at this node (NVSwitch inside the node, no multi-node NVLink)")
    if not record["clique_id"] or not re.match(r"^[0-9]{1,10}\Z", record["clique_id"]):
        return "CliqueId %r is not a number" % short(record["clique_id"] or "")
    return None


def _gpus_of_text(text):
    """nvidia-smi -q text or -q -x XML -> (each GPU's fabric, Health and Platform Info rows, the cleaned text)."""
    cleaned = _text.clean(text, "nvidia-smi -q output").strip()
    if cleaned.startswith("<"):
        try:
            return _fabric_xml(_gpu.nvidia_smi_root(cleaned)), cleaned
        except _gpu.GpuParseError as exc:
            raise TopologyError(str(exc))
    return _fabric_text(cleaned.splitlines()), cleaned


def parse_nvidia_smi_fabric(text):
    """`nvidia-smi -q` (text) or `nvidia-smi -q -x` (XML) -> the node's NVLink domain.

    {gpus: [{index, bus_id, name, state, status, clique_id, cluster_uuid, health_summary, health, platform}],
    domain: {cluster_uuid, clique_id} or None, reason, warnings}. ``health`` has every key of HEALTH_KEYS (None where
    the driver printed N/A or no such row); ``platform`` is None without a Platform Info block, else every key of
    PLATFORM_ROWS (slot, tray, host and module as numbers). A Platform Info block alone (a grep of it) is a GPU
    without a fabric. A GPU counts when State is Completed,
    Status is Success and the cluster UUID is not all zeros (HGX H100/H200 report Completed/Success with
    a zero UUID: their NVLink ends at the node, so they have no multi-node domain). The node's domain is
    its GPUs' one (cluster UUID, clique ID); GPUs that disagree give none, with the reason. ``text`` may also be
    parse/gpu.nvidia_smi_root's element, so a caller that parsed `-q -x` once (node_checks) does not parse it again."""
    if isinstance(text, dict) and "stdout" in text:
        text = text["stdout"]
    if getattr(text, "tag", None) == "nvidia_smi_log":   # parse/gpu.nvidia_smi_root's element: XML a caller read once
        gpus, cleaned = _fabric_xml(text), "<"
    else:
        gpus, cleaned = _gpus_of_text(text)
    if not gpus:
        raise TopologyError("no GPU in the nvidia-smi -q output (expected 'GPU 00000000:..' blocks or <gpu> elements)%s"
                            % ("" if cleaned else ": empty input"))
    records, keys, reasons, warnings = [], set(), [], []
    for index, gpu in enumerate(gpus):
        fabric = gpu.get("fabric")
        health = gpu.get("health") or {}
        record = {"index": index, "bus_id": gpu["bus_id"], "name": gpu["name"], "state": None, "status": None,
                  "clique_id": None, "cluster_uuid": None, "health_summary": health.get("summary"),
                  "health": dict((key, health.get(key)) for key in HEALTH_KEYS),
                  "platform": _platform(gpu["platform"]) if "platform" in gpu else None}
        if fabric:
            record.update(dict((k, fabric.get(k)) for k in ("state", "status", "clique_id", "cluster_uuid")))
        records.append(record)
        problem = _fabric_problem(fabric, record)
        if problem:
            reasons.append(("GPU %d%s" % (index, " (%s)" % gpu["bus_id"] if gpu["bus_id"] else ""), problem))
            continue
        if record["health_summary"] and record["health_summary"] != "Healthy":
            warnings.append("GPU %d: fabric health is %s" % (index, record["health_summary"]))
        keys.add((record["cluster_uuid"].lower(), int(record["clique_id"])))
    domain, reason = None, None
    if len(keys) == 1 and not reasons:
        uuid, clique = keys.pop()
        domain = {"cluster_uuid": uuid, "clique_id": clique}
    elif len(keys) > 1:
        reason = "the GPUs are in different NVLink domains: %s" % ", ".join("%s/%d" % key for key in sorted(keys))
    elif keys:
        uuid, clique = keys.pop()
        reason = "some GPUs are in domain %s/%d, but %s: %s" % (uuid, clique, reasons[0][0], reasons[0][1])
    elif len(reasons) > 1 and len(set(text for where, text in reasons)) == 1:
        reason = "all %d GPUs: %s" % (len(reasons), reasons[0][1])
    else:
        reason = "; ".join("%s: %s" % pair for pair in reasons)
    return {"gpus": records, "domain": domain, "reason": reason, "warnings": warnings}
