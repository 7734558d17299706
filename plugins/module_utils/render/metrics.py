# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Findings, the checks' own health and remediation decisions as Prometheus metrics: pure functions.

The text is the exposition format node_exporter's textfile collector reads (``# HELP``, ``# TYPE``,
one sample per line, no timestamps: the collector refuses them), with names OpenMetrics accepts too
(counters end in ``_total``). The health monitor and the node_health module write it atomically into
the collector's directory (statefile.save_bytes); the figures of validation runs come from figures.py
and are rendered here as well.

Label names follow the exporters a site already runs, so one query joins them: ``Hostname``, ``gpu``,
``UUID``, ``pci_bus_id`` (``00000000:3B:00.0``) and ``device`` as dcgm-exporter writes them, ``device``
and ``port`` as node_exporter's infiniband collector does. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import SEVERITIES

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]{0,199}$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,99}$")
KINDS = ("gauge", "counter")
MAX_LABEL_VALUE = 512
PREFIX = "gpufabric_"
HEALTH_FILE = "gpufabric_health.prom"

# What a finding's target names, as labels: "host/GPU 0000:3b:00", "host/mlx5_0/1", "host/eth2".
_GPU_TARGET = re.compile(r"/GPU ([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.([0-7]))?$")
_PORT_TARGET = re.compile(r"/([A-Za-z0-9_.-]{1,64})/([0-9]{1,3})$")
_NETDEV_TARGET = re.compile(r"^[^/:]+/([A-Za-z0-9_.@-]{1,64})$")


class MetricsError(ValueError):
    """A metric that cannot be written; the message names the metric and the bad part."""


def escape(value):
    """A label value as the format quotes it: backslash, double quote and newline escaped; cut at
    MAX_LABEL_VALUE characters (a label is an index, not a log)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > MAX_LABEL_VALUE:
        text = text[:MAX_LABEL_VALUE - 3] + "..."
    return text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def number(value):
    """The sample value as written, or None for what is not a measurement (NaN, inf, not a number)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return repr(int(value)) if value.is_integer() and abs(value) < 2 ** 53 else repr(value)
    return None


def family(name, kind, help_text, samples=()):
    """One metric family: {name, kind, help, samples: [(labels, value)]}; MetricsError for a bad name or kind."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise MetricsError("metric name %r is not a Prometheus metric name" % (name,))
    if kind not in KINDS:
        raise MetricsError("metric %s: type must be one of %s, got %r" % (name, ", ".join(KINDS), kind))
    if kind == "counter" and not name.endswith("_total"):
        raise MetricsError("metric %s: a counter's name ends in _total" % name)
    return {"name": name, "kind": kind, "help": " ".join(str(help_text).split()), "samples": list(samples)}


def _labels(name, labels):
    parts = []
    for key in sorted(labels):
        if not _LABEL.match(key) or key.startswith("__"):
            raise MetricsError("metric %s: label name %r is not a Prometheus label name" % (name, key))
        if labels[key] is None or labels[key] == "":
            continue  # an empty label is the same series as no label: leave it out
        parts.append('%s="%s"' % (key, escape(labels[key])))
    return "{%s}" % ",".join(parts) if parts else ""


def render(families):
    """The families as exposition text. A sample that is not a finite number is left out (a failed
    measurement is not a value); two samples with the same labels, or a family named twice, is
    MetricsError (node_exporter would refuse the whole file)."""
    lines, seen_names = [], set()
    for fam in families:
        if fam["name"] in seen_names:
            raise MetricsError("metric %s is written twice" % fam["name"])
        seen_names.add(fam["name"])
        help_text = fam["help"].replace("\\", "\\\\").replace("\n", " ")
        body, seen = [], set()
        for labels, value in fam["samples"]:
            written = number(value)
            if written is None:
                continue
            label_text = _labels(fam["name"], labels or {})
            if label_text in seen:
                raise MetricsError("metric %s: two samples with the labels %s" % (fam["name"], label_text or "{}"))
            seen.add(label_text)
            body.append("%s%s %s" % (fam["name"], label_text, written))
        lines.append("# HELP %s %s" % (fam["name"], help_text))
        lines.append("# TYPE %s %s" % (fam["name"], fam["kind"]))
        lines.extend(sorted(body))
    return "\n".join(lines) + "\n" if lines else ""


def dcgm_bus_id(address):
    """'0000:3b:00' or '0000:3B:00.0' -> '00000000:3B:00.0', the pci_bus_id dcgm-exporter (and nvidia-smi) writes."""
    match = re.match(r"^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?$", address or "")
    if not match:
        return None
    return "%s:%s:%s.%s" % (match.group(1).upper().zfill(8), match.group(2).upper(), match.group(3).upper(),
                            match.group(4) or "0")


def finding_labels(found, gpus=()):
    """The labels of one finding: check, severity, target, and what the target names - ``pci_bus_id``,
    ``gpu`` and ``UUID`` of a GPU (``gpus``: [{index, pci, uuid}] from nvidia-smi), or ``device`` and
    ``port`` of an RDMA port, or ``device`` of a network interface."""
    target = str(found.get("target") or "")
    labels = {"check": found.get("check"), "severity": found.get("severity"), "target": target}
    gpu_match = _GPU_TARGET.search(target)
    port_match = _PORT_TARGET.search(target)
    if gpu_match:
        bus_id = dcgm_bus_id(gpu_match.group(1) + (".%s" % gpu_match.group(2) if gpu_match.group(2) else ""))
        labels["pci_bus_id"] = bus_id
        for gpu in gpus or ():
            if dcgm_bus_id(gpu.get("pci")) == bus_id:
                labels["gpu"] = gpu.get("index")
                labels["UUID"] = gpu.get("uuid")
    elif port_match and "/GPU " not in target:
        labels["device"], labels["port"] = port_match.group(1), port_match.group(2)
    else:
        netdev = _NETDEV_TARGET.match(target)
        if netdev:
            labels["device"] = netdev.group(1)
    return labels


def health_families(result, cluster, hostname, now, duration, interval=None, last_success=None, decisions=None,
                    gpus=(), state_saved=True):
    """A node's health check as metric families.

    ``result`` is node_checks.check_node's; ``now`` the run's time (epoch seconds), ``duration`` how
    long the check took, ``interval`` how often it runs (a rule compares the last run's time with it),
    ``last_success`` the last run that read every source, ``decisions`` {action: count} of the
    decider's answers about this node so far (a counter). ``state_saved`` false: the monitor could not save its
    state this run (a full or read-only disk).
    """
    base = {"cluster": cluster, "Hostname": hostname}

    def with_base(labels):
        merged = dict(base)
        merged.update(labels)
        return merged

    findings = [f for f in result.get("findings") or [] if f.get("severity") in SEVERITIES]
    finding_samples, seen = [], set()
    for found in findings:
        labels = with_base(finding_labels(found, gpus))
        key = tuple(sorted((k, str(v)) for k, v in labels.items()))
        if key not in seen:  # two findings of one check on one target: one series
            seen.add(key)
            finding_samples.append((labels, 1))
    counts = dict((s, 0) for s in SEVERITIES)
    for found in findings:
        counts[found["severity"]] += 1
    unreadable = list(result.get("unreadable") or [])
    families = [
        family(PREFIX + "finding", "gauge",
               "An open finding of gpufabric's node checks (1 while it is present); labels name the check, severity and "
               "target, and the GPU (gpu, UUID, pci_bus_id) or port (device, port) as dcgm-exporter and node_exporter do.",
               finding_samples),
        family(PREFIX + "findings", "gauge", "How many findings of each severity the last check had.",
               [(with_base({"severity": s}), counts[s]) for s in SEVERITIES]),
        family(PREFIX + "health_check_up", "gauge",
               "1 when the last check ran to the end and read every source; 0 when a source could not be read "
               "(unknown is not healthy).", [(base, 1 if result.get("complete") else 0)]),
        family(PREFIX + "health_check_source_unreadable", "gauge",
               "A source the last check could not read (1), with the reason in the label.",
               [(with_base({"source": why.split(":", 1)[0], "reason": why}), 1) for why in unreadable]),
        family(PREFIX + "health_check_duration_seconds", "gauge", "How long the last check took.", [(base, duration)]),
        family(PREFIX + "health_check_last_run_timestamp_seconds", "gauge", "When the last check ran (epoch seconds).",
               [(base, now)]),
        family(PREFIX + "health_check_last_success_timestamp_seconds", "gauge",
               "When a check last read every source (epoch seconds).", [(base, last_success)]),
        family(PREFIX + "health_check_interval_seconds", "gauge",
               "How often the check runs; a last run older than 3 intervals is a stale exporter.", [(base, interval)]),
        family(PREFIX + "health_state_writable", "gauge",
               "1 when the monitor saved its state this run; 0 when it could not (a full or read-only disk): findings "
               "are then reported to the decider and alerted directly, but not tracked between runs.",
               [(base, 1 if state_saved else 0)]),
    ]
    families.append(family(PREFIX + "port_events_total", "counter",
                           "The port and interface counters behind the grey-failure rates, as last read.",
                           counter_samples(result.get("observed") or {}, base)))
    links = (result.get("observed") or {}).get("links")
    if links:
        families += link_families(links, base)
    if decisions is not None:
        families.append(family(PREFIX + "remediation_decisions_total", "counter",
                               "The decider's answers about this node since the monitor's state began, by action "
                               "(drain, resume, held, shadow, none).",
                               [(with_base({"action": a}), n) for a, n in sorted(decisions.items())]))
    return families


def link_families(links, base):
    """Each HCA port's physical layer as mlxlink read it (observed["links"], device 'mlx5_0/1'): BER gauges and the
    link-down and effective-error counters, labelled device and port as node_exporter's infiniband collector does.
    A value mlxlink could not give is left out, never written as 0."""
    def samples(key):
        out = []
        for link in links:
            value = link.get(key)
            if value is None or isinstance(value, bool):
                continue
            device, ignored, port = str(link.get("device") or "").partition("/")
            out.append((dict(base, device=device, port=port or "1"), value))
        return out
    return [
        family(PREFIX + "link_effective_ber", "gauge", "Bit error rate after FEC of an HCA port, as mlxlink read it.",
               samples("effective_ber")),
        family(PREFIX + "link_raw_ber", "gauge", "Bit error rate before FEC of an HCA port, as mlxlink read it.",
               samples("raw_ber")),
        family(PREFIX + "link_down_events_total", "counter", "mlxlink's Link Down Counter of an HCA port.",
               samples("link_down_counter")),
        family(PREFIX + "link_effective_errors_total", "counter",
               "Physical errors FEC could not correct on an HCA port (mlxlink's Effective Physical Errors).",
               samples("effective_errors")),
    ]


def counter_samples(observed, base):
    """The latest grey-failure sample (rates.py history) as counter samples: device/port or netdev, and the counter."""
    history = observed.get("history") or []
    latest = history[-1].get("counters") if history and isinstance(history[-1], dict) else None
    if not isinstance(latest, dict):
        latest = dict(("%s|%s" % (port, name), value) for port, values in (observed.get("port_counters") or {}).items()
                      for name, value in (values or {}).items())
    samples = []
    for key, value in sorted(latest.items()):
        where, ignored, name = key.partition("|")
        if not name or isinstance(value, bool) or not isinstance(value, int):
            continue
        labels = dict(base, event=name)
        if "/" in where:
            labels["device"], labels["port"] = where.split("/", 1)
        else:
            labels["device"] = where
        samples.append((labels, value))
    return samples


def count_decision(decisions, decision):
    """Add one decider answer to the running counts {action: n}: shadow and held are counted as such."""
    decisions = dict(decisions or {})
    if decision.get("held"):
        action = "held"
    elif decision.get("shadow") and decision.get("action") in ("drain", "resume"):
        action = "shadow_" + decision["action"]
    else:
        action = decision.get("action") or "none"
    decisions[action] = decisions.get(action, 0) + 1
    return decisions
