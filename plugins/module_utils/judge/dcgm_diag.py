# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A DCGM diagnostic run judged: what it says about the node, as findings, and a status a certificate can trust.

``status`` is one of:

- **pass**: the table closed, no test failed or warned, and at least one test ran (not every one skipped);
- **fail**: a test failed - each failing GPU is a critical finding in DCGM's words, a failure no GPU carries one
  for the node; a table cut after a failure still fails;
- **warn**: a test warned, none failed;
- **not run**: dcgmi is missing, could not reach its host engine, timed out, printed an error instead of a table, was
  cut before it closed, skipped every test, exited non-zero after a table with no failure, left a GPU's result
  unreadable, or tested fewer GPUs than the node has (``expected_gpus``) or than the run asked for (``gpu_ids``).
  Unknown is neither healthy nor faulty: it never passes a node and never condemns one, and says why in the tool's
  words or names the gap.

An ``Error`` row is a failure (parse/dcgm.py), so a run DCGM stopped at one fails.

Pure, standard library only (the dcgm_diag module runs it on the node).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding

LEVELS = (1, 2, 3, 4)
# How long each level may run before it is killed (seconds): DCGM's documentation gives level 1 seconds, level 2
# about two minutes, level 3 about half an hour and level 4 one to two hours; each limit leaves room on a slow node.
TIMEOUTS = {1: 300, 2: 1200, 3: 5400, 4: 14400}
MAX_TIMEOUT = 21600
STATUSES = ("pass", "fail", "warn", "not run")
_FIX = {
    "fail": "drain the node; read DCGM's words above and the node's kernel log (Xid), then reset the GPU or reboot and "
            "run the same level again before it returns to service",
    "warn": "look at the test's warning; run the level again under load before the node takes long jobs",
    "not run": "install DCGM (datacenter-gpu-manager-4 from NVIDIA's repository) and start nv-hostengine "
               "(systemctl start nvidia-dcgm), or read its error above; the node is not certified until a level runs",
}


def check_level(level):
    """The level as a whole number 1 to 4; ValueError naming the value otherwise."""
    if isinstance(level, bool) or str(level).strip() not in ("1", "2", "3", "4"):
        raise ValueError("the DCGM diagnostic level must be 1, 2, 3 or 4, got %r" % (level,))
    return int(str(level).strip())


def _where(test):
    return "%s/%s" % (test.get("category"), test.get("name")) if test.get("category") else str(test.get("name"))


def _words(test):
    said = (test.get("errors") or []) + (test.get("warnings") or [])
    return "; ".join(said)[:600] if said else "DCGM gave no reason"


def tested_gpus(parsed):
    """The GPUs a parsed run gave a result for (sorted indices): its rows, or 'All' spread over the metadata's count."""
    return sorted(set(g["gpu"] for t in (parsed or {}).get("tests") or [] for g in t.get("gpus") or []
                      if isinstance(g.get("gpu"), int) and g.get("result") is not None))


def coverage_gap(parsed, expected_gpus=None, gpu_ids=None):
    """Why a run did not cover the node (None: it did): the GPUs asked for with -i that it has no result for, or fewer
    GPUs than the node has (``expected_gpus``), or none named at all while a count is expected."""
    gpus = tested_gpus(parsed)
    why = " a GPU it did not test is not certified"
    if gpu_ids:
        missing = sorted(set(gpu_ids) - set(gpus))
        if missing:
            return "DCGM tested %s, not %s that the run asked for:%s" % (
                "GPUs %s" % ", ".join(str(g) for g in gpus) if gpus else "no GPU it names",
                "GPU %s" % ", ".join(str(g) for g in missing), why)
        return None
    if not expected_gpus:
        return None
    if not gpus:
        return "DCGM's output does not say which GPUs it tested, and the node has %d:%s" % (expected_gpus, why)
    if len(gpus) < expected_gpus:
        tested = ", ".join(str(g) for g in gpus)
        return "DCGM tested %d of the node's %d GPUs (%s):%s" % (len(gpus), expected_gpus, tested, why)
    return None


def verdict(parsed, level, not_run=None, host=None, expected_gpus=None, gpu_ids=None):
    """A parsed run (parse_dcgmi_diag's result, or None) -> {status, level, findings, failures, skipped, tests, reason,
    gpus, expected_gpus}.

    ``not_run``: why the run never gave a table (dcgmi missing, timed out, its exit status and words); ``failures``:
    [{test, gpu, message}] (gpu None for a failure of the node as a whole). ``host`` names the node in the findings'
    targets ("node7 GPU 1"); without it they read "GPU 1" and "node". ``expected_gpus``: how many GPUs the node has
    (a pass must cover each); ``gpu_ids``: the GPUs the run asked for (-i). ``gpus``: those it gave a result for.
    """
    level = check_level(level)
    out = {"status": None, "level": level, "findings": [], "failures": [], "skipped": [], "tests": 0, "reason": None,
           "gpus": tested_gpus(parsed) if not not_run else [], "expected_gpus": expected_gpus}
    what = "dcgmi diag -r %d" % level
    if not_run or not parsed:
        out.update(status="not run", reason=not_run or "no output")
    else:
        tests = parsed.get("tests") or []
        out["tests"] = len(tests)
        out["skipped"] = [_where(t) for t in tests if t.get("result") == "skip"]
        for test in tests:
            if test.get("result") != "fail":
                continue
            gpus = [g for g in test.get("gpus") or [] if g.get("result") == "fail" and isinstance(g.get("gpu"), int)]
            for gpu in gpus:
                out["failures"].append({"test": _where(test), "gpu": gpu["gpu"], "message": gpu.get("message") or _words(test)})
            if not gpus:
                out["failures"].append({"test": _where(test), "gpu": None, "message": _words(test)})
        overall = parsed.get("overall")
        if out["failures"]:
            out["status"] = "fail"
        elif overall is None or not parsed.get("complete"):
            said = "; ".join(parsed.get("errors") or [])
            cut = "the output was cut before its table closed" if tests else "no test result in the output"
            out.update(status="not run", reason=said or cut)
        elif overall == "skip":
            out.update(status="not run", reason="every test was skipped: nothing was tested")
        elif parsed.get("unread"):
            out.update(status="not run", reason="DCGM's result for %s is unreadable: that GPU is not certified"
                       % "; ".join(parsed["unread"][:4]))
        elif coverage_gap(parsed, expected_gpus, gpu_ids):
            out.update(status="not run", reason=coverage_gap(parsed, expected_gpus, gpu_ids))
        else:
            out["status"] = "warn" if overall == "warn" else "pass"
    for failure in out["failures"]:
        target = ("%s GPU %s" % (host, failure["gpu"]) if host else "GPU %s" % failure["gpu"]) \
            if failure["gpu"] is not None else (host or "node")
        out["findings"].append(finding("dcgm_diag", "critical", target, "%s: %s failed: %s" % (
            what, failure["test"], failure["message"]), _FIX["fail"]))
    host = host or "node"
    if out["status"] == "warn":
        for test in parsed.get("tests") or []:
            if test.get("result") == "warn":
                out["findings"].append(finding("dcgm_diag", "warning", host, "%s: %s warned: %s" % (
                    what, _where(test), _words(test)), _FIX["warn"]))
    if out["status"] == "not run":
        out["findings"].append(finding("dcgm_diag_not_run", "warning", host, "%s did not run: %s" % (
            what, out["reason"]), _FIX["not run"]))
    if out["status"] == "pass":
        out["findings"].append(finding("dcgm_diag", "info", host, "%s passed: %d test(s)%s (DCGM %s)" % (
            what, out["tests"] - len(out["skipped"]),
            ", skipped: %s" % ", ".join(out["skipped"]) if out["skipped"] else "",
            parsed.get("dcgm_version") or "version not shown"), "nothing to do"))
    return out


def summary_markdown(records, replayed_from=None):
    """dcgm.md: the level's verdict per node, what failed on which GPU in DCGM's words, and why a node was not run.
    ``records``: [{host, level, status, failures, skipped, reason, dcgm_version, planned}] (the dcgm_diag role's).
    Headed PASS (every node passed), FAIL (a node failed), NOT RUN (none failed, some could not run) or PLAN (check
    mode: nothing ran, by design)."""
    records = sorted(records, key=lambda r: str(r.get("host")))
    passed = [r for r in records if r.get("status") in ("pass", "warn")]
    unknown = [r for r in records if r.get("status") == "not run"]
    planned = bool(records) and all(r.get("planned") for r in records)
    levels = sorted(set(str(r.get("level")) for r in records))
    lines = ["# DCGM diagnostics (level %s)" % ", ".join(levels), ""]
    if replayed_from:
        lines += ["Results REPLAYED from %s, not measured." % replayed_from, ""]
    if planned:   # check mode: a plan, neither a pass nor a failure
        heading = "**PLAN** (check mode): nothing ran on %d node(s)." % len(records)
    elif records and len(passed) == len(records):
        heading = "**PASS**: %d of %d node(s) passed." % (len(passed), len(records))
    elif records and len(passed) + len(unknown) == len(records):
        heading = "**NOT RUN**: %d of %d node(s) passed; %d not run (neither a pass nor a failure)." % (
            len(passed), len(records), len(unknown))
    else:
        heading = "**FAIL**: %d of %d node(s) passed." % (len(passed), len(records))
    lines += [heading, "", "| node | status | DCGM | failed | skipped |", "|---|---|---|---|---|"]
    for record in records:
        failed = ", ".join("%s on %s" % (f.get("test"), "the node" if f.get("gpu") is None else "GPU %s" % f.get("gpu"))
                           for f in record.get("failures") or [])
        cells = (record.get("host"), record.get("status"), record.get("dcgm_version") or "-", failed or "-",
                 ", ".join(record.get("skipped") or []) or "-")
        lines.append("| %s | %s | %s | %s | %s |" % cells)
    failures = [(r.get("host"), f) for r in records for f in r.get("failures") or []]
    if failures:
        lines += ["", "## What DCGM said", ""]
        lines += ["- %s %s: %s: %s" % (host, "the node" if f.get("gpu") is None else "GPU %s" % f.get("gpu"),
                                       f.get("test"), f.get("message")) for host, f in failures]
    if unknown:
        lines += ["", "## Would run (check mode)" if planned else "## Not run (neither a pass nor a failure)", ""]
        lines += ["- %s: %s" % (r.get("host"), r.get("reason")) for r in unknown]
    return "\n".join(lines) + "\n"


def failure_lines(records):
    """One line per failing GPU or node and per node not run: 'node7 GPU 1: Stress/Targeted Power failed: <words>',
    'node8: not run: <why>' - what a failed play names."""
    lines = []
    for record in sorted(records, key=lambda r: str(r.get("host"))):
        host = record.get("host")
        if record.get("status") == "not run":
            lines.append("%s: not run: %s" % (host, record.get("reason")))
        for failure in record.get("failures") or []:
            where = host if failure.get("gpu") is None else "%s GPU %s" % (host, failure.get("gpu"))
            lines.append("%s: %s failed: %s" % (where, failure.get("test"), failure.get("message")))
    return lines
