# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""One nccl-tests run, judged once: the verdict that validation, burn-in (pairs and search groups) and the tuner take.

``from_registered`` is the one adapter from what Ansible registered for a run's command (a skipped task, a command
that never started, its stdout, stderr and rc) to a run; ``verdict`` reads a run once and says what it was:

- **not run**: it was skipped (check mode, a false condition) or the launcher exited before nccl-tests printed
  anything of its own (``nccl_tests.launch_failure``): never a measurement, never a slow host or a bad link;
- **not a measurement** (``error``): it exited non-zero, printed no result rows, failed nccl-tests' own checks
  (#wrong, out of bounds, stopped early) or measured nan/inf;
- else **the figure**: the out-of-place busbw at the largest size measured (``nccl_tests.at_largest_size``), carried
  from here by every caller, never computed again.

Notes (one rank moves no data between GPUs) and failures that no link explains (a busbw beyond any link's
limit on more than one rank) come with it. ``check_thresholds`` sets a parsed run against the user's thresholds.
Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests

NOT_RUN = "not run: "
# No link in service moves more: NVLink 5 (Blackwell) carries 900 GB/s a direction. A busbw above it on
# more than one rank is a broken measurement (a clock, a timer, a copy that never left the GPU).
CEILING_GBPS = 1000.0


def skipped(result):
    """Why a registered run did not run (check mode, a false condition), or None when it ran."""
    if not result.get("skipped"):
        return None
    why = result.get("msg") or result.get("skip_reason") or "skipped"
    if "check mode" in why:
        why += ": check mode measures nothing"
    return why


def from_registered(result):
    """What Ansible registered for a run's command -> {rc, output, stderr, not_run, command}.

    ``output`` is stdout and stderr together (nccl-tests and the launchers write to both), plus Ansible's message
    when the command never started (no rc: a timeout, a missing binary); ``stderr`` alone names the launcher's last
    words. A run that is text alone (a capture) ran and exited 0; None is a run nobody recorded.
    """
    if result is None:
        return {"rc": None, "output": "", "stderr": "", "not_run": "no run was recorded for it", "command": ""}
    if isinstance(result, str):
        return {"rc": 0, "output": result, "stderr": "", "not_run": None, "command": ""}
    parts = [result.get("stdout") or "", result.get("stderr") or ""]
    if result.get("rc") is None and result.get("msg"):
        parts.append("error: %s" % result["msg"])
    return {"rc": result.get("rc"), "output": "\n".join(p for p in parts if isinstance(p, str) and p),
            "stderr": result.get("stderr") or result.get("msg") or "",
            "not_run": skipped(result), "command": " ".join(str(a) for a in result.get("cmd") or [])}


def notes(result):
    """What a reader must know to read the figures right: one rank moves no data between GPUs."""
    out = []
    if len(result.get("ranks") or []) == 1 and result.get("rows"):
        out.append("1 rank: no data crosses a link - busbw is 0 for a reduction and a local copy for sendrecv "
                   "(peak %s GB/s); this run shows the collective works, it measures no bandwidth"
                   % ("-" if result.get("peak_busbw") is None else "%g" % result["peak_busbw"]))
    return out


def implausible(result):
    """Failures no threshold explains: several separate runs in one output (a launch that measured nothing), figures
    beyond any link's limit on more than one rank (one rank is a note instead)."""
    if result.get("separate_runs"):
        return ["%d separate nccl-tests runs in one output, each its own rank 0: the launcher started %d processes "
                "that never joined one run, so nothing crossed a link - this nccl-tests was built without MPI (build "
                "it with MPI=1)" % (result["separate_runs"], result["separate_runs"])]
    if len(result.get("ranks") or []) == 1 or result.get("peak_busbw") is None or result["peak_busbw"] <= CEILING_GBPS:
        return []
    return ["peak busbw %g GB/s is beyond what any link carries today (NVLink 5: 900 GB/s a direction): "
            "a broken measurement, not a result" % result["peak_busbw"]]


_LAUNCH_COUNTS = {"-np": "np", "--np": "np", "-n": "np", "--n": "np", "--ntasks": "np"}
_TEST_COUNTS = {"-g": "gpus", "--ngpus": "gpus", "-t": "threads", "--nthreads": "threads"}


def asked_ranks(command):
    """The ranks a command line asks for: mpirun's or srun's -np/-n (1 without a launcher) times nccl-tests' -g and -t
    (each 1 when not given); None when the command is not one we can read (no *_perf program, a count that is no
    number). ``command``: the argv as a list, or joined by spaces as a run's record keeps it."""
    argv = command.split() if isinstance(command, str) else [str(a) for a in command or []]
    program = next((i for i, a in enumerate(argv) if nccl_tests_program(a)), None)
    if program is None:
        return None
    counts = {"np": 1, "gpus": 1, "threads": 1}
    for table, words in ((_LAUNCH_COUNTS, argv[:program]), (_TEST_COUNTS, argv[program + 1:])):
        for index, word in enumerate(words):
            name, sep, value = word.partition("=")
            if name not in table:
                continue
            value = value if sep else (words[index + 1] if index + 1 < len(words) else "")
            if not value.isdigit() or int(value) < 1:
                return None
            counts[table[name]] = int(value)
    return counts["np"] * counts["gpus"] * counts["threads"]


def nccl_tests_program(word):
    """True for an nccl-tests binary: all_reduce_perf, /opt/build/all_gather_perf, all_reduce_perf_mpi."""
    return word.rsplit("/", 1)[-1].endswith(("_perf", "_perf_mpi"))


def verdict(run, parse=nccl_tests.parse):
    """One run ({rc, output, stderr, not_run}) -> {result, not_run, error, size, busbw, peak_busbw, ranks,
    nccl_tests_passed, notes, implausible, figure}.

    ``result`` is the parsed output (an empty result naming why when there is none); ``not_run`` the reason it
    never ran; ``error`` why it is no measurement (``not run: ...`` included); ``size``/``busbw`` the figure, only
    when there is no error. ``parse`` reads the output (nccl_tests.parse; a caller may pass its own reader).
    """
    out = {"result": None, "not_run": None, "error": None, "size": None, "busbw": None, "peak_busbw": None,
           "ranks": None, "nccl_tests_passed": None, "notes": [], "implausible": [],
           "figure": {"size": None, "busbw": None}}
    never = run.get("not_run") or nccl_tests.launch_failure(run.get("rc"), run.get("output"), run.get("stderr"))
    if never:
        out.update(not_run=never, error=NOT_RUN + never, result=nccl_tests.empty_result(NOT_RUN + never))
        return out
    try:
        parsed = parse(run.get("output") or "")
    except ValueError as exc:
        parsed, out["error"] = None, "output not understood: %s" % exc
        out["result"] = nccl_tests.empty_result(str(exc))
    if parsed is not None:
        out["result"] = parsed
    rows = (parsed or {}).get("rows") or []
    # the figure, read once: every run that printed rows has it (validation reports it, failed or not); size and
    # busbw below are it only when the run is a measurement
    largest = nccl_tests.at_largest_size(parsed) if rows else (None, None)
    out["figure"] = {"size": largest[0], "busbw": largest[1]}
    if parsed is not None:
        out["ranks"] = len(parsed.get("ranks") or []) or None
        out["nccl_tests_passed"] = bool(parsed.get("passed"))
        out["notes"] = notes(parsed)
        out["implausible"] = implausible(parsed)
    asked = asked_ranks(run.get("command") or "")   # read once: the condition and the message below
    if run.get("rc") not in (0, None):
        said = [line.strip() for line in (run.get("stderr") or "").splitlines() if line.strip()]
        out["error"] = "exited %s%s" % (run.get("rc"), ": " + said[-1][:200] if said else "")
    elif parsed is not None and not rows:
        out["error"] = "no result rows%s" % (": " + "; ".join(parsed.get("errors") or [])[:200] if parsed.get("errors") else "")
    elif parsed is not None and parsed.get("failed_sizes"):
        out["error"] = "busbw is nan or inf at %d size(s): a failed measurement" % len(parsed["failed_sizes"])
    elif parsed is not None and not parsed.get("passed", True):
        out["error"] = "nccl-tests reported wrong results or stopped early"
    elif out["implausible"] and parsed.get("separate_runs"):
        out["error"] = out["implausible"][0]
    elif rows and out["ranks"] and (asked or 0) > out["ranks"]:
        out["error"] = ("the command asked for %s ranks and the output shows %s: ranks that never joined the run "
                        "measured nothing (an nccl-tests built without MPI=1 runs each process alone)"
                        % (asked, out["ranks"]))
        out["implausible"].append(out["error"])
    if rows and out["error"] is None:
        out["size"], out["busbw"] = largest
        out["peak_busbw"] = parsed.get("peak_busbw")
        if out["busbw"] is None:
            out["error"] = "no busbw at the largest size"
    return out


def figure(run):
    """(size, busbw) of a judged run: the figure judging carried (``run['figure']``, set once by validation.judge),
    else - a record without it (runs.json of an earlier release, or one written by hand) - read once from its result
    (``nccl_tests.at_largest_size``). Reports, baselines and metrics all take it from here."""
    carried = run.get("figure")
    if isinstance(carried, dict):
        return carried.get("size"), carried.get("busbw")
    result = run.get("result")
    return nccl_tests.at_largest_size(result if isinstance(result, dict) else {})


def check_thresholds(result, min_busbw=None, min_busbw_by_size=None, max_wrong=0, require_oob_ok=True,
                     placement="out_of_place"):
    """Failures (plain sentences) of a parsed result against the user's thresholds; [] = pass.

    ``min_busbw`` applies to the largest size measured; ``min_busbw_by_size`` maps a size in
    bytes to its minimum; busbw is read from ``placement`` (out_of_place, in_place or best).
    """
    failures = []
    rows = result.get("rows") or []
    if not rows:
        printed = "; ".join(result.get("errors") or []) or "no error printed"
        return ["no result table: %s" % printed]

    def busbw(row):
        groups = [row.get("out_of_place"), row.get("in_place")]
        if placement == "in_place":
            groups = groups[1:]
        elif placement == "out_of_place":
            groups = groups[:1]
        values = [g["busbw"] for g in groups if g and g.get("busbw") is not None]
        if any(not nccl_tests.finite(v) for v in values):
            return float("nan")  # a failed measurement fails the threshold, whatever the other placement says
        return max(values) if values else None

    by_size = dict((r["size"], r) for r in rows)
    failed = result.get("failed_sizes") or []
    if failed:
        failures.append("busbw is nan or inf (a failed measurement) at %d size(s), first %d B" % (len(failed), failed[0]))
    wanted = dict((int(k), float(v)) for k, v in (min_busbw_by_size or {}).items())
    if min_busbw is not None:
        wanted.setdefault(nccl_tests.at_largest_size(result)[0], float(min_busbw))
    for size in sorted(wanted):
        row = by_size.get(size)
        if row is None:
            failures.append("size %d B was not measured (largest measured: %d B)" % (size, max(by_size)))
            continue
        measured = busbw(row)
        if not nccl_tests.finite(measured) or measured < wanted[size]:
            failures.append("size %d B: busbw %s GB/s, expected at least %g GB/s" % (
                size, "unknown" if measured is None else "%g" % measured, wanted[size]))
    if max_wrong is not None and (result.get("wrong") or 0) > max_wrong:
        failures.append("%d wrong values (#wrong), at most %d allowed" % (result["wrong"], max_wrong))
    oob = result.get("out_of_bounds")
    if require_oob_ok and oob is not None and not oob.get("ok"):
        failures.append("out-of-bounds check failed: %d values" % oob.get("count", 0))
    if not result.get("completed"):
        printed = [e for e in result.get("errors") or [] if e != nccl_tests.TRUNCATED]
        if printed:  # nccl-tests said why it stopped
            why = "the run stopped: %s" % "; ".join(printed)[:300]
        elif result.get("avg_busbw") is None:
            why = nccl_tests.TRUNCATED
        else:
            why = "the run did not finish"
        failures.append("%s (%d sizes measured, last %d B)" % (why, len(rows), rows[-1]["size"]))
    return failures
