# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What site.yml's validation measures, and what it keeps of a measurement for the next run.

Pure, standard library only; the validation_plan and node_validation filters call it on the controller.

``plan`` decides, from each node's last validation record (judge/validation_record.py) and what this run found, who is
measured: a node whose configuration drifted or whose phases found no record of theirs (the applied module's reasons),
a new node (no record), one whose record does not prove it passes now (other hardware, another configuration,
failed, older than the age allowed, damaged), and every node when asked. The others are reported from their
records, not measured again. A pair test needs a partner: a node in service whose last validation passed (the one
validated longest ago) joins a node that would measure alone.

``node_record`` is what a node's record says after it was measured: its figures in the runs it took part in, passed
only when it took part in at least one run and every one of them passed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from collections.abc import Mapping

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_run
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation_record as records

# The configure phase whose fingerprint holds the SSH mesh (every host of the play): a host added or removed changes it
# on every node without changing any node, so its settings are counted by name (openmpi_*) instead of its fingerprint.
MESH_PHASE = "mpi"
ALL = "all"
CHANGED = "changed"


def configuration_fingerprint(phases, settings, code):
    """The fingerprint a record's configuration is compared by: the configure phases' fingerprints as the applied module
    computed them (all but the mesh's), the validation's settings as the host sees them, and the collection's code."""
    own = dict((p.get("name"), p.get("fingerprint")) for p in phases or [] if isinstance(p, Mapping) and p.get("name") != MESH_PHASE)
    return records.fingerprint({"phases": own, "settings": settings or {}, "code": code or ""})


def _ran(ran, settings_changed):
    """The configure phases that ran on the node for what the fingerprint does not cover: drift, no record, a record
    that cannot be used. A phase that ran because its settings or the code changed is judged by the fingerprint."""
    if ran is None:
        return ["configure did not check its phases in this run (configure_skip_unchanged=false runs them all, or "
                "--tags left configure out)"]
    return ["configuration phase %s ran: %s" % (phase, ran[phase]) for phase in sorted(ran) if ran[phase] != settings_changed]


def _assess(node, every, now, max_age_s, settings_changed):
    """(why the node is measured [], its checked record or None)."""
    why = ["asked for (gpufabric_validate=all)"] if every else []
    record, problem = None, node.get("problem")
    if not problem and node.get("record") is not None:
        try:
            record = records.check_record(node["record"])
        except ValueError as exc:
            problem = str(exc)
    if problem:
        why.append("its validation record cannot be used: %s" % problem)
    else:
        why += records.reasons(record, node["name"], node.get("hardware"), node.get("configuration"), now, max_age_s)
    return why + _ran(node.get("ran"), settings_changed), record


def _partner(reused, taken):
    """The node in service whose last validation passed longest ago (ties: play order), not yet measured."""
    free = [(records.date_seconds(record["validated_at"]), index, name)
            for index, (name, record) in enumerate(reused) if name not in taken]
    return min(free)[2] if free else None


def _paired(measure, pairs, names):
    """perftest_pairs' peers of the nodes measured, in the play: [(peer, node)], each peer once."""
    out, seen = [], set()
    for pair in pairs or []:
        ends = [pair.get("server"), pair.get("client")]
        for one, other in (ends, ends[::-1]):
            if one in measure and other in names and other not in measure and other not in seen:
                seen.add(other)
                out.append((other, one))
    return out


def plan(nodes, mode=CHANGED, now=0, max_age_s=7 * 86400, pair_tests=True, pairs=None, settings_changed=None):
    """``nodes`` in play order: [{name, record, problem, hardware, configuration, ran}] (record: what the module read,
    None when there is none; problem: why it could not be read; ran: the applied module's run, None when configure did
    not check). -> {measure: [names, play order], why: {name: [reasons]}, reused: {name: record}, partners:
    {partner: node}, fingerprints: {name: {hardware, configuration}} of the nodes measured, lines: [report lines]}."""
    if mode not in (CHANGED, ALL):
        raise ValueError("gpufabric_validate must be %s or %s, got %r" % (CHANGED, ALL, mode))
    why, reused = {}, []
    for node in nodes:
        found, record = _assess(node, mode == ALL, now, max_age_s, settings_changed)
        if found:
            why[node["name"]] = found
        else:
            reused.append((node["name"], record))
    names = [node["name"] for node in nodes]
    partners = dict(_paired(set(why), pairs, set(names)))
    measure = set(why) | set(partners)
    # A node that would measure alone (or the odd one out of the play's pairs) needs a partner for the pair tests.
    needed = pair_tests and bool(measure) and (len(measure) == 1 or (not pairs and len(measure) % 2 == 1))
    chosen = _partner(reused, measure) if needed else None
    if chosen is not None:
        partners[chosen] = [name for name in names if name in measure][-1]
        measure.add(chosen)
    by_name = dict((node["name"], node) for node in nodes)
    out = {"measure": [name for name in names if name in measure], "why": why, "partners": partners,
           "reused": dict((name, record) for name, record in reused if name not in measure),
           "fingerprints": dict((name, {"hardware": by_name[name].get("hardware"),
                                        "configuration": by_name[name].get("configuration")})
                                for name in names if name in measure)}
    out["lines"] = plan_lines(out, names, needed and chosen is None)
    return out


def plan_lines(planned, names, no_partner=False):
    """One line per node, in play order: why it is measured, or what its last validation measured."""
    lines = []
    for name in names:
        if name in planned["why"]:
            lines.append("%s: measured: %s" % (name, "; ".join(planned["why"][name])))
        elif name in planned["partners"]:
            lines.append("%s: measured as the partner of %s in the pair tests (its last validation passed)"
                         % (name, planned["partners"][name]))
        elif name in planned["reused"]:
            lines.append(records.reused_line(name, planned["reused"][name]))
    if no_partner and planned["measure"]:
        lines.append("no partner for the pair tests: no other node in service has a passing validation record")
    return lines


def _finite(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def _cut(text):
    text = " ".join(str(text).split())
    return text if len(text) <= records.MAX_TEXT else text[:records.MAX_TEXT - 3] + "..."


def _perftest_figure(run):
    rows = (run.get("result") or {}).get("rows") or []
    last = rows[-1] if rows else {}
    if (run.get("result") or {}).get("kind") == "bandwidth":
        return _finite(last.get("bw_average")), last.get("unit") or ""
    return _finite(last.get("t_typical_us")), "us"


def node_record(node, nccl_judged, perftest_judged, fingerprints, validated_at):
    """The record of ``node``'s validation: its figures in the nccl-tests runs (judged, nccl_tests_judged) and perftest
    runs (perftest_judged) it took part in, passed when there is at least one and all passed."""
    figures = {"nccl_tests": [], "perftest": []}
    failures = []
    for run in nccl_judged or []:
        if node not in str(run.get("host") or "").split(","):
            continue
        _size, busbw = nccl_run.figure(run)
        figures["nccl_tests"].append({"label": _cut(run.get("label") or "nccl-tests"), "value": _finite(busbw),
                                      "unit": "GB/s", "passed": bool(run.get("passed"))})
        failures += ["%s: %s" % (run.get("label"), failure) for failure in run.get("failures") or []]
    for run in perftest_judged or []:
        if node not in (run.get("client"), run.get("server")):
            continue
        label = "%s %s -> %s" % (run.get("test"), run.get("client"), run.get("server"))
        if isinstance(run.get("rail"), Mapping):
            label += " rail %s" % run["rail"].get("index")
        value, unit = _perftest_figure(run)
        figures["perftest"].append({"label": _cut(label), "value": value, "unit": unit, "passed": bool(run.get("passed"))})
        failures += list(run.get("failures") or [])
    taken = figures["nccl_tests"] + figures["perftest"]
    record = {"schema": records.SCHEMA, "node": node, "validated_at": validated_at,
              "passed": bool(taken) and all(entry["passed"] for entry in taken),
              "hardware": (fingerprints or {}).get("hardware"), "configuration": (fingerprints or {}).get("configuration"),
              "figures": dict((kind, entries[:records.MAX_FIGURES]) for kind, entries in figures.items()),
              "failures": [_cut(line) for line in failures[:records.MAX_FIGURES]]}
    return records.check_record(record)
