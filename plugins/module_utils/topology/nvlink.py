# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink domains across hosts: the hosts that share one (cluster UUID, clique ID), from each host's
nvidia-smi -q Fabric section (parse/nvidia_smi_fabric.py) or gpu_facts' fabric fact, and why a host has none;
and one node's place in the rack (its domain, chassis, slot and tray) from its GPUs' Fabric and Platform Info.

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


def nvlink_domains(per_host):
    """{host: nvidia-smi -q text/XML, parse_nvidia_smi_fabric's result, gpu_facts' fabric or None} -> {domains: [{cluster_uuid,
    clique_id, hosts}], host_domain: {host: 'uuid/clique' or None}, no_domain: {host: reason}, warnings}.
    Domains are ordered by their first host, in natural order."""
    if not isinstance(per_host, dict):
        raise TopologyError("nvlink_domains needs a mapping of host to nvidia-smi -q output, got %s" % type(per_host).__name__)
    groups, host_domain, no_domain, warnings = {}, {}, {}, []
    for host in sorted(per_host, key=natural_key):
        value = per_host[host]
        if value is None:
            host_domain[host] = None
            no_domain[host] = "no NVLink facts for this host (run gpufabric.rdma.discover)"
            continue
        if not (isinstance(value, dict) and "domain" in value):   # parse_nvidia_smi_fabric's or gpu_facts' fabric
            try:
                value = parse_nvidia_smi_fabric(value)
            except (TopologyError, _text.TextError) as exc:
                raise TopologyError("nvidia-smi output of %s: %s" % (host, exc))
        warnings.extend("%s: %s" % (host, w) for w in value.get("warnings", []))
        domain = value["domain"]
        if not domain:
            host_domain[host] = None
            no_domain[host] = value.get("reason") or "no NVLink domain"
            continue
        key = (domain["cluster_uuid"], int(domain["clique_id"]))
        groups.setdefault(key, []).append(host)
        host_domain[host] = "%s/%d" % key
    domains = [{"cluster_uuid": key[0], "clique_id": key[1], "hosts": hosts} for key, hosts in groups.items()]
    domains.sort(key=lambda d: natural_key(d["hosts"][0]))
    return {"domains": domains, "host_domain": host_domain, "no_domain": no_domain, "warnings": warnings}
