# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``dcgmi diag -r 1|2|3|4`` read: DCGM's active diagnostics, as the table it prints (DCGM 2.x, 3.x and 4.x layouts)
or as its ``-j`` JSON (3.x: ``gpu_id``/``gpu_ids`` per result; 4.x: ``entity_id`` per result and ``test_summary``).

The table: sections (``Metadata``, ``Deployment``, ``Integration``, ``Hardware``, ``Stress``, ...), a row per test
with its result (``Pass``, ``Pass - All``, ``Fail - GPU: 1``, ``Pass - GPUs: 0, 2, 3``, ``Skip``), per-GPU rows of
4.x (``GPU0: Pass``) and ``Warning``/``Info``/``Error`` rows whose text DCGM wraps at the cell's width, mid-word.
Real outputs are indented (copied docs), prefixed by a launcher (srun), printed twice, cut by their authors, or
missing their borders; each reads the same here. An ``Error`` row is a failure of the run: of the test above it, or,
with none above it (DCGM stops there), of the GPU it names. Reading is bounded: at most MAX_CHARS characters and
MAX_LINES lines are read (a real run prints a few hundred), so a runaway output cannot hold the check past its time
limit, and an output cut there is not complete. Pure, standard library only, one pass over the lines.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

RESULTS = ("pass", "fail", "warn", "skip")
# The most that is read of one output: a level-4 run of 16 GPUs prints a few thousand lines with its JSON info.
MAX_CHARS = 8000000
MAX_LINES = 50000
_WEIGHT = {"fail": 3, "warn": 2, "pass": 1, "skip": 0}   # a test's rows (Pass - GPUs: 0, 2 / Fail - GPU: 1): the worst
_SECTION_RE = re.compile(r"^[|+]-{3,}\s+([A-Za-z][A-Za-z0-9 /&-]{0,40}?)\s+-+[+|]")
_RESULT_RE = re.compile(r"^(pass|fail|warn|warning|skip)(?:\s*-\s*(all|gpus?:\s*([0-9, ]{1,400})))?\s*$", re.I)
_GPU_ROW_RE = re.compile(r"^GPU\s?([0-9]{1,3}):\s*(pass|fail|warn|warning|skip)\b\s*(.*)$", re.I)
_MESSAGE_GPU_RE = re.compile(r"^GPU ([0-9]{1,3})\b")
_ERROR_LINE_RE = re.compile(r"^(error\b|unable to |failed to |.*\berror: )", re.I)
_MESSAGE_KINDS = {"warning": "warnings", "info": "info", "error": "errors"}
_METADATA = {"dcgm version": "dcgm_version", "driver version detected": "driver_version",
             "gpu device ids detected": "gpu_device_ids"}


class DcgmDiagError(ValueError):
    """The text is not dcgmi diag output; the message says what was expected."""


def _word(text):
    word = text.strip().lower()
    return "warn" if word == "warning" else word


def _gpu_list(text):
    return [int(n) for n in re.findall(r"[0-9]{1,3}", text or "")]


def _new_test(name, category, value):
    test = {"name": name, "category": category, "result": None, "gpus": {}, "warnings": [], "info": [], "errors": []}
    _apply_result(test, value)
    return test


def _apply_result(test, value):
    """'Pass', 'Pass - All', 'Fail - GPU: 1', 'Pass - GPUs: 0, 2, 3' onto a test: its result and its GPUs'.
    Returns False when the text is no result."""
    match = _RESULT_RE.match(value.strip())
    if not match:
        return False
    word = _word(match.group(1))
    scope = (match.group(2) or "").lower()
    if test["result"] is None or _WEIGHT[word] > _WEIGHT[test["result"]]:   # the worst of its rows
        test["result"] = word
    if scope == "all":
        test["gpus"]["all"] = {"result": word}
    elif scope:
        for gpu in _gpu_list(match.group(3)):
            test["gpus"][gpu] = {"result": word}
    return True


class _Table(object):
    """The state of one pass over a table: the section, the test a row belongs to, the message being continued."""

    def __init__(self):
        self.meta, self.tests, self.section, self.test, self.message = {}, [], None, None, None
        self.tables, self.closed, self.orphans = 0, False, []

    def row(self, name, cell):
        width = max(len(cell) - 3, 1)
        value = cell[1:].rstrip() if cell.startswith(" ") else cell.rstrip()
        self.closed = False
        if name == "Diagnostic" and value.strip() == "Result":   # the header: a table starts (printed twice by srun)
            self.tables += 1
            self.meta, self.tests, self.test, self.message, self.orphans = {}, [], None, None, []
            return
        key = name.lower()
        if key in _METADATA and (self.section or "").lower() in ("metadata", ""):
            self.meta[_METADATA[key]] = value.strip()
            self.message = None
            return
        if key == "error" and self.test is None:   # DCGM stopped at an Error row: a failure of the run itself
            self.test = _new_test(name, self.section, "Fail")
            self.test["from_error_row"] = True
            self.tests.append(self.test)
        if key in _MESSAGE_KINDS:   # a message of the test above it; with none above (a cut output), the run's own
            self.message = {"kind": _MESSAGE_KINDS[key], "parts": [value], "width": width}
            (self.test[self.message["kind"]] if self.test is not None else self.orphans).append(self.message)
            if key == "error":   # an Error row is a failure, whatever the row above it said
                self.test["result"] = "fail"
            return
        if name:
            self.test = _new_test(name, self.section, value)
            self.tests.append(self.test)
            self.message = None
            return
        if self.test is None:
            if self.message is not None:
                self.message["parts"].append(value)
            return
        match = _GPU_ROW_RE.match(value.strip())
        if match:   # 4.x: a row per GPU
            self.test["gpus"][int(match.group(1))] = {"result": _word(match.group(2))}
            self.message = None
        elif self.message is None and _apply_result(self.test, value):   # 3.x: 'Fail - GPU: 1' under 'Pass - GPUs'
            pass
        elif self.message is not None:
            self.message["parts"].append(value)


def _join(message):
    """A message DCGM wrapped at the cell's width: a part shorter than the width ended at a space the table dropped."""
    out = ""
    for number, part in enumerate(message["parts"]):
        out += part
        if number + 1 < len(message["parts"]) and len(part) < message["width"]:
            out += " "
    return " ".join(out.split())


def _finish_test(test, gpu_count):
    messages = dict((kind, [_join(m) for m in test[kind]]) for kind in ("warnings", "info", "errors"))
    gpus = dict(test["gpus"])
    if test.get("from_error_row"):   # 'GPU 3 has uncorrectable memory errors ...': the GPU it names failed
        for text in messages["errors"]:
            match = _MESSAGE_GPU_RE.match(text)
            if match:
                gpus[int(match.group(1))] = {"result": "fail"}
    if "all" in gpus:
        every = gpus.pop("all")
        for gpu in range(gpu_count or 0):
            gpus.setdefault(gpu, dict(every))
        if not gpu_count:
            gpus["all"] = every
    for kind in ("errors", "warnings", "info"):
        for text in messages[kind]:
            match = _MESSAGE_GPU_RE.match(text)
            if match and int(match.group(1)) in gpus:
                gpus[int(match.group(1))].setdefault("messages", []).append(text)
    listed = [dict(gpu=gpu, result=entry["result"], message="; ".join(entry.get("messages") or []) or None)
              for gpu, entry in sorted(gpus.items(), key=lambda kv: (isinstance(kv[0], str), kv[0]))]
    return {"name": test["name"], "category": test["category"], "result": test["result"], "gpus": listed,
            "warnings": messages["warnings"], "info": messages["info"], "errors": messages["errors"]}


def overall(tests):
    """fail when any test failed, else warn, else pass, else skip (every test skipped); None without tests."""
    found = set(t.get("result") for t in tests)
    return next((word for word in ("fail", "warn", "pass", "skip") if word in found), None)


def _parse_text(lines):
    table, errors = _Table(), []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        section = _SECTION_RE.match(line)
        if section:
            table.section = section.group(1).strip()
            table.test, table.message = None, None
            continue
        if line.startswith("+") and set(line) <= set("+-=| "):
            table.closed = True
            table.message = None
            continue
        if line.startswith("|") and line.count("|") >= 2:   # a row; its author may have cut the closing '|'
            cells = line.split("|")
            table.row(cells[1].strip(), "|".join(cells[2:-1] if line.endswith("|") and len(cells) > 3 else cells[2:]))
            continue
        if _ERROR_LINE_RE.match(line):
            errors.append(line[:400])
    gpu_count = len([g for g in re.split(r"[, ]+", table.meta.get("gpu_device_ids") or "") if g])
    tests = [_finish_test(t, gpu_count) for t in table.tests]
    return {"format": "text", "dcgm_version": table.meta.get("dcgm_version"),
            "driver_version": table.meta.get("driver_version"), "gpu_count": gpu_count or None,
            "overall": overall(tests) if tests else None, "tests": tests,
            "errors": ["%s (no test named above it): %s" % (m["kind"][:-1] if m["kind"] != "info" else "info", _join(m))
                       for m in table.orphans] + errors,
            "complete": bool(tests) and table.closed, "tables": table.tables, "unread": []}


def _strings(value):
    """A JSON message field as DCGM writes it: text, a list of text, or objects with 'warning'/'error'/'info'."""
    if value in (None, "", []):
        return []
    if isinstance(value, str):
        return [" ".join(value.split())]
    if isinstance(value, dict):
        value = [value]
    out = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict):
            item = item.get("warning") or item.get("error") or item.get("info") or item.get("message") or json.dumps(item)
        out.append(" ".join(str(item).split()))
    return out


def _json_test(test, category, unread):
    """One test of the JSON -> the table's test shape; a GPU whose status is no result word is kept with result None
    and named in ``unread`` ('Memory GPU 3: status ''), never dropped."""
    out = {"name": str(test.get("name")), "category": category, "result": None, "gpus": [], "warnings": [],
           "info": [], "errors": []}
    where = "%s/%s" % (category, out["name"]) if category else out["name"]
    words = []
    for result in test.get("results") or []:
        if not isinstance(result, dict):
            continue
        said = result.get("status")
        word = _word(str(said if said is not None else ""))
        words.append(word)
        ids = result.get("gpu_ids", result.get("gpu_id"))
        if ids is None and str(result.get("entity_group", "GPU")).upper() == "GPU":
            ids = result.get("entity_id")
        warnings, info, errors = (_strings(result.get(k)) for k in ("warnings", "info", "errors"))
        gpus = _gpu_list(str(ids)) if ids is not None else []
        if word not in RESULTS:
            unread += ["%s GPU %d: status %r" % (where, gpu, str(said if said is not None else "")[:40]) for gpu in gpus] \
                or ["%s: status %r" % (where, str(said if said is not None else "")[:40])]
        for gpu in gpus:
            out["gpus"].append({"gpu": gpu, "result": word if word in RESULTS else None,
                                "message": "; ".join(errors + warnings) or None})
        out["warnings"] += warnings
        out["info"] += info
        out["errors"] += errors
    summary = _word(str((test.get("test_summary") or {}).get("status") or ""))
    out["result"] = summary if summary in RESULTS else overall([{"result": w} for w in words if w in RESULTS])
    out["gpus"].sort(key=lambda g: g["gpu"])
    return out


def _find(mapping, names):
    for key, value in mapping.items():
        if str(key).lower() in names and isinstance(value, (str, int, float)):
            return str(value)
    return None


def _parse_json(text):
    start = text.find("{")
    try:
        root = json.loads(text[start:])
    except ValueError as exc:
        return {"format": "json", "dcgm_version": None, "driver_version": None, "gpu_count": None, "overall": None,
                "tests": [], "errors": ["not complete JSON (%s): no verdict can be read from it" % exc],
                "complete": False, "tables": 0, "unread": []}
    if not isinstance(root, dict):
        raise DcgmDiagError("dcgmi diag -j printed JSON that is not an object")
    body = next((v for v in root.values() if isinstance(v, dict) and "test_categories" in v), root)
    metadata = root.get("metadata") if isinstance(root.get("metadata"), dict) else {}
    places = [root, body, metadata]
    # 3.x: "DCGM GPU Diagnostic" -> "version"; 4.x: metadata.version; a "version" of the root itself is no DCGM's
    version = next((v for v in (_find(p, ("dcgm version", "dcgm_version")) for p in places) if v), None) \
        or (_find(body, ("version",)) if body is not root else None) or _find(metadata, ("version",))
    driver = next((v for v in (_find(p, ("driver version detected", "driver_version")) for p in places) if v), None)
    tests, unread = [], []
    for category in body.get("test_categories") or []:
        if isinstance(category, dict):
            tests += [_json_test(t, category.get("category"), unread) for t in category.get("tests") or []
                      if isinstance(t, dict)]
    errors = _strings(root.get("runtime_error")) + _strings(body.get("runtime_error"))
    gpus = sorted(set(g["gpu"] for t in tests for g in t["gpus"]))
    return {"format": "json", "dcgm_version": version, "driver_version": driver, "gpu_count": len(gpus) or None,
            "overall": overall(tests) if tests else None, "tests": tests, "errors": errors, "complete": bool(tests),
            "tables": 0, "unread": unread}


def parse_dcgmi_diag(value):
    """``dcgmi diag`` output (its table, or ``-j`` JSON) -> {format, dcgm_version, driver_version, gpu_count,
    overall, tests, errors, complete, tables, unread}.

    ``overall``: fail, warn, pass or skip (every test skipped), None when no test was read (the tool refused, the
    output was cut before the first test). Each test: ``name`` (as DCGM prints it), ``category`` (the section),
    ``result``, ``gpus`` ([{gpu, result, message}]: DCGM's words about that GPU, 'All' spread over the GPUs the
    metadata counts), and its ``warnings``, ``info`` and ``errors`` (each message whole again). ``errors``: what the
    tool printed outside the table (``Error: Unable to ...``) or why the JSON holds no verdict. ``complete``: the
    table closed after its last test (a cut output is read, and says so; so is one longer than MAX_LINES lines or
    MAX_CHARS characters, read that far). ``tables``: how many tables the text held (srun prints one per task; the
    last is read). ``unread``: the JSON results whose status is no result word ("Memory GPU 3: status ''"), each
    such GPU kept with result None: DCGM said nothing readable about it.
    """
    cut = None
    if isinstance(value, (str, bytes)) and len(value) > MAX_CHARS:
        value, cut = value[:MAX_CHARS], "the output holds more than %d characters: only the first %d were read" % (
            MAX_CHARS, MAX_CHARS)
    lines = _text.clean_lines(value, "dcgmi diag output")
    if len(lines) > MAX_LINES:
        lines, cut = lines[:MAX_LINES], "the output holds more than %d lines: only the first %d were read" % (
            MAX_LINES, MAX_LINES)
    lines = [_text.strip_launcher(line) for line in lines]
    first = next((line.strip() for line in lines if line.strip() and not line.strip().startswith(("WARNING", "$", "#"))), "")
    parsed = _parse_json("\n".join(lines)) if first.startswith("{") else _parse_text(lines)
    if cut:   # never a whole run, so never a pass (a failure read before the cut still counts)
        parsed.update(complete=False, errors=parsed["errors"] + [cut])
    if parsed["format"] == "text" and not parsed["tests"] and not parsed["errors"] and not parsed["dcgm_version"]:
        raise DcgmDiagError("no dcgmi diag table (rows like '| Denylist | Pass |'), JSON or error in the text")
    return parsed
