# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""nccl-tests output (text or -J JSON) to plain dictionaries, and threshold checks.

Standard library only; used by the parse_nccl_tests filter and the nccl_tests role.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_VERSION_RE = re.compile(r"^#\s*nccl-tests version\s+(\S+)(?:.*?nccl-library=(\d+))?")
_NCCL_INFO_VERSION_RE = re.compile(r"NCCL INFO NCCL version\s+(\d+\.\d+\.\d+)")
_NCCL_VERSION_LINE_RE = re.compile(r"^NCCL version\s+(\d+\.\d+\.\d+)")
_COLLECTIVE_RE = re.compile(r"^#\s*Collective test (starting|concluded):\s*(\S+)")
# The device name runs to the end of the line (already right-stripped): no trailing \s* to backtrack over.
_RANK_RE = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
                      r"\[([^\]]*)\]\s+(.*)$")
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\S*)")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([\d.eE+-]+)")
_START_RE = re.compile(r"^#\s*nThread\s+\d+")
# nccl-tests' own failure lines (common.cu: TESTCHECK, NCCLCHECK, CUDACHECK, the GPU count check):
# a run that prints one failed, whatever its table says.
_FAILURE_RE = re.compile(r"Test (?:NCCL|CUDA) failure|Test failure|Invalid number of GPUs")
# Lines worth showing a person but that decide nothing: NCCL warnings, MPI help and abort notices.
_WARNING_RE = re.compile(r"NCCL WARN|\berror\b|\baborted\b|\bWARNING\b|signal \d+|exited on signal|"
                         r"non-zero (?:exit|status)|orte_base_help_aggregate|more process(?:es)? ha(?:s|ve) sent help",
                         re.I)
_GROUP_FIELDS = ("time", "algbw", "busbw")
_MAX_NOTES = 40

# What a blank column of an older release could have held, told apart by its text.
_TYPES = frozenset("int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2 fp8_e4m3 fp8_e5m2 "
                   "int uint char".split())
_REDOPS = frozenset("sum prod max min avg mulsum premulsum none all".split())


class NcclTestsParseError(ValueError):
    """The text is not nccl-tests output (nor a -J document); the message says what was missing."""


def nccl_version_from_code(code):
    """NCCL_VERSION_CODE -> 'major.minor.patch' (22809 -> '2.28.9'; 2708 -> '2.7.8')."""
    code = int(code)
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, (code % 10000) // 100, code % 100)
    return "%d.%d.%d" % (code // 1000, (code % 1000) // 100, code % 100)


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value


def _wrong(text):
    if text in (None, "N/A", "n/a", "-"):
        return None
    try:
        return int(float(text))
    except ValueError:
        return None


def _collective(name):
    """'/opt/build/all_reduce_perf' or 'all_reduce_perf_mpi' (the MPI=1 build's name) -> 'all_reduce'."""
    if not name:
        return None
    name = str(name).rsplit("/", 1)[-1]
    for suffix in ("_perf_mpi", "_perf"):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def _header_columns(line):
    """'#  size count type redop root time algbw busbw #wrong time ...' -> column names, or None."""
    tokens = line.lstrip("#").split()
    if len(tokens) < 6 or tokens[0] != "size" or "count" not in tokens or "time" not in tokens:
        return None
    return tokens


# The header of a collective's table (all_reduce_perf and the others) since nccl-tests 2.0.
STANDARD_COLUMNS = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                    "busbw", "#wrong")


def _headerless_row(tokens):
    """A result row in STANDARD_COLUMNS' shape: 13 fields, size and count integers, a known type and reduction."""
    return (len(tokens) == len(STANDARD_COLUMNS) and tokens[0].isdigit() and tokens[1].isdigit()
            and tokens[2] in _TYPES and tokens[3] in _REDOPS and tokens[4].lstrip("-").isdigit())


def _prefix_kind(token):
    if token.lstrip("-").isdigit():
        return "root"
    if token in _REDOPS:
        return "redop"
    if token in _TYPES:
        return "type"
    return None


def _prefix(tokens, columns):
    """Map the tokens before the first 'time' column to their columns.

    Older releases print some of these columns blank (alltoall's redop before nccl-tests 2.13, and
    'root' was not printed at all): with fewer tokens than columns, each token after size and count
    goes to the column its text belongs to, and a column with no token stays None.
    """
    if len(tokens) == len(columns):
        return dict(zip(columns, tokens))
    mapped = dict(zip(columns[:2], tokens[:2]))
    rest = list(columns[2:])
    for token in tokens[2:]:
        kind = _prefix_kind(token)
        if kind in rest:
            mapped[kind] = token
            rest = rest[rest.index(kind) + 1:]
        elif rest and kind is None:
            mapped[rest.pop(0)] = token
    return mapped


def _row(tokens, columns):
    """One result row -> dict, or None when the tokens do not fit the header."""
    first_time = columns.index("time")
    group_columns = columns[first_time:]
    if len(tokens) < len(group_columns) + 2 or len(tokens) > len(columns):
        return None
    split = len(tokens) - len(group_columns)
    prefix = _prefix(tokens[:split], columns[:first_time])
    if not (prefix.get("size", "").isdigit() and prefix.get("count", "").isdigit()):
        return None
    groups = []
    rest_cols, rest = group_columns, tokens[split:]
    while rest_cols:
        width = 4 if len(rest_cols) >= 4 and rest_cols[3] in ("#wrong", "wrong", "error") else 3
        cell = dict(zip(rest_cols[:width], rest[:width]))
        group = {"time_us": _number(cell.get("time")), "algbw": _number(cell.get("algbw")),
                 "busbw": _number(cell.get("busbw"))}
        if "error" in cell:
            group["wrong"] = None
            group["error"] = _number(cell["error"])
        else:
            group["wrong"] = _wrong(cell.get("#wrong", cell.get("wrong")))
        groups.append(group)
        rest_cols, rest = rest_cols[width:], rest[width:]
    root = prefix.get("root")
    return {
        "size": int(prefix["size"]),
        "count": int(prefix["count"]),
        "type": prefix.get("type"),
        "redop": prefix.get("redop"),
        "root": int(root) if root not in (None, "") and root.lstrip("-").isdigit() else None,
        "out_of_place": groups[0] if groups else None,
        "in_place": groups[1] if len(groups) > 1 else None,
    }


def finite(value):
    """A number that is a measurement: not None, not NaN, not infinite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def at_largest_size(result, placement="out_of_place"):
    """The one reading of "busbw at the largest size": (size, busbw) of the row of the largest size measured.

    ``placement``: out_of_place (nccl-tests' headline figure), in_place, or best (the larger of the two finite
    ones). (None, None) without rows; busbw is None when that row has none, and nan/inf is returned as it is
    (the caller treats it as a failed measurement: ``finite()``).
    """
    rows = result.get("rows") or []
    if not rows:
        return None, None
    row = max(rows, key=lambda r: r.get("size") or 0)
    groups = {"out_of_place": [row.get("out_of_place")], "in_place": [row.get("in_place")],
              "best": [row.get("out_of_place"), row.get("in_place")]}[placement]
    values = [g.get("busbw") for g in groups if g and g.get("busbw") is not None]
    if len(values) > 1:
        values = [v for v in values if finite(v)] or values[:1]
    return row.get("size"), (max(values) if values else None)


def _summarize(result):
    rows = result["rows"]
    busbws = [g["busbw"] for r in rows for g in (r["out_of_place"], r["in_place"]) if g and g["busbw"] is not None]
    wrongs = [g["wrong"] for r in rows for g in (r["out_of_place"], r["in_place"]) if g and g["wrong"] is not None]
    # nan and inf are failed measurements: never a peak, never a pass.
    result["failed_sizes"] = [r["size"] for r in rows if any(
        g and g["busbw"] is not None and not finite(g["busbw"]) for g in (r["out_of_place"], r["in_place"]))]
    measured = [b for b in busbws if finite(b)]
    result["peak_busbw"] = max(measured) if measured else None
    result["wrong"] = sum(wrongs) if wrongs else (0 if rows else None)
    oob = result.get("out_of_bounds")
    result["passed"] = bool(
        rows and result["completed"] and not result["wrong"] and not result["errors"]
        and (oob is None or oob.get("ok")) and not result["failed_sizes"]
    )
    return result


# Rows but no "# Avg bus bandwidth" line: the log was cut, or read while the run was still going.
TRUNCATED = ("the output ends before nccl-tests' summary (no '# Avg bus bandwidth' line): it was cut off, "
             "or the run was still going")


def empty_result(error):
    """The result of a run that printed no nccl-tests output at all, with the reason as its error."""
    return {"format": "text", "collective": None, "nccl_tests_version": None, "nccl_version": None, "ranks": [],
            "rows": [], "avg_busbw": None, "peak_busbw": None, "out_of_bounds": None, "wrong": None,
            "completed": False, "table": False, "errors": [error], "warnings": [], "passed": False}


def _note(notes, line):
    if len(notes) < _MAX_NOTES and line not in notes:
        notes.append(line)


# What a launcher or the shell prints when the program never started: Open MPI 4 and 5 (PRRTE), Slurm's srun, the
# loader, the shell, and Ansible's command module for a missing binary.
_LAUNCH_FAILURE_RE = re.compile(
    r"(?:mpirun|prterun|prte|ORTE|PRRTE|srun) (?:was unable|could not|has lost|failed)|unable to (?:find|launch|start)"
    r" the specified|failed to start|not enough slots|No such file or directory|command not found|Permission denied"
    r"|Exec format error|cannot execute|error while loading shared libraries|srun: error:", re.I)
# The lines that say what went wrong, before those that only say that something did ("failed to start").
_LAUNCH_REASON_RE = re.compile(r"unable to|No such file|not found|Permission denied|Exec format|cannot execute"
                               r"|error while loading|not enough slots", re.I)
_RULE_RE = re.compile(r"^[-=*]{5,}$")


def launch_failure(rc, output, stderr=""):
    """Why a run never ran, or None when it ran (whether it then passed or failed).

    A run never ran when it exited non-zero (126 and 127 from the shell, 132 from mpirun for a missing program,
    any other) before nccl-tests printed anything of its own: no header, no rank line, no table, none of its
    failure lines (parse finds no nccl-tests output). The launcher's
    own line is the reason (the first that says what went wrong, else its last line that is not a rule of dashes).
    Such a run is "not run": never a measurement, never a slow host or a bad link.
    """
    if rc in (0, None):
        return None
    try:
        parse(output or "")
        return None   # nccl-tests printed something of its own (a header, a rank, a table, its failure line): it ran
    except ValueError:
        pass
    lines = [line.strip() for line in _text.launcher_lines("%s\n%s" % (stderr or "", output or ""), "launcher output")]
    # stdout and stderr may both be given and both hold a line (a registered run's output is the two together)
    lines = list(dict.fromkeys(line for line in lines if line and not _RULE_RE.match(line)))
    said = sorted((line for line in lines if _LAUNCH_FAILURE_RE.search(line)),
                  key=lambda line: 0 if _LAUNCH_REASON_RE.search(line) else 1)
    detail = "; ".join(said[:2]) if said else (lines[-1] if lines else "no output at all")
    return "exited %s before nccl-tests started: %s" % (rc, detail[:300])


def _comment_line(result, state, line):
    """A '#' line: the header (version, collective, ranks, the table's columns) or the summary (out of bounds,
    the average bus bandwidth)."""
    match = _VERSION_RE.match(line)
    if match:
        state["seen_output"] = True
        result["nccl_tests_version"] = match.group(1)
        if match.group(2) and not result["nccl_version"]:
            result["nccl_version"] = nccl_version_from_code(match.group(2))
        return
    match = _COLLECTIVE_RE.match(line)
    if match:
        state["seen_output"] = True
        result["collective"] = _collective(match.group(2))
        if match.group(1) == "concluded":
            result["completed"] = True
        return
    match = _RANK_RE.match(line)
    if match:
        state["seen_output"] = True
        rank = int(match.group(1))
        if rank == 0:
            state["first_rank_pids"].add(int(match.group(3)))
        state["ranks"].setdefault(rank, {
            "rank": rank, "group": int(match.group(2)) if match.group(2) else None,
            "pid": int(match.group(3)), "host": match.group(4), "device": int(match.group(5)),
            "bus_id": match.group(6), "gpu": match.group(7).strip(),
        })
        return
    match = _OOB_RE.match(line)
    if match:
        result["out_of_bounds"] = {"count": int(match.group(1)), "ok": match.group(2).upper() == "OK"}
        return
    match = _AVG_RE.match(line)
    if match:
        result["avg_busbw"] = _number(match.group(1))
        return
    if _START_RE.match(line):
        state["seen_output"] = True
        state["starts"] += 1
        return
    header = _header_columns(line)
    if header:
        state["columns"] = header
        result["table"] = state["seen_output"] = True


def _body_line(result, state, line):
    """Any other line: a result row, NCCL's version, nccl-tests' failure lines, warnings worth showing."""
    tokens = line.split()
    if state["columns"] is None and _headerless_row(tokens):
        # A table pasted without its header: rows in the columns every nccl-tests since 2.0 prints.
        state["columns"] = list(STANDARD_COLUMNS)
        result["table"] = state["seen_output"] = True
        _note(result["warnings"], "no column header before the first result row: the standard columns (%s) were "
                                  "assumed" % " ".join(STANDARD_COLUMNS))
    if state["columns"] and tokens[0].isdigit():
        row = _row(tokens, state["columns"])
        if row is not None:
            result["rows"].append(row)
            return
    match = _NCCL_INFO_VERSION_RE.search(line) or _NCCL_VERSION_LINE_RE.match(line)
    if match:
        result["nccl_version"] = match.group(1)
        return
    if "NCCL INFO" in line:
        return
    if _FAILURE_RE.search(line):
        state["seen_output"] = True
        _note(result["errors"], line)
    elif _WARNING_RE.search(line):
        _note(result["warnings"], line)


def _close_text(result, state):
    """What the whole output says once read: completed or not, why there are no rows, separate runs."""
    if not state["seen_output"] and not result["rows"]:
        raise NcclTestsParseError("no nccl-tests output in the text: no '# nThread' line, no result table "
                                  "('#  size  count  type ...') and no nccl-tests failure line")
    # Old versions print no 'concluded' line: the average line closes those runs.
    if not result["completed"] and result["avg_busbw"] is not None and result["nccl_tests_version"] is None:
        result["completed"] = True
    if not result["rows"] and not result["errors"]:
        result["errors"].append("the run ended before its result table" if not result["table"]
                                else "the run printed its table header but no result row")
    elif result["rows"] and not result["errors"] and not result["completed"] and result["avg_busbw"] is None:
        result["errors"].append(TRUNCATED)
    result["ranks"] = [state["ranks"][r] for r in sorted(state["ranks"])]
    if state["starts"] > 1 and len(state["first_rank_pids"]) > 1:
        result["separate_runs"] = min(state["starts"], len(state["first_rank_pids"]))


def parse_text(text):
    """The text a *_perf binary prints, as it reaches us: plain, or behind srun -l / mpirun --tag-output
    / --timestamp-output labels, with CR line ends, colours or bytes that are not UTF-8.

    A run passes on its rows, #wrong, the out-of-bounds check and nccl-tests' own failure lines;
    NCCL warnings and MPI help or abort notices are kept in ``warnings`` and decide nothing by
    themselves. A run that ended before its table gives ``rows: []``, ``passed: false``, the ranks
    it listed and the lines that say why, not an exception; one whose rows stop before the summary
    (cut, or still running) keeps its rows and says so in ``errors``. An output of several separate runs, each its
    own rank 0 with its own process id (a launcher's processes that never joined one run: nccl-tests built without
    MPI under mpirun), says how many in ``separate_runs``.
    """
    result = {"format": "text", "collective": None, "nccl_tests_version": None, "nccl_version": None,
              "ranks": [], "rows": [], "avg_busbw": None, "peak_busbw": None, "out_of_bounds": None,
              "wrong": None, "completed": False, "table": False, "errors": [], "warnings": [], "passed": False}
    state = {"columns": None, "ranks": {}, "starts": 0, "first_rank_pids": set(), "seen_output": False}
    for raw in _text.launcher_lines(text, "nccl-tests output"):
        line = raw.strip()
        if line:
            (_comment_line if line.startswith("#") else _body_line)(result, state, line)
    _close_text(result, state)
    return _summarize(result)


def _json_group(group, where):
    if group is None:
        return None
    if not isinstance(group, dict):
        raise NcclTestsParseError("%s is not an object" % where)
    wrong = group.get("nwrong")
    values = {}
    for key, name in (("time", "time_us"), ("alg_bw", "algbw"), ("bus_bw", "busbw")):
        value = group.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise NcclTestsParseError("%s.%s is not a number: %r" % (where, key, value))
        values[name] = value
    values["wrong"] = int(wrong) if isinstance(wrong, (int, float)) and not isinstance(wrong, bool) else None
    return values


def parse_json(document):
    """The document nccl-tests writes with -J (text or already loaded) -> the same result as parse_text."""
    if isinstance(document, (str, bytes)):
        try:
            data = json.loads(_text.clean(document, "nccl-tests JSON"))
        except ValueError as exc:
            raise NcclTestsParseError("nccl-tests -J output is not valid JSON (%s)" % exc)
    else:
        data = document
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise NcclTestsParseError("nccl-tests JSON has no 'results' list")
    rows = []
    for index, item in enumerate(data["results"]):
        where = "results[%d]" % index
        if not isinstance(item, dict):
            raise NcclTestsParseError("%s is not an object" % where)
        try:
            size, count = int(item["size"]), int(item["count"])
        except (KeyError, TypeError, ValueError):
            raise NcclTestsParseError("%s has no whole-number size and count" % where)
        root = str(item.get("root", "")).strip()
        rows.append({"size": size, "count": count, "type": item.get("type"),
                     "redop": item.get("redop"), "root": int(root) if root.lstrip("-").isdigit() else None,
                     "out_of_place": _json_group(item.get("out_of_place"), where + ".out_of_place"),
                     "in_place": _json_group(item.get("in_place"), where + ".in_place")})
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    ranks = [{"rank": d.get("rank"), "group": d.get("group"), "pid": d.get("pid"), "host": d.get("hostname"),
              "device": d.get("device"), "bus_id": d.get("device_hex"), "gpu": d.get("device_info")}
             for d in config.get("devices") or [] if isinstance(d, dict)]
    oob = data.get("out_of_bounds") if isinstance(data.get("out_of_bounds"), dict) else None
    average = data.get("average_bus_bandwidth")
    avg = average.get("bandwidth") if isinstance(average, dict) else None
    args = data.get("args") if isinstance(data.get("args"), list) else []
    errors = data.get("errors") if isinstance(data.get("errors"), list) else []
    try:
        version = nccl_version_from_code(data["nccl_version"]) if data.get("nccl_version") else None
    except (TypeError, ValueError):
        version = None
    result = {
        "format": "json",
        "collective": _collective(args[0]) if args else None,
        "nccl_tests_version": None,
        "nccl_version": version,
        "ranks": ranks,
        "rows": rows,
        "avg_busbw": avg if isinstance(avg, (int, float)) and not isinstance(avg, bool) else None,
        "out_of_bounds": {"count": int(oob.get("count") or 0), "ok": str(oob.get("okay")).lower() == "true"}
        if oob else None,
        "completed": bool(data.get("end_time")),
        "table": bool(rows),
        "errors": [str(e) for e in errors if e],
        "warnings": [],
    }
    return _summarize(result)


def parse(text):
    """Any nccl-tests output: the text a *_perf binary prints, or the document it writes with -J."""
    if isinstance(text, dict):
        return parse_json(text)
    if isinstance(text, bytes):
        text = _text.clean(text, "nccl-tests output")
    if text is not None and not isinstance(text, str):
        raise NcclTestsParseError("nccl-tests output must be text, got %s" % type(text).__name__)
    stripped = (text or "").lstrip(u"\ufeff \t\r\n")
    if stripped.startswith("{"):
        return parse_json(stripped)
    return parse_text(text)
