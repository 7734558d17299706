# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the burn-in: the pairwise strategy's rounds, ranking and report, and the search strategy's
steps (thin wrappers over module_utils/judge/burnin.py, module_utils/plan/burnin_search.py,
module_utils/plan/burnin_search_record.py and module_utils/plan/burnin_search_report.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

# Aliased: this file's burnin_search, burnin_search_record and burnin_search_report filters would otherwise
# share the search modules' names.
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search_report as search_report
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search as search_planner
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search_record as search_record

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import report
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin, validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import cabling
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    Mapping, expect, expect_list_of_mappings, fail, filters, number_or_none)


def burnin_rounds(hosts):
    expect("burnin_rounds", hosts, (list, tuple), "a list of hosts")
    for index, host in enumerate(hosts):
        if not isinstance(host, str) or not host:
            fail("burnin_rounds", "hosts[%d] must be a host name, got %r" % (index, host))
    return [[list(pair) for pair in pairs] for pairs in burnin.rounds(hosts)]


def _pair_results(name, results):
    expect_list_of_mappings(name, results, "a list of {a, b, busbw}")
    for index, result in enumerate(results):
        if not isinstance(result.get("a"), str) or not isinstance(result.get("b"), str):
            fail(name, "item %d needs host names a and b" % index)
        if result.get("busbw") is not None:
            number_or_none(name, "item %d busbw" % index, result["busbw"])
    return results


def _tolerance(name, tolerance):
    value = number_or_none(name, "tolerance", tolerance)
    if value is None or not 0 < value < 1:
        fail(name, "tolerance must be a number between 0 and 1, got %r" % (tolerance,))
    return value


def burnin_rank(results, tolerance=0.1):
    return burnin.rank(_pair_results("burnin_rank", results), _tolerance("burnin_rank", tolerance))


def _replayed(name, result, replayed_from):
    """The report's markdown with the one replayed note (common.report) when stand-ins printed a capture."""
    if replayed_from not in (None, ""):
        expect(name, replayed_from, (str,), "replayed_from as text")
        result["markdown"] = report.with_replayed_note(result["markdown"], replayed_from)
    return result


def burnin_report(pairs, tolerance=0.1, min_busbw=None, title="Burn-in: busbw of each pair", replayed_from=None,
                  fabric=None):
    """Pair runs -> {results, rank, failures, physical, markdown, svg} (see burnin_report.yml)."""
    expect_list_of_mappings("burnin_report", pairs, "a list of pair runs {a, b, round, rc, output}")
    for index, pair in enumerate(pairs):
        if not isinstance(pair.get("a"), str) or not isinstance(pair.get("b"), str):
            fail("burnin_report", "pair %d needs host names a and b" % index)
    errors = validation.threshold_errors({"min_busbw": min_busbw})
    if errors:
        fail("burnin_report", "; ".join(errors))
    minimum = number_or_none("burnin_report", "min_busbw", min_busbw)
    attachment = cabling.observed_attachment(ibnetdiscover=fabric) if fabric else None
    return _replayed("burnin_report", burnin.report(pairs, nccl_tests.parse, _tolerance("burnin_report", tolerance),
                                                    minimum, title, shown_minimum=min_busbw, attachment=attachment),
                     replayed_from)


def burnin_search_start(hosts, expected=None, tolerance=0.15, topology=None):
    """A new search state over the hosts (burnin_search.start)."""
    expect("burnin_search_start", hosts, (list, tuple), "a list of hosts")
    expected = number_or_none("burnin_search_start", "expected", expected)
    if expected is not None and not (0 < expected < float("inf")):
        fail("burnin_search_start", "expected busbw must be a positive number of GB/s, got %r" % (expected,))
    return search_planner.start([str(h) for h in hosts], expected, _tolerance("burnin_search_start", tolerance),
                                dict(topology) if topology else None)


def burnin_search_next(state):
    """{state, tests}: the next round's disjoint groups ([] when done)."""
    expect("burnin_search_next", state, (Mapping,), "a burn-in search state")
    state = copy.deepcopy(dict(state))  # the planner works in place; the play's copy stays as it was
    tests = search_planner.next_round(state)
    return {"state": state, "tests": tests}


def burnin_search_record(state, runs):
    """The round's runs ({test id: the leader's registered result}) -> the next state (judged by burnin.search_runs)."""
    expect("burnin_search_record", state, (Mapping,), "a burn-in search state")
    expect("burnin_search_record", runs, (Mapping,), "a mapping of test id to the group's registered run")
    try:
        judged = burnin.search_runs(runs, nccl_tests.parse)
    except burnin.UnreadableRun as exc:
        fail("burnin_search_record", str(exc))
    figures, errors = burnin.split_figures(judged)
    return search_record.record(copy.deepcopy(dict(state)), figures, errors, runs=judged)


def burnin_search_report(state, min_busbw=None, replayed_from=None):
    """{summary, failures, markdown, svg, rank}: what the search found and the tree it grew."""
    expect("burnin_search_report", state, (Mapping,), "a burn-in search state")
    return _replayed("burnin_search_report",
                     search_report.report(state, number_or_none("burnin_search_report", "min_busbw", min_busbw),
                                          shown_minimum=min_busbw), replayed_from)


SEARCH_STEPS = {"start": burnin_search_start, "next": burnin_search_next, "record": burnin_search_record,
                "report": burnin_search_report}


def burnin_search(value, step, *args, **kwargs):
    """One step of the burn-in search: start (hosts), next (state), record (state, runs), report (state)."""
    if step not in SEARCH_STEPS:
        raise ValueError("step must be one of %s, got %r" % (", ".join(sorted(SEARCH_STEPS)), step))
    return SEARCH_STEPS[step](value, *args, **kwargs)


class FilterModule(object):
    def filters(self):
        return filters({"burnin_rounds": burnin_rounds, "burnin_rank": burnin_rank, "burnin_report": burnin_report,
                        "burnin_search": burnin_search})
