# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The IMEX domain judged, only where one is expected: which expected node is missing from it, which is not READY,
which cannot reach its peers, and the domain's state.

No domain expected - a single HGX node, a tray no job has put in a domain - gives no finding whatever IMEX says: an
IMEX daemon that is not configured there is normal (NVSentinel#1471 reported 'IMEX daemon status is -3' as a hardware
fault on such nodes). A node cut off from more than half of its peers is named once, not by each peer that lost it.

Pure functions, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_imex import CONNECTED, READY
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError

_NODE_FIX = ("on that node: systemctl status nvidia-imex and journalctl -u nvidia-imex; the daemon needs the GPU driver "
             "loaded and the same nodes_config.cfg as its peers")
_LINK_FIX = ("check that the IMEX port (50000 unless SERVER_PORT says otherwise) is reachable both ways, that every node has "
             "the same nodes_config.cfg (NODE_MAP_MISMATCH) and the same IMEX and driver version (VERSION_MISMATCH)")


def _label(node):
    if node.get("hostname"):
        return "#%s %s (%s)" % (node["index"], node["hostname"], node.get("address"))
    return "#%s %s" % (node["index"], node.get("address"))


def _target(node):
    return node.get("hostname") or node.get("address") or "IMEX node #%s" % node["index"]


def _checked(parsed, expected_nodes):
    if not isinstance(parsed, dict) or not isinstance(parsed.get("nodes"), list) or \
            not all(isinstance(n, dict) and "index" in n for n in parsed["nodes"]):
        raise ToolTextError("imex_findings needs parse_nvidia_imex_ctl's result (nodes as a list of nodes)")
    if isinstance(expected_nodes, bool) or expected_nodes is None:
        return None if not expected_nodes else len(parsed["nodes"])
    if isinstance(expected_nodes, int):
        if expected_nodes < 0:
            raise ToolTextError("expected_nodes must be the domain's nodes (names or addresses) or their number, got %d"
                                % expected_nodes)
        return expected_nodes or None
    if isinstance(expected_nodes, (list, tuple)) and all(isinstance(n, str) and n for n in expected_nodes):
        return list(expected_nodes) or None
    raise ToolTextError("expected_nodes must be a list of the domain's node names or addresses, or their number, got %r"
                        % (expected_nodes if not isinstance(expected_nodes, str) else expected_nodes[:60]))


def _judged(parsed, expected, state):
    """The nodes to judge and the findings for expected nodes the domain does not list."""
    nodes = parsed["nodes"]
    found = []
    if isinstance(expected, int):
        if len(nodes) < expected:
            found.append(finding("imex_node", "critical", "IMEX domain",
                                 "the IMEX domain lists %d nodes, %d expected" % (len(nodes), expected),
                                 "list every node of the domain in nodes_config.cfg on each of them and restart nvidia-imex"))
        return nodes, found
    by_name = {}
    for node in nodes:
        for name in (node.get("address"), node.get("hostname")):
            if name:
                by_name.setdefault(name, node)
    judged = []
    for name in expected:
        node = by_name.get(name)
        if node is None:
            found.append(finding("imex_node", "critical", name,
                                 "%s is not among the %d nodes of the IMEX domain (domain %s)" % (name, len(nodes), state or "state unknown"),
                                 "add it to nodes_config.cfg on every node of the domain (the same list everywhere) and "
                                 "restart nvidia-imex there"))
        elif node not in judged:
            judged.append(node)
    return judged, found


def _connection_findings(ready):
    """Nodes cut off from more than half of their peers, then the other pairs that cannot talk."""
    by_index = dict((node["index"], node) for node in ready)
    status = {}
    for node in ready:
        for link in node.get("connections") or []:
            if link.get("to") in by_index and link.get("to") != node["index"] and link.get("status"):
                status[(node["index"], link["to"])] = link["status"]
    bad = dict((index, set()) for index in by_index)
    for (a, b), word in status.items():
        if word != CONNECTED:
            bad[a].add(b)
            bad[b].add(a)
    peers = len(ready) - 1
    isolated = [i for i in sorted(bad) if bad[i] and len(bad[i]) * 2 > peers]
    found = []
    for index in isolated:
        words = ", ".join("#%d %s" % (peer, status.get((index, peer)) or status.get((peer, index)))
                          for peer in sorted(bad[index]))
        found.append(finding("imex_connection", "critical", _target(by_index[index]),
                             "IMEX node %s is not connected to %d of its %d peers: %s" % (
                                 _label(by_index[index]), len(bad[index]), peers, words), _LINK_FIX))
    pairs = sorted(set((min(a, b), max(a, b)) for a in bad for b in bad[a] if a not in isolated and b not in isolated))
    for a, b in pairs:
        found.append(finding("imex_connection", "critical", "%s and %s" % (_target(by_index[a]), _target(by_index[b])),
                             "IMEX nodes %s and %s are not connected (#%d to #%d: %s, #%d to #%d: %s)" % (
                                 _label(by_index[a]), _label(by_index[b]), a, b, status.get((a, b), "unknown"),
                                 b, a, status.get((b, a), "unknown")), _LINK_FIX))
    return found


def _domain_finding(state, fine):
    if state == "UP":
        return []
    if state is None:
        return [finding("imex_domain", "warning", "IMEX domain",
                        "the nvidia-imex-ctl -N output ended before its Domain State: the domain's state is unknown",
                        "run nvidia-imex-ctl -N again; a daemon that does not answer needs systemctl status nvidia-imex")]
    if state == "DOWN":
        return [finding("imex_domain", "critical", "IMEX domain", "the IMEX domain is DOWN",
                        "nvidia-imex-ctl -N on each node of the domain; start or restart nvidia-imex where it is not READY")]
    fine_degraded = fine and state == "DEGRADED"
    return [finding("imex_domain", "info" if fine_degraded else "warning", "IMEX domain",
                    "the IMEX domain is %s%s" % (state, ", but every node expected in it is READY and connected"
                                                 if fine_degraded else ""),
                    "nvidia-imex-ctl -N names the nodes that are not READY or not connected: restart nvidia-imex there, or "
                    "take nodes that left the domain out of nodes_config.cfg")]


def imex_findings(parsed, expected_nodes=None):
    """parse_nvidia_imex_ctl's result, judged against the nodes the domain should have.

    ``expected_nodes``: the domain's nodes as IMEX names them (addresses, or hostnames with ``-H``), or how many
    there are (then every listed node is judged); None, 0, False or an empty list: no domain is expected here, and
    nothing IMEX says is a finding. Findings: ``imex_node`` (critical: an expected node missing, or not READY),
    ``imex_connection`` (critical: READY nodes that cannot reach each other), ``imex_domain`` (the state: DOWN
    critical; DEGRADED or another state a warning, information when every expected node is READY and connected;
    an output cut before its state a warning, never a pass)."""
    expected = _checked(parsed, expected_nodes)
    if expected is None:
        return []
    state = parsed.get("domain_state")
    judged, found = _judged(parsed, expected, state)
    ready = [node for node in judged if node.get("status") == READY]
    for node in judged:
        if node.get("status") != READY:
            found.append(finding("imex_node", "critical", _target(node), "IMEX node %s is %s, not READY (domain %s)" % (
                _label(node), node.get("status") or "of no status", state or "state unknown"), _NODE_FIX))
    found.extend(_connection_findings(ready))
    return found + _domain_finding(state, not found)
