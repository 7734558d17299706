# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
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

The planner is a pure state machine shared by the burnin role and tests/bench/burnin_sim.py:

    state = start(hosts, expected=None, tolerance=0.15, topology=None)
    while not state["done"]:
        tests = next_round(state)                     # [{"id", "hosts", "kind"}], disjoint hosts
        record(state, {test_id: figure or None})      # figure: busbw at the largest size (None: failed)
    state["slow_hosts"], state["bad_links"], state["bad_uplinks"], state["tree"]

Without ``expected`` (a baseline), the first round's groups judge each other: the reference is the
median of their figures, so the cluster is split into enough groups for a median to mean something.
The state holds only lists, dicts, strings and numbers: a play keeps it as a fact between rounds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import math

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import median

FIRST_GROUPS = 16
# A short figure within this fraction of the tolerance below the threshold is run again before it is
# searched: noise lands there, a slow host or a bad link (a third slower or worse) does not.
MARGIN = 0.5
# A link search takes at most this many levels in a row without running the quarters it narrows to.
UNSEEN_LEVELS = 3
NO_LEAF = ""
# A host the topology does not place is a leaf of its own, named after it (it cannot be searched within a leaf).
UNPLACED = "(not in the topology) "


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
        for host in _ordered(state, hosts):
            state["leaf_hosts"].setdefault(leaf_of[host], []).append(host)
        within = [(leaf, members) for leaf, members in sorted(state["leaf_hosts"].items()) if len(members) >= 2]
        # Without a baseline the first round's median is the reference: few leaves are cut into parts (still
        # within the leaf) until there are first_groups runs, so a few short ones cannot be the median.
        parts = 1 if expected is not None or not within else -(-first_groups // len(within))
        for leaf, members in within:
            cut = _chunks(members, parts)
            for index, part in enumerate(cut):
                state["stage_roots"].append(_add(state, None, part, "group", "within %s%s" % (
                    leaf, " (part %d of %d)" % (index + 1, len(cut)) if len(cut) > 1 else ""),
                    {"root": True})["id"])
        if len([leaf for leaf in state["leaf_hosts"] if not leaf.startswith(UNPLACED)]) >= 2:
            state["stages"].append("across leaves")
    if not state["stage_roots"]:
        state["stage_roots"] = [_add(state, None, members, "group", "first round", {"root": True})["id"]
                                for members in _chunks(hosts, first_groups if expected is None else 1)]
    state["stages"].append("final")
    return state


def _ordered(state, hosts):
    """Hosts in fabric order (spine, leaf, name) with a topology, else by name: halves split along leaves."""
    if not state.get("leaf_of"):
        return sorted(hosts)
    leaf_of, spine_of = state["leaf_of"], state["spine_of"]
    return sorted(hosts, key=lambda h: (spine_of.get(leaf_of.get(h, NO_LEAF), ""), leaf_of.get(h, NO_LEAF), h))


def _add(state, parent, members, kind, why, extra=None, pending=True):
    node = {"id": len(state["tree"]), "parent": parent, "hosts": _ordered(state, members), "kind": kind, "why": why,
            "round": None, "figure": None, "verdict": None, "stage": "pending", "open": 0}
    node.update(extra or {})
    state["tree"].append(node)
    if pending:
        state["pending"].append(node["id"])
    if parent is not None:
        state["tree"][parent]["open"] += 1
        state["tree"][parent].setdefault("children", []).append(node["id"])
    return node


# What is known ----------------------------------------------------------------------------------------

def _leaf(state, host):
    return state["leaf_of"].get(host, NO_LEAF) if state.get("leaf_of") else NO_LEAF


def _explained(state, hosts):
    """Why a group is short by what is already found (a slow host, a bad link or a bad uplink in it), or None."""
    members = set(hosts)
    for host in state["slow_hosts"]:
        if host in members:
            return "slow host %s" % host
    for a, b in state["bad_links"]:
        if a in members and b in members:
            return "bad link %s-%s" % (a, b)
    if state["bad_uplinks"] or state["unresolved_uplinks"]:
        leaves = set(_leaf(state, h) for h in members)
        if len(leaves) > 1:
            for leaf in state["bad_uplinks"]:
                if leaf in leaves:
                    return "bad uplink of %s" % leaf
            for pair in state["unresolved_uplinks"]:
                if pair[0] in leaves and pair[1] in leaves:
                    return "an uplink of %s or %s" % tuple(pair)
    return None


def _link_sides(state):
    """{host: [component, side]}: the ends of the found bad links, each group of links that share hosts (a
    component) coloured 0 and 1 so that no link has both ends alike where the links allow it."""
    side, neighbours = {}, {}
    for a, b in state["bad_links"]:
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)
    component = 0
    for first in sorted(neighbours):
        if first in side:
            continue
        side[first], queue = [component, 0], [first]
        while queue:
            host = queue.pop()
            for other in neighbours[host]:
                if other not in side:
                    side[other] = [component, 1 - side[host][1]]
                    queue.append(other)
        component += 1
    return side


def _final_runs(state):
    """The final runs, one list of (why, hosts) per round: every host but what was found, with one side of
    each component of bad links, then with the other side; then, so that any two ends of different components
    meet in one run whatever their sides, the ends alone: a choice of sides and its complement (disjoint, so
    in one round) for each bit of the components' numbers (a binary covering array of strength 2). A leaf set
    aside behind a bad uplink runs on its own beside them (the links inside it)."""
    sides = _link_sides(state)
    components = len(set(c for c, _s in sides.values()))
    if not components:
        return [_beside(state, state["hosts"], None, "every host but the slow ones, together (links across groups)")]
    rounds = [_beside(state, state["hosts"], [0] * components,
                      "every host but the slow ones and one end of each bad link, together (links across groups)"),
              _beside(state, state["hosts"], [1] * components,
                      "every host but the slow ones and the other end of each bad link, together")]
    bit = 0
    while (1 << bit) < components:
        row = [(c >> bit) & 1 for c in range(components)]
        rounds.append([])
        for keep in (row, [1 - v for v in row]):
            ends = [h for h, (c, side) in sorted(sides.items()) if side == keep[c]]
            rounds[-1].extend(_beside(state, ends, keep, "ends of different bad links together"))
        bit += 1
    return rounds


def _beside(state, hosts, keep, why):
    """[(why, hosts)]: the group without what was found, and beside it each leaf that a bad uplink set aside."""
    main = _residual(state, hosts, keep)
    runs, taken = [(why, main)], set(main)
    hidden = list(state["bad_uplinks"]) + [pair[1] for pair in state["unresolved_uplinks"]]
    for leaf in hidden:
        own = _residual(state, [h for h in hosts if _leaf(state, h) == leaf], keep)
        if own and not taken & set(own):
            runs.append(("%s, within %s (behind its uplink)" % (why, leaf), own))
            taken |= set(own)
    return runs


def _residual(state, hosts, keep=None):
    """The group without what was found in it: its slow hosts, the hosts of a bad uplink when the group
    crosses it, one end of each bad link (``keep``: the side to keep per component of links, default 0)."""
    rest = set(hosts) - set(state["slow_hosts"])
    if state["bad_uplinks"] and len(set(_leaf(state, h) for h in rest)) > 1:
        bad = set(state["bad_uplinks"])
        rest = set(h for h in rest if _leaf(state, h) not in bad)
    for first, second in state["unresolved_uplinks"]:
        if any(_leaf(state, h) == first for h in rest):
            rest = set(h for h in rest if _leaf(state, h) != second)
    sides = _link_sides(state)
    for a, b in state["bad_links"]:
        if a in rest and b in rest:
            for host in (a, b):
                component, side = sides[host]
                if side != (keep[component] if keep and component < len(keep) else 0):
                    rest.discard(host)
            if a in rest and b in rest:  # an odd ring of links: set both aside
                rest.discard(a)
                rest.discard(b)
    return _ordered(state, rest)


def _key(hosts):
    return hashlib.sha1("\n".join(sorted(hosts)).encode("utf-8")).hexdigest()


def _short(state, figure):
    return figure is None or (state["reference"] is not None and figure < state["reference"] * (1 - state["tolerance"]))


def _marginal(state, figure):
    if figure is None or state["reference"] is None:
        return False
    return figure >= state["reference"] * (1 - state["tolerance"]) * (1 - MARGIN * state["tolerance"])


def _clear(state, hosts):
    slow = set(state["slow_hosts"])
    for host in hosts:
        if host not in slow:
            state["cleared"][host] = True


def _known_good(state, host):
    return host in state["cleared"] and host not in state["slow_hosts"]


# Planning a round ----------------------------------------------------------------------------------------

def next_round(state):
    """The tests of the next round (disjoint hosts); [] when the search is done."""
    while not state["done"]:
        _settle(state)
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
            _complete(state, state["tree"][node_id])
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
            why = _explained(state, node["hosts"])
            if why:
                state["pending"].remove(node_id)
                node["stage"], node["verdict"] = "measured", "explained"
                node["why"] += "; not run: %s explains it" % why
                _complete(state, node)
                dropped = True
    return dropped


def _candidates(state, host):
    """Known-good hosts to pair ``host`` with: its own leaf's first (no uplink crossed), then any."""
    leaf = _leaf(state, host)
    if state.get("leaf_of") and leaf != NO_LEAF:
        yield from state["leaf_hosts"].get(leaf, [])
    yield from state["cleared"]


def _assign_probe(state, node, busy):
    """A known-good partner: not across a bad uplink, and for the confirming run not of the leaf the first
    partner came from when that was another leaf (its uplink could be what fell short)."""
    suspect, used = node["suspect"], set(node.get("avoid") or [])
    linked = set(b if a == suspect else a for a, b in state["bad_links"] if suspect in (a, b))
    own = _leaf(state, suspect)
    shunned = set(state["bad_uplinks"]) | set(node.get("avoid_leaves") or [])
    for other in _candidates(state, suspect):
        if (other != suspect and other not in busy and other not in used and other not in linked
                and _known_good(state, other) and (_leaf(state, other) == own or _leaf(state, other) not in shunned)):
            node["partner"] = other
            node["hosts"] = _ordered(state, [suspect, other])
            return True
    return False


def _assign_uplink(state, node, busy):
    """A known-good host of the suspect leaf with a known-good host of a third leaf (same spine first)."""
    leaf, taken = node["leaf"], busy | set(node.get("avoid") or [])
    parent = state["tree"][node["parent"]]
    if node.get("between"):
        pair = [next((h for h in state["leaf_hosts"].get(l, []) if h not in taken and _known_good(state, h)), None)
                for l in node["between"]]
        if None in pair:
            return False
        node["partner"], node["hosts"] = pair[1], _ordered(state, pair)
        return True
    used_leaves = (set((parent.get("check_leaves") or {}).get(leaf, [])) | set(node.get("avoid_leaves") or [])
                   | set(state["bad_uplinks"]))
    mine = next((h for h in state["leaf_hosts"].get(leaf, []) if h not in taken and _known_good(state, h)), None)
    if mine is None:
        return False
    spine = state["spine_of"].get(leaf)
    others = sorted((l for l in state["leaf_hosts"] if l not in used_leaves and l != leaf and not l.startswith(UNPLACED)),
                    key=lambda l: (state["spine_of"].get(l) != spine, l not in state["uplink_ok"], l))
    for other_leaf in others:
        partner = next((h for h in state["leaf_hosts"][other_leaf] if h not in taken and _known_good(state, h)), None)
        if partner is not None:
            node["partner"], node["other_leaf"] = partner, other_leaf
            node["hosts"] = _ordered(state, [mine, partner])
            node["why"] = "uplink of %s: %s with %s of %s" % (leaf, mine, partner, other_leaf)
            parent.setdefault("check_leaves", {}).setdefault(leaf, []).append(other_leaf)
            return True
    return False


# Reading a round ------------------------------------------------------------------------------------------

def record(state, figures, errors=None, runs=None):
    """The figures of the round's tests ({test id: busbw or None}) and why a run has none ({test id: text});
    plans what follows. A run without a figure (it failed, or failed its own checks) is short. ``runs``:
    {test id: run record (burnin.judge_run)} kept on each test, the record a pairwise run keeps."""
    ran = [state["tree"][int(k)] for k in figures]
    for node in ran:
        if runs and (node["id"] in runs or str(node["id"]) in runs):
            node["run"] = runs.get(node["id"], runs.get(str(node["id"])))
        node["figure"] = figures.get(node["id"], figures.get(str(node["id"])))
        error = (errors or {}).get(node["id"], (errors or {}).get(str(node["id"])))
        if node["figure"] is not None and not math.isfinite(node["figure"]):  # nan and inf are no figures
            node["figure"], error = None, error or "busbw nan: a failed measurement"
        if error:
            node["error"] = error
    never = set(node["id"] for node in ran if (node.get("error") or "").startswith(burnin.NOT_RUN))
    if never:
        # A group whose program never started measured nothing: the search stops, judges no host and no link,
        # and the report says why (the launcher's message) instead of a slow host.
        for node in ran:
            node["stage"], node["verdict"] = "measured", "not run" if node["id"] in never else "ok"
            node["why"] += "; %s" % (node["error"] if node["id"] in never else "reached %s" % _fmt(node["figure"]))
        state["not_run"], state["done"], state["pending"], state["waiting"] = True, True, [], []
        return state
    if state["reference"] is None:
        measured = [n["figure"] for n in ran if n["figure"] is not None and n["kind"] == "group"]
        state["reference"] = median(measured)
    for node in ran:
        short = _short(state, node["figure"])
        node["verdict"] = "short" if short else "ok"
        node["stage"] = "measured"
        if not short:
            node["why"] += "; reached %s of %s" % (_fmt(node["figure"]), _fmt(state["reference"]))
            _clear(state, node["hosts"])
            if node.get("root"):
                state["ok_keys"].append(_key(node["hosts"]))
        else:
            node["why"] += "; %s, below %s" % (("failed (%s)" % node["error"]) if node.get("error") else
                                               "failed" if node["figure"] is None else _fmt(node["figure"]),
                                               _fmt(state["reference"] * (1 - state["tolerance"]) if state["reference"] else None))
    for node in ran:
        if node["verdict"] == "short" and node.get("origin") is not None and not _marginal(state, node["figure"]):
            state["hits"]["%s:%s" % (node["origin"], node["level"])] = True
    for node in ran:
        _measured(state, node)
    _settle(state)
    return state


def _fmt(value):
    return "-" if value is None else ("%.1f" % value)


def _measured(state, node):
    """What a run's verdict leads to: a retest, a descent, a finding, or nothing. A short by a small margin is
    run again first, whatever the run (noise lands there; a slow host, bad link or bad uplink does not)."""
    kind = node["kind"]
    if node["verdict"] == "short" and _marginal(state, node["figure"]) and not node.get("retested"):
        node["stage"] = "retest"
        _add(state, node["id"], node["hosts"], "retest", "again: short by a small margin", {"again": True, "retested": True})
        return
    if kind in ("group", "cross"):
        if node["verdict"] == "short":
            _search(state, node)
            return
        _done(state, node)
    elif kind == "probe":
        suspect = node["suspect"]
        if node["verdict"] == "ok":
            _clear(state, [suspect])
        elif node.get("confirming"):
            if suspect not in state["slow_hosts"]:
                state["slow_hosts"].append(suspect)
                state["cleared"].pop(suspect, None)
        else:
            node["stage"] = "confirm"
            first = _leaf(state, node["partner"])
            _add(state, node["id"], [suspect], "probe", "%s against another known-good host (confirming)" % suspect,
                 {"suspect": suspect, "partner": None, "confirming": True, "avoid": [node["partner"]],
                  "avoid_leaves": [first] if first != _leaf(state, suspect) else []})
            return
        _done(state, node)
    else:  # retest, uplink: their parent reads them
        _done(state, node)


def _search(state, node):
    """A short group or cross test: explained already, or searched further."""
    why = _explained(state, node["hosts"])
    if why:
        node["why"] += "; explained by %s" % why
        _done(state, node)
        return
    hosts = node["hosts"]
    if node["kind"] == "cross":
        a, b = node["a"], node["b"]
        if len(a) == 1 and len(b) == 1:
            _link_candidate(state, node, a[0], b[0])
        else:
            _cross_split(state, node, a, b)
        return
    if len(hosts) == 2:
        suspects = [h for h in hosts if not _known_good(state, h)]
        if not suspects:
            _link_candidate(state, node, hosts[0], hosts[1])
            return
        node["stage"] = "probes"
        for host in suspects:
            _add(state, node["id"], [host], "probe", "%s against a known-good host" % host,
                 {"suspect": host, "partner": None})
        return
    half = len(hosts) // 2
    node["halves"] = [hosts[:half], hosts[half:]]
    node["stage"] = "halves"
    for part in node["halves"]:
        if len(part) == 1:
            if not _known_good(state, part[0]):
                _add(state, node["id"], part, "probe", "%s against a known-good host" % part[0],
                     {"suspect": part[0], "partner": None})
        else:
            _add(state, node["id"], part, "group", "half of group %d" % node["id"])
    if not node["open"]:
        _hook(state, node)


def _cross_split(state, node, a, b):
    """A bad link lies between ``a`` and ``b``: test quarter against quarter on the diagonal (a1+b1, a2+b2),
    disjoint, in one round. When both pass, the link is on the anti-diagonal (a1 x b2 or a2 x b1): those are
    not run themselves, their own diagonals are, in the next round - one round per halving of both sides."""
    node["stage"] = "cross1"
    node["cross_of"] = [a, b]
    # The search below the last run that fell short: when one of its quarters falls short, the others at that
    # depth stop (the root's run without the link says whether it held another).
    origin, level = (node["id"], 1) if node["verdict"] == "short" else (node["origin"], node["level"] + 1)
    for x, y in _quarters(a, b)[0]:
        _add(state, node["id"], x + y, "cross", "link search: %s x %s" % (_span(x), _span(y)),
             {"a": x, "b": y, "origin": origin, "level": level})
    if not node["open"]:
        _hook(state, node)


def _quarters(a, b):
    """(diagonal, anti-diagonal) pairs of halves of a and b; a side of one host is not split."""
    a1, a2 = (a[:len(a) // 2], a[len(a) // 2:]) if len(a) > 1 else (a, [])
    b1, b2 = (b[:len(b) // 2], b[len(b) // 2:]) if len(b) > 1 else (b, [])
    diagonal = [(x, y) for x, y in ((a1, b1), (a2, b2)) if x and y]
    anti = [(x, y) for x, y in ((a1, b2), (a2, b1)) if x and y]
    return diagonal, anti


def _cross_unseen(state, node):
    """Both diagonal quarters passed: search the anti-diagonal ones without running them - unless a pair, or
    UNSEEN_LEVELS levels were already taken unseen in a row (every one doubles the runs of the next round)."""
    a, b = node["cross_of"]
    node["stage"] = "cross2"
    run = [state["tree"][c] for c in node["children"] if state["tree"][c]["kind"] == "cross"][0]
    unseen = node.get("unseen", 0)
    for x, y in _quarters(a, b)[1]:
        if (len(x) == 1 and len(y) == 1) or unseen >= UNSEEN_LEVELS:
            _add(state, node["id"], x + y, "cross", "link search: %s x %s" % (_span(x), _span(y)),
                 {"a": x, "b": y, "origin": run["origin"], "level": run["level"]})
            continue
        child = _add(state, node["id"], x + y, "cross", "link search: %s x %s (its own quarters run instead)" % (_span(x), _span(y)),
                     {"a": x, "b": y, "unseen": unseen + 1, "origin": run["origin"], "level": run["level"]}, pending=False)
        child["verdict"], child["stage"] = "assumed", "measured"
        _cross_split(state, child, x, y)
    if not node["open"]:
        _hook(state, node)


def _link_candidate(state, node, x, y):
    """Two known-good hosts short together: the pair again, and across leaves each leaf's uplink checked."""
    leaves = []
    if state.get("leaf_of"):
        lx, ly = _leaf(state, x), _leaf(state, y)
        if lx != ly:
            leaves = [l for l in (lx, ly) if l not in state["uplink_ok"]]
    if any(l in state["checking"] for l in leaves):
        node["stage"], node["link"] = "wait", [x, y]
        if node["id"] not in state["waiting"]:
            state["waiting"].append(node["id"])
        return
    node["stage"], node["link"] = "link", [x, y]
    node["link_retest"] = _add(state, node["id"], [x, y], "retest", "the pair again: a bad link %s-%s?" % (x, y))["id"]
    third = len([l for l in state["leaf_hosts"] if l not in (_leaf(state, x), _leaf(state, y))
                 and not l.startswith(UNPLACED) and l not in state["bad_uplinks"]])
    for leaf in leaves:
        state["checking"][leaf] = node["id"]
        own = state["leaf_hosts"][leaf]
        # Other hosts of the leaf towards third leaves; a leaf of one host, with that host itself (a round later).
        spares = len([h for h in own if h not in (x, y)]) or 2
        avoid = [x, y] if len(own) > 1 else [h for h in (x, y) if h not in own]
        for _n in range(min(2, spares, third)):
            _add(state, node["id"], [], "uplink", "uplink of %s" % leaf,
                 {"leaf": leaf, "partner": None, "avoid": avoid, "avoid_leaves": [_leaf(state, x), _leaf(state, y)]})
    if not third and len(leaves) == 2 and all(len(state["leaf_hosts"][l]) > 1 for l in leaves):
        # No third leaf to tell which uplink: another pair between the same two leaves.
        _add(state, node["id"], [], "uplink", "another pair between %s and %s" % tuple(leaves),
             {"leaf": leaves[0], "between": leaves, "partner": None, "avoid": [x, y]})


def _done(state, node):
    if not node["open"]:
        _hook(state, node)


def _hook(state, node):
    """Every child of ``node`` has finished (or it had none): decide what follows, or finish it."""
    if node.get("followed"):
        _complete(state, node)
        return
    children = [state["tree"][c] for c in node.get("children") or []]
    stage = node["stage"]
    if stage == "retest":
        again = [c for c in children if c.get("again")][-1]
        node["retested"], node["stage"] = True, "measured"
        if again["verdict"] == "ok":
            node["verdict"] = "ok"
            node["why"] += "; passed when run again"
            _clear(state, node["hosts"])
            if node.get("root"):
                state["ok_keys"].append(_key(node["hosts"]))
        _measured(state, node)
        return
    elif stage == "probes":
        probes = [c for c in children if c["kind"] == "probe"]
        if not any(p["suspect"] in state["slow_hosts"] for p in probes) and all(
                _known_good(state, h) for h in node["hosts"]):
            _link_candidate(state, node, node["hosts"][0], node["hosts"][1])
            if node["open"] or node["stage"] == "wait":
                return
    elif stage == "halves":
        parts = node["halves"]
        passed = [all(_known_good(state, h) for h in part) for part in parts]
        if all(passed) and not _explained(state, node["hosts"]):
            _cross_split(state, node, parts[0], parts[1])
            return
    elif stage == "cross1":
        crosses = [c for c in children if c["kind"] == "cross"]
        hit = crosses and "%s:%s" % (crosses[0]["origin"], crosses[0]["level"]) in state["hits"]
        if crosses and all(c["verdict"] == "ok" for c in crosses) and not hit and not _explained(state, node["hosts"]):
            _cross_unseen(state, node)
            if node["open"]:
                return
    elif stage == "link":
        _judge_link(state, node, children)
    if node.get("root") and not node.get("followed"):
        node["followed"] = True
        if _follow_root(state, node):
            return
    _complete(state, node)


def _judge_link(state, node, children):
    x, y = node["link"]
    again = state["tree"][node["link_retest"]]
    checks = {}
    between = [c["verdict"] for c in children if c.get("between") and c["verdict"] in ("ok", "short")]
    for check in children:
        if check["kind"] == "uplink" and not check.get("between") and check["verdict"] in ("ok", "short"):
            checks.setdefault(check["leaf"], []).append(check["verdict"])
    for leaf, verdicts in checks.items():
        state["checking"].pop(leaf, None)
        if all(v == "ok" for v in verdicts):
            state["uplink_ok"][leaf] = True
    for leaf in list(state["checking"]):
        if state["checking"][leaf] == node["id"]:
            del state["checking"][leaf]
    if again["verdict"] != "short":
        node["why"] += "; the pair passed when run again"
        return
    if between and all(v == "short" for v in between):
        pair = sorted([_leaf(state, x), _leaf(state, y)])
        if pair not in state["unresolved_uplinks"]:
            state["unresolved_uplinks"].append(pair)
        return
    bad = [leaf for leaf, verdicts in sorted(checks.items()) if verdicts and all(v == "short" for v in verdicts)]
    if bad:
        for leaf in bad:
            if leaf not in state["bad_uplinks"]:
                state["bad_uplinks"].append(leaf)
        return
    _link(state, x, y)


def _link(state, a, b):
    link = sorted([a, b])
    if link not in state["bad_links"] and a not in state["slow_hosts"] and b not in state["slow_hosts"]:
        state["bad_links"].append(link)


def _follow_root(state, node):
    """A root's search is over: run what is left of it without what was found, or say it is unresolved.
    True when a new run was added."""
    if node["verdict"] == "ok":
        return False
    rest = _residual(state, node["hosts"])
    if len(rest) < 2:
        return False
    if state.get("leaf_of") and node.get("across") and len(set(_leaf(state, h) for h in rest)) < 2:
        return False
    if rest != node["hosts"]:
        _add(state, node["id"], rest, "group", "group %d without what was found in it (is anything left?)" % node["id"],
             {"root": True, "tries": 0, "across": node.get("across")})
        return True
    if node.get("tries", 0) >= 1:
        state["unresolved"].append(node["hosts"])
        state["final_keys"].append(_key(node["hosts"]))  # settled: a final run of these hosts would say the same
        node["why"] += "; short again with nothing found in it: unresolved"
        return False
    _add(state, node["id"], rest, "group", "group %d again: short, and nothing found in it" % node["id"],
         {"root": True, "tries": node.get("tries", 0) + 1, "across": node.get("across")})
    return True


def _complete(state, node):
    if node.get("completed"):
        return
    node["completed"] = True
    if node["stage"] in ("pending", "running"):
        node["stage"] = "measured"
    parent_id = node["parent"]
    if parent_id is None:
        return
    parent = state["tree"][parent_id]
    parent["open"] -= 1
    if parent["open"] == 0 and parent["stage"] not in ("pending", "running", "wait"):
        _hook(state, parent)


def _settle(state):
    """Waiting link candidates whose leaf check is over go on; when nothing is left, the next stage."""
    for node_id in list(state["waiting"]):
        node = state["tree"][node_id]
        x, y = node["link"]
        if _explained(state, node["hosts"]):
            state["waiting"].remove(node_id)
            node["why"] += "; explained by %s" % _explained(state, node["hosts"])
            node["stage"] = "measured"
            _complete(state, node)
        elif not any(l in state["checking"] for l in (_leaf(state, x), _leaf(state, y))):
            state["waiting"].remove(node_id)
            _link_candidate(state, node, x, y)
    while not state["pending"] and not state["waiting"] and all(
            state["tree"][r].get("completed") for r in state["stage_roots"]):
        if not state["stages"]:
            state["done"] = True
            return
        _begin(state, state["stages"].pop(0))


def _begin(state, stage):
    if stage == "across leaves":
        leaves = sorted(state["leaf_hosts"], key=lambda l: (l.startswith(UNPLACED), state["spine_of"].get(l, ""), l))
        columns = max(len(state["leaf_hosts"][l]) for l in leaves)
        slow = set(state["slow_hosts"])
        roots = []
        for index in range(columns):
            rail = [state["leaf_hosts"][l][index] for l in leaves if index < len(state["leaf_hosts"][l])]
            rail = _residual(state, [h for h in rail if h not in slow])
            if len(rail) >= 2 and len(set(_leaf(state, h) for h in rail)) >= 2:
                roots.append(_add(state, None, rail, "group", "across leaves, position %d" % index,
                                  {"root": True, "across": True})["id"])
        state["stage_roots"] = roots
        return
    # final: every host but what was found, together (the links across the first groups), then the runs that
    # bring the ends of the bad links together, until each has passed or was searched; then the search is over.
    for runs in _final_runs(state):
        fresh = []
        for why, rest in runs:
            key = _key(rest)
            if len(rest) >= 2 and key not in state["ok_keys"] and key not in state["final_keys"]:
                state["final_keys"].append(key)
                fresh.append(_add(state, None, rest, "group", why, {"root": True})["id"])
        if fresh:
            state["stages"].insert(0, "final")
            state["stage_roots"] = fresh
            return
    state["stage_roots"] = []


def _span(hosts):
    return hosts[0] if len(hosts) == 1 else "%s..%s (%d)" % (hosts[0], hosts[-1], len(hosts))


# Reporting -----------------------------------------------------------------------------------------------

def summary(state):
    """What the search found, and the tree as lines a person reads top-down."""
    lines = []
    depth_of = {}
    for node in state["tree"]:
        parent = node["parent"]
        depth_of[node["id"]] = 0 if parent is None else depth_of[parent] + 1
        if node["round"] is not None:
            when = "round %d" % node["round"]
        elif node["hosts"] and (node.get("unseen") or node["verdict"] in ("explained", "unresolved")):
            when = "not run"
        else:
            continue
        lines.append("%s%s, %s %s: %s" % ("  " * depth_of[node["id"]], when, node["kind"], _span(node["hosts"]), node["why"]))
    return {"rounds": state["round"], "runs": sum(1 for n in state["tree"] if n["round"] is not None),
            "slow_hosts": sorted(state["slow_hosts"]), "bad_links": sorted(state["bad_links"]),
            "bad_uplinks": sorted(state.get("bad_uplinks") or []), "unresolved_uplinks": sorted(state.get("unresolved_uplinks") or []),
            "unresolved": state["unresolved"], "reference": state["reference"], "tree_lines": lines}


def failures(state, found, minimum=None, shown_minimum=None):
    """What fails a search burn-in, one sentence each: slow hosts, bad links, bad leaf uplinks, groups short
    as a whole whose every part passed, a reference busbw below ``minimum``, a search stopped before every
    host was cleared.

    ``found``: summary(state). ``shown_minimum`` is the floor as the user wrote it, for the sentence;
    default ``minimum``.
    """
    shown = minimum if shown_minimum is None else shown_minimum
    if state.get("not_run"):
        return burnin.not_run_failures([node["run"] for node in state["tree"] if node.get("run")])
    found_failures = (["slow host %s" % h for h in found["slow_hosts"]]
                      + ["bad link %s" % "-".join(link) for link in found["bad_links"]]
                      + [("host %s, in no leaf of the topology: every run with other leaves' hosts fell short, its runs "
                          "with some hosts passed (its leaf's uplink?)" % leaf[len(UNPLACED):]) if leaf.startswith(UNPLACED) else
                         "bad uplink of leaf %s (runs across it fell short, runs within it passed)" % leaf
                         for leaf in found.get("bad_uplinks") or []]
                      + ["bad uplink of leaf %s or leaf %s (every run between them fell short, no third leaf to tell which)"
                         % tuple(pair) for pair in found.get("unresolved_uplinks") or []]
                      + ["unresolved (short as a whole, every part passed): %s" % ", ".join(u) for u in found["unresolved"]])
    if minimum is not None and found["reference"] is not None and found["reference"] < minimum:
        found_failures.append("the cluster's reference busbw %.1f GB/s is below %s GB/s" % (found["reference"], shown))
    if not state.get("done"):
        found_failures.append("the search stopped after %d round(s) (burnin_search_max_rounds) before every host was "
                              "cleared" % found["rounds"])
    return found_failures


def markdown(state, found, found_failures):
    """The search's report: counts and where the reference came from, the search tree, the verdict line."""
    lines = ["# Burn-in (search strategy)", "",
             "%d hosts, %d group runs in %d rounds; reference busbw %s GB/s (%s)." % (
                 len(state["hosts"]), found["runs"], found["rounds"],
                 "%.1f" % found["reference"] if found["reference"] is not None else "-",
                 "the baseline" if state.get("expected") is not None else "the median of the first round's groups"),
             "", "## Search tree", "", "```"] + found["tree_lines"] + ["```", ""]
    lines.append("%s: %d hosts, %d group runs in %d rounds%s" % (
        "NOT RUN" if state.get("not_run") else "PASSED" if not found_failures else "FAILED", len(state["hosts"]),
        found["runs"], found["rounds"],
        "" if not found_failures else " - " + "; ".join(found_failures)))
    return "\n".join(lines) + "\n"


def report(state, minimum=None, shown_minimum=None):
    """A search's state -> {summary, failures, markdown, svg (None: no heat map), rank, results}, shaped as the
    pairwise burn-in's report so the burnin role writes either alike (``rank`` carries the reference busbw;
    ``results`` holds each group run's record - hosts, round, kind and burnin.judge_run's record - as the
    pairwise report holds each pair's)."""
    found = summary(state)
    found_failures = failures(state, found, minimum, shown_minimum)
    results = [dict(node["run"], hosts=list(node["hosts"]), round=node["round"], kind=node["kind"])
               for node in state["tree"] if node.get("run")]
    return {"summary": found, "failures": found_failures, "markdown": markdown(state, found, found_failures),
            "svg": None, "rank": {"cluster_median_busbw": found["reference"]}, "results": results}
