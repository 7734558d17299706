# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Reader of NCCL's RAS status (NCCL 2.24 and later): what a running job says about its communicators.

The text is what ``ncclras`` (or the collection's client, node/nccl_ras.py) prints for ``STATUS`` or
``VERBOSE STATUS``: the NCCL and CUDA versions, a job summary (nodes, processes, GPUs), one row per group of
alike communicators with its status (INIT, RUNNING, FINALIZE, ABORT) and errors (OK, MISMATCH, ERROR,
INCOMPLETE), then an Errors section (processes that are dead or sent no data, communicators in error or
missing ranks) and a Warnings section (communicators whose ranks differ in status or in how many
operations each launched; timeouts while gathering). NCCL prints the ranks that stand out from their
communicator - a single rank always - each with its GPU (the CUDA index, and the NVML index when they
differ), process and node; a value shared by several ranks is printed once above them.

``parse_nccl_ras`` returns those facts and the ``suspects``: each rank (or process) NCCL singled out, with
why - behind (it launched fewer operations than the others: the one the others wait for), a status other
than RUNNING (aborted, finalized, gone from the communicator), an error it reported, missing from the data,
or dead. The JSON reply of newer NCCL (``SET FORMAT json``) is read into the same shape. Pure: text in,
dicts out; linear in the text; CRLF, colour codes and a reply cut short are read as far as they go.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

STATUSES = ("NOCOMM", "INIT", "RUNNING", "FINALIZE", "ABORT")
PROBLEMS = ("MISMATCH", "ERROR", "INCOMPLETE")
# Suspects beyond this many are counted, not listed (a job of 10,000 ranks all behind one is one fact).
MAX_SUSPECTS = 64

_VERSION_RE = re.compile(r"^NCCL version ([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,4})")
_CUDA_RE = re.compile(r"^CUDA runtime version ([0-9]{1,8}), driver version ([0-9]{1,8})")
_NUMBERS_RE = re.compile(r"^\s*[0-9]{1,9}(?:\s+[0-9]{1,9}){4}\s*$")
_GROUP_RE = re.compile(r"^\s*([0-9]{1,6})\s+([0-9]{1,9})\s+([0-9]{1,9})\s+([0-9]{1,6}(?:-[0-9]{1,6})?)\s+([0-9]{1,9})"
                       r"\s+([0-9]{1,9})\s+([A-Z]{4,8})\s+([A-Z,]{2,40})\s*$")
_COMM_RE = re.compile(r"^#([0-9]{1,6})-([0-9]{1,9}) \(([0-9a-fA-F]{1,16})\) (MISMATCH|ERROR|INCOMPLETE)\s*$")
_WHERE = r"(?:GPU ([0-9]{1,3})(?: \(NVML ([0-9]{1,3})\))? managed by process ([0-9]{1,10}) on node (\S{1,255})" \
         r"|\[process information not found\])"
_RANK_RE = re.compile(r"^Rank ([0-9]{1,9})(?: (?:has status ([A-Z]{4,8})|has launched up to operation ([0-9]{1,20})"
                      r"|(has not launched any operations)|reported (.{1,200}?)))? -- " + _WHERE + r"\s*$")
_PROCESS_RE = re.compile(r"^Process ([0-9]{1,10}) on node (\S{1,255}) managing GPUs? ([0-9,]{1,300})"
                         r"(?: \(NVML ([0-9,]{1,300})\))?\s*$")
_SHARED_RE = re.compile(r"^([0-9]{1,9}) ranks (?:have status ([A-Z]{4,8})|have launched up to operation ([0-9]{1,20})"
                        r"|(have not launched any operations)|reported (.{1,200}))\s*$")
_MISSING_COMMA_RE = re.compile(r'("nvml_dev": -?[0-9]{1,6})(\n[ ]{0,40}"status")')
_COUNTS_RE = re.compile(r"^Communicator ranks have different (\S{1,40}) operation counts")


class NcclRasError(ValueError):
    """The text is not an NCCL RAS status; the message says what it was."""


def empty_result():
    return {"format": None, "nccl_version": None, "cuda_runtime": None, "cuda_driver": None, "job": None,
            "groups": [], "communicators": [], "errors": [], "warnings": [], "suspects": [], "suspects_left_out": 0,
            "complete": True}


def parse_nccl_ras(value):
    """A RAS status reply (text or JSON; str or bytes) -> see the module docstring. NcclRasError when it is none."""
    try:
        raw = _text.clean(value, "NCCL RAS status")
    except _text.TextError as exc:
        raise NcclRasError(str(exc))
    if raw.lstrip().startswith("{"):
        return _parse_json(raw)
    result = empty_result()
    result["format"] = "text"
    section = None
    block = None          # the communicator or Errors-section entry the indented lines belong to
    shared = None         # the value printed once above several ranks: ('status', 'RUNNING'), ('ops', 30), ...
    op = None
    for line in raw.split("\n"):
        stripped = line.strip()
        if not stripped or set(stripped) == {"="}:
            continue
        match = _VERSION_RE.match(stripped)
        if match:
            result["nccl_version"] = match.group(1)
            continue
        match = _CUDA_RE.match(stripped)
        if match:
            result["cuda_runtime"], result["cuda_driver"] = int(match.group(1)), int(match.group(2))
            continue
        if stripped == "Job summary":
            section, block = "job", None
            continue
        if stripped.startswith("Communicators..."):
            section, block = "communicators", None
            continue
        if stripped in ("Errors", "Warnings"):
            section, block = stripped.lower(), None
            continue
        if section == "job" and result["job"] is None and _NUMBERS_RE.match(stripped):
            numbers = [int(n) for n in stripped.split()]
            result["job"] = dict(zip(("nodes", "processes_per_node", "gpus_per_process", "processes", "gpus"), numbers))
            continue
        if section == "communicators":
            match = _GROUP_RE.match(line)
            if match:
                result["groups"].append({
                    "group": int(match.group(1)), "communicators": int(match.group(2)),
                    "nodes_per_communicator": int(match.group(3)), "ranks_per_node": match.group(4),
                    "ranks_per_communicator": int(match.group(5)), "ranks_in_group": int(match.group(6)),
                    "status": match.group(7), "errors": match.group(8).split(",")})
            continue
        match = _COMM_RE.match(stripped)
        if match:
            block = {"id": "#%s-%s" % (match.group(1), match.group(2)), "hash": match.group(3).lower(),
                     "problem": match.group(4), "section": section, "reasons": [], "ranks": []}
            result["communicators"].append(block)
            shared = op = None
            continue
        if section in ("errors", "warnings") and not line[:1].isspace() and stripped.isupper() and " " not in stripped:
            block = {"kind": stripped, "detail": None, "processes": []}
            result[section].append(block)
            shared = op = None
            continue
        if block is None:
            continue
        if "ranks" in block:
            shared, op = _communicator_line(block, stripped, shared, op)
        else:
            _entry_line(block, stripped)
    if result["nccl_version"] is None and not result["groups"] and not result["communicators"]:
        raise NcclRasError("no NCCL RAS status in the text (it starts with %r)" % raw.strip()[:80])
    result["complete"] = bool(result["groups"]) or "No communicator data collected!" in raw
    _suspects(result)
    return result


def _where(match, first):
    """The GPU, NVML GPU, process and node of a rank line's ' -- GPU 1 managed by process 655 on node X' part."""
    if match.group(first + 2) is None:
        return {"gpu": None, "nvml_gpu": None, "pid": None, "node": None}
    gpu = int(match.group(first))
    nvml = match.group(first + 1)
    return {"gpu": gpu, "nvml_gpu": int(nvml) if nvml is not None else gpu, "pid": int(match.group(first + 2)),
            "node": match.group(first + 3)}


def _communicator_line(block, line, shared, op):
    match = _RANK_RE.match(line)
    if match:
        if match.group(2):
            value = ("status", match.group(2))
        elif match.group(3):
            value = ("ops", int(match.group(3)))
        elif match.group(4):
            value = ("ops", 0)
        elif match.group(5):
            value = ("error", match.group(5))
        elif block["problem"] == "INCOMPLETE" or shared is None:
            value = ("missing", None)
        else:
            value = shared
        entry = dict(_where(match, 6), rank=int(match.group(1)))
        entry[value[0]] = value[1]
        if value[0] == "ops":
            entry["operation"] = op
        block["ranks"].append(entry)
        return shared, op
    match = _SHARED_RE.match(line)
    if match:
        if match.group(2):
            shared = ("status", match.group(2))
        elif match.group(3) or match.group(4):
            shared = ("ops", int(match.group(3) or 0))
        else:
            shared = ("error", match.group(5))
        block.setdefault("shared", []).append({"ranks": int(match.group(1)), shared[0]: shared[1], "operation": op})
        return shared, op
    counts = _COUNTS_RE.match(line)
    if counts:
        op = counts.group(1)
    block["reasons"].append(line)
    return None, op


def _entry_line(block, line):
    match = _PROCESS_RE.match(line)
    if match:
        gpus = [int(g) for g in match.group(3).split(",") if g]
        nvml = [int(g) for g in (match.group(4) or "").split(",") if g] or gpus
        block["processes"].append({"pid": int(match.group(1)), "node": match.group(2), "gpus": gpus, "nvml_gpus": nvml})
    elif block["detail"] is None:
        block["detail"] = line


def _suspect(result, entry, why, kind, communicator=None):
    found = next((s for s in result["suspects"] if s["node"] == entry.get("node") and s["pid"] == entry.get("pid")
                  and entry.get("pid") is not None and s["nvml_gpu"] == entry.get("nvml_gpu")
                  and (s["rank"] is None or entry.get("rank") is None or s["rank"] == entry.get("rank"))), None)
    if found is not None:
        if why not in found["why"]:
            found["why"].append(why)
        if kind == "dead":
            found["kind"] = kind
        if found["rank"] is None and entry.get("rank") is not None:
            found["rank"] = entry["rank"]
        return
    if len(result["suspects"]) >= MAX_SUSPECTS:
        result["suspects_left_out"] += 1
        return
    result["suspects"].append({"rank": entry.get("rank"), "node": entry.get("node"), "gpu": entry.get("gpu"),
                               "nvml_gpu": entry.get("nvml_gpu"), "pid": entry.get("pid"), "kind": kind, "why": [why],
                               "communicator": communicator})


def _suspects(result):
    """Who NCCL singled out, and why: the ranks behind in a count mismatch, a status other than RUNNING, an error,
    missing data; then the dead and silent processes of the Errors section."""
    for comm in result["communicators"]:
        name = "%s (%s)" % (comm["id"], comm["hash"])
        counts = [r["ops"] for r in comm["ranks"] if "ops" in r] + [s["ops"] for s in comm.get("shared", []) if "ops" in s]
        fewest, most = (min(counts), max(counts)) if counts else (None, None)   # once: a communicator may list 1000s
        for rank in comm["ranks"]:
            if "ops" in rank and rank["ops"] < most and rank["ops"] == fewest:
                done = "up to operation %d" % rank["ops"] if rank["ops"] else "no operation"
                _suspect(result, rank, "behind: launched %s %s, others up to %d" % (
                    rank.get("operation") or "", done, most), "behind", name)
            elif rank.get("status") not in (None, "RUNNING"):
                _suspect(result, rank, "communicator status %s" % rank["status"], "status", name)
            elif "error" in rank:
                _suspect(result, rank, "reported %s" % rank["error"], "error", name)
            elif "missing" in rank:
                _suspect(result, rank, "sent no data for the communicator", "missing", name)
    for entry in result["errors"]:
        kind = {"DEAD": "dead", "INCOMPLETE": "missing"}.get(entry["kind"], entry["kind"].lower())
        for process in entry["processes"]:
            for gpu, nvml in zip(process["gpus"], process["nvml_gpus"]):
                why = "process considered dead (unreachable via the RAS network)" if kind == "dead" else \
                    "process sent no communicator data"
                _suspect(result, {"node": process["node"], "pid": process["pid"], "gpu": gpu, "nvml_gpu": nvml}, why, kind)
    for suspect in result["suspects"]:
        suspect["why"] = "; ".join(w.replace("  ", " ") for w in suspect["why"])


def _parse_json(raw):
    """The JSON reply (``SET FORMAT json``): every rank with its status flags and operation counts; the suspects
    are found as the text reply finds them (fewest operations, a status other than RUNNING, missing ranks)."""
    try:
        data = json.loads(raw)
    except ValueError:
        # NCCL 2.28.9 prints no comma after a missing rank's "nvml_dev" (tests/unit/fixtures/nccl_ras/*_2.28.9.json).
        try:
            data = json.loads(_MISSING_COMMA_RE.sub(r"\1,\2", raw))
        except ValueError as exc:
            raise NcclRasError("the NCCL RAS JSON reply cannot be read (cut short?): %s" % exc)
    if not isinstance(data, dict) or not isinstance(data.get("communicators"), list):
        raise NcclRasError("the JSON is not an NCCL RAS status (no communicators list)")
    result = empty_result()
    result.update(format="json", nccl_version=data.get("nccl_version"), cuda_runtime=data.get("cuda_runtime_version"),
                  cuda_driver=data.get("cuda_driver_version"))
    for index, comm in enumerate(c for c in data["communicators"] if isinstance(c, dict)):
        block = {"id": "#%d" % index, "hash": str(comm.get("hash") or "").lower().replace("0x", ""), "problem": None,
                 "section": None, "reasons": [], "ranks": []}
        totals = {}
        for rank in comm.get("ranks") or []:
            status = rank.get("status") or {}
            state = "ABORT" if status.get("abort_flag") else "FINALIZE" if (
                status.get("finalize_called") or status.get("destroy_flag")) else \
                "RUNNING" if status.get("init_state") == 0 else "INIT"
            entry = {"rank": rank.get("rank"), "node": rank.get("host"), "pid": rank.get("pid"),
                     "gpu": rank.get("cuda_dev"), "nvml_gpu": rank.get("nvml_dev"), "status": state}
            if status.get("async_error"):
                entry["error"] = "asynchronous error %s" % status["async_error"]
            for name, count in (rank.get("collective_counts") or {}).items():
                totals.setdefault(name, []).append((count, entry))
            block["ranks"].append(entry)
        for name, pairs in sorted(totals.items()):
            counts = [c for c, dummy in pairs]
            if min(counts) != max(counts):
                block["problem"] = "MISMATCH"
                block["reasons"].append("Communicator ranks have different %s operation counts" % name)
                for count, entry in pairs:
                    entry["ops"], entry["operation"] = count, name
        for missing in comm.get("missing_ranks") or []:
            flags = missing.get("status") or {}
            entry = {"rank": missing.get("rank"), "node": missing.get("host"), "pid": missing.get("pid"),
                     "gpu": missing.get("cuda_dev"), "nvml_gpu": missing.get("nvml_dev")}
            if flags.get("considered_dead") or flags.get("unresponsive"):
                block["problem"] = "INCOMPLETE"      # the process did not answer: as the text's INCOMPLETE/DEAD
                entry["missing"] = None
                if flags.get("considered_dead"):
                    result["errors"].append({"kind": "DEAD", "detail": None, "processes": [{
                        "pid": entry["pid"], "node": entry["node"], "gpus": [entry["gpu"]], "nvml_gpus": [entry["nvml_gpu"]]}]})
            else:
                block["problem"] = block["problem"] or "MISMATCH"   # it answered without the communicator: NOCOMM
                entry["status"] = "NOCOMM"
            block["ranks"].append(entry)
        if len({r.get("status") for r in block["ranks"] if "status" in r}) > 1:
            block["problem"] = block["problem"] or "MISMATCH"
        if block["problem"]:
            result["communicators"].append(block)
    result["job"] = {"communicators": data.get("communicators_count")}
    _suspects(result)
    return result
