# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the fabric topology: the switch tree, the host -> leaf map, NVLink domains, Slurm's topology.conf,
rails for NCCL and the cabling check (thin wrappers over module_utils/topology/). They take the readers' results
or the tools' text; the filters that read ibnetdiscover, LLDP and nvidia-smi's Fabric section (parse_*) are in
parsers.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ibnetdiscover as _ibnetdiscover
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import cabling as _cabling, host_leaf as _host_leaf, labels as _labels, nvlink as _nvlink
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import rails as _rails, slurm_conf as _slurm_conf, tree as _tree
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    TEXT, Mapping, Sequence, expect, fail, filters, is_tool_text, plain, tool_text)


def _mapping(name, value, what):
    return plain(expect(name, value, (Mapping,), what))


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


def fabric_tree(parsed):
    if is_tool_text(parsed):
        parsed = _ibnetdiscover.parse_ibnetdiscover(tool_text("fabric_tree", parsed, "ibnetdiscover's text"))
    return _tree.fabric_tree(_mapping("fabric_tree", parsed, "parse_ibnetdiscover's result or ibnetdiscover's text"))


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
        lldp_interfaces = plain(expect("host_leaf_map", lldp_interfaces, (list, tuple), "lldp_interfaces as a list of names"))
    if ibnetdiscover is None and lldp is None and user_map is None:
        fail("host_leaf_map", "needs at least one source: ibnetdiscover (the input), lldp= or user_map=")
    return _host_leaf.host_leaf_map(ibnetdiscover=ibnetdiscover, lldp=lldp, user_map=user_map, lldp_interfaces=lldp_interfaces)


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
                                           block_sizes=plain(block_sizes), block_prefix=block_prefix)


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
        lldp_interfaces = plain(expect("observed_attachment", lldp_interfaces, (list, tuple), "lldp_interfaces as a list"))
    return _cabling.observed_attachment(ibnetdiscover=ibnetdiscover, lldp=lldp, lldp_interfaces=lldp_interfaces)


def cabling_check(observed, expected=None, rail_nics=None, rail_leaves=None):
    observed = _mapping("cabling_check", observed, "observed_attachment's result (a mapping of host to {nic: leaf})")
    if expected is not None and not isinstance(expected, TEXT):
        expected = _mapping("cabling_check", expected, "expected as {host: leaf} or {host: {nic: leaf}}")
    if isinstance(rail_nics, TEXT):
        rail_nics = [n for n in rail_nics.lstrip("=").split(",") if n]   # an NCCL_IB_HCA value works too
    return _cabling.cabling_check(observed, expected=expected, rail_nics=plain(rail_nics), rail_leaves=plain(rail_leaves))


class FilterModule(object):
    def filters(self):
        return filters({"fabric_tree": fabric_tree, "host_leaf_map": host_leaf_map, "nvlink_domains": nvlink_domains,
                        "slurm_topology_conf": slurm_topology_conf, "rail_report": rail_report,
                        "observed_attachment": observed_attachment, "cabling_check": cabling_check,
                        "topology_node_labels": topology_node_labels})
