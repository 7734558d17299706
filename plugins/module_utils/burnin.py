# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Burn-in: pair every host with every other in few rounds, then name slow hosts and bad links
from the pair bandwidths. Pure functions, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.numbers import median


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
    by_host = {}
    for result in results:
        for host in (result["a"], result["b"]):
            by_host.setdefault(host, [])
            if result.get("busbw") is not None:
                by_host[host].append(float(result["busbw"]))
    medians = dict((host, median(values)) for host, values in by_host.items())
    known = [m for m in medians.values() if m is not None]
    cluster = median(known)
    hosts = []
    for host in sorted(by_host, key=lambda h: (medians[h] is None, -(medians[h] or 0), h)):
        own = medians[host]
        slow = own is None or (cluster is not None and own < cluster * (1 - tolerance))
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
        bad = busbw is None or (bool(expected) and busbw < min(expected) * (1 - tolerance))
        links.append({"a": result["a"], "b": result["b"], "busbw": busbw, "bad": bad})
    links.sort(key=lambda link: (link["busbw"] is not None, link["busbw"] or 0))
    return {"cluster_median_busbw": cluster, "hosts": hosts, "links": links,
            "slow_hosts": [h["host"] for h in hosts if h["slow"]],
            "bad_links": ["%s-%s" % (link["a"], link["b"]) for link in links if link["bad"]]}


def collect(pairs, parse):
    """Raw pair runs -> measurements for rank().

    ``pairs``: [{'a', 'b', 'round', 'rc', 'output', 'stderr'}] as the burn-in play registers them;
    ``parse``: the nccl-tests parser. A pair's figure is the busbw at the largest size it
    measured (out of place); a pair that exited non-zero, printed no rows or failed its data
    check has busbw None and an ``error``.
    """
    results = []
    for pair in pairs:
        entry = {"a": pair["a"], "b": pair["b"], "round": pair.get("round"), "busbw": None, "error": None,
                 "peak_busbw": None, "largest_size": None}
        if pair.get("not_run"):
            entry["error"] = "not run: %s" % pair["not_run"]
            results.append(entry)
            continue
        try:
            parsed = parse(pair.get("output") or "")
        except ValueError as exc:
            parsed, entry["error"] = None, "output not understood: %s" % exc
        rows = (parsed or {}).get("rows") or []
        if pair.get("rc") not in (0, None):
            said = [line.strip() for line in (pair.get("stderr") or "").splitlines() if line.strip()]
            entry["error"] = "exited %s%s" % (pair.get("rc"), ": " + said[-1][:200] if said else "")
        elif parsed is not None and not rows:
            entry["error"] = "no result rows"
        elif parsed is not None and not parsed.get("passed", True):
            entry["error"] = "nccl-tests reported wrong results or stopped early"
        if rows and entry["error"] is None:
            last = rows[-1]
            entry["busbw"] = (last.get("out_of_place") or {}).get("busbw")
            entry["largest_size"] = last.get("size")
            entry["peak_busbw"] = parsed.get("peak_busbw")
            if entry["busbw"] is None:
                entry["error"] = "no busbw at the largest size"
        results.append(entry)
    return results


def below(results, minimum):
    """Pairs under an absolute busbw floor (None: no floor)."""
    if minimum is None:
        return []
    return ["%s-%s" % (r["a"], r["b"]) for r in results if r["busbw"] is not None and r["busbw"] < minimum]


def markdown(results, ranked, minimum=None, unit="GB/s"):
    """The burn-in report: verdict, hosts ranked, links worst first, rounds."""
    failed = ["%s-%s (%s)" % (r["a"], r["b"], r["error"]) for r in results if r["busbw"] is None]
    slow_pairs = below(results, minimum)
    problems = bool(ranked["slow_hosts"] or ranked["bad_links"] or slow_pairs)
    cluster = ranked["cluster_median_busbw"]
    lines = ["# Burn-in", "",
             "%s: %d hosts, %d pairs in %d rounds; cluster median busbw %s %s." % (
                 "PROBLEMS" if problems else "PASSED", len(ranked["hosts"]), len(results),
                 len(set(r.get("round") for r in results)), "-" if cluster is None else "%.1f" % cluster, unit), ""]
    if ranked["slow_hosts"]:
        lines.append("- slow hosts: %s" % ", ".join(ranked["slow_hosts"]))
    if ranked["bad_links"]:
        lines.append("- bad links: %s" % ", ".join(ranked["bad_links"]))
    if failed:
        lines.append("- failed pairs: %s" % ", ".join(failed))
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
    return "\n".join(lines) + "\n"
