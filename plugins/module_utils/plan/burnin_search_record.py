# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Reading a round of the burn-in search (plan/burnin_search.py plans the rounds): ``record`` takes the
round's figures and judges each run against the reference (a run short by a small margin is run again first),
then grows the search tree with what each verdict leads to - the halves of a short group, a link search crossing
halves whose every part passed, probes against known-good partners, uplink checks towards third leaves, a root
run again without what was found in it - until a slow host, bad link or bad uplink is measured twice and named.
Also what is known so far (the found faults, the cleared hosts, the fabric order), which the planner asks too.

Pure functions over the search's state (lists, dicts, strings and numbers), standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import math

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import median

# A short figure within this fraction of the tolerance below the threshold is run again before it is
# searched: noise lands there, a slow host or a bad link (a third slower or worse) does not.
MARGIN = 0.5
# A link search takes at most this many levels in a row without running the quarters it narrows to.
UNSEEN_LEVELS = 3
NO_LEAF = ""
# A host the topology does not place is a leaf of its own, named after it (it cannot be searched within a leaf).
UNPLACED = "(not in the topology) "


def fabric_order(state, hosts):
    """Hosts in fabric order (spine, leaf, name) with a topology, else by name: halves split along leaves."""
    if not state.get("leaf_of"):
        return sorted(hosts)
    leaf_of, spine_of = state["leaf_of"], state["spine_of"]
    return sorted(hosts, key=lambda h: (spine_of.get(leaf_of.get(h, NO_LEAF), ""), leaf_of.get(h, NO_LEAF), h))


def add_test(state, parent, members, kind, why, extra=None, pending=True):
    """A new node of the search tree under ``parent``: a run to make (pending) or a step of the search."""
    node = {"id": len(state["tree"]), "parent": parent, "hosts": fabric_order(state, members), "kind": kind, "why": why,
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

def leaf_of_host(state, host):
    """The leaf the topology places ``host`` in (NO_LEAF without a topology)."""
    return state["leaf_of"].get(host, NO_LEAF) if state.get("leaf_of") else NO_LEAF


def explained(state, hosts):
    """Why a group is short by what is already found (a slow host, a bad link or a bad uplink in it), or None."""
    members = set(hosts)
    for host in state["slow_hosts"]:
        if host in members:
            return "slow host %s" % host
    for a, b in state["bad_links"]:
        if a in members and b in members:
            return "bad link %s-%s" % (a, b)
    if state["bad_uplinks"] or state["unresolved_uplinks"]:
        leaves = set(leaf_of_host(state, h) for h in members)
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
        own = _residual(state, [h for h in hosts if leaf_of_host(state, h) == leaf], keep)
        if own and not taken & set(own):
            runs.append(("%s, within %s (behind its uplink)" % (why, leaf), own))
            taken |= set(own)
    return runs


def _residual(state, hosts, keep=None):
    """The group without what was found in it: its slow hosts, the hosts of a bad uplink when the group
    crosses it, one end of each bad link (``keep``: the side to keep per component of links, default 0)."""
    rest = set(hosts) - set(state["slow_hosts"])
    if state["bad_uplinks"] and len(set(leaf_of_host(state, h) for h in rest)) > 1:
        bad = set(state["bad_uplinks"])
        rest = set(h for h in rest if leaf_of_host(state, h) not in bad)
    for first, second in state["unresolved_uplinks"]:
        if any(leaf_of_host(state, h) == first for h in rest):
            rest = set(h for h in rest if leaf_of_host(state, h) != second)
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
    return fabric_order(state, rest)


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


def known_good(state, host):
    """A host cleared by a run that reached the reference, and not found slow since."""
    return host in state["cleared"] and host not in state["slow_hosts"]


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
    settle(state)
    return state


def _fmt(value):
    return "-" if value is None else ("%.1f" % value)


def _measured(state, node):
    """What a run's verdict leads to: a retest, a descent, a finding, or nothing. A short by a small margin is
    run again first, whatever the run (noise lands there; a slow host, bad link or bad uplink does not)."""
    kind = node["kind"]
    if node["verdict"] == "short" and _marginal(state, node["figure"]) and not node.get("retested"):
        node["stage"] = "retest"
        add_test(state, node["id"], node["hosts"], "retest", "again: short by a small margin", {"again": True, "retested": True})
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
            first = leaf_of_host(state, node["partner"])
            add_test(state, node["id"], [suspect], "probe", "%s against another known-good host (confirming)" % suspect,
                     {"suspect": suspect, "partner": None, "confirming": True, "avoid": [node["partner"]],
                      "avoid_leaves": [first] if first != leaf_of_host(state, suspect) else []})
            return
        _done(state, node)
    else:  # retest, uplink: their parent reads them
        _done(state, node)


def _search(state, node):
    """A short group or cross test: explained already, or searched further."""
    why = explained(state, node["hosts"])
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
        suspects = [h for h in hosts if not known_good(state, h)]
        if not suspects:
            _link_candidate(state, node, hosts[0], hosts[1])
            return
        node["stage"] = "probes"
        for host in suspects:
            add_test(state, node["id"], [host], "probe", "%s against a known-good host" % host,
                     {"suspect": host, "partner": None})
        return
    half = len(hosts) // 2
    node["halves"] = [hosts[:half], hosts[half:]]
    node["stage"] = "halves"
    for part in node["halves"]:
        if len(part) == 1:
            if not known_good(state, part[0]):
                add_test(state, node["id"], part, "probe", "%s against a known-good host" % part[0],
                         {"suspect": part[0], "partner": None})
        else:
            add_test(state, node["id"], part, "group", "half of group %d" % node["id"])
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
        add_test(state, node["id"], x + y, "cross", "link search: %s x %s" % (span(x), span(y)),
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
            add_test(state, node["id"], x + y, "cross", "link search: %s x %s" % (span(x), span(y)),
                     {"a": x, "b": y, "origin": run["origin"], "level": run["level"]})
            continue
        child = add_test(state, node["id"], x + y, "cross", "link search: %s x %s (its own quarters run instead)" % (span(x), span(y)),
                         {"a": x, "b": y, "unseen": unseen + 1, "origin": run["origin"], "level": run["level"]}, pending=False)
        child["verdict"], child["stage"] = "assumed", "measured"
        _cross_split(state, child, x, y)
    if not node["open"]:
        _hook(state, node)


def _link_candidate(state, node, x, y):
    """Two known-good hosts short together: the pair again, and across leaves each leaf's uplink checked."""
    leaves = []
    if state.get("leaf_of"):
        lx, ly = leaf_of_host(state, x), leaf_of_host(state, y)
        if lx != ly:
            leaves = [name for name in (lx, ly) if name not in state["uplink_ok"]]
    if any(name in state["checking"] for name in leaves):
        node["stage"], node["link"] = "wait", [x, y]
        if node["id"] not in state["waiting"]:
            state["waiting"].append(node["id"])
        return
    node["stage"], node["link"] = "link", [x, y]
    node["link_retest"] = add_test(state, node["id"], [x, y], "retest", "the pair again: a bad link %s-%s?" % (x, y))["id"]
    third = len([name for name in state["leaf_hosts"] if name not in (leaf_of_host(state, x), leaf_of_host(state, y))
                 and not name.startswith(UNPLACED) and name not in state["bad_uplinks"]])
    for leaf in leaves:
        state["checking"][leaf] = node["id"]
        own = state["leaf_hosts"][leaf]
        # Other hosts of the leaf towards third leaves; a leaf of one host, with that host itself (a round later).
        spares = len([h for h in own if h not in (x, y)]) or 2
        avoid = [x, y] if len(own) > 1 else [h for h in (x, y) if h not in own]
        for _n in range(min(2, spares, third)):
            add_test(state, node["id"], [], "uplink", "uplink of %s" % leaf,
                     {"leaf": leaf, "partner": None, "avoid": avoid, "avoid_leaves": [leaf_of_host(state, x), leaf_of_host(state, y)]})
    if not third and len(leaves) == 2 and all(len(state["leaf_hosts"][name]) > 1 for name in leaves):
        # No third leaf to tell which uplink: another pair between the same two leaves.
        add_test(state, node["id"], [], "uplink", "another pair between %s and %s" % tuple(leaves),
                 {"leaf": leaves[0], "between": leaves, "partner": None, "avoid": [x, y]})


def _done(state, node):
    if not node["open"]:
        _hook(state, node)


def _hook(state, node):
    """Every child of ``node`` has finished (or it had none): decide what follows, or finish it."""
    if node.get("followed"):
        complete(state, node)
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
                known_good(state, h) for h in node["hosts"]):
            _link_candidate(state, node, node["hosts"][0], node["hosts"][1])
            if node["open"] or node["stage"] == "wait":
                return
    elif stage == "halves":
        parts = node["halves"]
        passed = [all(known_good(state, h) for h in part) for part in parts]
        if all(passed) and not explained(state, node["hosts"]):
            _cross_split(state, node, parts[0], parts[1])
            return
    elif stage == "cross1":
        crosses = [c for c in children if c["kind"] == "cross"]
        hit = crosses and "%s:%s" % (crosses[0]["origin"], crosses[0]["level"]) in state["hits"]
        if crosses and all(c["verdict"] == "ok" for c in crosses) and not hit and not explained(state, node["hosts"]):
            _cross_unseen(state, node)
            if node["open"]:
                return
    elif stage == "link":
        _judge_link(state, node, children)
    if node.get("root") and not node.get("followed"):
        node["followed"] = True
        if _follow_root(state, node):
            return
    complete(state, node)


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
        pair = sorted([leaf_of_host(state, x), leaf_of_host(state, y)])
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
    if state.get("leaf_of") and node.get("across") and len(set(leaf_of_host(state, h) for h in rest)) < 2:
        return False
    if rest != node["hosts"]:
        add_test(state, node["id"], rest, "group", "group %d without what was found in it (is anything left?)" % node["id"],
                 {"root": True, "tries": 0, "across": node.get("across")})
        return True
    if node.get("tries", 0) >= 1:
        state["unresolved"].append(node["hosts"])
        state["final_keys"].append(_key(node["hosts"]))  # settled: a final run of these hosts would say the same
        node["why"] += "; short again with nothing found in it: unresolved"
        return False
    add_test(state, node["id"], rest, "group", "group %d again: short, and nothing found in it" % node["id"],
             {"root": True, "tries": node.get("tries", 0) + 1, "across": node.get("across")})
    return True


def complete(state, node):
    """``node`` is finished: its parent, once every child is, decides what follows."""
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


def settle(state):
    """Waiting link candidates whose leaf check is over go on; when nothing is left, the next stage."""
    for node_id in list(state["waiting"]):
        node = state["tree"][node_id]
        x, y = node["link"]
        if explained(state, node["hosts"]):
            state["waiting"].remove(node_id)
            node["why"] += "; explained by %s" % explained(state, node["hosts"])
            node["stage"] = "measured"
            complete(state, node)
        elif not any(name in state["checking"] for name in (leaf_of_host(state, x), leaf_of_host(state, y))):
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
        leaves = sorted(state["leaf_hosts"], key=lambda name: (name.startswith(UNPLACED), state["spine_of"].get(name, ""), name))
        columns = max(len(state["leaf_hosts"][name]) for name in leaves)
        slow = set(state["slow_hosts"])
        roots = []
        for index in range(columns):
            rail = [state["leaf_hosts"][name][index] for name in leaves if index < len(state["leaf_hosts"][name])]
            rail = _residual(state, [h for h in rail if h not in slow])
            if len(rail) >= 2 and len(set(leaf_of_host(state, h) for h in rail)) >= 2:
                roots.append(add_test(state, None, rail, "group", "across leaves, position %d" % index,
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
                fresh.append(add_test(state, None, rest, "group", why, {"root": True})["id"])
        if fresh:
            state["stages"].insert(0, "final")
            state["stage_roots"] = fresh
            return
    state["stage_roots"] = []


def span(hosts):
    """A host list in a few words: 'a..z (n)'."""
    return hosts[0] if len(hosts) == 1 else "%s..%s (%d)" % (hosts[0], hosts[-1], len(hosts))
