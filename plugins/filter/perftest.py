# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that pair hosts for perftest and judge and summarize its runs (thin wrappers over
module_utils/judge/validation.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import perftest_runs
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    Mapping, expect, expect_list_of_mappings, fail, filters, number_or_none)


def pair_hosts(hosts):
    expect("pair_hosts", hosts, (list, tuple), "a list of hosts")
    return perftest_runs.pair_hosts([text.check_line("hosts[%d]" % i, h, allow_empty=False) for i, h in enumerate(hosts)])


def perftest_judge(results, min_bw_gbps=None, max_lat_us=None):
    expect_list_of_mappings("perftest_judge", results, "a list of perftest results")
    errors = validation.threshold_errors({"min_bw_gbps": min_bw_gbps, "max_lat_us": max_lat_us})
    if errors:
        fail("perftest_judge", "; ".join(errors))
    return perftest_runs.judge_perftest(results, number_or_none("perftest_judge", "min_bw_gbps", min_bw_gbps),
                                        number_or_none("perftest_judge", "max_lat_us", max_lat_us))


def perftest_summary(judged, replayed_from=None):
    expect_list_of_mappings("perftest_summary", judged, "a list of judged perftest results (perftest_judge's result)")
    for index, run in enumerate(judged):
        if not isinstance(run.get("result"), Mapping) or "failures" not in run:
            fail("perftest_summary", "expects perftest_judge's result; item %d is not a judged result" % index)
    if replayed_from is not None and not isinstance(replayed_from, str):
        fail("perftest_summary", "replayed_from must be a string, got %r" % (replayed_from,))
    return perftest_runs.perftest_markdown(judged, replayed_from or None)


def perftest_plan(pairs, tests, rails_by_host=None, rounds=False):
    expect_list_of_mappings("perftest_plan", pairs, "a list of pairs, each with server and client")
    if not isinstance(rounds, bool):
        fail("perftest_plan", "rounds must be true or false, got %r" % (rounds,))
    expect_list_of_mappings("perftest_plan", tests, "tests as a list of mappings with name")
    if rails_by_host is not None:
        expect("perftest_plan", rails_by_host, (Mapping,), "rails_by_host as a mapping of host to its rail devices")
    try:
        plan = perftest_runs.perftest_plan([dict(p) for p in pairs], [dict(t) for t in tests],
                                           dict((h, list(d) if isinstance(d, (list, tuple)) else d)
                                                for h, d in (rails_by_host or {}).items()))
        return perftest_runs.plan_rounds(plan) if rounds else plan
    except ValueError as exc:
        fail("perftest_plan", str(exc))


def perftest_round_results(entries, clients, servers, argvs, addresses):
    expect_list_of_mappings("perftest_round_results", entries, "a round of perftest_plan(rounds=true)")
    for name, value in (("clients", clients), ("servers", servers), ("argvs", argvs), ("addresses", addresses)):
        expect("perftest_round_results", value, (list, tuple), "%s as a list, one per run of the round" % name)
        if len(value) != len(entries):
            fail("perftest_round_results", "%s has %d items for a round of %d runs" % (name, len(value), len(entries)))
    return perftest_runs.round_results([dict(e) for e in entries], list(clients), list(servers), list(argvs), list(addresses))


class FilterModule(object):
    def filters(self):
        return filters({"pair_hosts": pair_hosts, "perftest_judge": perftest_judge, "perftest_summary": perftest_summary,
                        "perftest_plan": perftest_plan, "perftest_round_results": perftest_round_results})
