# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the fabric topology: ibnetdiscover, LLDP and nvidia-smi's Fabric section read, the
host -> leaf map, Slurm's topology.conf, rails for NCCL and the cabling check (thin wrappers over
the readers module_utils/parse/ibnetdiscover.py, lldp.py and nvidia_smi_fabric.py, and
module_utils/topology/)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ibnetdiscover as _ibnetdiscover, lldp as _lldp
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nvidia_smi_fabric as _nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import cabling as _cabling, host_leaf as _host_leaf, labels as _labels, nvlink as _nvlink
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import rails as _rails, slurm_conf as _slurm_conf, tree as _tree
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import TEXT, Mapping, Sequence, expect, fail, filters


def _plain(value):
    """Ansible's lazy and tagged containers as plain dicts and lists, so the pure code sees one kind."""
    if isinstance(value, Mapping):
        return dict((key, _plain(item)) for key, item in value.items())
    if isinstance(value, Sequence) and not isinstance(value, TEXT):
        return [_plain(item) for item in value]
    return value


def _text(name, value, what):
    if isinstance(value, Mapping) and "stdout" in value:
        value = value["stdout"]   # a registered command result works as it is
    return expect(name, value, TEXT, what)


def _mapping(name, value, what):
    return _plain(expect(name, value, (Mapping,), what))


def _per_host(name, value, what):
    """{host: output or registered result}; a registered loop result (results: [{item, stdout}]) works too."""
    if isinstance(value, Mapping) and isinstance(value.get("results"), Sequence) and not isinstance(value.get("results"), TEXT):
        hosts = {}
        for index, result in enumerate(value["results"]):
            if not isinstance(result, Mapping) or not isinstance(result.get("item"), TEXT):
                fail(name, "expects %s; results[%d] has no host name in 'item'" % (what, index))
            hosts[result["item"]] = result.get("stdout", "")
        return hosts
    value = _mapping(name, value, what)
    for host, output in value.items():
        if not isinstance(host, TEXT):
            fail(name, "expects %s; key %r is not a host name" % (what, host))
        if isinstance(output, Mapping) and "stdout" in output and "gpu_nics" not in output:
            value[host] = output["stdout"]
    return value


def parse_ibnetdiscover(value, node_name_map=None):
    if node_name_map is not None and not isinstance(node_name_map, TEXT):
        node_name_map = _mapping("parse_ibnetdiscover", node_name_map, "node_name_map as {GUID: name} or the map file's text")
    return _ibnetdiscover.parse_ibnetdiscover(_text("parse_ibnetdiscover", value, "ibnetdiscover's text (or a registered result)"),
                                              node_name_map=node_name_map)


def fabric_tree(parsed):
    if isinstance(parsed, TEXT) or (isinstance(parsed, Mapping) and "stdout" in parsed):
        parsed = _ibnetdiscover.parse_ibnetdiscover(_text("fabric_tree", parsed, "ibnetdiscover's text"))
    return _tree.fabric_tree(_mapping("fabric_tree", parsed, "parse_ibnetdiscover's result or ibnetdiscover's text"))


def parse_lldp_neighbors(value):
    if isinstance(value, Mapping) and "lldp" in value:
        return _lldp.parse_lldp_neighbors(_plain(value))   # lldpcli -f json, already loaded by from_json
    return _lldp.parse_lldp_neighbors(_text("parse_lldp_neighbors", value, "lldpcli show neighbors output (text, json or keyvalue)"))


def host_leaf_map(ibnetdiscover=None, lldp=None, user_map=None, lldp_interfaces=None):
    if ibnetdiscover is not None and not isinstance(ibnetdiscover, TEXT):
        ibnetdiscover = _mapping("host_leaf_map", ibnetdiscover, "ibnetdiscover's text or parsed result")
    if lldp is not None:
        lldp = _per_host("host_leaf_map", lldp, "lldp as a mapping of host to lldpcli output")
    if user_map is not None and not isinstance(user_map, TEXT):
        user_map = _mapping("host_leaf_map", user_map, "user_map as a mapping of host to leaf switch")
    if lldp_interfaces is not None:
        if isinstance(lldp_interfaces, TEXT):
            lldp_interfaces = [lldp_interfaces]
        lldp_interfaces = _plain(expect("host_leaf_map", lldp_interfaces, (list, tuple), "lldp_interfaces as a list of names"))
    if ibnetdiscover is None and lldp is None and user_map is None:
        fail("host_leaf_map", "needs at least one source: ibnetdiscover (the input), lldp= or user_map=")
    return _host_leaf.host_leaf_map(ibnetdiscover=ibnetdiscover, lldp=lldp, user_map=user_map, lldp_interfaces=lldp_interfaces)


def parse_nvidia_smi_fabric(value):
    return _nvidia_smi_fabric.parse_nvidia_smi_fabric(_text("parse_nvidia_smi_fabric", value, "nvidia-smi -q (or -q -x) output"))


def nvlink_domains(per_host):
    return _nvlink.nvlink_domains(_per_host("nvlink_domains", per_host, "a mapping of host to nvidia-smi -q output"))


def slurm_topology_conf(source, plugin=None, leaf_spines=None, top_switch="top", block_sizes=None, block_prefix="block"):
    source = _mapping("slurm_topology_conf", source,
                      "fabric_tree, host_leaf_map or nvlink_domains' result, or a mapping of host to leaf switch")
    if leaf_spines is not None:
        leaf_spines = _mapping("slurm_topology_conf", leaf_spines, "leaf_spines as a mapping of leaf to its spine switches")
    for option, value in (("plugin", plugin), ("top_switch", top_switch), ("block_prefix", block_prefix)):
        if value is not None and not isinstance(value, TEXT):
            fail("slurm_topology_conf", "%s must be a string, got %r" % (option, value))
    return _slurm_conf.slurm_topology_conf(source, plugin=plugin, leaf_spines=leaf_spines, top_switch=top_switch,
                                           block_sizes=_plain(block_sizes), block_prefix=block_prefix)


def topology_node_labels(leaves=None, domains=None):
    if leaves is not None:
        leaves = _mapping("topology_node_labels", leaves, "host_leaf_map's result or a mapping of host to leaf switch")
    if domains is not None:
        domains = _mapping("topology_node_labels", domains, "nvlink_domains' result or a mapping of host to NVLink domain")
    return _labels.node_labels(leaves, domains)


def rail_report(host_topologies, nic_leaves=None):
    host_topologies = _per_host("rail_report", host_topologies, "a mapping of host to nvidia-smi topo -m (text or parsed)")
    if nic_leaves is not None:
        nic_leaves = _mapping("rail_report", nic_leaves, "nic_leaves as a mapping of host to {nic: leaf}")
    return _rails.rail_report(host_topologies, nic_leaves=nic_leaves)


def observed_attachment(ibnetdiscover=None, lldp=None, lldp_interfaces=None):
    if ibnetdiscover is not None and not isinstance(ibnetdiscover, TEXT):
        ibnetdiscover = _mapping("observed_attachment", ibnetdiscover, "ibnetdiscover's text or parsed result")
    if lldp is not None:
        lldp = _per_host("observed_attachment", lldp, "lldp as a mapping of host to lldpcli output")
    if ibnetdiscover is None and lldp is None:
        fail("observed_attachment", "needs ibnetdiscover (the input) or lldp=")
    if lldp_interfaces is not None:
        if isinstance(lldp_interfaces, TEXT):
            lldp_interfaces = [lldp_interfaces]
        lldp_interfaces = _plain(expect("observed_attachment", lldp_interfaces, (list, tuple), "lldp_interfaces as a list"))
    return _cabling.observed_attachment(ibnetdiscover=ibnetdiscover, lldp=lldp, lldp_interfaces=lldp_interfaces)


def cabling_check(observed, expected=None, rail_nics=None, rail_leaves=None):
    observed = _mapping("cabling_check", observed, "observed_attachment's result (a mapping of host to {nic: leaf})")
    if expected is not None and not isinstance(expected, TEXT):
        expected = _mapping("cabling_check", expected, "expected as {host: leaf} or {host: {nic: leaf}}")
    if isinstance(rail_nics, TEXT):
        rail_nics = [n for n in rail_nics.lstrip("=").split(",") if n]   # an NCCL_IB_HCA value works too
    return _cabling.cabling_check(observed, expected=expected, rail_nics=_plain(rail_nics), rail_leaves=_plain(rail_leaves))


class FilterModule(object):
    def filters(self):
        return filters({"parse_ibnetdiscover": parse_ibnetdiscover, "fabric_tree": fabric_tree,
                        "parse_lldp_neighbors": parse_lldp_neighbors, "host_leaf_map": host_leaf_map,
                        "parse_nvidia_smi_fabric": parse_nvidia_smi_fabric, "nvlink_domains": nvlink_domains,
                        "slurm_topology_conf": slurm_topology_conf, "rail_report": rail_report,
                        "observed_attachment": observed_attachment, "cabling_check": cabling_check,
                        "topology_node_labels": topology_node_labels})
