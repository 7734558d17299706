# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""NVLink domains across hosts: the hosts that share one (cluster UUID, clique ID), from each host's
nvidia-smi -q Fabric section (parse/nvidia_smi_fabric.py) or gpu_facts' fabric fact, and why a host has none;
one node's place in the rack (its domain, chassis, slot and tray) from its GPUs' Fabric and Platform Info; and the
fabric fact gpu_facts keeps (that place and each GPU's registration, IDs, Health rows and Platform Info).

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import parse_nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


def _parsed(value, what):
    if isinstance(value, dict) and "gpus" in value:
        return value
    if not isinstance(value, (str, bytes)):
        raise TopologyError("%s needs parse_nvidia_smi_fabric's result or nvidia-smi -q output, got %s"
                            % (what, type(value).__name__))
    try:
        return parse_nvidia_smi_fabric(value)
    except _text.TextError as exc:
        raise TopologyError(str(exc))


def node_domain(fabric):
    """parse_nvidia_smi_fabric's result (or nvidia-smi -q text/XML) -> one node's place in the rack:
    {domain: 'uuid/clique' or None, cluster_uuid, clique_id, chassis_serial, slot_number, tray_index, host_id, reason}.

    The domain is the GPUs' one (cluster UUID, clique ID), as parse_nvidia_smi_fabric decides it; the chassis, slot,
    tray and host ID are the Platform Info values every GPU that prints them agrees on (a GB200/GB300 compute tray
    names its rack's chassis; an HGX board, a PCIe card or a driver before R560 names none: None). ``reason`` says
    why the domain or the chassis is None where the GPUs tell."""
    parsed = _parsed(fabric, "node_domain")
    domain = parsed.get("domain")
    place, reasons = {}, [parsed.get("reason")] if parsed.get("reason") else []
    for key in ("chassis_serial", "slot_number", "tray_index", "host_id"):
        values = set((gpu.get("platform") or {}).get(key) for gpu in parsed["gpus"]) - {None}
        place[key] = values.pop() if len(values) == 1 else None
        if len(values) > 1 and key == "chassis_serial":
            reasons.append("the GPUs name different chassis: %s" % ", ".join(sorted(str(v) for v in values)))
    if place["chassis_serial"] in ("0", ""):
        place["chassis_serial"] = None
    result = {"domain": "%s/%d" % (domain["cluster_uuid"], domain["clique_id"]) if domain else None,
              "cluster_uuid": domain["cluster_uuid"] if domain else None,
              "clique_id": domain["clique_id"] if domain else None, "reason": "; ".join(reasons) or None}
    result.update(place)
    return result


# What the fabric fact keeps of each GPU: what judge/nvlink_fabric reads (registration, IDs, Health rows, Platform
# Info). Like an RDMA port's state, these change when the fabric does, not from one reading to the next.
FABRIC_GPU_KEYS = ("index", "bus_id", "name", "state", "status", "clique_id", "cluster_uuid", "health", "platform")
PLACE_KEYS = ("domain", "cluster_uuid", "clique_id", "chassis_serial", "slot_number", "tray_index", "host_id", "reason")


def fabric_fact(fabric):
    """parse_nvidia_smi_fabric's result (or nvidia-smi -q text/XML) -> what gpu_facts keeps as ``fabric``:
    node_domain's keys and ``gpus`` (each GPU's FABRIC_GPU_KEYS), which nvlink_fabric_findings judges."""
    parsed = _parsed(fabric, "fabric_fact")
    fact = node_domain(parsed)
    fact["gpus"] = [dict((key, gpu.get(key)) for key in FABRIC_GPU_KEYS) for gpu in parsed["gpus"]]
    return fact


def record_place(fabric):
    """A node's fabric in any shape it was kept in -> node_domain's keys (PLACE_KEYS; None where not known):
    gpu_facts' fabric fact, the one records made before it kept the chassis ({domain: {cluster_uuid, clique_id},
    reason}), parse_nvidia_smi_fabric's result, or None (no facts)."""
    place = dict.fromkeys(PLACE_KEYS)
    if fabric is None:
        place["reason"] = "no NVLink facts for this host (run gpufabric.rdma.discover)"
        return place
    if isinstance(fabric, dict) and "chassis_serial" in fabric:      # gpu_facts' fabric fact
        place.update((key, fabric.get(key)) for key in PLACE_KEYS)
        return place
    if isinstance(fabric, dict) and "gpus" not in fabric and isinstance(fabric.get("domain", False), (dict, type(None))):
        domain = fabric.get("domain") or {}                            # a record made before the chassis was kept
        if domain.get("cluster_uuid"):
            place.update(domain="%s/%d" % (str(domain["cluster_uuid"]).lower(), int(domain["clique_id"])),
                         cluster_uuid=str(domain["cluster_uuid"]).lower(), clique_id=int(domain["clique_id"]))
        place["reason"] = fabric.get("reason")
        return place
    return node_domain(fabric)


def nvlink_domains(per_host):
    """{host: nvidia-smi -q text/XML, parse_nvidia_smi_fabric's result, gpu_facts' fabric or None} -> {domains: [{cluster_uuid,
    clique_id, hosts, chassis}], host_domain: {host: 'uuid/clique' or None}, host_place: {host: {chassis_serial,
    slot_number, tray_index}}, no_domain: {host: reason}, warnings}. ``chassis`` lists the chassis serials the domain's
    trays name (a GB200/GB300 rack's; none for hosts that name none). Domains are ordered by their first host, in
    natural order."""
    if not isinstance(per_host, dict):
        raise TopologyError("nvlink_domains needs a mapping of host to nvidia-smi -q output, got %s" % type(per_host).__name__)
    groups, host_domain, host_place, no_domain, warnings = {}, {}, {}, {}, []
    for host in sorted(per_host, key=natural_key):
        value = per_host[host]
        try:
            if isinstance(value, (str, bytes)):
                value = parse_nvidia_smi_fabric(value)
            place = record_place(value)
        except (TopologyError, _text.TextError) as exc:
            raise TopologyError("nvidia-smi output of %s: %s" % (host, exc))
        if isinstance(value, dict) and "warnings" in value:        # parse_nvidia_smi_fabric's result
            warnings.extend("%s: %s" % (host, w) for w in value["warnings"])
        host_place[host] = dict((key, place[key]) for key in ("chassis_serial", "slot_number", "tray_index"))
        if not place["domain"]:
            host_domain[host] = None
            no_domain[host] = place["reason"] or "no NVLink domain"
            continue
        key = (str(place["cluster_uuid"]).lower(), int(place["clique_id"]))
        groups.setdefault(key, []).append(host)
        host_domain[host] = "%s/%d" % key
    domains = [{"cluster_uuid": key[0], "clique_id": key[1], "hosts": hosts,
                "chassis": sorted(set(host_place[h]["chassis_serial"] for h in hosts) - {None})}
               for key, hosts in groups.items()]
    domains.sort(key=lambda d: natural_key(d["hosts"][0]))
    return {"domains": domains, "host_domain": host_domain, "host_place": host_place, "no_domain": no_domain,
            "warnings": warnings}
