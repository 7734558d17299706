"""The closing summary of `make lab`: what was measured, what was replayed, where the reports are.

    python3 tests/lab/summary.py build/lab-report

Reads the reports the lab's playbooks wrote; prints a few lines; exits 1 when a report is missing.
"""

import json
import os
import sys


def _load(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


def _verdict(path):
    """The report's verdict line, and ' (replayed)' when the report says its figures are replayed (the one wording,
    under its title)."""
    try:
        with open(path) as handle:
            text = handle.read()
    except (IOError, OSError):
        return None
    verdict = next((line.strip() for line in text.splitlines() if line.startswith(("PASSED", "FAILED", "NOT RUN"))), None)
    return None if verdict is None else verdict + (" (replayed)" if "Figures REPLAYED from" in text else "")


def main(argv):
    top = os.path.abspath(argv[1] if len(argv) > 1 else "build/lab-report")
    lines, missing = ["", "make lab: summary (reports in %s)" % top], []
    readiness = _load(os.path.join(top, "readiness.json"))
    if readiness is None:
        missing.append("readiness.json")
    else:
        counts = readiness.get("counts") or {}
        lines.append("- discovery: %s, %s node(s): %d critical, %d warning, %d info (readiness.md)" % (
            "READY" if readiness.get("ready") else "NOT READY", len(readiness.get("nodes") or {}),
            counts.get("critical", 0), counts.get("warning", 0), counts.get("info", 0)))
    runs = _load(os.path.join(top, "nccl-tests", "runs.json"))
    if runs is None:
        missing.append("nccl-tests/runs.json")
    else:
        for run in runs:
            result = run.get("result") or {}
            lines.append("- nccl-tests %s: %s, %d rank(s), peak busbw %s GB/s%s" % (
                run.get("label"), "PASS" if run.get("passed") else "FAIL", len(result.get("ranks") or []),
                result.get("peak_busbw"), " (replayed)" if run.get("replayed_from") else ""))
    perftest = _load(os.path.join(top, "perftest", "perftest.json"))
    if perftest is None:
        missing.append("perftest/perftest.json")
    else:
        passed = sum(1 for run in perftest if run.get("passed"))
        try:
            with open(os.path.join(top, "perftest", "perftest.md")) as handle:
                replayed = "REPLAYED" in handle.read()
        except (IOError, OSError):
            replayed = False
        lines.append("- perftest: %d of %d test(s) passed%s (perftest.md)" % (
            passed, len(perftest), " (replayed)" if replayed else ""))
    for name in ("burnin", "burnin-search"):
        verdict = _verdict(os.path.join(top, name, "burnin.md"))
        if verdict is None:
            missing.append("%s/burnin.md" % name)
        else:
            lines.append("- %s: %s" % (name.replace("-", " "), verdict))
    lines.append("- measured: the orchestration, for real - containers, SSH mesh, mpirun across nodes, drivers, MTU, "
                 "NCCL environment, reports; replayed: every bandwidth figure (stand-ins print real captures: the lab "
                 "has no GPU and no RDMA NIC)")
    if missing:
        lines.append("- missing: %s" % ", ".join(missing))
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
