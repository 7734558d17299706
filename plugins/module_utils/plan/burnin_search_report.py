# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What a burn-in search found (plan/burnin_search.py, plan/burnin_search_record.py), judged and reported:
``summary`` (the findings and the search tree as lines a person reads), ``failures`` (one sentence each),
``markdown``, and ``report``, shaped as the pairwise burn-in's (judge/burnin.py) so the burnin role writes either
alike.

Pure functions over the search's state, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan.burnin_search_record import UNPLACED, span


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
        lines.append("%s%s, %s %s: %s" % ("  " * depth_of[node["id"]], when, node["kind"], span(node["hosts"]), node["why"]))
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
