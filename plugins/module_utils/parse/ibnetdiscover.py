# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""`ibnetdiscover`'s topology file (with or without -s/-g) read: switches, CAs and routers with their
links, the host each CA belongs to (from its NodeDescription, 'node01 mlx5_0', or a node name map), and a
switch's own name from its NodeDescription. Node GUIDs in every form ibnetdiscover prints, and its
--node-name-map file.

Pure functions, standard library only, Python 3.8. The parser reads line by line with anchored regular
expressions whose repetitions cannot overlap, so its time is linear in the input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError, short
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


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
        raise TopologyError("%r is not a node GUID (up to 16 hex digits, as ibnetdiscover prints them)" % short(value))
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
            raise TopologyError("node name map line %d %r has no name after the GUID" % (number, short(line)))
        name = parts[1].strip()
        if len(name) >= 2 and name[0] == name[-1] == '"':
            name = name[1:-1]
        try:
            names[normalize_guid(parts[0])] = name
        except TopologyError:
            raise TopologyError("node name map line %d: %r is not a GUID" % (number, short(parts[0])))
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
            raise TopologyError("node_name_map: the name of %s must be a string, got %r" % (short(guid), name))
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


def _node_block(match, line, number, attrs):
    """A Switch/Ca/Rt header line -> its node (the vendid/devid/sysimgguid lines above it in ``attrs``)."""
    kind = _TYPES[match.group(1)]
    before, description, after = _split_comment(line[match.end():])
    node = {"type": kind, "guid": "0x%016x" % int(match.group(4), 16), "description": description,
            "port_count": int(match.group(2)), "vendid": attrs.get("vendid"), "devid": attrs.get("devid"),
            "sysimgguid": attrs.get("sysimgguid"), "lid": None, "enhanced": None, "line": number}
    if kind == "switch":
        tail = _SWITCH_TAIL_RE.match(after)
        if tail:
            node["enhanced"] = tail.group(1) == "enhanced"
            node["lid"] = int(tail.group(2))
    return node


def _port_link(match, line):
    """A '[port] "X-guid"[port] ...' line -> the link as its node's block prints it."""
    before, description, after = _split_comment(line[match.end():])
    local = _LOCAL_LID_RE.match(before)
    tail = _REMOTE_TAIL_RE.match(after)
    return {"port": int(match.group(1)), "port_guid": ("0x%016x" % int(match.group(2), 16)) if match.group(2) else None,
            "remote_guid": "0x%016x" % int(match.group(4), 16), "remote_port": int(match.group(5)),
            "remote_type": _PREFIX_TYPES[match.group(3)], "remote_description": description,
            "remote_lid": int(tail.group(1)) if tail else None, "lid": int(local.group(1)) if local else None,
            "width": ("%sx" % tail.group(2)) if tail and tail.group(2) else None,
            "speed": tail.group(3) if tail and tail.group(3) else None}


def _read_blocks(text, warnings):
    """The lines read, in one pass -> (nodes {guid: node}, links {(guid, port): link}, what peers print of a node:
    {guid: description}, {guid: type})."""
    nodes, links, seen_desc, seen_type = {}, {}, {}, {}
    attrs, current, skipped = {}, None, []
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
            current = _node_block(match, line, number, attrs)
            if current["guid"] in nodes:
                warnings.append("line %d: %s %s is described twice; the later block is kept" % (number, current["type"], current["guid"]))
            nodes[current["guid"]] = current
            attrs = {}
            continue
        match = _PORT_RE.match(line)
        if match and current is not None:
            link = _port_link(match, line)
            if link["remote_description"] is not None:
                seen_desc.setdefault(link["remote_guid"], link["remote_description"])
            seen_type.setdefault(link["remote_guid"], link["remote_type"])
            links[(current["guid"], link["port"])] = link
            continue
        if line.startswith("[") or line.startswith(("Switch", "Ca", "Rt")):
            skipped.append(number)
        # other lines: -g grouping headers ("Chassis ...", "Non-Chassis Nodes"), -s progress lines
    if skipped:
        warnings.append("%d line(s) looked like ibnetdiscover node or link lines but could not be read "
                        "(first: line %d): truncated or damaged output" % (len(skipped), skipped[0]))
    if not nodes:
        raise TopologyError("no Switch or Ca block in the ibnetdiscover output (%s)" % (
            "empty input" if not (text or "").strip() else "first line %r" % short(_text.clean(text).strip().splitlines()[0])))
    return nodes, links, seen_desc, seen_type


def _add_peers_only(nodes, links, seen_desc, seen_type, warnings):
    """Nodes only their peers print (their own block cut off) added from what the peers say."""
    peers_only = []
    for guid in sorted(set(g for g, p in links) | set(l["remote_guid"] for l in links.values())):
        if guid not in nodes:
            kind = seen_type.get(guid, "ca")
            nodes[guid] = {"type": kind, "guid": guid, "description": seen_desc.get(guid), "port_count": None,
                           "vendid": None, "devid": None, "sysimgguid": None, "lid": None, "enhanced": None, "line": None}
            peers_only.append("%s %s" % (kind, guid))
    if peers_only:
        warnings.append("%d node(s) are only seen from their peers, their own block is missing (e.g. %s): truncated "
                        "output?" % (len(peers_only), peers_only[0]))


def _add_reverse_links(nodes, links, warnings):
    """A block cut off at the end still shows up in its peers' port lines: both sides make the link."""
    one_sided = []
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


def _node_name(nodes, names, guid):
    """A node's name: the node name map's, else a switch's own name or a CA's host."""
    if guid in names:
        return names[guid]
    node = nodes[guid]
    if node["type"] == "switch":
        return switch_own_name(node["description"])
    return _host_of(node["description"])[0]


def _ports(node, node_links, nodes, names):
    """A node's ports as the result gives them, in port order, each naming what is on its other end."""
    ports = []
    for link in sorted(node_links, key=lambda l: l["port"]):
        remote = link["remote_guid"]
        entry = {"port": link["port"], "remote_guid": remote, "remote_port": link["remote_port"],
                 "remote_type": nodes[remote]["type"], "remote_name": _node_name(nodes, names, remote),
                 "remote_description": nodes[remote]["description"] or link["remote_description"],
                 "remote_lid": link["remote_lid"], "width": link["width"], "speed": link["speed"]}
        if node["type"] != "switch":
            entry["port_guid"] = link["port_guid"]
            entry["lid"] = link["lid"]
        ports.append(entry)
    return ports


def _add_host(hosts, host, device, guid, ports):
    """The CA's ports cabled to a switch added to its host's entry."""
    entry = hosts.setdefault(host, {"switch": None, "switches": [], "hcas": []})
    for p in ports:
        if p["remote_type"] == "switch":
            entry["hcas"].append({"device": device, "guid": guid, "port": p["port"], "switch": p["remote_guid"],
                                  "switch_name": p["remote_name"], "switch_port": p["remote_port"],
                                  "width": p["width"], "speed": p["speed"]})


def _assemble(nodes, links, names):
    """-> switches, cas, hosts, unnamed CAs."""
    switches, cas, hosts, unnamed = [], [], {}, []
    by_node = {}
    for (guid, port), link in links.items():
        by_node.setdefault(guid, []).append(link)
    for guid in sorted(nodes):
        node = nodes[guid]
        ports = _ports(node, by_node.get(guid, []), nodes, names)
        if node["type"] == "switch":
            switches.append({"guid": guid, "name": _node_name(nodes, names, guid), "description": node["description"],
                             "lid": node["lid"], "port_count": node["port_count"], "enhanced": node["enhanced"],
                             "vendid": node["vendid"], "devid": node["devid"], "sysimgguid": node["sysimgguid"],
                             "ports": ports})
            continue
        host, device = (names[guid], None) if guid in names else _host_of(node["description"])
        cas.append({"guid": guid, "type": node["type"], "description": node["description"], "host": host,
                    "device": device, "port_count": node["port_count"], "vendid": node["vendid"], "devid": node["devid"],
                    "sysimgguid": node["sysimgguid"], "ports": ports})
        if host is None:
            unnamed.append({"guid": guid, "description": node["description"],
                            "switches": sorted(set(p["remote_guid"] for p in ports if p["remote_type"] == "switch"))})
            continue
        _add_host(hosts, host, device, guid, ports)
    for entry in hosts.values():
        entry["hcas"].sort(key=lambda h: (natural_key(h["device"] or ""), h["guid"], h["port"]))
        entry["switches"] = sorted(set(h["switch"] for h in entry["hcas"]))
        entry["switch"] = entry["switches"][0] if len(entry["switches"]) == 1 else None
    return switches, cas, hosts, unnamed


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
    warnings = []
    nodes, links, seen_desc, seen_type = _read_blocks(text, warnings)
    _add_peers_only(nodes, links, seen_desc, seen_type, warnings)
    _add_reverse_links(nodes, links, warnings)
    switches, cas, hosts, unnamed = _assemble(nodes, links, names)
    if unnamed:
        warnings.append("%d CA(s) carry the firmware's NodeDescription (e.g. %r), not '<host> <device>': they have no "
                        "host name here; give node_name_map, or run rdma-ndd on them"
                        % (len(unnamed), short(unnamed[0]["description"] or "")))
    link_count = sum(1 for (guid, port), link in links.items() if (guid, port) < (link["remote_guid"], link["remote_port"]))
    return {"switches": switches, "cas": cas, "hosts": dict(sorted(hosts.items(), key=lambda i: natural_key(i[0]))),
            "unnamed_cas": unnamed, "counts": {"switches": len(switches), "cas": len(cas), "hosts": len(hosts),
                                               "links": link_count},
            "warnings": warnings}


def as_parsed(value):
    """What a caller holds of ibnetdiscover - its text, a registered result (``stdout``) or a parsed or tree dict -
    as a dict: parsed from the text when it is not one already (a tree with ``leaves`` is returned as it is)."""
    if isinstance(value, dict) and "stdout" in value and "switches" not in value:
        value = value["stdout"]
    return value if isinstance(value, dict) else parse_ibnetdiscover(value)
