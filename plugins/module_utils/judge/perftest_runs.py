# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""perftest between hosts (ib_write_bw, ib_read_lat, ...): the plan of pairs and rails, each run judged against the
thresholds, and the report (perftest.md with its rail x pair table). The reader of perftest's output is
parse/perftest.py; ``check_thresholds`` sets one parsed run against the thresholds."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import report
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import describe_unsafe as text_unsafe
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import perftest


def pair_hosts(hosts):
    """[a, b, c, d, e] -> [{'server': a, 'client': b}, {'server': c, 'client': d}]; an odd host out waits."""
    hosts = list(hosts or [])
    return [{"server": hosts[i], "client": hosts[i + 1]} for i in range(0, len(hosts) - 1, 2)]


def _first_words(text, limit=3):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip() and not set(line.strip()) <= set("-*")]
    return "; ".join(lines[:limit]) or "nothing"


def _device_name(value, where):
    if not isinstance(value, str) or not value or text_unsafe(value) or value.startswith("-") or " " in value:
        raise ValueError("%s: %r is not an RDMA device name (such as mlx5_0)" % (where, value))
    return value


def perftest_plan(pairs, tests, rails_by_host=None):
    """[[pair, test, rail]] for the perftest role. Without rails (every host's list empty) one entry per pair and
    test, rail None. With rails ({host: [device of rail 0, rail 1, ...]}, the NCCL_IB_HCA order): NIC k of the
    client to NIC k of the server, every rail, both directions; rail = {index, client_device, server_device}.
    Two hosts of a pair with different rail counts is an error naming both."""
    rails_by_host = rails_by_host or {}
    if not isinstance(rails_by_host, Mapping):
        raise ValueError("rails_by_host must map host to its rail devices, got %s" % type(rails_by_host).__name__)
    rails = {}
    for host, devices in rails_by_host.items():
        if devices in (None, "", []):
            continue
        if not isinstance(devices, (list, tuple)):
            raise ValueError("perftest_rails of %s must be a list of RDMA device names, got %r" % (host, devices))
        rails[host] = [_device_name(d, "perftest_rails of %s" % host) for d in devices]
    plan = []
    for pair in pairs:
        server, client = pair.get("server"), pair.get("client")
        for test in tests:
            if server not in rails and client not in rails:
                plan.append([pair, test, None])
                continue
            ours, theirs = rails.get(client, []), rails.get(server, [])
            if len(ours) != len(theirs):
                raise ValueError("per-rail perftest needs as many rails on both hosts: %s has %d (%s), %s has %d (%s)" % (
                    client, len(ours), ", ".join(ours) or "none", server, len(theirs), ", ".join(theirs) or "none"))
            for index in range(len(ours)):
                plan.append([{"server": server, "client": client}, test,
                             {"index": index, "client_device": ours[index], "server_device": theirs[index]}])
                plan.append([{"server": client, "client": server}, test,
                             {"index": index, "client_device": theirs[index], "server_device": ours[index]}])
    return plan


def plan_rounds(plan):
    """perftest_plan's runs -> rounds that run at once: [[{index, pair, test, rail}], ...]. No host is in two runs of a
    round (each NIC measures one thing at a time), each run goes to the first round where both its hosts are free, and
    ``index`` (its place in the plan) keeps each run's port apart. Disjoint pairs share rounds, so the number of rounds
    grows with the tests and rails of a pair, not with the number of hosts: O(N) runs in O(1) rounds."""
    rounds, busy = [], []
    for index, (pair, test, rail) in enumerate(plan):
        hosts = {pair.get("server"), pair.get("client")}
        for number, taken in enumerate(busy):
            if not hosts & taken:
                break
        else:
            number = len(rounds)
            rounds.append([])
            busy.append(set())
        rounds[number].append({"index": index, "pair": pair, "test": test, "rail": rail})
        busy[number] |= hosts
    return rounds


def round_results(entries, clients, servers, argvs, addresses):
    """One round's runs (plan_rounds' entries) and, in the same order, what each run's client and server registered,
    the client's argv and the server's address -> the results judge_perftest reads, in the plan's order. A client that
    registered nothing (check mode, a host that dropped out) or was skipped is ``not_run``, never a measurement."""
    out = []
    for entry, done, served, argv, address in sorted(zip(entries, clients, servers, argvs, addresses),
                                                     key=lambda item: item[0].get("index", 0)):
        done = done if isinstance(done, Mapping) else {}
        served = served if isinstance(served, Mapping) else {}
        pair = entry.get("pair") or {}
        out.append({"test": (entry.get("test") or {}).get("name"), "server": pair.get("server"), "client": pair.get("client"),
                    "rail": entry.get("rail"), "command": "%s %s" % (" ".join(argv or []), address or ""),
                    "client_rc": done.get("rc"),
                    "not_run": (done.get("msg") or "skipped") if done.get("skipped") or not done else None,
                    "stdout": done.get("stdout") or "", "stderr": done.get("stderr") or "",
                    "server_stdout": served.get("stdout") or "", "server_stderr": served.get("stderr") or ""})
    return out


def _rail_text(rail):
    return "rail %d (%s -> %s)" % (rail["index"], rail["client_device"], rail["server_device"])


def _gbps_text(value):
    """Two decimals, or four significant figures below 1 Gb/s (an atomic test's 0.1389 is not 0.14: a floor of
    0.139 it misses must not read as met)."""
    return "%.2f" % value if value >= 1 else "%.4g" % value


def check_thresholds(result, min_bw_gbps=None, max_lat_us=None):
    """Failures (plain sentences) of a parsed perftest result against the thresholds, read at its last row; [] = pass."""
    failures = []
    if not result.get("rows"):
        return ["no result rows%s" % (": " + "; ".join(result["errors"]) if result.get("errors") else "")]
    last = result["rows"][-1]
    if min_bw_gbps is not None and result["kind"] == "bandwidth" and perftest.bw_gbps(last) < float(min_bw_gbps):
        failures.append("%s, %d B: average %s Gb/s, expected at least %g Gb/s"
                        % (result["test"] or "bandwidth test", last["bytes"], _gbps_text(perftest.bw_gbps(last)), float(min_bw_gbps)))
    if max_lat_us is not None and result["kind"] == "latency" and last["t_typical_us"] > float(max_lat_us):
        failures.append("%s, %d B: typical latency %.2f us, expected at most %g us"
                        % (result["test"] or "latency test", last["bytes"], last["t_typical_us"], float(max_lat_us)))
    return failures


def judge_perftest(results, min_bw_gbps=None, max_lat_us=None):
    """Registered perftest runs -> the same with 'result', 'failures', 'passed'."""
    judged = []
    for run in results:
        where = "%s %s -> %s" % (run.get("test"), run.get("client"), run.get("server"))
        if run.get("rail"):
            where += " " + _rail_text(run["rail"])
        output = "\n".join(part for part in (run.get("output"), run.get("stdout"), run.get("stderr")) if part)
        try:
            result = perftest.parse(output)
        except perftest.PerftestParseError:
            result = {"rows": [], "errors": [], "kind": None}
        if run.get("not_run"):
            failures = ["%s: not run: %s" % (where, run["not_run"])]
        elif result["rows"]:
            failures = ["%s: %s" % (where, f) for f in check_thresholds(result, min_bw_gbps, max_lat_us)]
        else:
            failures = ["%s: no result (client exit %s); perftest printed: %s" % (
                where, run.get("client_rc"), _first_words(output))]
        item = dict((k, v) for k, v in run.items() if k not in ("output", "stdout", "stderr"))
        item.update(result=result, failures=failures, passed=not failures, output=output)
        judged.append(item)
    return judged


def perftest_markdown(judged, replayed_from=None):
    """perftest.md: one line per test and pair, the rail x pair table, then the failures. ``replayed_from``: where a
    stand-in's figures come from (the lab), said above the tables."""
    lines = ["# gpufabric.rdma perftest", ""]
    if replayed_from:
        lines += [report.replayed_note(replayed_from), ""]
    lines += ["| test | client -> server | size (B) | result | verdict |", "|---|---|---|---|---|"]
    for run in judged:
        rows = run["result"].get("rows") or []
        last = rows[-1] if rows else None
        if last is None:
            measured = "no result"
        elif run["result"].get("kind") == "bandwidth":
            measured = "%s %s average" % (last["bw_average"], last["unit"])
        else:
            measured = "%s us typical" % last["t_typical_us"]
        cells = (run.get("test"), run.get("client"), run.get("server"), last["bytes"] if last else "-", measured,
                 "PASS" if run["passed"] else "FAIL")
        lines.append("| %s | %s -> %s | %s | %s | %s |" % cells)
    lines += perftest_rail_table(judged)
    failures = [f for run in judged for f in run["failures"]]
    if failures:
        lines += ["", "## Failures", ""] + ["- %s" % f for f in failures]
    return "\n".join(lines) + "\n"


def _measured(run):
    rows = run["result"].get("rows") or []
    if not rows:
        return "no result"
    if run["result"].get("kind") == "bandwidth":
        return "%s %s" % (rows[-1]["bw_average"], rows[-1]["unit"])
    return "%s us" % rows[-1]["t_typical_us"]


def perftest_rail_table(judged):
    """'## Rails' lines: one row per test and rail, one column per direction of each pair (client -> server), each
    cell the measured figure and the verdict; [] when no run was per rail."""
    runs = [run for run in judged if run.get("rail")]
    if not runs:
        return []
    columns = []
    for run in runs:
        column = "%s -> %s" % (run.get("client"), run.get("server"))
        if column not in columns:
            columns.append(column)
    rows = {}
    for run in runs:
        key = (run.get("test"), run["rail"]["index"])
        cell = "%s %s (%s -> %s)" % (_measured(run), "PASS" if run["passed"] else "FAIL",
                                     run["rail"]["client_device"], run["rail"]["server_device"])
        rows.setdefault(key, {})["%s -> %s" % (run.get("client"), run.get("server"))] = cell
    lines = ["", "## Rails", "", "NIC k of one host to NIC k of the other, every rail, both directions.", "",
             "| test | rail | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for (test, index), cells in sorted(rows.items(), key=lambda item: (str(item[0][0]), item[0][1])):
        lines.append("| %s | %d | %s |" % (test, index, " | ".join(cells.get(c, "-") for c in columns)))
    return lines
