# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Burn-in: pair every host with every other in few rounds, then name slow hosts and bad links
from the pair bandwidths. Pure functions, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import link_health, nccl_run
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import chart
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import median
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import check_line


def rounds(hosts):
    """Round-robin schedule (circle method): every pair of hosts meets exactly once.

    N hosts give N-1 rounds when N is even (every host in a pair every round) and N rounds when
    N is odd (one host rests each round, each host once). Within a round no host is in two pairs,
    so a round's pairs run in parallel. Returns [[(a, b), ...], ...].
    """
    hosts = list(hosts)
    if len(set(hosts)) != len(hosts):
        raise ValueError("hosts must be unique: %s" % ", ".join(sorted(h for h in set(hosts) if hosts.count(h) > 1)))
    if len(hosts) < 2:
        return []
    ring = hosts + ([None] if len(hosts) % 2 else [])
    count = len(ring)
    schedule = []
    for _round in range(count - 1):
        pairs = []
        for i in range(count // 2):
            a, b = ring[i], ring[count - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        schedule.append(pairs)
        # Keep the first host fixed and turn the others one place.
        ring = [ring[0], ring[-1]] + ring[1:-1]
    return schedule


def rank(results, tolerance=0.1):
    """Pair bandwidths -> hosts and links ranked, with the outliers named.

    ``results``: [{'a', 'b', 'busbw'}] (busbw None for a failed pair). A host is slow when the
    median of its pairs is more than ``tolerance`` below the median of all hosts' medians; a link
    is bad when its busbw is more than ``tolerance`` below the lower of what its two hosts reach
    over their other links (the link, not the hosts, is the problem) or when it failed.
    """
    by_host, tried = {}, {}
    for result in results:
        for host in (result["a"], result["b"]):
            by_host.setdefault(host, [])
            tried[host] = tried.get(host, 0) + (0 if not_run(result) else 1)
            if result.get("busbw") is not None:
                by_host[host].append(float(result["busbw"]))
    medians = dict((host, median(values)) for host, values in by_host.items())
    known = [m for m in medians.values() if m is not None]
    cluster = median(known)
    hosts = []
    for host in sorted(by_host, key=lambda h: (medians[h] is None, -(medians[h] or 0), h)):
        own = medians[host]
        # a host whose every run failed is slow; one whose runs never started is not judged at all
        slow = (own is None and tried[host] > 0) or (own is not None and cluster is not None and own < cluster * (1 - tolerance))
        hosts.append({"host": host, "median_busbw": own, "pairs": len(by_host[host]), "slow": slow})
    links = []
    for index, result in enumerate(results):
        # What each end reaches with everyone else: a link slower than the slower end's usual
        # figure is the link's fault, not the hosts'.
        expected = []
        for host in (result["a"], result["b"]):
            others = [float(r["busbw"]) for i, r in enumerate(results)
                      if i != index and host in (r["a"], r["b"]) and r.get("busbw") is not None]
            if others:
                expected.append(median(others))
        busbw = result.get("busbw")
        bad = not not_run(result) and (busbw is None or (bool(expected) and busbw < min(expected) * (1 - tolerance)))
        links.append({"a": result["a"], "b": result["b"], "busbw": busbw, "bad": bad})
    links.sort(key=lambda link: (link["busbw"] is not None, link["busbw"] or 0))
    return {"cluster_median_busbw": cluster, "hosts": hosts, "links": links,
            "slow_hosts": [h["host"] for h in hosts if h["slow"]],
            "bad_links": ["%s-%s" % (link["a"], link["b"]) for link in links if link["bad"]]}


NOT_RUN = nccl_run.NOT_RUN


def not_run(result):
    """Whether a judged run (judge_run's record) never ran: no measurement, and nothing to blame on its hosts."""
    return (result.get("error") or "").startswith(NOT_RUN)


def not_run_failures(results):
    """One sentence per distinct reason runs never ran, with how many: 'not run (2 of 2 runs): exited 132 ...'."""
    reasons = []
    for result in results:
        if not_run(result) and result["error"] not in reasons:
            reasons.append(result["error"])
    return ["not run (%d of %d runs): %s" % (sum(1 for r in results if r.get("error") == reason), len(results),
                                             reason[len(NOT_RUN):]) for reason in reasons]


def judge_run(run, parse):
    """One nccl-tests run of a burn-in (a pair or a search group) -> the run record both strategies keep:
    {rc, ranks, nccl_tests_passed, busbw, peak_busbw, largest_size, error}: the one verdict of a run
    (judge/nccl_run.py) - a run that did not run, exited non-zero, printed no rows, failed nccl-tests' own checks
    or measured nan/inf has no figure and says why in ``error``; the figure is the out-of-place busbw at the
    largest size measured. ``run``: {rc, output, stderr, not_run}; ``parse``: the nccl-tests parser.
    """
    found = nccl_run.verdict(run, parse)
    return {"busbw": found["busbw"], "error": found["error"], "peak_busbw": found["peak_busbw"],
            "largest_size": found["size"], "rc": run.get("rc"), "ranks": found["ranks"],
            "nccl_tests_passed": found["nccl_tests_passed"]}


def collect(pairs, parse):
    """Raw pair runs -> measurements for rank(): [{a, b, round} + judge_run(pair)]."""
    results = []
    for pair in pairs:
        entry = {"a": pair["a"], "b": pair["b"], "round": pair.get("round")}
        entry.update(judge_run(pair, parse))
        results.append(entry)
    return results


def below(results, minimum):
    """Pairs under an absolute busbw floor (None: no floor)."""
    if minimum is None:
        return []
    return ["%s-%s" % (r["a"], r["b"]) for r in results if r["busbw"] is not None and r["busbw"] < minimum]


def markdown(results, ranked, minimum=None, unit="GB/s", physical=None):
    """The burn-in report: verdict, hosts ranked, links worst first, rounds; ``physical`` ({host: cable lines},
    physical()'s) names the cables behind the slow hosts and bad links."""
    failed = ["%s-%s (%s)" % (r["a"], r["b"], r["error"]) for r in results if r["busbw"] is None and not not_run(r)]
    slow_pairs = below(results, minimum)
    problems = bool(ranked["slow_hosts"] or ranked["bad_links"] or slow_pairs)
    cluster = ranked["cluster_median_busbw"]
    never = not_run_failures(results)
    verdict = "NOT RUN" if results and len(never) and all(not_run(r) for r in results) else \
        "FAILED" if problems or failed or never else "PASSED"
    lines = ["# Burn-in", "",
             "%s: %d hosts, %d pairs in %d rounds; cluster median busbw %s %s." % (
                 verdict, len(ranked["hosts"]), len(results),
                 len(set(r.get("round") for r in results)), "-" if cluster is None else "%.1f" % cluster, unit), ""]
    if ranked["slow_hosts"]:
        lines.append("- slow hosts: %s" % ", ".join(ranked["slow_hosts"]))
    if ranked["bad_links"]:
        lines.append("- bad links: %s" % ", ".join(ranked["bad_links"]))
    if failed:
        lines.append("- failed pairs: %s" % ", ".join(failed))
    lines += ["- %s" % line for line in never]
    if slow_pairs:
        lines.append("- below %s %s: %s" % (minimum, unit, ", ".join(slow_pairs)))
    lines += ["", "## Hosts (best first)", "", "| host | median busbw (%s) | pairs | slow |" % unit, "| --- | --- | --- | --- |"]
    for host in ranked["hosts"]:
        shown = "-" if host["median_busbw"] is None else "%.1f" % host["median_busbw"]
        lines.append("| %s | %s | %d | %s |" % (host["host"], shown, host["pairs"], "**yes**" if host["slow"] else "no"))
    by_pair = dict(((r["a"], r["b"]), r) for r in results)
    lines += ["", "## Links (worst first)", "",
              "| link | round | busbw at the largest size (%s) | size (B) | bad |" % unit, "| --- | --- | --- | --- | --- |"]
    for link in ranked["links"]:
        result = by_pair.get((link["a"], link["b"]), {})
        lines.append("| %s-%s | %s | %s | %s | %s |" % (
            link["a"], link["b"], result.get("round", "-"),
            result.get("error") or "%.1f" % link["busbw"], result.get("largest_size") or "-",
            "**yes**" if link["bad"] else "no"))
    if physical:
        lines += ["", "## The cables behind them (the fabric map)", ""]
        lines += ["- %s: %s" % (host, "; ".join(cables)) for host, cables in sorted(physical.items())]
    return "\n".join(lines) + "\n"


def physical(ranked, attachment):
    """{host: ['mlx5_0 -> leaf-03 port 17', ...]} for each slow host and each host of a bad link that the fabric map
    (topology/cabling.observed_attachment of ibnetdiscover) knows; {} without a map."""
    if not attachment:
        return {}
    hosts = set(ranked["slow_hosts"])
    for link in ranked["links"]:
        if link["bad"]:
            hosts.update((link["a"], link["b"]))
    return link_health.physical_links(sorted(hosts), attachment)


def failures(results, ranked, minimum=None, shown_minimum=None):
    """What fails a pairwise burn-in, one sentence each: slow hosts, bad links, pairs below ``minimum``, then
    the failed runs that are not already named as a bad link (with why they failed).

    ``results``: collect()'s; ``ranked``: rank()'s. ``shown_minimum`` is the floor as the user wrote it
    ("350", not 350.0), for the sentences; default ``minimum``.
    """
    shown = minimum if shown_minimum is None else shown_minimum
    found = (["slow host %s" % h for h in ranked["slow_hosts"]] + ["bad link %s" % link for link in ranked["bad_links"]]
             + ["pair %s below %s GB/s" % (p, shown) for p in below(results, minimum)])
    found += ["pair %s-%s failed: %s" % (r["a"], r["b"], r["error"]) for r in results
              if r["busbw"] is None and r["error"] and not not_run(r) and "%s-%s" % (r["a"], r["b"]) not in ranked["bad_links"]]
    return found + not_run_failures(results)


def heatmap(results, ranked):
    """The pair heat map's inputs: (hosts sorted, {(a, b): busbw or None}, [(a, b) of each bad link])."""
    hosts = [h["host"] for h in sorted(ranked["hosts"], key=lambda h: h["host"])]
    cells = dict(((r["a"], r["b"]), r["busbw"]) for r in results)
    return hosts, cells, [(link["a"], link["b"]) for link in ranked["links"] if link["bad"]]


def report(pairs, parse, tolerance=0.1, minimum=None, title="Burn-in: busbw of each pair", shown_minimum=None,
           attachment=None):
    """Pair runs ([{a, b, round, rc, output, stderr, not_run}]) -> {results, rank, failures, markdown, svg}.

    Each pair judged by judge_run, hosts and links ranked with ``tolerance``, the failures and the Markdown
    report; ``svg`` is the heat map of the pairs (bad links marked), None under two hosts. ``title`` must be
    one line (ValueError). ``shown_minimum``: see failures(). ``attachment``: the fabric map ({host: {nic: {leaf,
    port}}}); the report then names the cables behind slow hosts and bad links (``physical``).
    """
    results = collect(pairs, parse)
    ranked = rank(results, tolerance)
    hosts, cells, marked = heatmap(results, ranked)
    found = failures(results, ranked, minimum, shown_minimum)
    svg = None
    if len(hosts) >= 2:
        svg = chart.heatmap_svg(hosts, cells, title=check_line("title", title), marked=marked)
    cables = physical(ranked, attachment)
    return {"results": results, "rank": ranked, "failures": found, "physical": cables,
            "markdown": markdown(results, ranked, minimum, physical=cables), "svg": svg}


class UnreadableRun(ValueError):
    """A search group's registered run that is not a run (its message names the test)."""


def run_record(value):
    """A search group's run as the play registered it -> the run judge_run reads (nccl_run.from_registered): its
    registered result, its text alone (rc 0), or None (no run was recorded; a skipped task is a run that did not
    happen). ValueError for anything else.
    """
    if value is not None and not isinstance(value, (str, Mapping)):
        raise ValueError("a run must be the registered result of the group's command, got %s" % type(value).__name__)
    return nccl_run.from_registered(value)


def search_runs(runs, parse):
    """A search round's runs ({test id: registered result}) -> {test id: the run record judge_run keeps}.

    Judged as a pair is: a run that exited non-zero, failed nccl-tests' own checks or measured nan has no
    figure, and says why. UnreadableRun ("test 3: ...") for a run that is not a registered result.
    """
    judged = {}
    for test_id, value in runs.items():
        try:
            judged[int(test_id)] = judge_run(run_record(value), parse)
        except ValueError as exc:
            raise UnreadableRun("test %s: %s" % (test_id, exc))
    return judged


def split_figures(judged):
    """{test id: run record} -> what the planner takes: ({test id: busbw or None}, {test id: why none})."""
    return (dict((k, v["busbw"]) for k, v in judged.items()),
            dict((k, v["error"]) for k, v in judged.items() if v["error"]))
