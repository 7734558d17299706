# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``nvidia-imex-ctl -N`` read: the IMEX domain as one node's daemon sees it - each node with its index, address,
hostname (``-H``), status and version, its connection to every node, and the domain's state.

Three forms give one shape: the older text (IMEX 570.00: no version column, legend I/N/R/D/A/C), the newer text
(``- Version: 570.172``, ``!V!`` and ``!M!`` in the legend, ``- Hostname:`` with ``-H``, the local node marked
``* 10.66.6.9 *``) and ``-j`` JSON. Each connection's status is the JSON's word whatever the form: the text's cells
``C`` CONNECTED, ``I`` INVALID, ``N`` NEVER_CONNECTED, ``R`` RECOVERING, ``D`` DISCONNECTED, ``A`` AUTHENTICATING,
``!V!`` VERSION_MISMATCH, ``!M!`` NODE_MAP_MISMATCH.

Pure functions, standard library only; one pass over the lines, every regular expression linear."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError

CELLS = {"C": "CONNECTED", "I": "INVALID", "N": "NEVER_CONNECTED", "R": "RECOVERING", "D": "DISCONNECTED",
         "A": "AUTHENTICATING", "!V!": "VERSION_MISMATCH", "!M!": "NODE_MAP_MISMATCH"}
CONNECTED = "CONNECTED"
READY = "READY"

_NODE_RE = re.compile(r"^Node +#([0-9]{1,5}) +([-*]) +(\S.*)$")
_HEADER_RE = re.compile(r"^Nodes From\\To\b")
_ROW_RE = re.compile(r"^([0-9]{1,5}) +(\S.*)$")
_STATE_RE = re.compile(r"^Domain State *: *(\S*)")
_TIME_RE = re.compile(r"^[0-9]{1,2}/[0-9]{1,2}/[0-9]{4} [0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?$")


def _node(match):
    """One 'Node #i - address - STATUS [- Version: v] [- Hostname: h]' line."""
    parts = [part.strip() for part in match.group(3).split(" - ")]
    local = match.group(2) == "*"
    address = parts[0].rstrip("*").strip() if local else parts[0]
    node = {"index": int(match.group(1)), "address": address or None, "hostname": None,
            "status": parts[1].upper() if len(parts) > 1 and parts[1] else None, "version": None, "local": local,
            "connections": []}
    for part in parts[2:]:
        label, sep, value = part.partition(":")
        if sep and label.strip() == "Version":
            node["version"] = value.strip() or None
        elif sep and label.strip() == "Hostname":
            node["hostname"] = value.strip() or None
    return node, any(part.startswith("Version:") for part in parts[2:])


def _text_form(lines):
    nodes, columns, rows = [], None, {}
    result = {"format": "text", "timestamp": None, "domain_state": None, "versions_printed": False}
    for raw in lines:
        line = raw.strip()
        match = _NODE_RE.match(line)
        if match:
            node, version = _node(match)
            nodes.append(node)
            result["versions_printed"] = result["versions_printed"] or version
            continue
        if _HEADER_RE.match(line):
            columns = []
            for word in line[len("Nodes From\\To"):].split():
                if not word.isdigit():
                    break       # an elided header ('...') ends the columns that can be read
                columns.append(int(word))
            continue
        match = _ROW_RE.match(line) if columns is not None else None
        if match:
            rows[int(match.group(1))] = [{"to": to, "status": CELLS.get(cell, cell.upper())}
                                         for to, cell in zip(columns, match.group(2).split())]
            continue
        match = _STATE_RE.match(line)
        if match:
            result["domain_state"] = match.group(1).upper() or None
        elif _TIME_RE.match(line) and result["timestamp"] is None:
            result["timestamp"] = line
    if not nodes and not rows and result["domain_state"] is None:
        first = next((line.strip() for line in lines if line.strip()), "")
        raise ToolTextError("not nvidia-imex-ctl -N output: no 'Node #' line, no connectivity table and no "
                            "'Domain State' line (%s)" % ("starts %r" % first[:60] if first else "empty"))
    listed = set(node["index"] for node in nodes)
    for index in sorted(set(rows) - listed):   # a row whose node line was cut off
        nodes.append({"index": index, "address": None, "hostname": None, "status": None, "version": None,
                      "local": False, "connections": []})
    for node in nodes:
        node["connections"] = rows.get(node["index"], [])
    result["nodes"] = nodes
    return result


def _json_index(key, what):
    if not (isinstance(key, str) and key.isdigit()):
        raise ToolTextError("nvidia-imex-ctl -N -j: %s %r is not a node number" % (what, key))
    return int(key)


def _json_form(data):
    if not isinstance(data, dict) or not isinstance(data.get("nodes", {}), dict):
        raise ToolTextError("not nvidia-imex-ctl -N -j output: expected an object with 'nodes' as an object of node "
                            "numbers, got %s" % type(data.get("nodes") if isinstance(data, dict) else data).__name__)
    nodes = []
    for key, entry in sorted(data.get("nodes", {}).items(), key=lambda item: (len(item[0]), item[0])):
        if not isinstance(entry, dict):
            raise ToolTextError("nvidia-imex-ctl -N -j: node %s is %s, not an object" % (key, type(entry).__name__))
        connections = entry.get("connections") if isinstance(entry.get("connections"), dict) else {}
        nodes.append({"index": _json_index(key, "node"), "address": _word(entry.get("host")),
                      "hostname": _word(entry.get("hostname")), "status": (_word(entry.get("status")) or "").upper() or None,
                      "version": _word(entry.get("version")), "local": bool(entry.get("is_local") or entry.get("local")),
                      "connections": [{"to": _json_index(to, "connection"),
                                       "status": (_word((peer or {}).get("status") if isinstance(peer, dict) else None)
                                                  or "").upper() or None}
                                      for to, peer in sorted(connections.items(), key=lambda item: (len(item[0]), item[0]))]})
    return {"format": "json", "timestamp": _word(data.get("timestamp")), "nodes": nodes,
            "domain_state": (_word(data.get("status")) or "").upper() or None, "versions_printed": True}


def _word(value):
    return value.strip() or None if isinstance(value, str) else None


def parse_nvidia_imex_ctl(value):
    """``nvidia-imex-ctl -N`` output (text, ``-H`` text, ``-j`` JSON as text or already loaded) ->
    {format, timestamp, nodes: [{index, address, hostname, status, version, local, connections: [{to, status}]}],
    domain_state ('UP', 'DEGRADED', 'DOWN' or None when the text ended before it), versions_printed (False for the
    older layout, which prints no version), complete (the domain state was read)}.

    ToolTextError when the text is neither (no node line, no connectivity table, no Domain State; JSON that is not
    IMEX's)."""
    if isinstance(value, dict):
        result = _json_form(value)
    else:
        cleaned = _text.clean(value, "nvidia-imex-ctl output").strip()
        if cleaned.startswith(("{", "[")):
            try:
                data = json.loads(cleaned)
            except (ValueError, RecursionError) as exc:
                raise ToolTextError("nvidia-imex-ctl -N -j output is not JSON: %s" % str(exc)[:200])
            result = _json_form(data)
        else:
            result = _text_form(cleaned.split("\n"))
    result["complete"] = result["domain_state"] is not None
    return result
