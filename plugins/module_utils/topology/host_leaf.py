# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Which leaf switch every host hangs off, from the sources in order of trust: ibnetdiscover (the
fabric as the subnet manager sees it), LLDP (each host's own neighbours, per NIC), then the inventory's
host -> leaf map.

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.ibnetdiscover import as_parsed
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.lldp import parse_lldp_neighbors
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError, short
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.tree import fabric_tree
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


def _lldp_parsed(value, host):
    if isinstance(value, dict) and "interfaces" in value and "format" in value:
        return value
    if isinstance(value, dict) and "stdout" in value:
        value = value["stdout"]
    try:
        return parse_lldp_neighbors(value)
    except TopologyError as exc:
        raise TopologyError("LLDP data of %s: %s" % (host, exc))


def _matches(ifname, patterns):
    if not patterns:
        return True
    return any(ifname == p or (p.endswith("*") and ifname.startswith(p[:-1])) for p in patterns)


def lldp_host_leaves(per_host, interfaces=None):
    """{host: lldpcli output or parse_lldp_neighbors result} -> {host: {leaf, leaves, nics: {interface:
    {leaf, port}}}}: the switch (SysName, else chassis ID) on the far end of each interface. interfaces:
    names or 'prefix*' patterns to look at (e.g. the RDMA netdevs), all when None."""
    if not isinstance(per_host, dict):
        raise TopologyError("LLDP data must be a mapping of host to lldpcli output, got %s" % type(per_host).__name__)
    result = {}
    for host in sorted(per_host, key=natural_key):
        parsed = _lldp_parsed(per_host[host], host)
        nics = {}
        for ifname, neighbour in parsed["interfaces"].items():
            if not _matches(ifname, interfaces):
                continue
            leaf = neighbour["chassis_name"] or neighbour["chassis_id"]
            if leaf:
                nics[ifname] = {"leaf": leaf, "port": neighbour["port_id"] or neighbour["port_description"]}
        if not nics:
            continue
        counts = {}
        for nic in nics.values():
            counts[nic["leaf"]] = counts.get(nic["leaf"], 0) + 1
        leaves = sorted(counts, key=natural_key)
        result[host] = {"leaf": sorted(leaves, key=lambda l: (-counts[l], natural_key(l)))[0],
                        "leaves": leaves, "nics": nics}
    return result


def user_leaf_map(user_map):
    """The inventory's host -> leaf map ({host: leaf}, {host: {leaf: ...}} or '<host> <leaf>' lines) -> {host: leaf},
    or TopologyError naming the entry that is not a host and a leaf."""
    if isinstance(user_map, str):
        entries = {}
        for number, line in enumerate(_text.clean_lines(user_map, "host to leaf map"), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = re.split(r"[\s:=,]+", line)
            if len(parts) != 2:
                raise TopologyError("host to leaf map line %d %r is not '<host> <leaf>'" % (number, short(line)))
            entries[parts[0]] = parts[1]
        user_map = entries
    if not isinstance(user_map, dict):
        raise TopologyError("user_map must be a mapping of host to leaf switch, got %s" % type(user_map).__name__)
    result = {}
    for host, leaf in user_map.items():
        if isinstance(leaf, dict):
            leaf = leaf.get("leaf")
        if not isinstance(host, str) or not isinstance(leaf, str) or not leaf:
            raise TopologyError("user_map: %r -> %r is not a host name and a leaf switch name" % (host, leaf))
        result[host] = leaf
    return result


def host_leaf_map(ibnetdiscover=None, lldp=None, user_map=None, lldp_interfaces=None):
    """host -> leaf from up to three sources, per host the first that knows it: ibnetdiscover (the fabric
    as the subnet manager sees it), then LLDP (each host's own neighbours), then user_map (the inventory).

    ibnetdiscover: its text, parse_ibnetdiscover's or fabric_tree's result. lldp: {host: lldpcli output or
    parse_lldp_neighbors result}. user_map: {host: leaf} or '<host> <leaf>' lines.
    Returns {hosts: {host: {leaf, leaves, source}}, leaf_spines (from ibnetdiscover), by_source: counts,
    conflicts: sentences where a later source disagrees, warnings}."""
    candidates = []
    leaf_spines = {}
    warnings = []
    if ibnetdiscover is not None:
        tree = as_parsed(ibnetdiscover)
        if "leaves" not in tree:
            tree = fabric_tree(tree)
        leaf_spines = tree["leaf_spines"]
        warnings.extend(tree.get("warnings", []))
        candidates.append(("ibnetdiscover", dict((h, {"leaf": tree["host_leaf"][h], "leaves": tree["host_leaves"][h]})
                                                 for h in tree["host_leaf"])))
    if lldp is not None:
        found = lldp_host_leaves(lldp, lldp_interfaces)
        candidates.append(("lldp", dict((h, {"leaf": v["leaf"], "leaves": v["leaves"]}) for h, v in found.items())))
    if user_map is not None:
        candidates.append(("user_map", dict((h, {"leaf": l, "leaves": [l]}) for h, l in user_leaf_map(user_map).items())))
    hosts, conflicts = {}, []
    by_source = dict((name, 0) for name, found in candidates)
    for name, found in candidates:
        for host in sorted(found, key=natural_key):
            if host in hosts:
                if found[host]["leaf"] not in hosts[host]["leaves"]:
                    kept = hosts[host]
                    conflicts.append("%s: %s says %s, %s says %s (%s kept)" % (
                        host, kept["source"], kept["leaf"], name, found[host]["leaf"], kept["source"]))
                continue
            hosts[host] = {"leaf": found[host]["leaf"], "leaves": found[host]["leaves"], "source": name}
            by_source[name] += 1
    return {"hosts": dict(sorted(hosts.items(), key=lambda i: natural_key(i[0]))), "leaf_spines": leaf_spines,
            "by_source": by_source, "conflicts": conflicts, "warnings": warnings}
