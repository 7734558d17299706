# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Validation runs (nccl-tests) judged against thresholds and summarized for people."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
from collections.abc import Mapping

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import port_traffic
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug as nccl_debug_mod
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import baselines as baseline_table
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import ceiling
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_run
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation_record
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import report
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.report import markdown_table, render_table

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
                errors.append("%s must be a non-negative number or unset, %s" % (name, problem))
    return errors


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
            run = nccl_run.from_registered(result)
            runs.append({"label": "%s: %s" % (host, label), "host": host, "mode": "single", "command": run["command"],
                         "rc": run["rc"], "output": run["output"], "not_run": run["not_run"]})
    for result in (mpirun_results or {}).get("results") or []:
        item = result.get("item") or {}
        run = nccl_run.from_registered(result)
        runs.append({"label": item.get("label") or "mpirun %s x %d nodes" % (item.get("name"), len(hosts or [])),
                     "host": ",".join(hosts or []), "mode": "mpirun", "command": run["command"], "rc": run["rc"],
                     "output": run["output"], "not_run": run["not_run"], "env": item.get("env") or {},
                     "traffic": result.get("traffic")})
    return runs


MULTI_NODE_MODES = ("mpirun", "slurm")


def _nccl_debug_check(nccl_debug):
    """The judge's nccl_debug argument: None, or {'env', 'profile', 'gdr_ready'}; ValueError naming what is wrong."""
    if nccl_debug is None:
        return None
    if not isinstance(nccl_debug, Mapping):
        raise ValueError("nccl_debug must be a mapping with env, profile and gdr_ready, got %s" % type(nccl_debug).__name__)
    unknown = sorted(set(nccl_debug) - {"env", "profile", "gdr_ready"})
    if unknown:
        raise ValueError("nccl_debug has unknown keys %s; it reads env, profile and gdr_ready" % ", ".join(map(str, unknown)))
    settings = {"env": nccl_debug.get("env") or {}, "profile": nccl_debug.get("profile"),
                "gdr_ready": nccl_debug.get("gdr_ready")}
    try:   # the checks expected_from_env makes, once, before any run is judged
        nccl_path.expected_from_env(settings["env"], settings["profile"], settings["gdr_ready"])
    except nccl_debug_mod.NcclDebugError as exc:
        raise ValueError("nccl_debug: %s" % exc)
    return settings


def judge_nccl_log(run, result, settings, p2p=None):
    """What NCCL used in a run (its NCCL_DEBUG=INFO lines), judged against the run's environment and, with ``p2p``
    (its GPUs on each node joined by NVLink), the path between GPUs of one node.

    Returns (entry or None, failures). A run that measured figures and printed no NCCL INFO line fails:
    the role asked for NCCL_DEBUG=INFO, so the transport NCCL used is unknown, and unknown is not a pass.
    """
    env = dict(settings.get("env") or {})
    env.update(run.get("env") or {})
    expected = nccl_path.expected_from_env(env, settings.get("profile"), settings.get("gdr_ready"))
    if p2p is not None:
        expected["p2p"] = p2p
    parsed = nccl_debug_mod.parse_nccl_debug(run.get("output") or "")
    if not parsed["nccl_lines"]:
        if result.get("rows"):
            return None, ["NCCL printed no INFO line although the run set NCCL_DEBUG=INFO: which network, HCAs "
                          "and GPUDirect RDMA it used are unknown"]
        return None, []
    entry = nccl_path.report_entry(parsed, expected)
    return entry, ["NCCL: %s" % reason["reason"] for reason in entry["reasons"] if reason["ok"] is False]


def _port_parts(key):
    """'node1:mlx5_0/1' -> ('mlx5_0', 1); (None, None) when it is not such a name."""
    name = key.rsplit(":", 1)[-1]
    device, dummy, port = name.partition("/")
    return (device or None), (int(port) if port.isdigit() else None)


def flatten_traffic(traffic):
    """Per-host readings -> ({'host:dev/port': counters} before, after, {'host:dev/port': 'GPU0,GPU1'})."""
    if not isinstance(traffic, Mapping) or not isinstance(traffic.get("hosts"), Mapping):
        raise ValueError("a run's traffic must be {'hosts': {host: {'before', 'after', 'gpu_nics'}}}, got %r"
                         % (str(traffic)[:80],))
    before, after, gpus = {}, {}, {}
    for host, reading in traffic["hosts"].items():
        if not isinstance(reading, Mapping):
            raise ValueError("the traffic reading of %s must be a mapping with before and after, got %s"
                             % (host, type(reading).__name__))
        for name, target in (("before", before), ("after", after)):
            counters = reading.get(name) or {}
            if not isinstance(counters, Mapping):
                raise ValueError("%s's %s counters must map device/port to counters, got %s" % (host, name, type(counters).__name__))
            for port, values in counters.items():
                target["%s:%s" % (host, port)] = values
        nearest = {}
        for gpu, nics in sorted((reading.get("gpu_nics") or {}).items(), key=lambda kv: (len(str(kv[0])), str(kv[0]))):
            for nic in ([nics] if isinstance(nics, str) else nics or []):
                nearest.setdefault(nic, []).append(str(gpu))
        for port in list(reading.get("after") or {}):
            device = str(port).split("/", 1)[0]
            if device in nearest:
                gpus["%s:%s" % (host, port)] = ",".join(nearest[device])
    return before, after, gpus


def judge_traffic(traffic, expected):
    """Bytes each RDMA port carried during a run (counters before and after, every host) and the ports that
    carried nothing or far less than their peers: failures for ports NCCL_IB_HCA names, notes for the rest.

    ``traffic``: {'hosts': {host: {'before': {'dev/port': counters}, 'after': {...}, 'gpu_nics': {GPU0: [dev]}}},
    'replayed': text or None} (rdma_port_counters' readings, gpu_facts' topology.gpu_nics).
    Returns (entry, failures, notes).
    """
    before, after, gpu_for_port = flatten_traffic(traffic)
    deltas = port_traffic.port_counter_deltas(before, after, gpu_for_port)
    entry = {"ports": deltas["ports"], "median_bytes": deltas["median_bytes"], "flagged": deltas["flagged"],
             "replayed": traffic.get("replayed")}
    failures, notes = [], []
    if not deltas["ports"]:
        notes.append("no RDMA port's data counters could be read before and after the run: which ports carried "
                     "the bytes is unknown")
        return entry, failures, notes
    if expected and expected.get("rdma") is False:
        notes.append("RDMA is off in the run's environment: the ports' bytes are not NCCL's and no port is judged")
        entry["flagged"] = []
        return entry, failures, notes
    ib_hca = (expected or {}).get("ib_hca")
    for port in deltas["ports"]:
        if not port["low"]:
            continue
        gpu = (" (closest to %s)" % port["gpu"]) if port.get("gpu") is not None else ""
        text = "port %s%s %s" % (port["port"], gpu, port["reason"])
        device, number = _port_parts(str(port["port"]))
        if ib_hca and device and nccl_debug_mod.ib_hca_allows(ib_hca, device, number):
            failures.append("%s although NCCL_IB_HCA=%s lets NCCL use it: a rail down or unused" % (text, ib_hca))
        else:
            notes.append(text + ("" if not ib_hca else " (outside NCCL_IB_HCA=%s)" % ib_hca))
    return entry, failures, notes


def judge(runs, min_busbw=None, min_busbw_by_size=None, max_wrong=0, placement="out_of_place", replayed_from=None,
          nccl_debug=None, baselines=None):
    """runs: [{'label', 'command', 'output'}] -> the same runs with 'result', 'failures', 'passed', 'notes'.

    ``replayed_from`` (where a stand-in's capture came from) goes on every judged run: the summaries say it
    above the table and in each verdict cell, not in the labels (that made the table 230 columns wide).
    ``nccl_debug`` ({'env': the runs' NCCL environment, 'profile', 'gdr_ready'}): multi-node runs were started
    with NCCL_DEBUG=INFO; what NCCL used is read from their output and judged (key 'nccl'). A run's 'traffic'
    (data counters before and after it) becomes key 'traffic' with the bytes per port. Each run carries its figure
    (key 'figure': {size, busbw}, the out-of-place busbw at the largest size), read once here.
    ``baselines`` ({'platform', 'fraction', 'local'}, see baseline_notes): each run is set against its baseline in
    this same pass; without a threshold of the user's, a run below the fraction of its baseline fails.
    """
    settings = _nccl_debug_check(nccl_debug)
    judged = []
    for run in runs:
        # the one verdict of a run (judge/nccl_run.py): a run whose program never started is not run, as a
        # skipped one is; the thresholds are validation's own
        found = nccl_run.verdict(dict(run, stderr=""))
        if found["not_run"]:
            run = dict(run, not_run=found["not_run"])
        result, figure = found["result"], found["figure"]
        failures = nccl_run.check_thresholds(result, min_busbw, min_busbw_by_size, max_wrong, True, placement)
        failures += found["implausible"]
        if run.get("rc") not in (0, None) and not run.get("not_run"):
            failures.append("the command exited %s" % run["rc"])
        notes = list(found["notes"])
        item = dict((k, v) for k, v in run.items() if k not in ("output", "traffic"))
        expected = None
        # one node's runs are read for the path between its GPUs where the hardware says what it must be
        p2p = _p2p_expected(run, (baselines or {}).get("platform")) if settings is not None else None
        if settings is not None and not run.get("not_run") and (run.get("mode") in MULTI_NODE_MODES or p2p is not None):
            entry, found = judge_nccl_log(run, result, settings, p2p)
            item["nccl"] = entry
            expected = entry["expected"] if entry else None
            failures += found
        if run.get("traffic") and not run.get("not_run"):
            item["traffic"], found, noted = judge_traffic(run["traffic"], expected)
            failures += found
            notes += noted
        item.update(result=result, failures=failures, passed=not failures and bool(result.get("passed")),
                    notes=notes, figure=figure)
        if replayed_from:
            item["replayed_from"] = replayed_from
        judged.append(item)
    if baselines is not None:   # every run then has 'baseline' (None without a platform or a known baseline)
        judged = baseline_notes(judged, baselines.get("platform") or {}, baselines.get("fraction", 0.9),
                                baselines.get("local"), min_busbw is not None or bool(min_busbw_by_size))["runs"]
    return judged


def _expected_cell(run):
    """'450 (77 %)': what the hardware carries and the run's share of it; None (a '-' cell) where none is derived."""
    expected = run.get("expected") or {}
    if expected.get("busbw") is None:
        return None
    return "%g%s" % (expected["busbw"], "" if expected.get("ratio") is None else " (%.0f %%)" % (expected["ratio"] * 100))


def expected_lines(judged):
    """'<run>: the hardware carries 450 GB/s (bound by ...); measured 348.46 ... = 77 %' per run with an expectation."""
    lines = []
    for run in judged:
        expected = run.get("expected")
        if not expected:
            continue
        if expected.get("busbw") is None:
            lines.append("%s: no expectation from the hardware: %s" % (run.get("label"), expected.get("why")))
            continue
        size, value = nccl_run.figure(run)
        lines.append("%s: the hardware carries %g GB/s (bound by %s)%s" % (
            run.get("label"), expected["busbw"], expected["bound"],
            "" if expected.get("ratio") is None else "; measured %g GB/s at %s bytes = %.0f %%, %s %.0f %%" % (
                value, size, expected["ratio"] * 100, "at least" if expected["ratio"] >= (expected.get("fraction") or 0)
                else "below", (expected.get("fraction") or 0) * 100)))
    return lines


def summary_rows(judged):
    rows = []
    for run in judged:
        result = run["result"]
        size, busbw = nccl_run.figure(run)
        rows.append([
            run.get("label"),
            result.get("collective"),
            len(result.get("ranks") or []),
            size,
            busbw,
            result.get("peak_busbw"),
            result.get("avg_busbw"),
            result.get("wrong"),
            _expected_cell(run),
            ("PASS" if run["passed"] else "FAIL") + (" (replayed)" if run.get("replayed_from") else ""),
        ])
    return rows


def replayed_line(judged):
    """'Figures REPLAYED from <source>, not measured.' when stand-ins printed captures, else None."""
    return report.replayed_note([run.get("replayed_from") for run in judged])


SUMMARY_HEADER = ["run", "collective", "ranks", "largest size (B)", "busbw there (GB/s)", "peak busbw",
                  "avg busbw", "#wrong", "hardware carries (share)", "verdict"]


def nccl_used_lines(judged):
    """'<run>: NCCL used: NCCL 2.18.3, NET/IB (RoCE) over mlx5_0:1, GPUDirect RDMA on, ...; expected ...: PASS'."""
    return ["%s: NCCL used: %s; expected %s: %s" % (
        run.get("label"), nccl_path.used_text(run["nccl"]), run["nccl"]["expected_text"],
        "PASS" if run["nccl"]["passed"] else "FAIL") for run in judged if run.get("nccl")]


TRAFFIC_HEADER = ["port", "closest GPU", "tx bytes", "rx bytes", "total", "flag"]


def traffic_rows(run):
    traffic = run.get("traffic") or {}
    return [[p["port"], p.get("gpu") or "-", p["tx_bytes"], p["rx_bytes"], p["bytes"],
             ("LOW" if p["port"] in traffic.get("flagged", []) else "") + (" (counter reset)" if p.get("reset") else "")]
            for p in traffic.get("ports") or []]


def traffic_title(run):
    traffic = run.get("traffic") or {}
    return "%s: bytes per RDMA port during the run%s" % (
        run.get("label"), (" - REPLAYED: %s" % traffic["replayed"]) if traffic.get("replayed") else "")


def not_measured_lines(not_measured):
    """site.yml's nodes not measured again ({node: their last validation record}): one line each, sorted."""
    return [validation_record.reused_line(node, validation_record.check_record(not_measured[node]))
            for node in sorted(not_measured or {})]


def summary_text(judged, not_measured=None):
    if not judged and not_measured:
        return "\n".join(["no run measured: every node's last validation still holds"] + not_measured_lines(not_measured))
    replayed = replayed_line(judged)
    text = (replayed + "\n" if replayed else "") + render_table(SUMMARY_HEADER, summary_rows(judged))
    failures = ["%s: %s" % (run.get("label"), failure) for run in judged for failure in run["failures"]]
    notes = ["%s: note: %s" % (run.get("label"), note) for run in judged for note in run.get("notes") or []]
    text += "".join("\n" + line for line in expected_lines(judged) + nccl_used_lines(judged) + failures + notes)
    for run in judged:
        rows = traffic_rows(run)
        if rows:
            text += "\n" + traffic_title(run) + "\n" + render_table(TRAFFIC_HEADER, rows)
    return text + "".join("\n" + line for line in not_measured_lines(not_measured))


def summary_markdown(judged, thresholds=None, not_measured=None):
    lines = ["# gpufabric.rdma validation", ""]
    reused = not_measured_lines(not_measured)
    if not judged and reused:
        return "\n".join(lines + [
            "**PASS**: no run measured: every node's last validation still holds (runs.json and busbw.svg keep the last "
            "measurement).", "", "## Not measured again", ""] + ["- " + line for line in reused]) + "\n"
    passed = all(run["passed"] for run in judged) and bool(judged)
    count = sum(1 for r in judged if r["passed"])
    lines.append("**%s**: %d of %d run(s) passed." % ("PASS" if passed else "FAIL", count, len(judged))
                 + (" %d node(s) not measured again: their last validation still holds." % len(reused) if reused else ""))
    if replayed_line(judged):
        lines += ["", replayed_line(judged)]
    if thresholds:
        lines += ["", "Thresholds: " + ", ".join("%s=%s" % kv for kv in sorted(thresholds.items()) if kv[1] not in (None, {}, ""))]
    lines += [""] + markdown_table(SUMMARY_HEADER, summary_rows(judged))
    lines += ["", "## Commands", ""]
    lines += ["- %s: `%s`" % (run.get("label"), run.get("command")) for run in judged]
    failures = [(run.get("label"), f) for run in judged for f in run["failures"]]
    if failures:
        lines += ["", "## Failures", ""] + ["- %s: %s" % item for item in failures]
    notes = [(run.get("label"), n) for run in judged for n in run.get("notes") or []]
    if notes:
        lines += ["", "## Notes", ""] + ["- %s: %s" % item for item in notes]
    expected = expected_lines(judged)
    if expected:
        lines += ["", "## What the hardware carries", ""] + ["- " + line for line in expected]
    used = [run for run in judged if run.get("nccl")]
    if used:
        lines += ["", "## What NCCL used", ""]
        for run in used:
            entry = run["nccl"]
            lines.append("- %s: **%s**: %s (expected: %s)" % (run.get("label"), "PASS" if entry["passed"] else "FAIL",
                                                              nccl_path.used_text(entry), entry["expected_text"]))
            for reason in entry["reasons"]:
                mark = {True: "ok", False: "FAIL", None: "note"}[reason["ok"]]
                lines.append("  - %s %s: %s" % (mark, reason["check"], reason["reason"]))
                lines += ["    - `%s`" % line.replace("`", "'") for line in reason["evidence"]]
    for run in judged:
        rows = traffic_rows(run)
        if rows:
            lines += ["", "## " + traffic_title(run), ""] + markdown_table(TRAFFIC_HEADER, rows)
    baselines = [(run.get("label"), run["baseline"]) for run in judged if run.get("baseline")]
    if baselines:
        lines += ["", "## Baselines", ""] + ["- %s: %s" % item for item in baselines]
    if reused:
        lines += ["", "## Not measured again", ""] + ["- " + line for line in reused]
    return "\n".join(lines) + "\n"


def bandwidth_series(judged):
    """Judged runs -> the bandwidth chart's series: [{'label', 'rows'}], one line per run."""
    return [{"label": run.get("label"), "rows": run["result"].get("rows"), "ceiling": run.get("expected_busbw")}
            for run in judged]


def _run_nodes(run, platform):
    """The run's nodes ([{'host', 'gpu', 'rdma_devices'}]) and its GPUs on each, from the platform's hardware; or
    (None, why); None when the platform names no hardware."""
    hardware = platform.get("hardware")
    if not isinstance(hardware, Mapping):
        return None
    records = hardware.get("nodes") or {}
    hosts = [h for h in str(run.get("host") or "").split(",") if h]
    missing = [h for h in hosts if not isinstance(records.get(h), Mapping)]
    if not hosts or missing:
        return None, "no record of %s" % (", ".join(missing) if missing else "the run's nodes")
    gpus = platform.get("gpus_by_mode", {}).get(run.get("mode")) or platform.get("gpus")
    gpus = int(gpus) if str(gpus).isdigit() else 0
    per_node = gpus // len(hosts) if gpus and gpus % len(hosts) == 0 else 0
    if per_node < 1:
        return None, "%s GPU(s) over %d node(s): not the same count on each" % (gpus or "no", len(hosts))
    return [dict(records[h], host=h) for h in hosts], per_node


def _p2p_expected(run, platform):
    """True where NVLink joins the run's GPUs on each of its nodes (its ranks there must talk peer-to-peer)."""
    found = _run_nodes(run, platform or {})
    if not found or found[0] is None:
        return None
    try:
        return ceiling.p2p_expected(*found)
    except ceiling.CeilingError:
        return None


def _hardware_expectation(run, collective, platform):
    """The run's ceiling from its nodes' records (judge/ceiling.py), or None when the platform names no hardware."""
    found = _run_nodes(run, platform)
    if found is None:
        return None
    if found[0] is None:
        return {"busbw": None, "why": found[1]}
    try:
        return ceiling.ceiling(collective, found[0], found[1], platform["hardware"].get("ib_hca") or None)
    except ceiling.CeilingError as exc:
        return {"busbw": None, "why": str(exc)}


def _judge_hardware(run, expected, fraction):
    """Sets run['expected'] (and 'expected_busbw', for the metrics and the chart) and adds the failure or note."""
    size, value = nccl_run.figure(run)
    failure, note, ratio = ceiling.judge(size, value, expected, fraction)
    run["expected"] = dict(expected, source="hardware", fraction=ceiling.share(expected, fraction),
                           ratio=None if ratio is None else round(ratio, 3), failure=failure)
    if expected.get("busbw") is not None:
        run["expected_busbw"] = expected["busbw"]
    if failure:
        run["failures"] = list(run.get("failures") or []) + [failure]
        run["passed"] = False
    if note:
        run["notes"] = list(run.get("notes") or []) + [note]


def baseline_notes(judged, platform, fraction=0.9, local=None, user_threshold=False):
    """Each judged nccl-tests run with its baseline sentence, its expectation from the hardware, and this run's
    figures as baseline entries.

    ``platform``: {'gpu', 'gpus' or 'gpus_by_mode', 'interconnect' or 'interconnect_by_mode', 'hardware'};
    ``local``: the site's own baseline entries (read over the built-in ones). A run's figure is its out-of-place
    busbw at the largest size; ``run['baseline']`` says what share of the matching baseline it is ("346 GB/s = 100 %
    of the H200x2 NVLink baseline ..."), that none is known, or None when the run has no rows, collective or
    GPU model. Without a user threshold, a run below ``fraction`` of its baseline fails, naming both figures.

    ``platform['hardware']`` ({'nodes': {host: {'gpu', 'rdma_devices'}}, 'ib_hca', 'fraction'}): each run is also set
    against what its nodes' links carry (judge/ceiling.py; ``run['expected']``); below the fraction (default
    ceiling.FRACTION by the link that bounds it, 0 turns it off) it fails, user threshold or not: a node at a twentieth of its links is
    broken whatever figure a site accepts. A site's own recorded baseline wins: where one matches, the hardware
    expectation is not judged.

    Returns {'runs': the judged runs with 'baseline' (and any new failure), 'record': ``local`` with this
    run's figures recorded}.
    """
    out, record = [], []
    hardware = platform.get("hardware") if isinstance(platform.get("hardware"), Mapping) else {}
    hardware_fraction = hardware.get("fraction")   # None: by the bounding link (ceiling.FRACTION)
    for run in judged:
        run = dict(run)
        result = run.get("result") or {}
        rows = result.get("rows") or []
        collective = result.get("collective")
        expected = _hardware_expectation(run, collective, platform) if rows and collective else None
        if not rows or not platform.get("gpu") or not collective:
            run["baseline"] = None
            if expected is not None:
                _judge_hardware(run, expected, hardware_fraction)
            out.append(run)
            continue
        size, value = nccl_run.figure(run)
        gpus = platform.get("gpus_by_mode", {}).get(run.get("mode")) or platform.get("gpus")
        gpus = int(gpus) if str(gpus).isdigit() else gpus
        fabric = platform.get("interconnect_by_mode", {}).get(run.get("mode")) or platform.get("interconnect")
        entry = baseline_table.lookup("nccl_busbw", platform["gpu"], gpus, fabric, local, collective=collective,
                                      size=size)
        if entry is None:
            run["baseline"] = baseline_table.unknown("nccl_busbw %s" % collective, platform["gpu"], gpus, fabric)
        else:
            run["baseline"] = baseline_table.describe(value, entry)
            run["baseline_busbw"] = entry["value"]  # the figure itself, for the metrics (figures.py)
            if not user_threshold and fraction and value is not None and value < baseline_table.floor(entry, fraction):
                run["failures"] = list(run.get("failures") or []) + [baseline_table.below(value, size, fraction, entry)]
                run["passed"] = False
        if expected is not None and not (entry is not None and any(entry is e for e in local or [])):
            _judge_hardware(run, expected, hardware_fraction)
        if nccl_tests.finite(value):  # a nan or inf is a failed measurement, never a baseline
            record.append({"kind": "nccl_busbw", "gpu": platform["gpu"], "gpus": gpus, "interconnect": fabric,
                           "collective": collective, "size": size, "value": value,
                           "source": "recorded here: %s" % run.get("label")})
        out.append(run)
    merged = list(local or [])
    for entry in record:
        merged = baseline_table.record(merged, entry)
    return {"runs": out, "record": merged}
