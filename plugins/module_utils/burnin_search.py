# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Burn-in that scales: find the slow hosts and bad links in O(log N) rounds (adaptive group testing).

A group run (nccl-tests all_reduce across the group's hosts) is only as fast as its slowest member and
its worst link. So: test large groups first, in parallel where they are disjoint; clear the groups that
reach the expected figure; split the ones that fall short and test the halves; when both halves of a
short group pass, the fault is a link between them, searched by crossing the halves' halves; a short
pair is finally run against known-good partners to tell a slow host from a bad link.

The planner is a pure state machine shared by the burnin role and tests/bench/burnin_sim.py:

    state = start(hosts, expected=None, tolerance=0.15, topology=None)
    while not state["done"]:
        tests = next_round(state)                     # [{"id", "hosts", "kind"}], disjoint hosts
        record(state, {test_id: figure or None})      # figure: busbw at the largest size (None: failed)
    state["slow_hosts"], state["bad_links"], state["tree"]

Without ``expected`` (a baseline), the first round's groups judge each other: the reference is the
median of their figures, so the cluster is split into enough groups for a median to mean something.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpufabric.rdma.plugins.module_utils.numbers import median

FIRST_GROUPS = 16


def _chunks(hosts, count):
    """hosts cut into ``count`` groups of near-equal size (each at least 2 hosts)."""
    count = max(1, min(count, len(hosts) // 2))
    size, extra = divmod(len(hosts), count)
    out, start = [], 0
    for n in range(count):
        end = start + size + (1 if n < extra else 0)
        out.append(hosts[start:end])
        start = end
    return out


def start(hosts, expected=None, tolerance=0.15, topology=None, first_groups=FIRST_GROUPS):
    """A new search over ``hosts``. ``topology`` ({host: leaf or rail}) makes the first rounds test within each
    leaf and across leaves (the i-th host of every leaf together), so every uplink carries traffic."""
    hosts = sorted(set(hosts))
    if len(hosts) < 2:
        raise ValueError("a burn-in needs at least two hosts, got %d" % len(hosts))
    if not 0 < tolerance < 1:
        raise ValueError("tolerance must be between 0 and 1, got %r" % (tolerance,))
    state = {"hosts": hosts, "expected": expected, "tolerance": tolerance, "reference": expected, "round": 0,
             "tree": [], "pending": [], "cleared": [], "slow_hosts": [], "bad_links": [], "done": False,
             "unresolved": []}
    if topology:
        leaves = {}
        for host in hosts:
            leaves.setdefault(str(topology.get(host, "")), []).append(host)
        ordered = [leaves[leaf] for leaf in sorted(leaves)]
        within = [members for members in ordered if len(members) >= 2]
        rails = []
        columns = max(len(m) for m in ordered)
        for index in range(columns):
            rail = [members[index] for members in ordered if index < len(members)]
            if len(rail) >= 2:
                rails.append(rail)
        firsts = [("within %s" % leaf, members) for leaf, members in sorted(leaves.items()) if len(members) >= 2]
        for why, members in firsts:
            _add(state, None, members, "group", why)
        state["cross"] = [("across leaves, position %d" % n, rail) for n, rail in enumerate(rails)]
        singles = [members[0] for members in leaves.values() if len(members) == 1]
        if singles and not rails:
            _add(state, None, singles, "group", "leaves of one host")
    else:
        state["cross"] = []
        for members in _chunks(hosts, first_groups if expected is None else 1):
            _add(state, None, members, "group", "first round")
    return state


def _add(state, parent, members, kind, why, extra=None):
    node = {"id": len(state["tree"]), "parent": parent, "hosts": sorted(members), "kind": kind, "why": why,
            "round": None, "figure": None, "verdict": None}
    node.update(extra or {})
    state["tree"].append(node)
    state["pending"].append(node["id"])
    return node


def next_round(state):
    """The tests of the next round (disjoint hosts); [] when the search is done."""
    if state["done"]:
        return []
    if not state["pending"] and state.get("cross"):
        for why, members in state.pop("cross"):
            _add(state, None, members, "group", why)
        state["cross"] = []
    if not state["pending"] and not state.get("final_done"):
        # Links between the first groups were never in one run: every host but the slow ones, together.
        state["final_done"] = True
        rest = [h for h in state["hosts"] if h not in state["slow_hosts"]]
        if len(rest) >= 2 and len(state["tree"]) > 1:
            _add(state, None, rest, "group", "every host but the slow ones, together (links across groups)")
    busy, tests, deferred = set(), [], []
    for node_id in state["pending"]:
        node = state["tree"][node_id]
        if node["kind"] == "probe" and node.get("partner") is None:
            partner = _good_partner(state, busy | set(node["hosts"]))
            if partner is None:
                deferred.append(node_id)
                continue
            node["partner"] = partner
            node["hosts"] = sorted(node["hosts"] + [partner])
        if busy & set(node["hosts"]):
            deferred.append(node_id)
            continue
        busy |= set(node["hosts"])
        tests.append(node)
    state["pending"] = deferred
    if not tests:
        if deferred:  # no good partner left: say so rather than loop
            for node_id in deferred:
                state["unresolved"].append(state["tree"][node_id]["hosts"])
            state["pending"] = []
        state["done"] = True
        return []
    state["round"] += 1
    for node in tests:
        node["round"] = state["round"]
    return [{"id": n["id"], "hosts": n["hosts"], "kind": n["kind"]} for n in tests]


def _good_partner(state, taken):
    for host in state["cleared"]:
        if host not in taken and host not in state["slow_hosts"]:
            return host
    return None


def _short(state, figure):
    return figure is None or (state["reference"] is not None and figure < state["reference"] * (1 - state["tolerance"]))


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
    if state["reference"] is None:
        measured = [n["figure"] for n in ran if n["figure"] is not None and n["kind"] == "group"]
        state["reference"] = median(measured)
    for node in ran:
        short = _short(state, node["figure"])
        node["verdict"] = "short" if short else "ok"
        if not short:
            node["why"] += "; reached %s of %s" % (_fmt(node["figure"]), _fmt(state["reference"]))
            for host in node["hosts"]:
                if host not in state["cleared"] and host not in state["slow_hosts"]:
                    state["cleared"].append(host)
        else:
            node["why"] += "; %s, below %s" % (("failed (%s)" % node["error"]) if node.get("error") else
                                               "failed" if node["figure"] is None else _fmt(node["figure"]),
                                               _fmt(state["reference"] * (1 - state["tolerance"]) if state["reference"] else None))
    for node in ran:
        _follow(state, node)
    if not state["pending"] and not state.get("cross") and state.get("final_done"):
        state["done"] = True
    return state


def _fmt(value):
    return "-" if value is None else ("%.1f" % value)


def _follow(state, node):
    kind, hosts = node["kind"], node["hosts"]
    if kind == "group":
        if node["verdict"] == "ok":
            _after_children(state, node)
            return
        if len(hosts) == 2:
            for host in hosts:
                _add(state, node["id"], [host], "probe", "%s against a known-good host" % host, {"suspect": host, "pair": hosts})
            return
        half = len(hosts) // 2
        left, right = hosts[:half], hosts[half:]
        node["children"] = []
        for part in (left, right):
            if len(part) == 1:
                child = _add(state, node["id"], part, "probe", "%s against a known-good host" % part[0], {"suspect": part[0]})
            else:
                child = _add(state, node["id"], part, "group", "half of group %d" % node["id"])
            node["children"].append(child["id"])
        node["halves"] = [left, right]
    elif kind == "probe":
        if node["verdict"] == "short":
            if node["suspect"] not in state["slow_hosts"]:
                state["slow_hosts"].append(node["suspect"])
        _resolve_pair(state, node)
    elif kind == "cross":
        if node["verdict"] == "ok":
            _cross_next(state, node)
            return
        a, b = node["a"], node["b"]
        if len(a) == 1 and len(b) == 1:
            _link(state, a[0], b[0], node)
            return
        _cross_split(state, node["id"], a, b)
    _after_children(state, node)


def _after_children(state, node):
    """When every child of a short group has run and all passed, the fault is a link across the halves."""
    parent_id = node.get("parent")
    if parent_id is None:
        return
    parent = state["tree"][parent_id]
    children = [state["tree"][c] for c in parent.get("children") or []]
    if not children or any(c["verdict"] is None for c in children) or parent.get("crossed"):
        return
    if all(c["verdict"] == "ok" for c in children) and parent["kind"] == "group":
        parent["crossed"] = True
        left, right = parent["halves"]
        _cross_split(state, parent["id"], left, right)


def _cross_split(state, parent_id, a, b):
    """Test quarter against quarter: (a1+b1, a2+b2) now, (a1+b2, a2+b1) next, whichever is short goes on."""
    a1, a2 = (a[:len(a) // 2], a[len(a) // 2:]) if len(a) > 1 else (a, [])
    b1, b2 = (b[:len(b) // 2], b[len(b) // 2:]) if len(b) > 1 else (b, [])
    combos = [(x, y) for x, y in ((a1, b1), (a2, b2), (a1, b2), (a2, b1)) if x and y]
    seen, ordered = set(), []
    for x, y in combos:
        key = (tuple(x), tuple(y))
        if key not in seen:
            seen.add(key)
            ordered.append((x, y))
    for x, y in ordered:
        _add(state, parent_id, x + y, "cross", "link search: %s x %s" % (_span(x), _span(y)), {"a": x, "b": y})


def _cross_next(state, node):
    """A passing cross test: nothing to do (its siblings carry the search)."""
    parent = state["tree"][node["parent"]]
    siblings = [n for n in state["tree"] if n.get("parent") == parent["id"] and n["kind"] == "cross"]
    if all(n["verdict"] == "ok" for n in siblings):
        state["unresolved"].append(parent["hosts"])  # short as a whole, every part and cross passed: noise or flaky


def _link(state, a, b, node):
    link = sorted([a, b])
    if link not in state["bad_links"] and a not in state["slow_hosts"] and b not in state["slow_hosts"]:
        state["bad_links"].append(link)


def _resolve_pair(state, node):
    """Both hosts of a short pair probed against good partners and both passed: the pair's link is bad."""
    pair = node.get("pair")
    if not pair:
        return
    probes = [n for n in state["tree"] if n.get("parent") == node["parent"] and n["kind"] == "probe"]
    if any(n["verdict"] is None for n in probes):
        return
    if all(n["verdict"] == "ok" for n in probes):
        _link(state, pair[0], pair[1], node)


def _span(hosts):
    return hosts[0] if len(hosts) == 1 else "%s..%s (%d)" % (hosts[0], hosts[-1], len(hosts))


def summary(state):
    """What the search found, and the tree as lines a person reads top-down."""
    lines = []
    for node in state["tree"]:
        if node["round"] is None:
            continue
        depth, parent = 0, node["parent"]
        while parent is not None:
            depth += 1
            parent = state["tree"][parent]["parent"]
        lines.append("%sround %d, %s %s: %s" % ("  " * depth, node["round"], node["kind"], _span(node["hosts"]), node["why"]))
    return {"rounds": state["round"], "runs": sum(1 for n in state["tree"] if n["round"] is not None),
            "slow_hosts": sorted(state["slow_hosts"]), "bad_links": sorted(state["bad_links"]),
            "unresolved": state["unresolved"], "reference": state["reference"], "tree_lines": lines}


def failures(state, found, minimum=None, shown_minimum=None):
    """What fails a search burn-in, one sentence each: slow hosts, bad links, groups short as a whole whose
    every part passed, a reference busbw below ``minimum``, a search stopped before every host was cleared.

    ``found``: summary(state). ``shown_minimum`` is the floor as the user wrote it, for the sentence;
    default ``minimum``.
    """
    shown = minimum if shown_minimum is None else shown_minimum
    found_failures = (["slow host %s" % h for h in found["slow_hosts"]]
                      + ["bad link %s" % "-".join(link) for link in found["bad_links"]]
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
        "PASSED" if not found_failures else "FAILED", len(state["hosts"]), found["runs"], found["rounds"],
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
