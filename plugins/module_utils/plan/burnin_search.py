# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Burn-in that scales: find the slow hosts, bad links and bad leaf uplinks in O(log N) rounds (adaptive
group testing).

A group run (nccl-tests all_reduce across the group's hosts) is only as fast as its slowest member, its
worst link and the worst uplink it crosses. So: test large groups first, in parallel where they are
disjoint; clear the groups that reach the reference; split the ones that fall short and test the halves;
when both halves of a short group pass, the fault is a link between them, searched by crossing the halves'
halves; a short pair is run against known-good partners to tell a slow host from a bad link. Every finding
is measured twice before it is named (a slow host against two partners, a bad link as the pair again, a bad
uplink from two more hosts of its leaf), and any run short by a small margin is run again before it counts,
so noise names nothing.

Searched until explained: a group that fell short is run again once its search is over, without what
the search found in it (its slow hosts, one end of each bad link, the hosts of a bad uplink). If that is
short too, something in it is still unexplained and the rest is searched the same way; a group short twice
with nothing found in it is named unresolved. Two faults in one group are therefore both found.

With a topology ({host: leaf} or {host: {leaf, spine}}), the first rounds test within each leaf, then
across leaves (the i-th host of every leaf together, leaves ordered by spine, so every uplink carries
traffic). A run across leaves that is short between two hosts that each pass within their leaf is checked
against other hosts of both leaves towards third leaves: when those fall short too, the leaf's uplink is
named (one finding for the leaf, not one per host).

The planner is a pure state machine shared by the burnin role and tests/bench/burnin_sim.py, in three
modules: this one plans the rounds (``start``, ``next_round``), plan/burnin_search_record.py reads them
(``record``: each run judged, and what its verdict leads to) and plan/burnin_search_report.py says what was found:

    state = start(hosts, expected=None, tolerance=0.15, topology=None)
    while not state["done"]:
        tests = next_round(state)                     # [{"id", "hosts", "kind"}], disjoint hosts
        record(state, {test_id: figure or None})      # figure: busbw at the largest size (None: failed)
    state["slow_hosts"], state["bad_links"], state["bad_uplinks"], state["tree"]   # or burnin_search_report.report(state)

Without ``expected`` (a baseline), the first round's groups judge each other: the reference is the
median of their figures, so the cluster is split into enough groups for a median to mean something.
The state holds only lists, dicts, strings and numbers: a play keeps it as a fact between rounds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan.burnin_search_record import (
    NO_LEAF, UNPLACED, add_test, complete, explained, fabric_order, known_good, leaf_of_host, settle)

FIRST_GROUPS = 16


def _chunks(hosts, count):
    """hosts cut into ``count`` groups of near-equal size (each at least 2 hosts)."""
    count = max(1, min(count, len(hosts) // 2))
    size, extra = divmod(len(hosts), count)
    out, start_at = [], 0
    for n in range(count):
        end = start_at + size + (1 if n < extra else 0)
        out.append(hosts[start_at:end])
        start_at = end
    return out


def _topology(hosts, topology):
    """The topology -> ({host: leaf}, {leaf: spine group}); a host left out has no leaf. Taken as
    {host: leaf}, {host: {"leaf": ..., "spine": ...}}, or as topology.host_leaf_map's result ({hosts: {host:
    {leaf, ...}}, leaf_spines}) or fabric_tree's ({host_leaf, leaf_spines}) as they are: leaves under the same
    spines are one spine group (a pod)."""
    spine_of = {}
    if isinstance(topology.get("leaf_spines"), dict) and isinstance(topology.get("hosts", topology.get("host_leaf")), dict):
        for leaf, spines in topology["leaf_spines"].items():
            if spines:
                spine_of[str(leaf)] = ",".join(sorted(str(x) for x in spines))
        topology = topology["hosts"] if isinstance(topology.get("hosts"), dict) else topology["host_leaf"]
    leaf_of = {}
    for host in hosts:
        where = topology.get(host, NO_LEAF)
        if isinstance(where, dict):
            leaf, spine = str(where.get("leaf") or NO_LEAF), where.get("spine")
            if spine is not None and leaf != NO_LEAF:
                spine_of[leaf] = str(spine)
        else:
            leaf = NO_LEAF if where is None else str(where)
        leaf_of[host] = leaf if leaf != NO_LEAF else UNPLACED + host
    return leaf_of, spine_of


def start(hosts, expected=None, tolerance=0.15, topology=None, first_groups=FIRST_GROUPS):
    """A new search over ``hosts``. ``topology`` ({host: leaf}, {host: {"leaf": ..., "spine": ...}}, or the
    discovered map: topology.host_leaf_map's result as it is) makes the first rounds test within each leaf and
    then across leaves (the i-th host of every leaf together), so every uplink carries traffic and a bad uplink
    is named as its leaf."""
    hosts = sorted(set(hosts))
    if len(hosts) < 2:
        raise ValueError("a burn-in needs at least two hosts, got %d" % len(hosts))
    if not 0 < tolerance < 1:
        raise ValueError("tolerance must be between 0 and 1, got %r" % (tolerance,))
    state = {"hosts": hosts, "expected": expected, "tolerance": tolerance, "reference": expected, "round": 0,
             "tree": [], "pending": [], "cleared": {}, "slow_hosts": [], "bad_links": [], "bad_uplinks": [], "unresolved_uplinks": [],
             "done": False, "unresolved": [], "waiting": [], "checking": {}, "uplink_ok": {}, "ok_keys": [],
             "stages": [], "stage_roots": [], "final_keys": [], "hits": {}, "leaf_of": None, "spine_of": {}, "leaf_hosts": {}}
    if topology:
        leaf_of, spine_of = _topology(hosts, topology)
        state["leaf_of"], state["spine_of"] = leaf_of, spine_of
        for host in fabric_order(state, hosts):
            state["leaf_hosts"].setdefault(leaf_of[host], []).append(host)
        within = [(leaf, members) for leaf, members in sorted(state["leaf_hosts"].items()) if len(members) >= 2]
        # Without a baseline the first round's median is the reference: few leaves are cut into parts (still
        # within the leaf) until there are first_groups runs, so a few short ones cannot be the median.
        parts = 1 if expected is not None or not within else -(-first_groups // len(within))
        for leaf, members in within:
            cut = _chunks(members, parts)
            for index, part in enumerate(cut):
                state["stage_roots"].append(add_test(state, None, part, "group", "within %s%s" % (
                    leaf, " (part %d of %d)" % (index + 1, len(cut)) if len(cut) > 1 else ""),
                    {"root": True})["id"])
        if len([leaf for leaf in state["leaf_hosts"] if not leaf.startswith(UNPLACED)]) >= 2:
            state["stages"].append("across leaves")
    if not state["stage_roots"]:
        state["stage_roots"] = [add_test(state, None, members, "group", "first round", {"root": True})["id"]
                                for members in _chunks(hosts, first_groups if expected is None else 1)]
    state["stages"].append("final")
    return state


# Planning a round ----------------------------------------------------------------------------------------

def next_round(state):
    """The tests of the next round (disjoint hosts); [] when the search is done."""
    while not state["done"]:
        settle(state)
        if state["done"] or not _drop_explained(state):
            break
    if state["done"]:
        return []
    busy, tests, deferred = set(), [], []
    for node_id in state["pending"]:
        node = state["tree"][node_id]
        if node["kind"] in ("probe", "uplink") and node.get("partner") is None:
            assign = _assign_probe if node["kind"] == "probe" else _assign_uplink
            if not assign(state, node, busy):
                deferred.append(node_id)
                continue
        if busy & set(node["hosts"]):
            deferred.append(node_id)
            continue
        busy |= set(node["hosts"])
        tests.append(node)
    state["pending"] = deferred
    if not tests:
        # Nothing can run: no known-good partner is left for what waits. Say so rather than loop.
        state["pending"] = []
        for node_id in deferred:
            node = state["tree"][node_id]
            node["stage"] = "measured"
            if node["kind"] == "uplink":
                node["verdict"] = "skipped"
            else:
                node["verdict"] = "unresolved"
                node["why"] += "; not run: no known-good partner left"
                state["unresolved"].append(node["hosts"])
        for node_id in deferred:
            complete(state, state["tree"][node_id])
        return next_round(state)
    state["round"] += 1
    for node in tests:
        node["round"] = state["round"]
        node["stage"] = "running"
    return [{"id": n["id"], "hosts": n["hosts"], "kind": n["kind"]} for n in tests]


def _drop_explained(state):
    """Pending searches that what was found meanwhile explains (a bad uplink found from another group) are not
    run: their root's run without it says whether anything else is left. True when one was dropped."""
    dropped = False
    for node_id in list(state["pending"]):
        node = state["tree"][node_id]
        if node["kind"] in ("group", "cross") and not node.get("root"):
            why = explained(state, node["hosts"])
            if why:
                state["pending"].remove(node_id)
                node["stage"], node["verdict"] = "measured", "explained"
                node["why"] += "; not run: %s explains it" % why
                complete(state, node)
                dropped = True
    return dropped


def _candidates(state, host):
    """Known-good hosts to pair ``host`` with: its own leaf's first (no uplink crossed), then any."""
    leaf = leaf_of_host(state, host)
    if state.get("leaf_of") and leaf != NO_LEAF:
        yield from state["leaf_hosts"].get(leaf, [])
    yield from state["cleared"]


def _assign_probe(state, node, busy):
    """A known-good partner: not across a bad uplink, and for the confirming run not of the leaf the first
    partner came from when that was another leaf (its uplink could be what fell short)."""
    suspect, used = node["suspect"], set(node.get("avoid") or [])
    linked = set(b if a == suspect else a for a, b in state["bad_links"] if suspect in (a, b))
    own = leaf_of_host(state, suspect)
    shunned = set(state["bad_uplinks"]) | set(node.get("avoid_leaves") or [])
    for other in _candidates(state, suspect):
        if (other != suspect and other not in busy and other not in used and other not in linked
                and known_good(state, other) and (leaf_of_host(state, other) == own or leaf_of_host(state, other) not in shunned)):
            node["partner"] = other
            node["hosts"] = fabric_order(state, [suspect, other])
            return True
    return False


def _assign_uplink(state, node, busy):
    """A known-good host of the suspect leaf with a known-good host of a third leaf (same spine first)."""
    leaf, taken = node["leaf"], busy | set(node.get("avoid") or [])
    parent = state["tree"][node["parent"]]
    if node.get("between"):
        pair = [next((h for h in state["leaf_hosts"].get(name, []) if h not in taken and known_good(state, h)), None)
                for name in node["between"]]
        if None in pair:
            return False
        node["partner"], node["hosts"] = pair[1], fabric_order(state, pair)
        return True
    used_leaves = (set((parent.get("check_leaves") or {}).get(leaf, [])) | set(node.get("avoid_leaves") or [])
                   | set(state["bad_uplinks"]))
    mine = next((h for h in state["leaf_hosts"].get(leaf, []) if h not in taken and known_good(state, h)), None)
    if mine is None:
        return False
    spine = state["spine_of"].get(leaf)
    others = sorted((name for name in state["leaf_hosts"] if name not in used_leaves and name != leaf and not name.startswith(UNPLACED)),
                    key=lambda name: (state["spine_of"].get(name) != spine, name not in state["uplink_ok"], name))
    for other_leaf in others:
        partner = next((h for h in state["leaf_hosts"][other_leaf] if h not in taken and known_good(state, h)), None)
        if partner is not None:
            node["partner"], node["other_leaf"] = partner, other_leaf
            node["hosts"] = fabric_order(state, [mine, partner])
            node["why"] = "uplink of %s: %s with %s of %s" % (leaf, mine, partner, other_leaf)
            parent.setdefault("check_leaves", {}).setdefault(leaf, []).append(other_leaf)
            return True
    return False
