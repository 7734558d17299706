# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Slurm's topology.conf written from the fabric: topology/tree (a SwitchName line per leaf with its
nodes, the switches above level by level, one top switch over them all) from fabric_tree's or host_leaf_map's
result, and topology/block (one BlockName per NVLink domain, BlockSizes checked as Slurm wants) from
nvlink_domains' result. Every name is checked, and every hostlist expands back to the same nodes.

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs as _slurm_jobs
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import MAX_NODE_NAME, MAX_SWITCH_NAME, TopologyError, check_slurm_name, short
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.tree import fabric_tree
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import compress_hostlist, natural_key


_HEADER = "# Slurm topology.conf for %s, written by gpufabric.rdma (slurm_topology_conf); do not edit by hand."


def _comment(text):
    """A value on a comment line: one line, printable."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", "?", text or "")


def _check_names(names, what, limit):
    for name in names:
        check_slurm_name(name, what, limit)


def _hostlist(names, what):
    """Compressed hostlist, checked against Slurm's own expansion (slurm_jobs.expand_hostlist) before it is written."""
    text = compress_hostlist(names)
    back = _slurm_jobs.expand_hostlist(text)
    if sorted(back) != sorted(set(names)):
        raise TopologyError("%s: the hostlist %r does not expand back to the same names" % (what, short(text)))
    return text


def _tree_from_source(source, leaf_spines):
    """(leaf -> hosts, leaf -> spines, spine -> (level, children), comments per switch, notes)."""
    comments, notes = {}, []
    if isinstance(source, dict) and "switches" in source and "leaves" not in source:
        source = fabric_tree(source)
    if isinstance(source, dict) and "leaves" in source and "switch_names" in source:
        tree = source
        names = tree["switch_names"]
        leaf_hosts = {}
        # Leaves with the same hosts (the rails of one unit) become one switch: Slurm warns
        # "Multiple leaf switches contain nodes" when a node is under two leaves.
        merged = {}
        for group in tree["rail_groups"]:
            for other in group["leaves"][1:]:
                merged[other] = group["leaves"][0]
        guid_of = dict((v, k) for k, v in names.items())
        for guid, leaf in tree["leaves"].items():
            comments[leaf["name"]] = '%s "%s"' % (guid, _comment(leaf["description"]))
        host_leaf = tree["host_leaf"]
        for host, leaf in host_leaf.items():
            leaf_hosts.setdefault(merged.get(leaf, leaf), []).append(host)
        for group in tree["rail_groups"]:
            comments[group["leaves"][0]] += "; same nodes as %s (merged: one switch per set of nodes)" % ", ".join(group["leaves"][1:])
        for leaf in sorted(set(tree["leaf_hosts"]) - set(leaf_hosts) - set(merged), key=natural_key):
            notes.append("leaf %s has no named host below it (left out)" % leaf)
        for host, leaves in tree["host_leaves"].items():
            others = sorted(set(merged.get(l, l) for l in leaves) - {merged.get(host_leaf[host], host_leaf[host])}, key=natural_key)
            if others:
                notes.append("%s is also cabled to %s; listed under %s only" % (host, ", ".join(others), host_leaf[host]))
        spines = {}
        for guid, spine in tree["spines"].items():
            children = [names[c] for c in spine["children"]]
            children = sorted(set(merged.get(c, c) for c in children) & (set(leaf_hosts) | set(
                names[g] for g in tree["spines"])), key=natural_key)
            spines[spine["name"]] = (spine["level"], children)
            comments[spine["name"]] = '%s "%s"' % (guid_of[spine["name"]], _comment(spine["description"]))
        for name in tree["unreached"]:
            notes.append("switch %s reaches no host (left out)" % name)
        return leaf_hosts, spines, comments, notes
    if isinstance(source, dict) and "hosts" in source and isinstance(source["hosts"], dict):
        leaf_spines = leaf_spines if leaf_spines is not None else source.get("leaf_spines") or None
        mapping = dict((h, v["leaf"] if isinstance(v, dict) else v) for h, v in source["hosts"].items())
    elif isinstance(source, dict):
        mapping = dict((h, v["leaf"] if isinstance(v, dict) else v) for h, v in source.items())
    else:
        raise TopologyError("slurm_topology_conf needs fabric_tree's or host_leaf_map's result, or a mapping of "
                            "host to leaf switch; got %s" % type(source).__name__)
    leaf_hosts = {}
    for host, leaf in mapping.items():
        if not isinstance(host, str) or not isinstance(leaf, str):
            raise TopologyError("host to leaf map: %r -> %r is not a host name and a leaf switch name" % (host, leaf))
        leaf_hosts.setdefault(leaf, []).append(host)
    spines = {}
    if leaf_spines:
        if not isinstance(leaf_spines, dict):
            raise TopologyError("leaf_spines must be a mapping of leaf switch to its spine switches, got %s"
                                % type(leaf_spines).__name__)
        for leaf, above in leaf_spines.items():
            if leaf not in leaf_hosts:
                continue
            for spine in ([above] if isinstance(above, str) else above or []):
                if not isinstance(spine, str):
                    raise TopologyError("leaf_spines: the spines of %s must be switch names, got %r" % (leaf, spine))
                spines.setdefault(spine, (2, []))[1].append(leaf)
        for spine in spines:
            spines[spine] = (2, sorted(spines[spine][1], key=natural_key))
    return leaf_hosts, spines, comments, notes


def tree_topology_conf(source, leaf_spines=None, top_switch="top"):
    """topology.conf for topology/tree: a SwitchName=<leaf> Nodes=<hostlist> line per leaf, then the
    switches above (Switches=<hostlist>) level by level, and SwitchName=<top_switch> over the switches
    nothing sits above when there are several, so that one switch reaches every node (else slurmctld
    warns "no switch can reach all nodes"). Every name is checked; a bad one raises TopologyError."""
    leaf_hosts, spines, comments, notes = _tree_from_source(source, leaf_spines)
    if not leaf_hosts:
        raise TopologyError("no host is attached to any leaf switch: nothing to write")
    leaves = sorted(leaf_hosts, key=natural_key)
    _check_names(leaves, "leaf switch name", MAX_SWITCH_NAME)
    _check_names(spines, "spine switch name", MAX_SWITCH_NAME)
    for leaf in leaves:
        _check_names(leaf_hosts[leaf], "node name (under leaf %s)" % leaf, MAX_NODE_NAME)
    clash = set(leaves) & set(spines)
    if clash:
        raise TopologyError("switch name %r is used for a leaf and for a spine" % sorted(clash)[0])
    owner = {}
    for leaf in leaves:
        for host in leaf_hosts[leaf]:
            if host in owner and owner[host] != leaf:
                raise TopologyError("node %s is under two leaves (%s and %s)" % (host, owner[host], leaf))
            owner[host] = leaf
    lines = [_HEADER % "topology/tree"]
    levels = max([1] + [level for level, children in spines.values() if children])
    lines.append("# %d nodes on %d leaf switches, %d switches above them, %d level(s)"
                 % (len(owner), len(leaves), len([s for s in spines if spines[s][1]]), levels))
    lines.extend("# note: %s" % _comment(note) for note in notes)
    for leaf in leaves:
        if leaf in comments:
            lines.append("# %s" % comments[leaf])
        lines.append("SwitchName=%s Nodes=%s" % (leaf, _hostlist(leaf_hosts[leaf], "leaf %s" % leaf)))
    written, parented = set(leaves), set()
    for spine in sorted(spines, key=lambda s: (spines[s][0], natural_key(s))):
        children = [c for c in spines[spine][1] if c in written]
        if not children:
            continue
        if spine in comments:
            lines.append("# %s" % comments[spine])
        lines.append("SwitchName=%s Switches=%s" % (spine, _hostlist(children, "switch %s" % spine)))
        written.add(spine)
        parented.update(children)
    roots = sorted(written - parented, key=natural_key)
    if len(roots) > 1:
        check_slurm_name(top_switch, "top_switch", MAX_SWITCH_NAME)
        if top_switch in leaf_hosts or top_switch in spines:
            raise TopologyError("top_switch %r is already the name of a switch in the fabric" % top_switch)
        lines.append("# added so that one switch reaches every node: %d switches have nothing above them" % len(roots))
        lines.append("SwitchName=%s Switches=%s" % (top_switch, _hostlist(roots, "switch %s" % top_switch)))
    return "\n".join(lines) + "\n"


def _check_block_sizes(block_sizes):
    if block_sizes in (None, "", []):
        return []
    if isinstance(block_sizes, str):
        block_sizes = [part.strip() for part in block_sizes.split(",")]
    if not isinstance(block_sizes, (list, tuple)):
        raise TopologyError("block_sizes must be a list of node counts such as [18, 72], got %s" % type(block_sizes).__name__)
    sizes = []
    for value in block_sizes:
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.isdigit())):
            raise TopologyError("block_sizes: %r is not a whole number of nodes" % (value,))
        size = int(value)
        if size < 1:
            raise TopologyError("block_sizes: %d is not a positive number of nodes" % size)
        if sizes:
            ratio, remainder = divmod(size, sizes[-1])
            if remainder or ratio < 2 or ratio & (ratio - 1):
                raise TopologyError("block_sizes: %d after %d: each size must be the one before times a power of two "
                                    "(topology.conf(5): 'a power of two larger than the prior values')" % (size, sizes[-1]))
        sizes.append(size)
    return sizes


def _split_chassis(domains, block_prefix):
    """Notes for the chassis (racks) whose trays nvlink_domains placed in more than one block, or some in none."""
    block_of = {}
    for number, entry in enumerate(domains["domains"], 1):
        for host in entry["hosts"]:
            block_of[host] = "%s%d" % (block_prefix, number)
    by_chassis = {}
    for host, place in (domains.get("host_place") or {}).items():
        if (place or {}).get("chassis_serial"):
            by_chassis.setdefault(place["chassis_serial"], set()).add(block_of.get(host, "no block"))
    return ["chassis %s is split over %s: one rack's trays belong to one NVLink domain (readiness' nvlink_chassis_split)"
            % (_comment(str(serial)), ", ".join(sorted(blocks, key=natural_key)))
            for serial, blocks in sorted(by_chassis.items()) if len(blocks) > 1]


def block_topology_conf(domains, block_sizes=None, block_prefix="block"):
    """topology.conf for topology/block from nvlink_domains' result (or {host: domain key}): one
    BlockName=<prefix><n> Nodes=<hostlist> per NVLink domain in the order of their first node, then
    BlockSizes= when block_sizes is given (checked as Slurm wants: each a power-of-two multiple of the one
    before). Each block's comment names its domain and the chassis its trays name; blocks smaller than the base size,
    hosts with no domain and a chassis whose trays are in two blocks are named in comments."""
    sizes = _check_block_sizes(block_sizes)
    check_slurm_name(block_prefix + "1", "block_prefix", MAX_SWITCH_NAME)
    notes = []
    if isinstance(domains, dict) and "domains" in domains:
        groups = [(d["hosts"], "NVLink domain %s clique %s%s" % (d["cluster_uuid"], d["clique_id"], "; chassis %s" % ", ".join(
            _comment(str(c)) for c in d["chassis"]) if d.get("chassis") else "")) for d in domains["domains"]]
        for host, reason in sorted(domains.get("no_domain", {}).items(), key=lambda i: natural_key(i[0])):
            notes.append("%s: no NVLink domain (%s)" % (host, _comment(reason)))
        notes.extend(_split_chassis(domains, block_prefix))
    elif isinstance(domains, dict):
        by_key = {}
        for host, key in domains.items():
            if key in (None, ""):
                notes.append("%s: no NVLink domain" % host)
                continue
            by_key.setdefault(str(key), []).append(host)
        groups = [(sorted(hosts, key=natural_key), "domain %s" % _comment(key)) for key, hosts in by_key.items()]
        groups.sort(key=lambda g: natural_key(g[0][0]))
    else:
        raise TopologyError("block topology needs nvlink_domains' result or a mapping of host to domain, got %s"
                            % type(domains).__name__)
    if not groups:
        raise TopologyError("no host is in an NVLink domain: nothing to write for topology/block")
    lines = [_HEADER % "topology/block", "# %d blocks, %d nodes" % (len(groups), sum(len(h) for h, c in groups))]
    lines.extend("# note: %s" % note for note in notes)
    for number, (hosts, comment) in enumerate(groups, 1):
        name = "%s%d" % (block_prefix, number)
        _check_names(hosts, "node name (in %s)" % name, MAX_NODE_NAME)
        lines.append("# %s" % comment)
        if sizes and len(hosts) < sizes[0]:
            lines.append("# %s has %d nodes, fewer than the base block size %d (topology.conf(5): each block must "
                         "have at least that many)" % (name, len(hosts), sizes[0]))
        lines.append("BlockName=%s Nodes=%s" % (name, _hostlist(hosts, name)))
    if sizes:
        lines.append("BlockSizes=%s" % ",".join(str(s) for s in sizes))
    return "\n".join(lines) + "\n"


def slurm_topology_conf(source, plugin=None, leaf_spines=None, top_switch="top", block_sizes=None, block_prefix="block"):
    """topology.conf text: topology/tree from a fabric (fabric_tree, parse_ibnetdiscover, host_leaf_map or
    {host: leaf}), topology/block from nvlink_domains. plugin ('tree' or 'block') is guessed from source."""
    if plugin is None:
        plugin = "block" if isinstance(source, dict) and "domains" in source and "no_domain" in source else "tree"
    if plugin == "tree":
        return tree_topology_conf(source, leaf_spines=leaf_spines, top_switch=top_switch)
    if plugin == "block":
        return block_topology_conf(source, block_sizes=block_sizes, block_prefix=block_prefix)
    raise TopologyError("plugin must be 'tree' or 'block', got %r" % (plugin,))
