# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation runs (nccl-tests) judged against thresholds and summarized for people."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils import nccl_tests, perftest
from ansible_collections.gpufabric.rdma.plugins.module_utils.report import render_table

_NUMBER_RE = re.compile(r"^\s*\d+(?:\.\d+)?\s*$")


def _threshold_problem(value):
    """None when value is empty or a non-negative number (or its text), else what it is instead."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "got %s" % str(value).lower()
    if isinstance(value, (int, float)):
        return None if value >= 0 and not math.isnan(value) and not math.isinf(value) else "got %r" % value
    if isinstance(value, str) and _NUMBER_RE.match(value):
        return None
    return "got %r" % (value if not isinstance(value, str) else value[:40])


def threshold_errors(values):
    """{name: value} -> one sentence per value that is not a threshold; [] when all are.

    A name ending in ``_by_size`` takes a mapping of size in bytes to minimum; ``max_wrong`` a
    whole number; the others a non-negative number, its text, or empty (no threshold).
    """
    errors = []
    for name in sorted(values):
        value = values[name]
        if name.endswith("_by_size"):
            if value in (None, "", {}):
                continue
            if not isinstance(value, dict):
                errors.append("%s must be a mapping of size in bytes to minimum, got %r" % (name, value))
                continue
            for size in sorted(value, key=str):
                if isinstance(size, bool) or not str(size).strip().isdigit():
                    errors.append("%s: size %r is not a whole number of bytes" % (name, size))
                problem = _threshold_problem(value[size])
                if problem or value[size] in (None, ""):
                    errors.append("%s[%s] must be a non-negative number, %s" % (name, size, problem or "got nothing"))
        elif name.endswith("max_wrong"):
            if value in (None, "") or (not isinstance(value, bool) and isinstance(value, int) and value >= 0) \
                    or (isinstance(value, str) and value.strip().isdigit()):
                continue
            errors.append("%s must be a whole number of wrong values allowed (0 or more), got %r" % (name, value))
        else:
            problem = _threshold_problem(value)
            if problem:
                errors.append("%s must be a non-negative number or empty, %s" % (name, problem))
    return errors


def _output(result):
    """stdout and stderr of a registered command, or why it has none (timeout, missing binary)."""
    parts = [result.get("stdout") or "", result.get("stderr") or ""]
    if result.get("rc") is None and result.get("msg"):
        parts.append("error: %s" % result["msg"])
    return "\n".join(p for p in parts if isinstance(p, str) and p)


def not_run(result):
    """Why a registered run did not run (check mode, a false condition), or None when it ran."""
    if not result.get("skipped"):
        return None
    why = result.get("msg") or result.get("skip_reason") or "skipped"
    if "check mode" in why:
        why += ": check mode measures nothing"
    return why


def collect_runs(single_by_host, mpirun_results=None, hosts=None, gpus_by_host=None):
    """Registered loop results -> [{'label', 'host', 'mode', 'command', 'rc', 'output'}].

    ``single_by_host`` maps a host to its registered single-node loop (``{'results': [...]}``);
    ``mpirun_results`` is the registered mpirun loop of the launching host.
    """
    runs = []
    for host in sorted(single_by_host or {}):
        for result in (single_by_host[host] or {}).get("results") or []:
            item = result.get("item") or {}
            label = item.get("label") or "%s -g %s" % (item.get("name"), (gpus_by_host or {}).get(host, "?"))
            runs.append({"label": "%s: %s" % (host, label), "host": host, "mode": "single",
                         "command": " ".join(str(a) for a in result.get("cmd") or []), "rc": result.get("rc"),
                         "output": _output(result), "not_run": not_run(result)})
    for result in (mpirun_results or {}).get("results") or []:
        item = result.get("item") or {}
        runs.append({"label": item.get("label") or "mpirun %s x %d nodes" % (item.get("name"), len(hosts or [])),
                     "host": ",".join(hosts or []), "mode": "mpirun",
                     "command": " ".join(str(a) for a in result.get("cmd") or []), "rc": result.get("rc"),
                     "output": _output(result), "not_run": not_run(result)})
    return runs


def judge(runs, min_busbw=None, min_busbw_by_size=None, max_wrong=0, placement="out_of_place"):
    """runs: [{'label', 'command', 'output'}] -> the same runs with 'result', 'failures', 'passed'."""
    judged = []
    for run in runs:
        if run.get("not_run"):
            result = nccl_tests.empty_result("not run: %s" % run["not_run"])
        else:
            try:
                result = nccl_tests.parse(run.get("output") or "")
            except nccl_tests.NcclTestsParseError as exc:
                result = nccl_tests.empty_result(str(exc))
        failures = nccl_tests.check_thresholds(result, min_busbw, min_busbw_by_size, max_wrong, True, placement)
        if run.get("rc") not in (0, None) and not run.get("not_run"):
            failures.append("the command exited %s" % run["rc"])
        item = dict((k, v) for k, v in run.items() if k != "output")
        item.update(result=result, failures=failures, passed=not failures and bool(result.get("passed")))
        judged.append(item)
    return judged


def _largest(result):
    rows = result.get("rows") or []
    return rows[-1] if rows else None


def summary_rows(judged):
    rows = []
    for run in judged:
        result = run["result"]
        last = _largest(result)
        rows.append([
            run.get("label"),
            result.get("collective"),
            len(result.get("ranks") or []),
            last["size"] if last else None,
            (last.get("out_of_place") or {}).get("busbw") if last else None,
            result.get("peak_busbw"),
            result.get("avg_busbw"),
            result.get("wrong"),
            "PASS" if run["passed"] else "FAIL",
        ])
    return rows


SUMMARY_HEADER = ["run", "collective", "ranks", "largest size (B)", "busbw there (GB/s)", "peak busbw",
                  "avg busbw", "#wrong", "verdict"]


def summary_text(judged):
    text = render_table(SUMMARY_HEADER, summary_rows(judged))
    failures = ["%s: %s" % (run.get("label"), failure) for run in judged for failure in run["failures"]]
    return text + ("\n" + "\n".join(failures) if failures else "")


def summary_markdown(judged, thresholds=None):
    lines = ["# gpufabric.rdma validation", ""]
    passed = all(run["passed"] for run in judged) and bool(judged)
    count = sum(1 for r in judged if r["passed"])
    lines.append("**%s**: %d of %d run(s) passed." % ("PASS" if passed else "FAIL", count, len(judged)))
    if thresholds:
        lines += ["", "Thresholds: " + ", ".join("%s=%s" % kv for kv in sorted(thresholds.items()) if kv[1] not in (None, {}, ""))]
    lines += ["", "| " + " | ".join(SUMMARY_HEADER) + " |", "|" + "---|" * len(SUMMARY_HEADER)]
    for row in summary_rows(judged):
        lines.append("| " + " | ".join("-" if c is None else str(c) for c in row) + " |")
    lines += ["", "## Commands", ""]
    lines += ["- %s: `%s`" % (run.get("label"), run.get("command")) for run in judged]
    failures = [(run.get("label"), f) for run in judged for f in run["failures"]]
    if failures:
        lines += ["", "## Failures", ""] + ["- %s: %s" % item for item in failures]
    return "\n".join(lines) + "\n"


def pair_hosts(hosts):
    """[a, b, c, d, e] -> [{'server': a, 'client': b}, {'server': c, 'client': d}]; an odd host out waits."""
    hosts = list(hosts or [])
    return [{"server": hosts[i], "client": hosts[i + 1]} for i in range(0, len(hosts) - 1, 2)]


def _first_words(text, limit=3):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip() and not set(line.strip()) <= set("-*")]
    return "; ".join(lines[:limit]) or "nothing"


def judge_perftest(results, min_bw_gbps=None, max_lat_us=None):
    """Registered perftest runs -> the same with 'result', 'failures', 'passed'."""
    judged = []
    for run in results:
        where = "%s %s -> %s" % (run.get("test"), run.get("client"), run.get("server"))
        output = "\n".join(part for part in (run.get("output"), run.get("stdout"), run.get("stderr")) if part)
        try:
            result = perftest.parse(output)
        except perftest.PerftestParseError:
            result = {"rows": [], "errors": [], "kind": None}
        if run.get("not_run"):
            failures = ["%s: not run: %s" % (where, run["not_run"])]
        elif result["rows"]:
            failures = ["%s: %s" % (where, f) for f in perftest.check_thresholds(result, min_bw_gbps, max_lat_us)]
        else:
            failures = ["%s: no result (client exit %s); perftest printed: %s" % (
                where, run.get("client_rc"), _first_words(output))]
        item = dict((k, v) for k, v in run.items() if k not in ("output", "stdout", "stderr"))
        item.update(result=result, failures=failures, passed=not failures, output=output)
        judged.append(item)
    return judged


def perftest_markdown(judged):
    """perftest.md: one line per test and pair, then the failures."""
    lines = ["# gpufabric.rdma perftest", "", "| test | client -> server | size (B) | result | verdict |",
             "|---|---|---|---|---|"]
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
    failures = [f for run in judged for f in run["failures"]]
    if failures:
        lines += ["", "## Failures", ""] + ["- %s" % f for f in failures]
    return "\n".join(lines) + "\n"
