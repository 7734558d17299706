# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The fabric's switch tree from parse_ibnetdiscover's result: a unique Slurm name for every switch,
leaves (the switches hosts hang off), the spines and cores above them by level, which leaf each host is on,
and the rail groups (leaves that carry the same hosts).

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import MAX_SWITCH_NAME, TopologyError, sanitize_name
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


def switch_names(parsed):
    """{guid: unique Slurm name} for every switch: its own name made valid, 'ib-<guid>' when it has none,
    '<name>-<last 4 GUID digits>' when two switches carry the same name."""
    candidates = {}
    for switch in parsed["switches"]:
        candidates[switch["guid"]] = sanitize_name(switch.get("name"), MAX_SWITCH_NAME - 5)
    counts = {}
    for name in candidates.values():
        if name:
            counts[name.lower()] = counts.get(name.lower(), 0) + 1
    result = {}
    for guid, name in candidates.items():
        if not name:
            result[guid] = "ib-" + guid[2:]
        elif counts[name.lower()] > 1:
            result[guid] = "%s-%s" % (name, guid[-4:])
        else:
            result[guid] = name
    taken = {}
    for guid in sorted(result):
        name = result[guid]
        if name.lower() in taken:
            result[guid] = "ib-" + guid[2:]
        taken[result[guid].lower()] = guid
    return result


def _switch_graph(parsed, switches):
    """-> {guid: switches linked to it}, {guid: how many CA links it has}."""
    neighbours = dict((g, set()) for g in switches)
    ca_links = dict((g, 0) for g in switches)
    for switch in parsed["switches"]:
        for port in switch["ports"]:
            if port["remote_type"] == "switch" and port["remote_guid"] in switches and port["remote_guid"] != switch["guid"]:
                neighbours[switch["guid"]].add(port["remote_guid"])
                neighbours[port["remote_guid"]].add(switch["guid"])
            elif port["remote_type"] != "switch":
                ca_links[switch["guid"]] += 1
    return neighbours, ca_links


def _service_switches(switches, neighbours, ca_links):
    """A spine with a service node on it (a subnet manager, UFM) has CA links too: a switch whose every switch
    neighbour carries hosts, and which carries fewer hosts than most of them, sits above them."""
    with_cas = set(g for g in switches if ca_links[g])
    service = set()
    for guid in with_cas:
        around = neighbours[guid]
        if len(around) >= 2 and around <= with_cas:
            counts = sorted(ca_links[n] for n in around)
            if ca_links[guid] < counts[len(counts) // 2]:
                service.add(guid)
    return with_cas - service, service


def _levels(leaves, neighbours):
    """{guid: level}: the leaves 1, each switch above one more than the nearest below it (breadth first)."""
    level = dict((g, 1) for g in leaves)
    frontier = sorted(level)
    while frontier:
        following = []
        for guid in frontier:
            for other in sorted(neighbours[guid]):
                if other not in level:
                    level[other] = level[guid] + 1
                    following.append(other)
        frontier = following
    return level


def _edges(level, neighbours, names, warnings):
    """-> parents, children: the links one level apart; a link within a level is left out, with a warning."""
    lateral = set()
    parents = dict((g, []) for g in level)
    children = dict((g, []) for g in level)
    for guid in level:
        for other in neighbours[guid]:
            if other not in level:
                continue
            if level[other] == level[guid] + 1:
                parents[guid].append(other)
                children[other].append(guid)
            elif level[other] == level[guid] and guid < other:
                lateral.add((guid, other))
    for a, b in sorted(lateral):
        warnings.append("switches %s and %s are linked but sit at the same level %d: that link is left out of the tree"
                        % (names[a], names[b], level[a]))
    return parents, children


def _hosts_on_leaves(parsed, level, service, names, warnings):
    """-> {leaf: hosts}, {host: {leaf: ports on it}}, {host: service switches} of hosts on no leaf."""
    hosts_of = dict((g, set()) for g in level if level[g] == 1)
    ports_on, off_tree = {}, {}
    for host, entry in parsed.get("hosts", {}).items():
        for hca in entry["hcas"]:
            if hca["switch"] in hosts_of:
                hosts_of[hca["switch"]].add(host)
                ports_on.setdefault(host, {}).setdefault(hca["switch"], 0)
                ports_on[host][hca["switch"]] += 1
            elif hca["switch"] in service:
                off_tree.setdefault(host, set()).add(names[hca["switch"]])
    off_tree = dict((h, sorted(s)) for h, s in off_tree.items() if h not in ports_on)
    if off_tree:
        first = sorted(off_tree, key=natural_key)[0]
        warnings.append("%d host(s) hang off a switch above the leaves, not off a leaf (e.g. %s on %s): left out of the tree"
                        % (len(off_tree), first, ", ".join(off_tree[first])))
    return hosts_of, ports_on, off_tree


def _host_leaves(ports_on, names):
    """-> host_leaf (the leaf holding most of a host's ports, then the first by name), host_leaves (all of them)."""
    host_leaf, host_leaves = {}, {}
    for host in sorted(ports_on, key=natural_key):
        counts = ports_on[host]
        ordered = sorted(counts, key=lambda g: (-counts[g], natural_key(names[g])))
        host_leaf[host] = names[ordered[0]]
        host_leaves[host] = sorted((names[g] for g in counts), key=natural_key)
    return host_leaf, host_leaves


def _rail_groups(leaves, names):
    """Leaves that carry exactly the same hosts (the rails of one scalable unit)."""
    groups = {}
    for guid, leaf in leaves.items():
        if leaf["hosts"]:
            groups.setdefault(tuple(leaf["hosts"]), []).append(guid)
    rail_groups = [{"leaves": sorted((names[g] for g in members), key=natural_key), "hosts": list(hosts)}
                   for hosts, members in groups.items() if len(members) > 1]
    rail_groups.sort(key=lambda group: natural_key(group["leaves"][0]))
    return rail_groups


def fabric_tree(parsed):
    """parse_ibnetdiscover's result -> the switch tree: leaves (switches with CA links) and the switches
    above them, by level (leaf 1, spine 2, core 3, ...), as Slurm's topology/tree wants it.

    leaves: {guid: {name, description, hosts, spines, cas}}; spines: {guid: {name, description, level,
    children, parents}}; leaf_hosts / leaf_spines: the same by switch name; host_leaf: {host: leaf name}
    (a host cabled to several leaves: the leaf holding most of its ports, then the first by name);
    host_leaves: every leaf a host reaches; rail_groups: leaves that carry exactly the same hosts (the
    rails of one scalable unit); roots: switches nothing sits above; levels: the tree's height;
    unreached: switches with no path down to a leaf.
    """
    if not isinstance(parsed, dict) or "switches" not in parsed:
        raise TopologyError("fabric_tree needs parse_ibnetdiscover's result (a mapping with 'switches')")
    names = switch_names(parsed)
    switches = dict((s["guid"], s) for s in parsed["switches"])
    neighbours, ca_links = _switch_graph(parsed, switches)
    leaf_guids, service = _service_switches(switches, neighbours, ca_links)
    level = _levels(leaf_guids, neighbours)
    warnings = []
    parents, children = _edges(level, neighbours, names, warnings)
    hosts_of, ports_on, off_tree = _hosts_on_leaves(parsed, level, service, names, warnings)

    def by_name(guids):
        return sorted(guids, key=lambda g: natural_key(names[g]))

    leaves, spines = {}, {}
    for guid in by_name(level):
        switch = switches[guid]
        if level[guid] == 1:
            leaves[guid] = {"name": names[guid], "description": switch["description"],
                            "hosts": sorted(hosts_of[guid], key=natural_key), "spines": by_name(parents[guid]),
                            "cas": ca_links[guid]}
        else:
            spines[guid] = {"name": names[guid], "description": switch["description"], "level": level[guid],
                            "children": by_name(children[guid]), "parents": by_name(parents[guid])}
    host_leaf, host_leaves = _host_leaves(ports_on, names)
    unreached = by_name(set(switches) - set(level))
    if unreached:
        warnings.append("%d switch(es) have no path down to a leaf (no host below them): %s"
                        % (len(unreached), ", ".join(names[g] for g in unreached)))
    roots = by_name(g for g in level if not parents[g])
    return {"leaves": leaves, "spines": spines, "switch_names": names,
            "leaf_hosts": dict((leaf["name"], leaf["hosts"]) for leaf in leaves.values()),
            "leaf_spines": dict((leaf["name"], [names[g] for g in leaf["spines"]]) for leaf in leaves.values()),
            "host_leaf": host_leaf, "host_leaves": host_leaves, "rail_groups": _rail_groups(leaves, names),
            "roots": [names[g] for g in roots], "levels": max(level.values()) if level else 0,
            "off_tree_hosts": dict(sorted(off_tree.items(), key=lambda i: natural_key(i[0]))),
            "unreached": [names[g] for g in unreached], "warnings": warnings}
