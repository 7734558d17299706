# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric topology for the scheduler and for NCCL: which leaf switch every host hangs off, which
hosts share an NVLink domain, whether GPU k uses the same NIC (rail) on every node and whether that
NIC is cabled to the leaf the plan says.

Sources, read as the tools print them: ``ibnetdiscover`` (InfiniBand), ``lldpcli show neighbors``
in its text, ``-f json`` and ``-f keyvalue`` forms (Ethernet / RoCE), ``nvidia-smi -q`` and
``-q -x`` (the Fabric section), and what ``nvidia-smi topo -m`` gives (gpu.parse_nvidia_topo).
Results: Slurm topology.conf text (topology/tree and topology/block), NCCL_IB_HCA and
NCCL_CROSS_NIC advice, and a cabling report that names every port on the wrong leaf.

Pure functions, standard library only, Python 3.8. Every parser reads line by line with anchored
regular expressions whose repetitions cannot overlap, so its time is linear in the input.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as _gpu
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm as _slurm
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import compress_hostlist, natural_key


class TopologyError(ValueError):
    """The input is not what the tool prints, or a name cannot go into a Slurm file; says which value."""


def _short(value, limit=60):
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Slurm names and hostlists
# ---------------------------------------------------------------------------------------------

# topology.conf is parsed as Key=Value words separated by white space, "#" starts a comment and
# Nodes=/Switches= are hostlist expressions (",", "[", "]"). Slurm refuses a SwitchName of more
# than 64 characters (switch_record.c, HOST_NAME_MAX).
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
MAX_SWITCH_NAME = 64
MAX_NODE_NAME = 255
_BAD_CHARS = {" ": "a space", "\t": "a tab", "\n": "a newline", "\r": "a carriage return", "=": "'='",
              ",": "','", "#": "'#'", "[": "'['", "]": "']'", "\"": "a double quote", "'": "a quote"}


def check_slurm_name(value, what, limit=MAX_NODE_NAME):
    """value as a name topology.conf can hold, or TopologyError naming `what`, the value and the bad character."""
    if not isinstance(value, str) or isinstance(value, bool):
        raise TopologyError("%s must be a string, got %s" % (what, "null" if value is None else type(value).__name__))
    if not value:
        raise TopologyError("%s must not be empty" % what)
    if len(value) > limit:
        raise TopologyError("%s %r is %d characters long; Slurm takes at most %d" % (what, _short(value), len(value), limit))
    if _NAME_RE.match(value):
        return value
    for index, char in enumerate(value):
        if not re.match(r"[A-Za-z0-9_.-]", char) or (index == 0 and char in ".-"):
            control = ord(char) < 32 or 127 <= ord(char) < 160
            described = _BAD_CHARS.get(char) or ("the control character %r" % char if control else "%r" % char)
            raise TopologyError("%s %r holds %s (character %d): a Slurm name takes letters, digits, '_', '.' and '-' "
                                "and starts with a letter, a digit or '_'" % (what, _short(value), described, index + 1))
    raise TopologyError("%s %r is not a Slurm name" % (what, _short(value)))


def sanitize_name(text, limit=MAX_SWITCH_NAME):
    """A switch's own name made into a Slurm name, the same way every time: runs of other characters become
    '-', leading and trailing '-' and '.' go; None when nothing is left."""
    if not text:
        return None
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:limit].strip("-.")
    return name or None


# ---------------------------------------------------------------------------------------------
# ibnetdiscover
# ---------------------------------------------------------------------------------------------

_GUID_RE = re.compile(r"^(?:[SHR]-|0x|0X)?([0-9a-fA-F]{1,16})\Z")
_HEADER_RE = re.compile(r'^(Switch|Ca|Rt)\s+(\d{1,5})\s+"([SHR])-([0-9a-fA-F]{1,16})"')
_PORT_RE = re.compile(r'^\[(\d{1,5})\](?:\[ext \d{1,5}\])?(?:\(([0-9a-fA-F]{1,16})\))?\s*'
                      r'"([SHR])-([0-9a-fA-F]{1,16})"\[(\d{1,5})\](?:\[ext \d{1,5}\])?(?:\(([0-9a-fA-F]{1,16})\))?')
_SWITCH_TAIL_RE = re.compile(r"^\s*(base|enhanced)\s+port\s+0\s+lid\s+(\d+)\s+lmc\s+(\d+)")
_LOCAL_LID_RE = re.compile(r"^\s*lid\s+(\d+)\s+lmc\s+(\d+)")
_REMOTE_TAIL_RE = re.compile(r"^\s*lid\s+(\d+)(?:\s+(\d{1,2})x([A-Z][A-Z0-9]{0,10}))?")
_ATTR_RE = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|routerguid)=(0x[0-9a-fA-F]{1,16})")
_TYPES = {"Switch": "switch", "Ca": "ca", "Rt": "router"}
_PREFIX_TYPES = {"S": "switch", "H": "ca", "R": "router"}
# NodeDescription a CA keeps until rdma-ndd (or the driver) writes "<hostname> <device>".
_DEFAULT_CA_DESC_RE = re.compile(r"(?:^MT\d{3,6}\b|Mellanox Technologies\s*\Z|^localhost\b)")
_HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,253}\Z")


def normalize_guid(value):
    """'S-0008f10500200b50', '0x8f10500200b50', '8f10500200b50' -> '0x0008f10500200b50'."""
    match = _GUID_RE.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise TopologyError("%r is not a node GUID (up to 16 hex digits, as ibnetdiscover prints them)" % _short(value))
    return "0x%016x" % int(match.group(1), 16)


def parse_node_name_map(text):
    """A node name map -> {guid: name}: ibnetdiscover's --node-name-map file (`0x0002c9030004823c "r815lin106"`)
    or the `H-0002c9030004823c r815lin106` form; '#' comments and blank lines skipped."""
    names = {}
    for number, line in enumerate(_text.clean_lines(text, "node name map"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            raise TopologyError("node name map line %d %r has no name after the GUID" % (number, _short(line)))
        name = parts[1].strip()
        if len(name) >= 2 and name[0] == name[-1] == '"':
            name = name[1:-1]
        try:
            names[normalize_guid(parts[0])] = name
        except TopologyError:
            raise TopologyError("node name map line %d: %r is not a GUID" % (number, _short(parts[0])))
    return names


def _map_names(node_name_map):
    if node_name_map is None:
        return {}
    if isinstance(node_name_map, str):
        return parse_node_name_map(node_name_map)
    if not isinstance(node_name_map, dict):
        raise TopologyError("node_name_map must be a mapping of GUID to name or the map file's text, got %s"
                            % type(node_name_map).__name__)
    names = {}
    for guid, name in node_name_map.items():
        if not isinstance(name, str):
            raise TopologyError("node_name_map: the name of %s must be a string, got %r" % (_short(guid), name))
        names[normalize_guid(guid)] = name
    return names


def switch_own_name(description):
    """The name a managed switch puts in its NodeDescription: 'MF0;leaf-01:MQM8700/U1' -> 'leaf-01',
    'Voltaire 4036 # hoibp0013' -> 'hoibp0013'. None for descriptions that only name the model
    ('SwitchIB Mellanox Technologies')."""
    if not description:
        return None
    if description.startswith("MF0;"):
        rest = description[4:]
        name = rest[:rest.rfind(":")] if ":" in rest else rest
        return name.strip() or None
    if " # " in description:
        name = description.rsplit(" # ", 1)[1].strip()
        return name or None
    return None


def _host_of(description):
    """(host, device) from a CA's NodeDescription ('node01 mlx5_0'), (None, None) for a firmware default."""
    if not description or _DEFAULT_CA_DESC_RE.search(description):
        return None, None
    words = description.split()
    if not _HOST_RE.match(words[0]):
        return None, None
    return words[0], (words[1] if len(words) > 1 else None)


def _split_comment(rest):
    """'# lid 83 lmc 0 "desc" lid 48 4xEDR' -> ('lid 83 lmc 0 ', 'desc', ' lid 48 4xEDR'); no quotes -> (text, None, '')."""
    hash_at = rest.find("#")
    if hash_at < 0:
        return "", None, ""
    comment = rest[hash_at + 1:]
    first = comment.find('"')
    last = comment.rfind('"')
    if first < 0 or last == first:
        return comment, None, ""
    return comment[:first], comment[first + 1:last], comment[last + 1:]


def parse_ibnetdiscover(text, node_name_map=None):
    """`ibnetdiscover` (the topology file, with or without -s/-g) -> switches, cas, hosts.

    switches: [{guid, name, description, lid, port_count, enhanced, vendid, devid, sysimgguid,
    ports: [{port, remote_guid, remote_port, remote_type, remote_name, remote_description,
    remote_lid, width, speed}]}]; name is the switch's own name (MF0;NAME:model, or the word after
    ' # '), from node_name_map when it names the GUID, else None.
    cas: [{guid, description, host, device, port_count, ports: [{port, port_guid, lid,
    remote_guid, remote_port, remote_name, width, speed}]}].
    hosts: {host: {switch, switches, hcas: [{device, guid, port, switch, switch_port, width, speed}]}}
    (host = first word of the NodeDescription, 'node01 mlx5_0' -> node01; switch is set when every
    port of the host hangs off one switch).
    unnamed_cas: CAs that still carry the firmware's description (no host name): give node_name_map.
    warnings: lines not understood, links seen from one side only, truncated blocks.
    """
    names = _map_names(node_name_map)
    nodes = {}          # guid -> node
    links = {}          # (guid, port) -> link seen from that side
    seen_desc = {}      # guid -> description, as peers print it (for nodes whose own block is cut off)
    seen_type = {}
    warnings = []
    attrs = {}
    current = None
    skipped = []
    for number, raw in enumerate(_text.clean_lines(text, "ibnetdiscover output"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _ATTR_RE.match(line) if line[0] != "[" else None
        if match:
            attrs[match.group(1)] = match.group(2).lower()
            continue
        match = _HEADER_RE.match(line) if line[0] != "[" else None
        if match:
            kind = _TYPES[match.group(1)]
            guid = "0x%016x" % int(match.group(4), 16)
            before, description, after = _split_comment(line[match.end():])
            node = {"type": kind, "guid": guid, "description": description, "port_count": int(match.group(2)),
                    "vendid": attrs.get("vendid"), "devid": attrs.get("devid"), "sysimgguid": attrs.get("sysimgguid"),
                    "lid": None, "enhanced": None, "line": number}
            if kind == "switch":
                tail = _SWITCH_TAIL_RE.match(after)
                if tail:
                    node["enhanced"] = tail.group(1) == "enhanced"
                    node["lid"] = int(tail.group(2))
            if guid in nodes:
                warnings.append("line %d: %s %s is described twice; the later block is kept" % (number, kind, guid))
            nodes[guid] = node
            current = node
            attrs = {}
            continue
        match = _PORT_RE.match(line)
        if match and current is not None:
            port = int(match.group(1))
            remote_guid = "0x%016x" % int(match.group(4), 16)
            remote_type = _PREFIX_TYPES[match.group(3)]
            before, description, after = _split_comment(line[match.end():])
            local = _LOCAL_LID_RE.match(before)
            tail = _REMOTE_TAIL_RE.match(after)
            link = {"port": port, "port_guid": ("0x%016x" % int(match.group(2), 16)) if match.group(2) else None,
                    "remote_guid": remote_guid, "remote_port": int(match.group(5)), "remote_type": remote_type,
                    "remote_description": description, "remote_lid": int(tail.group(1)) if tail else None,
                    "lid": int(local.group(1)) if local else None,
                    "width": ("%sx" % tail.group(2)) if tail and tail.group(2) else None,
                    "speed": tail.group(3) if tail and tail.group(3) else None}
            if description is not None:
                seen_desc.setdefault(remote_guid, description)
            seen_type.setdefault(remote_guid, remote_type)
            links[(current["guid"], port)] = link
            continue
        if line.startswith("[") or line.startswith(("Switch", "Ca", "Rt")):
            skipped.append(number)
        # other lines: -g grouping headers ("Chassis ...", "Non-Chassis Nodes"), -s progress lines
    if skipped:
        warnings.append("%d line(s) looked like ibnetdiscover node or link lines but could not be read "
                        "(first: line %d): truncated or damaged output" % (len(skipped), skipped[0]))
    if not nodes:
        raise TopologyError("no Switch or Ca block in the ibnetdiscover output (%s)" % (
            "empty input" if not (text or "").strip() else "first line %r" % _short(_text.clean(text).strip().splitlines()[0])))

    peers_only, one_sided = [], []
    for guid in sorted(set(g for g, p in links) | set(l["remote_guid"] for l in links.values())):
        if guid not in nodes:
            kind = seen_type.get(guid, "ca")
            nodes[guid] = {"type": kind, "guid": guid, "description": seen_desc.get(guid), "port_count": None,
                           "vendid": None, "devid": None, "sysimgguid": None, "lid": None, "enhanced": None, "line": None}
            peers_only.append("%s %s" % (kind, guid))
    if peers_only:
        warnings.append("%d node(s) are only seen from their peers, their own block is missing (e.g. %s): truncated "
                        "output?" % (len(peers_only), peers_only[0]))

    # A block cut off at the end still shows up in its peers' port lines: both sides make the link.
    for (guid, port), link in list(links.items()):
        reverse = (link["remote_guid"], link["remote_port"])
        if reverse not in links and link["remote_guid"] in nodes:
            here = nodes[guid]
            links[reverse] = {"port": link["remote_port"], "port_guid": None, "remote_guid": guid, "remote_port": port,
                              "remote_type": here["type"], "remote_description": here["description"],
                              "remote_lid": here["lid"] if here["type"] == "switch" else link["lid"],
                              "lid": link["remote_lid"], "width": link["width"], "speed": link["speed"]}
            one_sided.append("%s %s port %d is linked to %s port %d, but only the %s side prints the link"
                             % (nodes[link["remote_guid"]]["type"], link["remote_guid"], link["remote_port"], guid, port,
                                here["type"]))
    if one_sided:
        warnings.append("%d link(s) are printed from one side only (e.g. %s)" % (len(one_sided), one_sided[0]))

    def node_name(guid):
        node = nodes[guid]
        if guid in names:
            return names[guid]
        if node["type"] == "switch":
            return switch_own_name(node["description"])
        return _host_of(node["description"])[0]

    switches, cas = [], []
    hosts, unnamed = {}, []
    by_node = {}
    for (guid, port), link in links.items():
        by_node.setdefault(guid, []).append(link)
    for guid in sorted(nodes):
        node = nodes[guid]
        ports = []
        for link in sorted(by_node.get(guid, []), key=lambda l: l["port"]):
            remote = link["remote_guid"]
            entry = {"port": link["port"], "remote_guid": remote, "remote_port": link["remote_port"],
                     "remote_type": nodes[remote]["type"], "remote_name": node_name(remote),
                     "remote_description": nodes[remote]["description"] or link["remote_description"],
                     "remote_lid": link["remote_lid"], "width": link["width"], "speed": link["speed"]}
            if node["type"] != "switch":
                entry["port_guid"] = link["port_guid"]
                entry["lid"] = link["lid"]
            ports.append(entry)
        if node["type"] == "switch":
            switches.append({"guid": guid, "name": node_name(guid), "description": node["description"],
                             "lid": node["lid"], "port_count": node["port_count"], "enhanced": node["enhanced"],
                             "vendid": node["vendid"], "devid": node["devid"], "sysimgguid": node["sysimgguid"],
                             "ports": ports})
            continue
        host, device = _host_of(node["description"])
        if guid in names:
            host, device = names[guid], None
        record = {"guid": guid, "type": node["type"], "description": node["description"], "host": host,
                  "device": device, "port_count": node["port_count"], "vendid": node["vendid"], "devid": node["devid"],
                  "sysimgguid": node["sysimgguid"], "ports": ports}
        cas.append(record)
        attached = [p for p in ports if p["remote_type"] == "switch"]
        if host is None:
            unnamed.append({"guid": guid, "description": node["description"],
                            "switches": sorted(set(p["remote_guid"] for p in attached))})
            continue
        entry = hosts.setdefault(host, {"switch": None, "switches": [], "hcas": []})
        for p in attached:
            entry["hcas"].append({"device": device, "guid": guid, "port": p["port"], "switch": p["remote_guid"],
                                  "switch_name": p["remote_name"], "switch_port": p["remote_port"],
                                  "width": p["width"], "speed": p["speed"]})
    for host, entry in hosts.items():
        entry["hcas"].sort(key=lambda h: (natural_key(h["device"] or ""), h["guid"], h["port"]))
        entry["switches"] = sorted(set(h["switch"] for h in entry["hcas"]))
        entry["switch"] = entry["switches"][0] if len(entry["switches"]) == 1 else None
    if unnamed:
        warnings.append("%d CA(s) carry the firmware's NodeDescription (e.g. %r), not '<host> <device>': they have no "
                        "host name here; give node_name_map, or run rdma-ndd on them"
                        % (len(unnamed), _short(unnamed[0]["description"] or "")))
    link_count = sum(1 for (guid, port), link in links.items() if (guid, port) < (link["remote_guid"], link["remote_port"]))
    return {"switches": switches, "cas": cas, "hosts": dict(sorted(hosts.items(), key=lambda i: natural_key(i[0]))),
            "unnamed_cas": unnamed, "counts": {"switches": len(switches), "cas": len(cas), "hosts": len(hosts),
                                               "links": link_count},
            "warnings": warnings}


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
    neighbours = dict((g, set()) for g in switches)
    ca_links = dict((g, 0) for g in switches)
    for switch in parsed["switches"]:
        for port in switch["ports"]:
            if port["remote_type"] == "switch" and port["remote_guid"] in switches and port["remote_guid"] != switch["guid"]:
                neighbours[switch["guid"]].add(port["remote_guid"])
                neighbours[port["remote_guid"]].add(switch["guid"])
            elif port["remote_type"] != "switch":
                ca_links[switch["guid"]] += 1
    # A spine with a service node on it (a subnet manager, UFM) has CA links too: a switch whose every
    # switch neighbour carries hosts, and which carries fewer hosts than most of them, sits above them.
    with_cas = set(g for g in switches if ca_links[g])
    service = set()
    for guid in with_cas:
        around = neighbours[guid]
        if len(around) >= 2 and around <= with_cas:
            counts = sorted(ca_links[n] for n in around)
            if ca_links[guid] < counts[len(counts) // 2]:
                service.add(guid)
    level = dict((g, 1) for g in with_cas - service)
    frontier = sorted(level)
    while frontier:
        following = []
        for guid in frontier:
            for other in sorted(neighbours[guid]):
                if other not in level:
                    level[other] = level[guid] + 1
                    following.append(other)
        frontier = following
    warnings = []
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
    host_leaf, host_leaves = {}, {}
    for host in sorted(ports_on, key=natural_key):
        counts = ports_on[host]
        ordered = sorted(counts, key=lambda g: (-counts[g], natural_key(names[g])))
        host_leaf[host] = names[ordered[0]]
        host_leaves[host] = sorted((names[g] for g in counts), key=natural_key)
    groups = {}
    for guid, leaf in leaves.items():
        if leaf["hosts"]:
            groups.setdefault(tuple(leaf["hosts"]), []).append(guid)
    rail_groups = [{"leaves": [names[g] for g in by_name(members)], "hosts": list(hosts)}
                   for hosts, members in groups.items() if len(members) > 1]
    rail_groups.sort(key=lambda group: natural_key(group["leaves"][0]))
    unreached = by_name(set(switches) - set(level))
    if unreached:
        warnings.append("%d switch(es) have no path down to a leaf (no host below them): %s"
                        % (len(unreached), ", ".join(names[g] for g in unreached)))
    roots = by_name(g for g in level if not parents[g])
    return {"leaves": leaves, "spines": spines, "switch_names": names,
            "leaf_hosts": dict((leaf["name"], leaf["hosts"]) for leaf in leaves.values()),
            "leaf_spines": dict((leaf["name"], [names[g] for g in leaf["spines"]]) for leaf in leaves.values()),
            "host_leaf": host_leaf, "host_leaves": host_leaves, "rail_groups": rail_groups,
            "roots": [names[g] for g in roots], "levels": max(level.values()) if level else 0,
            "off_tree_hosts": dict(sorted(off_tree.items(), key=lambda i: natural_key(i[0]))),
            "unreached": [names[g] for g in unreached], "warnings": warnings}


# ---------------------------------------------------------------------------------------------
# LLDP (lldpd's lldpcli / lldpctl)
# ---------------------------------------------------------------------------------------------

_LLDP_IFACE_RE = re.compile(r"^Interface:\s+([^,\s]+),\s*via:\s*([A-Za-z0-9-]+)")
_LLDP_FIELD_RE = re.compile(r"^\s+([A-Za-z][A-Za-z0-9 -]{0,30}?):\s*(.*)$")
_ID_TYPES = ("mac", "ifname", "ifalias", "local", "ip", "net", "unhandled")


def _lldp_id(value):
    """'mac 52:84:0d:36:d4:c8' -> ('mac', '52:84:0d:36:d4:c8')."""
    parts = value.split(None, 1)
    if len(parts) == 2 and parts[0] in _ID_TYPES:
        return parts[0], parts[1].strip()
    return None, value.strip() or None


def _neighbour(chassis_name=None, chassis_id=None, chassis_id_type=None, port_id=None, port_id_type=None,
               port_description=None, via=None):
    return {"chassis_name": chassis_name, "chassis_id": chassis_id, "chassis_id_type": chassis_id_type,
            "port_id": port_id, "port_id_type": port_id_type, "port_description": port_description, "via": via}


def _lldp_text(lines):
    interfaces = {}
    current = section = None
    for line in lines:
        match = _LLDP_IFACE_RE.match(line)
        if match:
            current = _neighbour(via=match.group(2))
            interfaces.setdefault(match.group(1), []).append(current)
            section = None
            continue
        if current is None:
            continue
        stripped = line.strip()
        if stripped in ("Chassis:", "Port:"):
            section = stripped[:-1].lower()
            continue
        match = _LLDP_FIELD_RE.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "ChassisID":
            current["chassis_id_type"], current["chassis_id"] = _lldp_id(value)
        elif key == "SysName" and section == "chassis":
            current["chassis_name"] = value or None
        elif key == "PortID":
            current["port_id_type"], current["port_id"] = _lldp_id(value)
        elif key == "PortDescr":
            current["port_description"] = value or None
        elif key in ("LLDP-MED", "VLAN", "PMD autoneg", "Unknown TLVs"):
            section = key
    return interfaces


_KV_KEYS = ("via", "rid", "age", "chassis", "port", "vlan", "ppvid", "pi", "lldp-med", "unknown-tlvs")


def _lldp_keyvalue(lines):
    interfaces = {}
    for line in lines:
        line = line.strip()
        if not line.startswith("lldp.") or "=" not in line:
            continue
        head, value = line.split("=", 1)
        parts = head.split(".")
        # The interface name may hold dots (eth0.100): it ends where a known key begins.
        at = next((i for i in range(2, len(parts)) if parts[i] in _KV_KEYS), None)
        if at is None:
            continue
        ifname, key = ".".join(parts[1:at]), ".".join(parts[at:])
        current = interfaces.setdefault(ifname, [_neighbour()])[0]
        if key == "via":
            current["via"] = current["via"] or value
        elif key == "chassis.name":
            current["chassis_name"] = current["chassis_name"] or value or None
        elif key.startswith("chassis.") and key[8:] in _ID_TYPES and current["chassis_id"] is None:
            current["chassis_id_type"], current["chassis_id"] = key[8:], value
        elif key.startswith("port.") and key[5:] in _ID_TYPES and current["port_id"] is None:
            current["port_id_type"], current["port_id"] = key[5:], value
        elif key == "port.descr":
            current["port_description"] = current["port_description"] or value or None
    return interfaces


def _json_values(node):
    """json0 wraps every value as [{"value": x}]; json gives x."""
    if isinstance(node, list) and node and isinstance(node[0], dict) and "value" in node[0]:
        return node[0]["value"]
    return node


def _json_id(node):
    node = node[0] if isinstance(node, list) and node else node
    if isinstance(node, dict):
        return node.get("type"), node.get("value")
    if isinstance(node, str):
        return None, node
    return None, None


def _lldp_json(document):
    lldp = document.get("lldp") if isinstance(document, dict) else None
    if isinstance(lldp, list):          # json0: "lldp": [{"interface": [...]}]
        lldp = lldp[0] if lldp else {}
    if not isinstance(lldp, dict):
        raise TopologyError("lldpcli JSON has no 'lldp' object (got %s)" % type(document).__name__)
    raw = lldp.get("interface") or []
    entries = []
    if isinstance(raw, dict):           # one interface: {"eth0": {...}}
        entries = list(raw.items())
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and "name" in item and isinstance(item.get("name"), str):
                entries.append((item["name"], item))           # json0
            elif isinstance(item, dict) and len(item) == 1:
                entries.extend(item.items())                    # json with several interfaces
    interfaces = {}
    for ifname, body in entries:
        if not isinstance(body, dict):
            continue
        current = _neighbour(via=_json_values(body.get("via")))
        chassis = body.get("chassis")
        if isinstance(chassis, list):                            # json0
            chassis = chassis[0] if chassis else {}
            current["chassis_name"] = _json_values(chassis.get("name")) if isinstance(chassis, dict) else None
        elif isinstance(chassis, dict) and len(chassis) == 1 and "id" not in chassis:
            current["chassis_name"], chassis = list(chassis.items())[0]   # keyed by SysName
        if isinstance(chassis, dict):
            current["chassis_id_type"], current["chassis_id"] = _json_id(chassis.get("id"))
        port = body.get("port")
        port = port[0] if isinstance(port, list) and port else port
        if isinstance(port, dict):
            current["port_id_type"], current["port_id"] = _json_id(port.get("id"))
            current["port_description"] = _json_values(port.get("descr"))
        interfaces.setdefault(ifname, []).append(current)
    return interfaces


def parse_lldp_neighbors(text):
    """`lldpcli show neighbors` (or lldpctl) in its text, `-f json`, `-f json0` or `-f keyvalue` form ->
    {format, interfaces: {local interface: {chassis_name, chassis_id, chassis_id_type, port_id,
    port_id_type, port_description, via, neighbours}}, warnings}.

    chassis_name is the neighbour's SysName (None when the switch sends none: then chassis_id names it);
    neighbours counts the neighbours seen on that interface (more than one: a hub, or two protocols)."""
    if isinstance(text, dict):
        found, kind = _lldp_json(text), "json"
    else:
        cleaned = _text.clean(text, "lldpcli output")
        stripped = cleaned.strip()
        if stripped.startswith("{"):
            try:
                document = json.loads(stripped)
            except ValueError as exc:
                raise TopologyError("lldpcli -f json output is not JSON (truncated?): %s" % exc)
            found, kind = _lldp_json(document), "json"
        elif re.search(r"^lldp\.[^.=\s]+\.", stripped, re.M):
            found, kind = _lldp_keyvalue(stripped.splitlines()), "keyvalue"
        elif re.search(r"^Interface:", stripped, re.M) or "LLDP neighbors" in stripped:
            found, kind = _lldp_text(stripped.splitlines()), "text"
        elif not stripped:
            found, kind = {}, "empty"
        else:
            raise TopologyError("not lldpcli output (no 'Interface:' block, no 'lldp.' key, no JSON): %r"
                                % _short(stripped.splitlines()[0]))
    interfaces, warnings = {}, []
    for ifname in sorted(found, key=natural_key):
        neighbours = found[ifname]
        first = dict(neighbours[0])
        first["neighbours"] = len(neighbours)
        if len(neighbours) > 1:
            warnings.append("%s sees %d LLDP neighbours; the first (%s) is used"
                            % (ifname, len(neighbours), first["chassis_name"] or first["chassis_id"]))
        if not first["chassis_name"]:
            warnings.append("%s: the neighbour sends no system name; its chassis ID %s stands for it"
                            % (ifname, first["chassis_id"]))
        interfaces[ifname] = first
    return {"format": kind, "interfaces": interfaces, "warnings": warnings}


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


# ---------------------------------------------------------------------------------------------
# host -> leaf, from the sources in order of trust
# ---------------------------------------------------------------------------------------------

def _user_leaf_map(user_map):
    if isinstance(user_map, str):
        entries = {}
        for number, line in enumerate(_text.clean_lines(user_map, "host to leaf map"), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = re.split(r"[\s:=,]+", line)
            if len(parts) != 2:
                raise TopologyError("host to leaf map line %d %r is not '<host> <leaf>'" % (number, _short(line)))
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
        tree = ibnetdiscover
        if isinstance(tree, dict) and "stdout" in tree and "switches" not in tree:
            tree = tree["stdout"]
        if not isinstance(tree, dict):
            tree = parse_ibnetdiscover(tree)
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
        candidates.append(("user_map", dict((h, {"leaf": l, "leaves": [l]}) for h, l in _user_leaf_map(user_map).items())))
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


# ---------------------------------------------------------------------------------------------
# NVLink domains (nvidia-smi -q Fabric section)
# ---------------------------------------------------------------------------------------------

_ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_GPU_LINE_RE = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KV_LINE_RE = re.compile(r"^( *)([A-Za-z][A-Za-z0-9 ()/_.-]{0,60}?)\s*:\s?(.*)$")
_FABRIC_KEYS = {"State": "state", "Status": "status", "CliqueId": "clique_id", "ClusterUUID": "cluster_uuid",
                "Summary": "health_summary", "Bandwidth": "health_bandwidth"}
_NA = ("", "N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown")


def _fabric_value(value):
    value = (value or "").strip()
    return None if value in _NA else value


def _fabric_text(lines):
    gpus = []
    gpu = None
    fabric_indent = None
    in_health = False
    for line in lines:
        match = _GPU_LINE_RE.match(line.strip()) if not line.startswith(" ") else None
        if match:
            gpu = {"bus_id": match.group(1), "name": None}
            gpus.append(gpu)
            fabric_indent = None
            continue
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if stripped == "Fabric":
            if gpu is None or "fabric" in gpu:
                # `nvidia-smi -q | grep -C3 CliqueId` keeps the Fabric blocks and drops the GPU lines.
                gpu = {"bus_id": None, "name": None}
                gpus.append(gpu)
            fabric_indent = indent
            in_health = False
            gpu["fabric"] = {}
            continue
        if gpu is None:
            continue
        if fabric_indent is not None:
            if stripped and indent <= fabric_indent:
                fabric_indent = None
            elif stripped == "Health":
                in_health = True
                continue
            else:
                match = _KV_LINE_RE.match(line)
                if match and match.group(2) in _FABRIC_KEYS:
                    key = match.group(2)
                    if key in ("Summary", "Bandwidth") and not in_health:
                        continue
                    gpu["fabric"][_FABRIC_KEYS[key]] = _fabric_value(match.group(3))
                continue
        match = _KV_LINE_RE.match(line)
        if match and match.group(2) == "Product Name" and gpu["name"] is None:
            gpu["name"] = _fabric_value(match.group(3))
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
                             "cluster_uuid": _fabric_value(_gpu.xml_text(fabric, "clusterUuid")),
                             "health_summary": _fabric_value(_gpu.xml_text(fabric, "health/summary")),
                             "health_bandwidth": _fabric_value(_gpu.xml_text(fabric, "health/bandwidth"))}
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
    if not _UUID_RE.match(uuid):
        return "ClusterUUID %r is not a UUID" % _short(record["cluster_uuid"] or "")
    if uuid == _ZERO_UUID:
        return ("ClusterUUID is all zeros: NVLink ends at this node (NVSwitch inside the node, no multi-node NVLink)")
    if not record["clique_id"] or not re.match(r"^[0-9]{1,10}\Z", record["clique_id"]):
        return "CliqueId %r is not a number" % _short(record["clique_id"] or "")
    return None


def parse_nvidia_smi_fabric(text):
    """`nvidia-smi -q` (text) or `nvidia-smi -q -x` (XML) -> the node's NVLink domain.

    {gpus: [{index, bus_id, name, state, status, clique_id, cluster_uuid, health_summary}],
    domain: {cluster_uuid, clique_id} or None, reason, warnings}. A GPU counts when State is Completed,
    Status is Success and the cluster UUID is not all zeros (HGX H100/H200 report Completed/Success with
    a zero UUID: their NVLink ends at the node, so they have no multi-node domain). The node's domain is
    its GPUs' one (cluster UUID, clique ID); GPUs that disagree give none, with the reason."""
    if isinstance(text, dict) and "stdout" in text:
        text = text["stdout"]
    cleaned = _text.clean(text, "nvidia-smi -q output").strip()
    if cleaned.startswith("<"):
        try:
            gpus = _fabric_xml(_gpu.nvidia_smi_root(cleaned))
        except _gpu.GpuParseError as exc:
            raise TopologyError(str(exc))
    else:
        gpus = _fabric_text(cleaned.splitlines())
    if not gpus:
        raise TopologyError("no GPU in the nvidia-smi -q output (expected 'GPU 00000000:..' blocks or <gpu> elements)%s"
                            % ("" if cleaned else ": empty input"))
    records, keys, reasons, warnings = [], set(), [], []
    for index, gpu in enumerate(gpus):
        fabric = gpu.get("fabric")
        record = {"index": index, "bus_id": gpu["bus_id"], "name": gpu["name"], "state": None, "status": None,
                  "clique_id": None, "cluster_uuid": None, "health_summary": None}
        if fabric:
            record.update(dict((k, fabric.get(k)) for k in ("state", "status", "clique_id", "cluster_uuid", "health_summary")))
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


# ---------------------------------------------------------------------------------------------
# topology.conf
# ---------------------------------------------------------------------------------------------

_HEADER = "# Slurm topology.conf for %s, written by gpufabric.rdma (slurm_topology_conf); do not edit by hand."


def _comment(text):
    """A value on a comment line: one line, printable."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", "?", text or "")


def _check_names(names, what, limit):
    for name in names:
        check_slurm_name(name, what, limit)


def _hostlist(names, what):
    """Compressed hostlist, checked against Slurm's own expansion (slurm.expand_hostlist) before it is written."""
    text = compress_hostlist(names)
    back = _slurm.expand_hostlist(text)
    if sorted(back) != sorted(set(names)):
        raise TopologyError("%s: the hostlist %r does not expand back to the same names" % (what, _short(text)))
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


def block_topology_conf(domains, block_sizes=None, block_prefix="block"):
    """topology.conf for topology/block from nvlink_domains' result (or {host: domain key}): one
    BlockName=<prefix><n> Nodes=<hostlist> per NVLink domain in the order of their first node, then
    BlockSizes= when block_sizes is given (checked as Slurm wants: each a power-of-two multiple of the one
    before). Blocks smaller than the base size and hosts with no domain are named in comments."""
    sizes = _check_block_sizes(block_sizes)
    check_slurm_name(block_prefix + "1", "block_prefix", MAX_SWITCH_NAME)
    notes = []
    if isinstance(domains, dict) and "domains" in domains:
        groups = [(d["hosts"], "NVLink domain %s clique %s" % (d["cluster_uuid"], d["clique_id"])) for d in domains["domains"]]
        for host, reason in sorted(domains.get("no_domain", {}).items(), key=lambda i: natural_key(i[0])):
            notes.append("%s: no NVLink domain (%s)" % (host, _comment(reason)))
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


# ---------------------------------------------------------------------------------------------
# Rails: the GPU -> NIC map across nodes
# ---------------------------------------------------------------------------------------------

def _gpu_order(name):
    digits = name[3:] if name.startswith("GPU") else name
    return (0, int(digits)) if digits.isdigit() else (1, name)


def _gpu_nic_map(value, host):
    """(gpu -> [closest NICs], note) from parse_nvidia_topo's result, its text, or {GPU0: 'mlx5_0'}."""
    if isinstance(value, dict) and "stdout" in value and "gpu_nics" not in value:
        value = value["stdout"]
    if isinstance(value, (str, bytes)):
        try:
            value = _gpu.parse_nvidia_topo(value)
        except (_gpu.GpuParseError, _text.TextError) as exc:
            return None, "nvidia-smi topo -m output cannot be read: %s" % exc
    if not isinstance(value, dict):
        raise TopologyError("the topology of %s must be nvidia-smi topo -m output or parse_nvidia_topo's result, got %s"
                            % (host, type(value).__name__))
    raw = value.get("gpu_nics", value)
    result = {}
    for gpu_name, nics in raw.items():
        if not isinstance(gpu_name, str):
            raise TopologyError("%s: GPU key %r is not a name like GPU0" % (host, gpu_name))
        if isinstance(nics, str):
            nics = [nics]
        if nics is None:
            nics = []
        if not isinstance(nics, (list, tuple)) or not all(isinstance(n, str) for n in nics):
            raise TopologyError("%s: the NICs of %s must be names, got %r" % (host, gpu_name, nics))
        result[gpu_name] = list(nics)
    return result, None


def _describe_diff(host, diffs, majority, nic_of):
    parts = ["%s -> %s, majority %s" % (gpu_name, nic_of[gpu_name], majority[gpu_name]) for gpu_name in diffs]
    tags = []
    pairs = set()
    for a in diffs:
        for b in diffs:
            if a < b and nic_of[a] == majority[b] and nic_of[b] == majority[a]:
                pairs.add((a, b))
    for a, b in sorted(pairs, key=lambda p: (_gpu_order(p[0]), _gpu_order(p[1]))):
        tags.append("%s and %s swapped between %s and %s" % (majority[a], majority[b], a, b))
    text = "%s: %s" % (host, "; ".join(parts))
    if len(tags) == 1:
        text += " (two NICs swapped: %s)" % tags[0]
    elif tags:
        text += " (NICs swapped: %s)" % "; ".join(tags)
    return text


def rail_report(host_topologies, nic_leaves=None):
    """{host: parse_nvidia_topo result, nvidia-smi topo -m text or {GPU0: 'mlx5_0', ...}} -> the rail plan.

    majority: {GPU: NIC} most nodes agree on (ties: the first NIC by name, said in warnings);
    differing: [{host, gpus: {GPU: {nic, majority}}, text}] with text such as
    "node07: GPU2 -> mlx5_3, majority mlx5_2; GPU3 -> mlx5_2, majority mlx5_3 (two NICs swapped: ...)";
    consistent / no_nics / unreadable / ambiguous hosts; nccl_ib_hca: '=mlx5_0,...' (the majority NICs in
    GPU order, '=' for exact names: mlx5_1 would also select mlx5_10); nccl_cross_nic: {value, reason}:
    0 when every node agrees and, given nic_leaves ({host: {nic: leaf}}), every leaf carries one rail;
    else None (keep NCCL's default 2) with the reason."""
    if not isinstance(host_topologies, dict) or not host_topologies:
        raise TopologyError("rail_report needs a mapping of host to its nvidia-smi topo -m (parsed or text)")
    maps, no_nics, unreadable, ambiguous = {}, [], {}, {}
    for host in sorted(host_topologies, key=natural_key):
        found, problem = _gpu_nic_map(host_topologies[host], host)
        if problem:
            unreadable[host] = problem
            continue
        if not any(found.values()):
            no_nics.append(host)
            continue
        single = {}
        for gpu_name, nics in found.items():
            if len(nics) == 1:
                single[gpu_name] = nics[0]
            elif len(nics) > 1:
                ambiguous.setdefault(host, {})[gpu_name] = nics
        maps[host] = single
    warnings = []
    votes = {}
    for host, single in maps.items():
        for gpu_name, nic in single.items():
            votes.setdefault(gpu_name, {}).setdefault(nic, 0)
            votes[gpu_name][nic] += 1
    majority = {}
    for gpu_name in sorted(votes, key=_gpu_order):
        counts = votes[gpu_name]
        best = max(counts.values())
        winners = sorted((n for n in counts if counts[n] == best), key=natural_key)
        majority[gpu_name] = winners[0]
        if len(winners) > 1:
            warnings.append("%s: no majority NIC (%s each on %d node(s)); %s taken" % (
                gpu_name, ", ".join(winners), best, winners[0]))
    differing, consistent = [], []
    for host, single in maps.items():
        diffs = sorted((g for g in single if single[g] != majority.get(g)), key=_gpu_order)
        missing = sorted((g for g in majority if g not in single and g not in ambiguous.get(host, {})), key=_gpu_order)
        if diffs:
            differing.append({"host": host, "gpus": dict((g, {"nic": single[g], "majority": majority[g]}) for g in diffs),
                              "text": _describe_diff(host, diffs, majority, single)})
        elif not missing and host not in ambiguous:
            consistent.append(host)
        if missing:
            warnings.append("%s has no NIC for %s (the majority has %s)" % (
                host, ", ".join(missing), ", ".join(majority[g] for g in missing)))
    for host, gpus in ambiguous.items():
        for gpu_name, nics in sorted(gpus.items(), key=lambda i: _gpu_order(i[0])):
            warnings.append("%s: %s has %d NICs at the same distance (%s), majority %s: no single closest NIC "
                            "(a damaged topo -m capture, or a GPU without its own NIC)"
                            % (host, gpu_name, len(nics), ", ".join(nics), majority.get(gpu_name, "none")))
    rail_nics = []
    for gpu_name in sorted(majority, key=_gpu_order):
        if majority[gpu_name] not in rail_nics:
            rail_nics.append(majority[gpu_name])
    hca = ("=" + ",".join(rail_nics)) if rail_nics else None
    if not maps:
        cross = {"value": None, "reason": "no node shows a GPU with its own NIC: nothing to build rails from"}
    elif differing or ambiguous or unreadable:
        named = [d["host"] for d in differing] + sorted(ambiguous, key=natural_key) + sorted(unreadable, key=natural_key)
        cross = {"value": None, "reason": "rails are not the same on every node (%s): keep NCCL's default "
                                          "NCCL_CROSS_NIC=2 until they are" % ", ".join(named)}
    elif len(rail_nics) != len(majority):
        cross = {"value": None, "reason": "several GPUs share a NIC (%d GPUs, %d NICs): rails are not one NIC per GPU; "
                                          "keep NCCL's default" % (len(majority), len(rail_nics))}
    elif nic_leaves is None:
        cross = {"value": None, "reason": "rails are consistent across nodes, but which leaf each NIC is cabled to is "
                                          "not known (give nic_leaves): cannot tell whether the fabric is rail-optimized; "
                                          "keep NCCL's default"}
    else:
        cross = _cross_nic_from_leaves(maps, majority, rail_nics, nic_leaves)
    return {"majority": majority, "rail_nics": rail_nics, "nccl_ib_hca": hca, "nccl_cross_nic": cross,
            "differing": differing, "consistent": consistent, "no_nics": no_nics, "unreadable": unreadable,
            "ambiguous": ambiguous, "warnings": warnings}


def _cross_nic_from_leaves(maps, majority, rail_nics, nic_leaves):
    if not isinstance(nic_leaves, dict):
        raise TopologyError("nic_leaves must be a mapping of host to {nic: leaf}, got %s" % type(nic_leaves).__name__)
    rail_of = dict((nic, index) for index, nic in enumerate(rail_nics))
    leaf_rails, unknown = {}, []
    for host in maps:
        nics = nic_leaves.get(host)
        if not isinstance(nics, dict):
            unknown.append(host)
            continue
        for nic, rail in rail_of.items():
            leaf = nics.get(nic)
            if isinstance(leaf, dict):
                leaf = leaf.get("leaf")
            if leaf is None:
                unknown.append("%s %s" % (host, nic))
                continue
            leaf_rails.setdefault(leaf, set()).add(rail)
    if unknown:
        return {"value": None, "reason": "the leaf of %d NIC(s) is not known (%s): cannot tell whether the fabric is "
                                         "rail-optimized; keep NCCL's default" % (len(unknown), ", ".join(unknown[:5]))}
    mixed = sorted((leaf for leaf, rails in leaf_rails.items() if len(rails) > 1), key=natural_key)
    if mixed:
        leaf = mixed[0]
        return {"value": None, "reason": "leaf %s carries rails %s (NICs %s): not rail-optimized, NCCL must be free "
                                         "to cross NICs; keep NCCL's default" % (
                                             leaf, ", ".join(str(r) for r in sorted(leaf_rails[leaf])),
                                             ", ".join(rail_nics[r] for r in sorted(leaf_rails[leaf])))}
    return {"value": 0, "reason": "rail-optimized: every node uses the same NIC for each GPU and every leaf carries one "
                                  "rail (%d rails on %d leaves); NCCL_CROSS_NIC=0 keeps each ring on its rail"
                                  % (len(rail_nics), len(leaf_rails))}


# ---------------------------------------------------------------------------------------------
# Cabling: each host NIC on the leaf the plan says
# ---------------------------------------------------------------------------------------------

def observed_attachment(ibnetdiscover=None, lldp=None, lldp_interfaces=None):
    """{host: {nic: {leaf, port, source}}} from ibnetdiscover (nic = the device in the NodeDescription,
    'node01 mlx5_0' -> mlx5_0; leaf = the switch's Slurm name as fabric_tree gives it) and from LLDP
    (nic = the local interface; leaf = the neighbour's SysName). ibnetdiscover wins where both know a NIC."""
    result = {}
    if ibnetdiscover is not None:
        parsed = ibnetdiscover
        if isinstance(parsed, dict) and "stdout" in parsed and "switches" not in parsed:
            parsed = parsed["stdout"]
        if not isinstance(parsed, dict):
            parsed = parse_ibnetdiscover(parsed)
        names = switch_names(parsed)
        for host, entry in parsed["hosts"].items():
            for hca in entry["hcas"]:
                nic = hca["device"] or hca["guid"]
                if hca["port"] != 1:
                    nic = "%s:%d" % (nic, hca["port"])
                result.setdefault(host, {})[nic] = {"leaf": names.get(hca["switch"], hca["switch"]),
                                                    "port": hca["switch_port"], "source": "ibnetdiscover"}
    if lldp is not None:
        for host, entry in lldp_host_leaves(lldp, lldp_interfaces).items():
            for nic, where in entry["nics"].items():
                result.setdefault(host, {}).setdefault(nic, {"leaf": where["leaf"], "port": where["port"], "source": "lldp"})
    return dict(sorted(result.items(), key=lambda i: natural_key(i[0])))


def cabling_check(observed, expected=None, rail_nics=None, rail_leaves=None):
    """Every host NIC cabled to another leaf than planned.

    observed: observed_attachment's result ({host: {nic: leaf or {leaf, port}}}).
    The plan, one of: expected = {host: {nic: leaf}} or {host: leaf} (every NIC of the host on that leaf);
    or rail_nics = NICs in rail order (rail_report's rail_nics) with rail_leaves = [leaf of rail 0, ...]
    (or {host: [leaf per rail]} for several units), "rail k of every host on leaf k"; with rail_nics and no
    rail_leaves, the leaf most hosts put rail k on is taken as the plan (said in warnings).
    Returns {miscabled: [{host, nic, port, observed, expected}], missing: [{host, nic, expected}],
    checked, correct, messages, warnings}."""
    if not isinstance(observed, dict):
        raise TopologyError("observed must be a mapping of host to {nic: leaf}, got %s" % type(observed).__name__)

    def leaf_and_port(value):
        if isinstance(value, dict):
            return value.get("leaf"), value.get("port")
        return value, None

    warnings = []
    plan = {}
    if expected is not None:
        if isinstance(expected, str):
            expected = _user_leaf_map(expected)
        if not isinstance(expected, dict):
            raise TopologyError("expected must be a mapping of host to leaf or to {nic: leaf}, got %s" % type(expected).__name__)
        for host, value in expected.items():
            if isinstance(value, str):
                plan[host] = dict((nic, value) for nic in observed.get(host, {})) or {None: value}
            elif isinstance(value, dict):
                plan[host] = dict((nic, leaf_and_port(leaf)[0]) for nic, leaf in value.items())
            else:
                raise TopologyError("expected[%s] must be a leaf name or {nic: leaf}, got %r" % (host, value))
    elif rail_nics:
        if not isinstance(rail_nics, (list, tuple)) or not all(isinstance(n, str) for n in rail_nics):
            raise TopologyError("rail_nics must be a list of NIC names in rail order, got %r" % (rail_nics,))
        rail_nics = [n.lstrip("=") for n in rail_nics]
        if rail_leaves is None:
            rail_leaves = []
            for index, nic in enumerate(rail_nics):
                counts = {}
                for host, nics in observed.items():
                    leaf = leaf_and_port(nics.get(nic))[0] if nic in nics else None
                    if leaf:
                        counts[leaf] = counts.get(leaf, 0) + 1
                if not counts:
                    rail_leaves.append(None)
                    warnings.append("rail %d (%s): no host shows where it is cabled" % (index, nic))
                    continue
                best = max(counts.values())
                winners = sorted((l for l in counts if counts[l] == best), key=natural_key)
                rail_leaves.append(winners[0] if len(winners) == 1 else None)
                if len(winners) > 1:
                    warnings.append("rail %d (%s): no leaf holds most hosts (%s with %d each): give rail_leaves"
                                    % (index, nic, ", ".join(winners), best))
                else:
                    warnings.append("rail %d (%s): planned on %s, the leaf %d of %d host(s) use" % (
                        index, nic, winners[0], best, sum(counts.values())))
        for host in observed:
            leaves = rail_leaves.get(host) if isinstance(rail_leaves, dict) else rail_leaves
            if leaves is None:
                continue
            if not isinstance(leaves, (list, tuple)) or len(leaves) != len(rail_nics):
                raise TopologyError("rail_leaves%s must list one leaf per rail (%d), got %r" % (
                    "[%s]" % host if isinstance(rail_leaves, dict) else "", len(rail_nics), leaves))
            plan[host] = dict((nic, leaf) for nic, leaf in zip(rail_nics, leaves) if leaf)
    else:
        raise TopologyError("cabling_check needs a plan: expected ({host: leaf} or {host: {nic: leaf}}) or rail_nics")
    miscabled, missing, messages = [], [], []
    checked = correct = 0
    for host in sorted(plan, key=natural_key):
        seen = observed.get(host)
        for nic in sorted(plan[host], key=lambda n: natural_key(n or "")):
            want = plan[host][nic]
            if nic is None or seen is None or nic not in seen:
                missing.append({"host": host, "nic": nic, "expected": want})
                messages.append("%s %s: not seen on the fabric, expected on %s" % (host, nic or "(any NIC)", want))
                continue
            checked += 1
            got, port = leaf_and_port(seen[nic])
            if got == want:
                correct += 1
                continue
            miscabled.append({"host": host, "nic": nic, "port": port, "observed": got, "expected": want})
            messages.append("%s %s%s: on %s, expected on %s" % (host, nic, " (switch port %s)" % port if port is not None else "",
                                                                got, want))
    return {"miscabled": miscabled, "missing": missing, "checked": checked, "correct": correct,
            "messages": messages, "warnings": warnings}


# ---------------------------------------------------------------------------------------------
# Kubernetes node labels of the same facts
# ---------------------------------------------------------------------------------------------

LEAF_LABEL = "gpufabric.io/leaf"
NVLINK_DOMAIN_LABEL = "gpufabric.io/nvlink-domain"
_LABEL_VALUE_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def _label_value(value, what):
    text = str(value)
    if not _LABEL_VALUE_RE.match(text):
        raise TopologyError("%s %r cannot be a Kubernetes label value (at most 63 characters: letters, digits, '-', "
                            "'_', '.', starting and ending with a letter or digit)" % (what, text))
    return text


def node_labels(leaves=None, domains=None):
    """{node: {label: value}}: gpufabric.io/leaf from host_leaf_map's result or {host: leaf} (no spines label: a
    real fabric's spine list runs past a label value's 63 characters); gpufabric.io/nvlink-domain from
    nvlink_domains' result (the domain's block name, block1... in the order block_topology_conf writes them) or
    {host: domain}. The same facts as topology.conf."""
    labels = {}
    if leaves:
        if not isinstance(leaves, dict):
            raise TopologyError("leaves must be host_leaf_map's result or a mapping of host to leaf, got %s"
                                % type(leaves).__name__)
        hosts = leaves["hosts"] if "hosts" in leaves and isinstance(leaves["hosts"], dict) else leaves
        for host, entry in hosts.items():
            leaf = entry.get("leaf") if isinstance(entry, dict) else entry
            if leaf in (None, ""):
                continue
            labels.setdefault(str(host), {})[LEAF_LABEL] = _label_value(leaf, "leaf of %s" % host)
    if domains:
        if not isinstance(domains, dict):
            raise TopologyError("domains must be nvlink_domains' result or a mapping of host to domain, got %s"
                                % type(domains).__name__)
        if "domains" in domains:
            groups = [d["hosts"] for d in domains["domains"]]
        else:
            by_key = {}
            for host, key in domains.items():
                if key not in (None, ""):
                    by_key.setdefault(str(key), []).append(host)
            groups = sorted((sorted(h, key=natural_key) for h in by_key.values()), key=lambda h: natural_key(h[0]))
        for number, hosts in enumerate(groups, 1):
            for host in hosts:
                labels.setdefault(str(host), {})[NVLINK_DOMAIN_LABEL] = "block%d" % number
    return labels
