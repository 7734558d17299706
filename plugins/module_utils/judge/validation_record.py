# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A node's last validation as site.yml keeps it on the node, and whether it still proves anything.

Pure, standard library only: the validation_record module reads and writes the record on the node (bounded, without
following links: node/statefile); plan/validation.py decides who site.yml measures and writes what the record holds.

A record is evidence only for what it proves: the node it names, measured on the hardware and configuration its
fingerprints name, with a passing verdict, no older than the age the site allows. Anything else - no record, a record
that is damaged or of another shape, another node's, other hardware, another configuration, a failed one, an old one,
one dated in the future - is not reused: the node is measured again, and ``reasons`` says why.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import datetime
import hashlib
import json
import math
import re
from collections.abc import Mapping

SCHEMA = 1
MAX_RECORD = 1 << 20   # a record is a few kilobytes; anything larger is not one
DATE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
FINGERPRINT_RE = re.compile(r"^[0-9a-f]{64}$")
KEYS = frozenset(("schema", "node", "validated_at", "passed", "hardware", "configuration", "figures", "failures"))
FIGURE_KINDS = ("nccl_tests", "perftest")
FIGURE_KEYS = frozenset(("label", "value", "unit", "passed"))
MAX_FIGURES = 256
MAX_TEXT = 300
# A record written a little ahead of the controller's clock (clocks a few minutes apart) is not "in the future".
CLOCK_SLACK_S = 600
# What of the node's discovery record is its hardware (and what runs it: OS, kernel, drivers) for validation: a change
# here means the last measurement was of another machine. Its interfaces' addresses and MTUs and the NCCL environment
# are configuration (the configure phases' records judge them), the port's LID and GIDs the fabric's bookkeeping.
HARDWARE_KEYS = ("os", "kernel", "architecture", "virtualization", "container", "cpus", "memory_mib", "gpu", "rdma_stack")
RDMA_DEVICE_KEYS = ("name", "driver", "transport", "fw_ver", "hca_type", "board_id", "node_guid", "pci_address")
RDMA_PORT_KEYS = ("port", "state", "phys_state", "link_layer", "rate_gbps")


def fingerprint(data):
    """sha256 of JSON-able data, keys sorted: what a record is compared by."""
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hardware_view(node_record):
    """The part of discovery's node record (facts.json) that is the node's hardware, OS, kernel and drivers."""
    if not isinstance(node_record, Mapping):
        raise ValueError("the node's discovery record must be a mapping (facts.json), got %s" % type(node_record).__name__)
    view = dict((key, node_record.get(key)) for key in HARDWARE_KEYS)
    devices = []
    for device in node_record.get("rdma_devices") or []:
        if not isinstance(device, Mapping):
            raise ValueError("rdma_devices holds %r, not a device" % (device,))
        entry = dict((key, device.get(key)) for key in RDMA_DEVICE_KEYS)
        entry["ports"] = [dict((key, port.get(key)) for key in RDMA_PORT_KEYS)
                          for port in device.get("ports") or [] if isinstance(port, Mapping)]
        devices.append(entry)
    view["rdma_devices"] = devices
    return view


def date_seconds(text):
    """Seconds since the epoch of a record's date (YYYY-MM-DDTHH:MM:SSZ, UTC); ValueError otherwise."""
    if not isinstance(text, str) or len(text) != 20:
        raise ValueError("validated_at must be a date as YYYY-MM-DDTHH:MM:SSZ, got %r" % (text,))
    return calendar.timegm(datetime.datetime.strptime(text, DATE_FORMAT).timetuple())


def date_text(seconds):
    """A record's date (YYYY-MM-DDTHH:MM:SSZ, UTC) of seconds since the epoch."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime(DATE_FORMAT)


def _text(what, value, limit=MAX_TEXT, empty=False):
    if not isinstance(value, str) or len(value) > limit or (not value and not empty) or re.search(r"[\x00-\x1f\x7f]", value):
        raise ValueError("%s must be one line of text (at most %d characters), got %r" % (what, limit, value))
    return value


def _figure(kind, index, entry):
    where = "figures.%s[%d]" % (kind, index)
    if not isinstance(entry, Mapping) or set(entry) - FIGURE_KEYS or "label" not in entry or "passed" not in entry:
        raise ValueError("%s must be {label, value, unit, passed}, got %r" % (where, entry))
    _text(where + ".label", entry["label"])
    value = entry.get("value")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
        raise ValueError("%s.value must be a finite number or null, got %r" % (where, value))
    _text(where + ".unit", entry.get("unit") or "", 20, empty=True)
    if not isinstance(entry["passed"], bool):
        raise ValueError("%s.passed must be true or false, got %r" % (where, entry["passed"]))
    return dict(entry)


def check_record(data):
    """The record as written by site.yml, checked; ValueError naming what is wrong with one of another shape."""
    if not isinstance(data, Mapping):
        raise ValueError("a validation record is a mapping, got %s" % type(data).__name__)
    if set(data) != KEYS:
        missing, unknown = sorted(KEYS - set(data)), sorted(set(data) - KEYS)
        raise ValueError("not a validation record: %s" % "; ".join(
            ([("missing " + ", ".join(missing))] if missing else []) + ([("unknown " + ", ".join(unknown))] if unknown else [])))
    if data["schema"] != SCHEMA or isinstance(data["schema"], bool):
        raise ValueError("schema %r is not %d, the one this collection writes" % (data["schema"], SCHEMA))
    _text("node", data["node"], 255)
    date_seconds(data["validated_at"])
    if not isinstance(data["passed"], bool):
        raise ValueError("passed must be true or false, got %r" % (data["passed"],))
    for key in ("hardware", "configuration"):
        if not isinstance(data[key], str) or not FINGERPRINT_RE.match(data[key]):
            raise ValueError("%s must be a fingerprint (64 hex digits), got %r" % (key, data[key]))
    figures = data["figures"]
    if not isinstance(figures, Mapping) or set(figures) - set(FIGURE_KINDS):
        raise ValueError("figures must be {nccl_tests: [...], perftest: [...]}, got %r" % (figures,))
    checked = {}
    for kind in FIGURE_KINDS:
        entries = figures.get(kind) or []
        if not isinstance(entries, list) or len(entries) > MAX_FIGURES:
            raise ValueError("figures.%s must be a list of at most %d figures" % (kind, MAX_FIGURES))
        checked[kind] = [_figure(kind, i, entry) for i, entry in enumerate(entries)]
    if data["passed"] and not any(checked.values()):
        raise ValueError("a passing record names no figure: nothing was measured")
    failures = data["failures"]
    if not isinstance(failures, list) or len(failures) > MAX_FIGURES:
        raise ValueError("failures must be a list of at most %d lines" % MAX_FIGURES)
    for index, line in enumerate(failures):
        _text("failures[%d]" % index, line, 2000)
    return dict(data, figures=checked)


def reasons(record, node, hardware, configuration, now, max_age_s):
    """Why ``record`` (checked, or None) does not prove that ``node`` with these fingerprints passes now: [] when it
    does. ``hardware``/``configuration`` None: not read in this run, so nothing can match them."""
    if record is None:
        return ["no record of a validation on this node"]
    found = []
    if record["node"] != node:
        found.append("its record is %s's, not this node's" % record["node"])
    if hardware is None:
        found.append("its hardware was not read in this run (discovery did not run)")
    elif record["hardware"] != hardware:
        found.append("its hardware, OS, kernel or drivers changed since it was validated (discovery's record differs)")
    if configuration is None:
        found.append("its configuration was not checked in this run")
    elif record["configuration"] != configuration:
        found.append("its configuration, the validation's settings or the collection changed since it was validated")
    if not record["passed"]:
        found.append("its last validation failed (%s)" % ("; ".join(record["failures"][:3]) or "no figure passed"))
    age = now - date_seconds(record["validated_at"])
    if age < -CLOCK_SLACK_S:
        found.append("its record is dated in the future (%s)" % record["validated_at"])
    elif age > max_age_s:
        found.append("its last validation is older than %s (%s)" % (_age_text(max_age_s), record["validated_at"]))
    return found


def _age_text(seconds):
    days = seconds / 86400.0
    return ("%g day" % days) + ("" if days == 1 else "s")


def figures_text(record):
    """'all_reduce_perf 480.1 GB/s, ib_write_bw rail 0 -> gpu-02 371.2 Gb/s' - what a record's figures say."""
    parts = []
    for kind in FIGURE_KINDS:
        for entry in record["figures"].get(kind) or []:
            value = entry.get("value")
            measured = "no figure" if value is None else ("%g %s" % (value, entry.get("unit") or "")).strip()
            parts.append("%s %s%s" % (entry["label"], measured, "" if entry["passed"] else " (FAIL)"))
    return ", ".join(parts) or "no figures"


def reused_line(node, record):
    """The report's line for a node not measured again."""
    return "%s: not measured again: last validated %s, %s" % (node, record["validated_at"], figures_text(record))
