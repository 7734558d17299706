# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Reader of the NCCL Inspector's output (NCCL's profiler plugin ``plugins/profiler/inspector/``, 2.28 and later).

Two forms, as the plugin writes them:

- JSON lines (the default): one file per process, ``<host>-pid<pid>.log``; each line one compact object - a completed
  collective (``coll_perf``) or point-to-point operation (``p2p_perf``) of one communicator, written by the rank that
  ran it: ``header`` (``id``, the communicator's hash; ``comm_name``; ``rank``; ``n_ranks``; ``nnodes``), ``metadata``
  (format version, ``hostname``, ``pid``, ``dump_timestamp_us``) and the figures (``coll``, ``coll_sn``,
  ``coll_msg_size_bytes``, ``coll_exec_time_us``, ``coll_timing_source``, ``coll_algobw_gbs``, ``coll_busbw_gbs``).
  A pretty-printed object (NVIDIA's README shows them so) is read too: its lines are gathered up to the closing ``}``.
- Prometheus textfiles (``NCCL_INSPECTOR_PROM_DUMP=1``): one file per GPU, ``nccl_inspector_metrics_<uuid>.prom``,
  rewritten at every dump (at most every 30 s), no HELP or TYPE lines: ``nccl_bus_bandwidth_gbs`` (geometric mean of
  the bucket's bus bandwidth since the last dump) and ``nccl_collective_exec_time_microseconds`` (arithmetic mean),
  and their ``nccl_p2p_*`` twins, labelled ``slurm_job_id``, ``node``, ``gpu`` (GPU<CUDA index>), ``comm_name``,
  ``n_nodes``, ``nranks``, ``collective`` (or ``p2p_operation``), ``message_size`` (a bucket, "4-5GB") and
  ``algo_proto``.

Bounded on a long job: the reader keeps, per communicator, only what the straggler judge needs - each collective's
per-rank (execution time, bus bandwidth, dump time) - for the last ``max_collectives`` sequence numbers, at most
``max_communicators`` communicators and ``max_samples`` rank figures in all; what it leaves out is counted in
``dropped``, never silently. A record seen twice (a tail read again, a file on shared storage read by two nodes) is
counted once. Pure: text in, dicts out, linear in the text; CRLF, colour codes, bytes that are not UTF-8 and a last
line cut short (the plugin was writing it) are read as far as they go.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

LIMITS = {"max_communicators": 64, "max_collectives": 512, "max_samples": 200000, "max_buckets": 20000,
          "max_object_bytes": 65536, "max_problems": 20}
FORMATS = ("json", "prom")
# The Prometheus metrics: name -> (collective or point-to-point, which figure).
# A newer plugin (seen in the search index, not in NCCL 2.30.7) also writes each bucket's count and time sum, and
# labels comm_id, comm_rank, world_rank and message_size_bytes: the mean time is then sum / count where no mean is
# written, and a bucket carries its communicator and rank.
PROM_METRICS = {"nccl_bus_bandwidth_gbs": ("coll", "busbw"),
                "nccl_collective_exec_time_microseconds": ("coll", "exec_us"),
                "nccl_collective_exec_time_sum_microseconds": ("coll", "exec_sum"),
                "nccl_collective_count": ("coll", "count"),
                "nccl_p2p_bus_bandwidth_gbs": ("p2p", "busbw"),
                "nccl_p2p_exec_time_microseconds": ("p2p", "exec_us"),
                "nccl_p2p_exec_time_sum_microseconds": ("p2p", "exec_sum"),
                "nccl_p2p_count": ("p2p", "count")}
# The labels of a bucket, in the order the plugin prints them (a collective's, then a point-to-point's own).
PROM_LABELS = ("version", "slurm_job_id", "node", "gpu", "comm_id", "comm_name", "comm_rank", "n_nodes", "nranks",
               "collective", "message_size", "algo_proto", "p2p_operation")
_PROM_NAME_RE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]{0,199})")
_LABEL_NAME_RE = re.compile(r"\s*([a-zA-Z_][a-zA-Z0-9_]{0,99})\s*=\s*\"")
_UNESCAPE = {"\\": "\\", "\"": "\"", "n": "\n"}


class InspectorError(ValueError):
    """Text that is no Inspector output at all; the message says what it was."""


def _whole(value, low=0):
    """An integer the plugin printed (never a boolean, never below ``low``), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        return None
    return value


def _figure(value):
    """A bandwidth or time as a finite float; None for what is no measurement ("nan", inf, absent)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _short(value, limit=60):
    return _text.one_line(value, limit) if isinstance(value, str) else None


def read_record(obj):
    """One decoded JSON object -> a record {kind, comm, comm_name, rank, n_ranks, nnodes, host, pid, ts_us, version,
    op, sn, size, exec_us, busbw, algobw, timing, peer}; InspectorError saying what is missing or wrong."""
    if not isinstance(obj, dict):
        raise InspectorError("a line holds %s, not an Inspector record (an object)" % type(obj).__name__)
    header, metadata = obj.get("header"), obj.get("metadata") or {}
    if not isinstance(header, dict) or not isinstance(metadata, dict):
        raise InspectorError("an object without the Inspector's header (id, rank, n_ranks)")
    kind = "coll" if isinstance(obj.get("coll_perf"), dict) else "p2p" if isinstance(obj.get("p2p_perf"), dict) else None
    if kind is None:
        raise InspectorError("an object with neither coll_perf nor p2p_perf")
    perf = obj[kind + "_perf"]
    comm, rank, n_ranks = header.get("id"), _whole(header.get("rank")), _whole(header.get("n_ranks"), 1)
    sn = _whole(perf.get(kind + "_sn"))
    if not isinstance(comm, str) or not comm or rank is None or n_ranks is None or rank >= n_ranks or sn is None:
        raise InspectorError("header id %r, rank %r of n_ranks %r, %s_sn %r: not a communicator's rank and operation"
                             % (comm, header.get("rank"), header.get("n_ranks"), kind, perf.get(kind + "_sn")))
    return {"kind": kind, "comm": _short(comm, 64), "comm_name": _short(header.get("comm_name")), "rank": rank,
            "n_ranks": n_ranks, "nnodes": _whole(header.get("nnodes"), 1), "host": _short(metadata.get("hostname"), 255),
            "pid": _whole(metadata.get("pid"), 1), "ts_us": _whole(metadata.get("dump_timestamp_us")),
            "version": _short(metadata.get("inspector_output_format_version"), 16),
            "op": _short(perf.get(kind)), "sn": sn, "size": _whole(perf.get(kind + "_msg_size_bytes")),
            "exec_us": _figure(perf.get(kind + "_exec_time_us")), "busbw": _figure(perf.get(kind + "_busbw_gbs")),
            "algobw": _figure(perf.get(kind + "_algobw_gbs")), "timing": _short(perf.get(kind + "_timing_source"), 32),
            "peer": _whole(perf.get("p2p_peer")) if kind == "p2p" else None}


def _label_value(line, at):
    """The quoted value starting at ``at`` (after its opening quote) -> (value, index after the closing quote)."""
    chars = []
    end = len(line)
    while at < end:
        char = line[at]
        if char == "\\" and at + 1 < end:
            chars.append(_UNESCAPE.get(line[at + 1], "\\" + line[at + 1]))
            at += 2
            continue
        if char == "\"":
            return "".join(chars), at + 1
        chars.append(char)
        at += 1
    raise InspectorError("a label value is not closed")


def read_prom_line(line):
    """One exposition line -> (metric name, {label: value}, value) or None for a comment or blank line;
    InspectorError for a line that is no sample. Linear: one pass over the labels."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    match = _PROM_NAME_RE.match(line)
    if not match:
        raise InspectorError("not a Prometheus sample: %s" % _text.one_line(line, 80))
    name, at, labels = match.group(1), match.end(), {}
    if line[at:at + 1] == "{":
        at += 1
        while True:
            while at < len(line) and line[at] in " ,":
                at += 1
            if line[at:at + 1] == "}":
                at += 1
                break
            label = _LABEL_NAME_RE.match(line, at)
            if not label:
                raise InspectorError("%s: a label is not name=\"value\"" % name)
            labels[label.group(1)], at = _label_value(line, label.end())
    fields = line[at:].split()
    try:
        value = float(fields[0])
    except (IndexError, ValueError):
        raise InspectorError("%s: no number after the labels" % name)
    return name, labels, value


class Collector(object):
    """Inspector records gathered within the limits (LIMITS); ``result()`` is what parse_nccl_inspector returns."""

    def __init__(self, limits=None):
        self.limits = check_limits(limits)
        self.comms, self.buckets, self.files, self.problems = {}, {}, [], []
        self.counts = dict((key, 0) for key in ("lines", "records", "collectives", "p2p", "samples", "prom_samples"))
        self.dropped = dict((key, 0) for key in ("communicators", "collectives", "buckets", "duplicates",
                                                 "unmeasured", "problems", "cut_lines"))

    def problem(self, where, why):
        if len(self.problems) < self.limits["max_problems"]:
            self.problems.append("%s: %s" % (where, why))
        else:
            self.dropped["problems"] += 1

    def _comm(self, record):
        comm = self.comms.get(record["comm"])
        if comm is None:
            if len(self.comms) >= self.limits["max_communicators"]:
                self.dropped["communicators"] += 1
                return None
            comm = self.comms[record["comm"]] = {
                "id": record["comm"], "name": record["comm_name"], "n_ranks": record["n_ranks"],
                "nnodes": record["nnodes"], "ranks": {}, "colls": {}, "max_sn": -1, "samples": 0}
        rank = comm["ranks"].setdefault(record["rank"], {"rank": record["rank"], "host": record["host"],
                                                         "pid": record["pid"], "collectives": 0, "p2p": 0,
                                                         "timing": []})
        if record["timing"] and record["timing"] not in rank["timing"] and len(rank["timing"]) < 3:
            rank["timing"].append(record["timing"])
        return comm

    def add(self, record):
        """One record (read_record's) into the tables."""
        self.counts["records"] += 1
        comm = self._comm(record)
        if comm is None:
            return
        if record["kind"] == "p2p":
            self.counts["p2p"] += 1
            comm["ranks"][record["rank"]]["p2p"] += 1
            return
        self.counts["collectives"] += 1
        if record["exec_us"] is None:
            self.dropped["unmeasured"] += 1
            return
        window = self.limits["max_collectives"]
        if record["sn"] <= comm["max_sn"] - window:
            self.dropped["collectives"] += 1
            return
        entry = comm["colls"].setdefault(record["sn"], {"op": record["op"], "size": record["size"], "ranks": {}})
        if record["rank"] in entry["ranks"]:
            self.dropped["duplicates"] += 1
            return
        entry["ranks"][record["rank"]] = (record["exec_us"], record["busbw"], record["ts_us"])
        comm["ranks"][record["rank"]]["collectives"] += 1
        comm["samples"] += 1
        self.counts["samples"] += 1
        if record["sn"] > comm["max_sn"]:
            comm["max_sn"] = record["sn"]
        if len(comm["colls"]) > 2 * window or self.counts["samples"] > self.limits["max_samples"]:
            self._prune(comm, window)

    def _prune(self, comm, window):
        """Drop what fell out of the window, then the oldest of this communicator while over max_samples."""
        keep = sorted(comm["colls"])
        cap = self.limits["max_samples"] * 0.9
        for index, sn in enumerate(keep[:-1]):
            if index >= len(keep) - window and self.counts["samples"] <= cap:
                break
            gone = len(comm["colls"].pop(sn)["ranks"])
            comm["samples"] -= gone
            self.counts["samples"] -= gone
            self.dropped["collectives"] += gone

    def add_bucket(self, name, labels, value, source):
        """One Prometheus sample into its bucket (labels without the metric's own)."""
        kind, figure = PROM_METRICS[name]
        key = tuple([kind] + [labels.get(label) for label in PROM_LABELS])
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= self.limits["max_buckets"]:
                self.dropped["buckets"] += 1
                return
            bucket = self.buckets[key] = dict((label, labels.get(label)) for label in PROM_LABELS)
            bucket.update(kind=kind, busbw=None, exec_us=None, exec_sum=None, count=None, file=source)
        self.counts["prom_samples"] += 1
        bucket[figure] = value if math.isfinite(value) else None
        if bucket["exec_us"] is None and bucket["exec_sum"] is not None and bucket["count"]:
            bucket["exec_us"] = bucket["exec_sum"] / bucket["count"]

    def result(self):
        return {"formats": sorted(set(f["format"] for f in self.files if f.get("format"))), "files": self.files,
                "communicators": [_comm_result(self.comms[key]) for key in sorted(self.comms)],
                "buckets": [self.buckets[key] for key in sorted(self.buckets, key=lambda k: tuple(str(p) for p in k))],
                "counts": dict(self.counts), "dropped": dict(self.dropped), "problems": list(self.problems),
                "limits": dict(self.limits)}


def _comm_result(comm):
    """A communicator's tables with string keys (the result travels as JSON)."""
    return {"id": comm["id"], "name": comm["name"], "n_ranks": comm["n_ranks"], "nnodes": comm["nnodes"],
            "ranks": [comm["ranks"][rank] for rank in sorted(comm["ranks"])],
            "collectives": [{"sn": sn, "op": comm["colls"][sn]["op"], "size": comm["colls"][sn]["size"],
                             "ranks": dict((str(rank), list(figures))
                                           for rank, figures in sorted(comm["colls"][sn]["ranks"].items()))}
                            for sn in sorted(comm["colls"])]}


def check_limits(limits):
    """LIMITS with the given ones over them; ValueError naming a limit that is not a positive whole number."""
    merged = dict(LIMITS)
    for key, value in (limits or {}).items():
        if key not in LIMITS:
            raise ValueError("unknown limit %r (known: %s)" % (key, ", ".join(sorted(LIMITS))))
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError("limit %s must be a whole number of at least 1, got %r" % (key, value))
        merged[key] = value
    return merged


def detect_format(name, lines):
    """'prom' or 'json' from a file's name, else from its first line that says anything; None when neither."""
    if name and name.endswith(".prom"):
        return "prom"
    if name and name.endswith((".log", ".jsonl", ".json")):
        return "json"
    for line in lines:
        stripped = line.strip()
        if stripped:
            return "json" if stripped.startswith("{") else "prom" if stripped.startswith(("nccl_", "#")) else None
    return None


def _json_objects(lines, collector, where, limit):
    """(line number, decoded object) of every compact line, and of every pretty-printed object gathered up to its
    closing brace; what cannot be decoded is a problem (a last line without its end is cut, not a problem)."""
    pending, size, start = [], 0, 0
    last = len(lines)
    for number, line in enumerate(lines, 1):
        if pending:
            pending.append(line)
            size += len(line)
            if line.rstrip() == "}":
                text, pending = "\n".join(pending), []
                yield _decode(text, collector, "%s line %d" % (where, start))
            elif size > limit:
                collector.problem("%s line %d" % (where, start), "an object longer than %d bytes" % limit)
                pending = []
            continue
        stripped = line.strip()
        if not stripped:
            continue
        collector.counts["lines"] += 1
        if stripped == "{":
            pending, size, start = [line], len(line), number
            continue
        if number == last and not stripped.endswith("}"):
            collector.dropped["cut_lines"] += 1
            continue
        yield _decode(stripped, collector, "%s line %d" % (where, number))
    if pending:
        collector.dropped["cut_lines"] += 1


def _decode(text, collector, where):
    try:
        return where, json.loads(text)
    except ValueError as exc:
        collector.problem(where, "not JSON (%s)" % _text.one_line(exc, 80))
        return where, None


def read_json_lines(lines, collector, where="text"):
    """Every record of a JSON-lines file into the collector; the file's {records} count."""
    records = 0
    for place, obj in _json_objects(lines, collector, where, collector.limits["max_object_bytes"]):
        if obj is None:
            continue
        try:
            record = read_record(obj)
        except InspectorError as exc:
            collector.problem(place, str(exc))
            continue
        records += 1
        collector.add(record)
    return records


def read_prom_lines(lines, collector, where="text", job=None):
    """Every Inspector sample of a textfile into the collector (``job``: only that slurm_job_id); the count read."""
    samples = 0
    for number, line in enumerate(lines, 1):
        try:
            sample = read_prom_line(line)
        except InspectorError as exc:
            collector.problem("%s line %d" % (where, number), str(exc))
            continue
        if sample is None:
            continue
        collector.counts["lines"] += 1
        name, labels, value = sample
        if name not in PROM_METRICS or (job is not None and labels.get("slurm_job_id") != str(job)):
            continue
        collector.add_bucket(name, labels, value, where)
        samples += 1
    return samples


def read_file(collector, name, content, job=None, read_by=None):
    """One file's text (as the plugin wrote it, or its tail) into the collector, with a row in ``files``."""
    lines = _text.clean_lines(content, name or "an Inspector file")
    kind = detect_format(name, lines)
    row = {"name": name, "format": kind, "records": 0}
    if read_by:
        row["read_by"] = read_by
    if kind == "json":
        row["records"] = read_json_lines(lines, collector, name or "text")
    elif kind == "prom":
        row["records"] = read_prom_lines(lines, collector, name or "text", job)
    elif any(line.strip() for line in lines):
        collector.problem(name or "text", "neither JSON lines nor a Prometheus textfile")
    collector.files.append(row)
    return row


def parse_nccl_inspector(files, limits=None, job=None):
    """``files``: one file's text, or [{name, content[, read_by]}] -> the collector's result (see the module
    docstring). InspectorError when nothing in it is Inspector output."""
    collector = Collector(limits)
    for item in [{"name": None, "content": files}] if isinstance(files, (str, bytes)) else files:
        read_file(collector, item.get("name"), item.get("content"), job, item.get("read_by"))
    return finish(collector)


def finish(collector):
    """The collector's result; InspectorError when what it read held no Inspector output at all (an empty file, or a
    job's files before its first dump, is no error: the counts say nothing was there)."""
    result = collector.result()
    if not result["formats"] or not (result["counts"]["records"] or result["counts"]["prom_samples"]):
        if any(row["format"] for row in result["files"]) and not result["problems"]:
            return result
        raise InspectorError("no NCCL Inspector record in %s%s" % (
            ", ".join(str(row["name"] or "the text") for row in result["files"][:5]) or "nothing",
            ": " + "; ".join(result["problems"][:3]) if result["problems"] else ""))
    return result


def merge(parsed, limits=None):
    """Several results (one per node) -> one, within the limits; a record two nodes read is counted once."""
    collector = Collector(limits)
    for part in parsed:
        collector.files.extend(part.get("files") or [])
        collector.problems.extend((part.get("problems") or [])[:collector.limits["max_problems"]])
        for key, value in (part.get("dropped") or {}).items():
            collector.dropped[key] = collector.dropped.get(key, 0) + (value or 0)
        for comm in part.get("communicators") or []:
            _replay(collector, comm)
        for bucket in part.get("buckets") or []:
            _replay_bucket(collector, bucket)
    collector.counts["records"] = sum((p.get("counts") or {}).get("records", 0) for p in parsed)
    return collector.result()


def _replay(collector, comm):
    """One node's communicator into the collector: its ranks first (a rank of point-to-point operations only too),
    then every rank's figures of every collective."""
    base = {"kind": "coll", "comm": comm.get("id"), "comm_name": comm.get("name"), "n_ranks": comm.get("n_ranks"),
            "nnodes": comm.get("nnodes")}
    ranks = {}
    for row in comm.get("ranks") or []:
        ranks[row.get("rank")] = dict(base, rank=row.get("rank"), host=row.get("host"), pid=row.get("pid"),
                                      timing=(row.get("timing") or [None])[0])
        target = collector._comm(ranks[row.get("rank")])
        if target is not None:
            target["ranks"][row.get("rank")]["p2p"] += row.get("p2p") or 0
    for entry in comm.get("collectives") or []:
        for rank, figures in (entry.get("ranks") or {}).items():
            record = dict(ranks.get(int(rank)) or dict(base, rank=int(rank), host=None, pid=None, timing=None))
            record.update(ts_us=figures[2], op=entry.get("op"), sn=entry["sn"], size=entry.get("size"),
                          exec_us=figures[0], busbw=figures[1])
            collector.add(record)


# A bucket's figure -> the metric that carries it, for collectives and point-to-point operations.
_BUCKET_METRICS = dict(((kind, figure), name) for name, (kind, figure) in PROM_METRICS.items())


def _replay_bucket(collector, bucket):
    for figure in ("busbw", "exec_us", "exec_sum", "count"):
        if bucket.get(figure) is not None:
            collector.add_bucket(_BUCKET_METRICS[(bucket.get("kind"), figure)], bucket, bucket[figure],
                                 bucket.get("file"))
