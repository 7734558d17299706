# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``iblinkinfo`` (infiniband-diags) text to one entry per port, in its block and its line (``-l``) layouts.

Blocks: a ``Switch: 0x<guid> <name>:`` or ``CA: <name>:`` line, then one line per port - a switch's
``<lid> <port>[..] ==( <width> <speed> Gbps <state>/ <physical state>)==> <lid> <port>[..] "<peer>" ( <hint> )``,
a CA's the same after its port GUID. ``-l`` prints every port on one line with the node's GUID and name first and
the peer's GUID before its LID. A port that is down prints no width or speed and an empty peer.

Per port: node type, GUID and name, LID, port, width (``4X``), speed in Gb/s, state, physical state, the peer's
GUID, LID, port and name, and the "Could be" hint iblinkinfo gives when the link trained below what both ends can
(``could_be``: width and/or speed). One pass over the lines.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_SWITCH_RE = re.compile(r"^Switch:\s+(0x[0-9a-fA-F]+)\s+(.*?):?\s*$")
_CA_RE = re.compile(r"^CA:\s+(.*?):?\s*$")
_LINK_RE = re.compile(
    r"^(?P<left>.*?)\s*(?P<port>[0-9]{1,3})\[[^\]]{0,8}\]\s+==\(\s*(?:(?P<width>[0-9]{1,2}X)\s+(?P<speed>[0-9.]+)\s+Gbps\s+)?"
    r"(?P<state>[A-Za-z]+)/\s*(?P<phys>[A-Za-z]+)\)==>\s*(?P<right>.*)$")
_PEER_RE = re.compile(r"^(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?(?:(?P<lid>[0-9]{1,5})\s+)?(?P<port>[0-9]{1,3})?\[[^\]]{0,8}\]\s+"
                      r"\"(?P<name>[^\"]*)\"\s*\((?P<hint>[^)]*)\)")
_LEFT_LINE_RE = re.compile(r"^(?P<guid>0x[0-9a-fA-F]+)\s+\"\s*(?P<name>[^\"]*)\"\s+(?P<lid>[0-9]{1,5})$")
_LEFT_CA_RE = re.compile(r"^(?P<guid>0x[0-9a-fA-F]+)\s+(?P<lid>[0-9]{1,5})$")
_COULD_BE_RE = re.compile(r"Could be\s+([0-9]{1,2}X)|Could be\s+([0-9.]+)\s*Gbps")


class IblinkinfoError(ValueError):
    """The text holds no iblinkinfo port line; the message says what was expected."""


def _hint(text):
    width = speed = None
    for match in _COULD_BE_RE.finditer(text or ""):
        width = match.group(1) or width
        speed = float(match.group(2)) if match.group(2) else speed
    return {"width": width, "speed_gbps": speed} if width or speed is not None else None


def parse_iblinkinfo(text):
    """-> {ports: [{node_type, node_guid, node_name, lid, port, width, speed_gbps, state, physical_state, peer_guid,
    peer_lid, peer_port, peer_name, could_be}], unparsed}."""
    ports, unparsed = [], []
    node = {"type": None, "guid": None, "name": None}
    for raw in _text.launcher_lines(text, "iblinkinfo output"):
        line = raw.strip()
        if not line:
            continue
        match = _SWITCH_RE.match(line)
        if match:
            node = {"type": "switch", "guid": match.group(1).lower(), "name": match.group(2).strip()}
            continue
        match = _CA_RE.match(line)
        if match:
            node = {"type": "ca", "guid": None, "name": match.group(1).strip()}
            continue
        link = _LINK_RE.match(line)
        if not link:
            if not re.match(r"^\S*[#$]\s|^\[[^\]]*\][#$]", line):
                unparsed.append(line[:200])
            continue
        left = link.group("left").strip()
        entry = {"node_type": node["type"], "node_guid": node["guid"], "node_name": node["name"], "lid": None,
                 "port": int(link.group("port")), "width": link.group("width"),
                 "speed_gbps": float(link.group("speed")) if link.group("speed") else None,
                 "state": link.group("state"), "physical_state": link.group("phys"), "peer_guid": None,
                 "peer_lid": None, "peer_port": None, "peer_name": None, "could_be": None}
        line_mode = _LEFT_LINE_RE.match(left)
        ca_left = _LEFT_CA_RE.match(left)
        if line_mode:
            entry.update(node_type=entry["node_type"] or "switch", node_guid=line_mode.group("guid").lower(),
                         node_name=line_mode.group("name").strip(), lid=int(line_mode.group("lid")))
        elif ca_left:
            entry.update(lid=int(ca_left.group("lid")))
            if entry["node_type"] == "ca":
                entry["node_guid"] = ca_left.group("guid").lower()
        elif left.isdigit():
            entry["lid"] = int(left)
        peer = _PEER_RE.match(link.group("right").strip())
        if peer:
            entry.update(peer_guid=(peer.group("guid") or "").lower() or None,
                         peer_lid=int(peer.group("lid")) if peer.group("lid") else None,
                         peer_port=int(peer.group("port")) if peer.group("port") else None,
                         peer_name=peer.group("name") or None, could_be=_hint(peer.group("hint")))
        ports.append(entry)
    if not ports:
        raise IblinkinfoError("no iblinkinfo port line ('<lid> <port>[  ] ==( 4X ... Active/  LinkUp)==> ...')")
    return {"ports": ports, "unparsed": unparsed}
