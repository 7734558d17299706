# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests output (text or -J JSON) to plain dictionaries, and threshold checks.

Standard library only; used by the parse_nccl_tests filter and the nccl_tests role.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

_VERSION_RE = re.compile(r"^#\s*nccl-tests version\s+(\S+)(?:.*?nccl-library=(\d+))?")
_NCCL_INFO_VERSION_RE = re.compile(r"NCCL INFO NCCL version\s+(\d+\.\d+\.\d+)")
_COLLECTIVE_RE = re.compile(r"^#\s*Collective test (starting|concluded):\s*(\S+)")
_RANK_RE = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
                      r"\[([^\]]*)\]\s+(.*?)\s*$")
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\S*)")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([\d.eE+-]+)")
_ERROR_RE = re.compile(r"(Test (?:NCCL|CUDA) failure|Test failure|NCCL WARN|\bError\b|aborted)", re.I)
_GROUP_FIELDS = ("time", "algbw", "busbw")


class NcclTestsParseError(ValueError):
    """The text holds no nccl-tests result table."""


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
    if not name:
        return None
    name = name.rsplit("/", 1)[-1]
    return name[:-5] if name.endswith("_perf") else name


def _header_columns(line):
    """'#  size count type redop root time algbw busbw #wrong time ...' -> column names, or None."""
    tokens = line.lstrip("#").split()
    if len(tokens) < 6 or tokens[0] != "size" or "count" not in tokens or "time" not in tokens:
        return None
    return tokens


def _row(tokens, columns):
    first_time = columns.index("time")
    prefix = dict(zip(columns[:first_time], tokens[:first_time]))
    groups = []
    rest_cols, rest = columns[first_time:], tokens[first_time:]
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


def _summarize(result):
    rows = result["rows"]
    busbws = [g["busbw"] for r in rows for g in (r["out_of_place"], r["in_place"]) if g and g["busbw"] is not None]
    wrongs = [g["wrong"] for r in rows for g in (r["out_of_place"], r["in_place"]) if g and g["wrong"] is not None]
    result["peak_busbw"] = max(busbws) if busbws else None
    result["wrong"] = sum(wrongs) if wrongs else (0 if rows else None)
    oob = result.get("out_of_bounds")
    result["passed"] = bool(
        rows and result["completed"] and not result["wrong"] and not result["errors"]
        and (oob is None or oob.get("ok"))
    )
    return result


def parse_text(text):
    result = {"format": "text", "collective": None, "nccl_tests_version": None, "nccl_version": None,
              "ranks": [], "rows": [], "avg_busbw": None, "peak_busbw": None, "out_of_bounds": None,
              "wrong": None, "completed": False, "errors": [], "passed": False}
    columns = None
    ranks = {}
    for raw in (text or "").splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        if line.startswith("#"):
            match = _VERSION_RE.match(line)
            if match:
                result["nccl_tests_version"] = match.group(1)
                if match.group(2) and not result["nccl_version"]:
                    result["nccl_version"] = nccl_version_from_code(match.group(2))
                continue
            match = _COLLECTIVE_RE.match(line)
            if match:
                result["collective"] = _collective(match.group(2))
                if match.group(1) == "concluded":
                    result["completed"] = True
                continue
            match = _RANK_RE.match(line)
            if match:
                rank = int(match.group(1))
                ranks.setdefault(rank, {
                    "rank": rank, "group": int(match.group(2)) if match.group(2) else None,
                    "pid": int(match.group(3)), "host": match.group(4), "device": int(match.group(5)),
                    "bus_id": match.group(6), "gpu": match.group(7),
                })
                continue
            match = _OOB_RE.match(line)
            if match:
                result["out_of_bounds"] = {"count": int(match.group(1)), "ok": match.group(2).upper() == "OK"}
                continue
            match = _AVG_RE.match(line)
            if match:
                result["avg_busbw"] = _number(match.group(1))
                continue
            header = _header_columns(line)
            if header:
                columns = header
            continue
        match = _NCCL_INFO_VERSION_RE.search(line)
        if match:
            result["nccl_version"] = match.group(1)
            continue
        tokens = line.split()
        if columns and len(tokens) == len(columns) and tokens[0].isdigit() and tokens[1].isdigit():
            result["rows"].append(_row(tokens, columns))
            continue
        if "NCCL INFO" in line:
            continue
        if _ERROR_RE.search(line):
            result["errors"].append(line.strip())
    if not result["rows"] and columns is None:
        raise NcclTestsParseError("no nccl-tests result table (a '#  size  count  type ...' header) in the text")
    # Old versions print no 'concluded' line: the average line closes those runs.
    if not result["completed"] and result["avg_busbw"] is not None and result["nccl_tests_version"] is None:
        result["completed"] = True
    result["ranks"] = [ranks[r] for r in sorted(ranks)]
    return _summarize(result)


def parse_json(document):
    data = json.loads(document) if not isinstance(document, dict) else document
    if "results" not in data:
        raise NcclTestsParseError("nccl-tests JSON has no 'results'")
    rows = []
    for item in data["results"]:
        groups = []
        for key in ("out_of_place", "in_place"):
            group = item.get(key)
            if group is None:
                groups.append(None)
                continue
            wrong = group.get("nwrong")
            groups.append({"time_us": group.get("time"), "algbw": group.get("alg_bw"), "busbw": group.get("bus_bw"),
                           "wrong": int(wrong) if isinstance(wrong, (int, float)) else None})
        root = str(item.get("root", "")).strip()
        rows.append({"size": int(item["size"]), "count": int(item["count"]), "type": item.get("type"),
                     "redop": item.get("redop"), "root": int(root) if root.lstrip("-").isdigit() else None,
                     "out_of_place": groups[0], "in_place": groups[1]})
    config = data.get("config") or {}
    ranks = [{"rank": d.get("rank"), "group": d.get("group"), "pid": d.get("pid"), "host": d.get("hostname"),
              "device": d.get("device"), "bus_id": d.get("device_hex"), "gpu": d.get("device_info")}
             for d in config.get("devices") or []]
    oob = data.get("out_of_bounds")
    avg = (data.get("average_bus_bandwidth") or {}).get("bandwidth")
    args = data.get("args") or []
    result = {
        "format": "json",
        "collective": _collective(args[0]) if args else None,
        "nccl_tests_version": None,
        "nccl_version": nccl_version_from_code(data["nccl_version"]) if data.get("nccl_version") else None,
        "ranks": ranks,
        "rows": rows,
        "avg_busbw": avg,
        "out_of_bounds": {"count": int(oob.get("count", 0)), "ok": str(oob.get("okay")).lower() == "true"} if oob else None,
        "completed": bool(data.get("end_time")),
        "errors": [e for e in data.get("errors") or [] if e],
    }
    return _summarize(result)


def parse(text):
    """Any nccl-tests output: the text a *_perf binary prints, or the document it writes with -J."""
    if isinstance(text, dict):
        return parse_json(text)
    stripped = (text or "").lstrip()
    if stripped.startswith("{"):
        return parse_json(stripped)
    return parse_text(text)


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
        return ["no result rows: the test did not run or printed nothing (%s)" % printed]

    def busbw(row):
        groups = [row.get("out_of_place"), row.get("in_place")]
        if placement == "in_place":
            groups = groups[1:]
        elif placement == "out_of_place":
            groups = groups[:1]
        values = [g["busbw"] for g in groups if g and g.get("busbw") is not None]
        return max(values) if values else None

    by_size = dict((r["size"], r) for r in rows)
    wanted = dict((int(k), float(v)) for k, v in (min_busbw_by_size or {}).items())
    if min_busbw is not None:
        largest = max(by_size)
        wanted.setdefault(largest, float(min_busbw))
    for size in sorted(wanted):
        row = by_size.get(size)
        if row is None:
            failures.append("size %d B was not measured (largest measured: %d B)" % (size, max(by_size)))
            continue
        measured = busbw(row)
        if measured is None or measured < wanted[size]:
            failures.append("size %d B: busbw %s GB/s, expected at least %g GB/s" % (
                size, "unknown" if measured is None else "%g" % measured, wanted[size]))
    if max_wrong is not None and (result.get("wrong") or 0) > max_wrong:
        failures.append("%d wrong values (#wrong), at most %d allowed" % (result["wrong"], max_wrong))
    oob = result.get("out_of_bounds")
    if require_oob_ok and oob is not None and not oob.get("ok"):
        failures.append("out-of-bounds check failed: %d values" % oob.get("count", 0))
    if not result.get("completed"):
        failures.append("the run did not finish (%d sizes measured, last %d B)" % (len(rows), rows[-1]["size"]))
    return failures
