# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decider's ledger: what it remembers between runs (each node's drains with the findings recorded at
the drain, its resumes, the cause it was last held back by; the open circuit breaker), checked when read back,
reconciled with the scheduler (a drain recorded as an intent before the decider acts is confirmed or dropped),
and rebuilt from the scheduler when it was lost.

Pure functions, standard library only; decider.py keeps the ledger on disk (Slurm) or on each Node (Kubernetes,
the LEDGER_ANNOTATION), remediation.plan reads and updates it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import is_ours

# The per-node ledger on Kubernetes (the API server holds it, so a one-shot AWX run sees it too).
LEDGER_ANNOTATION = "gpufabric.io/remediation"
LEDGER_VERSION = 1


def empty_ledger():
    return {"version": LEDGER_VERSION, "nodes": {}, "breaker": {"open": []}}


def check_ledger(ledger):
    """A ledger read back from disk, or ValueError when its shape is not ours (the caller sets it aside)."""
    if not isinstance(ledger, dict) or ledger.get("version") != LEDGER_VERSION:
        raise ValueError("not a version %d ledger" % LEDGER_VERSION)
    if not isinstance(ledger.get("nodes"), dict) or not isinstance(ledger.get("breaker"), dict):
        raise ValueError("nodes and breaker must be objects")
    for name, record in ledger["nodes"].items():
        check_record(record, name)
    breaker = ledger["breaker"]
    if not isinstance(breaker.get("open", []), list) or not all(isinstance(p, str) for p in breaker.get("open", [])):
        raise ValueError("breaker open must be a list of partition names")
    if not _number_or_none(breaker.get("since")):
        raise ValueError("breaker since must be a time")
    rebuilt = ledger.get("rebuilt")
    if rebuilt is not None and (not isinstance(rebuilt, dict) or rebuilt.get("at") is None
                                or not all(_number_or_none(rebuilt.get(k)) for k in ("at", "resumes_from"))):
        raise ValueError("rebuilt must be {at, resumes_from, ...} times")
    return ledger


def _number_or_none(value):
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
                             and abs(value) < 1e12)


def check_record(record, name="node"):
    """One node's ledger record, every field typed (ValueError otherwise): a record of another shape
    must never reach the planner, where it would stop every decision."""
    if not isinstance(record, dict):
        raise ValueError("%s: the record is not an object" % name)
    for key in ("drains", "resumes"):
        entries = record.get(key, [])
        if not isinstance(entries, list):
            raise ValueError("%s: %s must be a list" % (name, key))
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("at") is None or not _number_or_none(entry.get("at")):
                raise ValueError("%s: every entry of %s needs a time 'at'" % (name, key))
            if key == "drains" and (not isinstance(entry.get("findings", []), list)
                                    or not all(isinstance(f, str) for f in entry.get("findings", []))
                                    or not isinstance(entry.get("reason", ""), (str, type(None)))):
                raise ValueError("%s: a drain needs findings (texts) and a reason" % name)
    if record.get("certificate") is not None:
        certificate.check_stored(record["certificate"], name)
        if record["certificate"].get("at") is None or not _number_or_none(record["certificate"]["at"]):
            raise ValueError("%s: the certificate needs a time 'at'" % name)
    if not _number_or_none(record.get("unhealthy_at")) or not isinstance(record.get("held"), (str, type(None))):
        raise ValueError("%s: unhealthy_at must be a time and held a text" % name)
    return record


def reconcile(ledger, fleet):
    """Open intents against what the scheduler shows (in place). A drain is recorded as an intent (``pending``)
    before the decider acts and confirmed once the scheduler took it; a decider killed in between leaves it open.
    One the scheduler shows (the node drained with that reason) is confirmed; one it does not never happened and is
    dropped, so it counts toward no limit. Returns {"confirmed": [...], "dropped": [...]} node names."""
    done = {"confirmed": [], "dropped": []}
    for name in sorted(ledger["nodes"]):
        drains = ledger["nodes"][name].get("drains") or []
        if not drains or not drains[-1].get("pending"):
            continue
        entry = fleet.get(name) or {}
        if entry.get("drained") and entry.get("reason") == drains[-1].get("reason"):
            drains[-1].pop("pending")
            done["confirmed"].append(name)
        else:
            drains.pop()
            done["dropped"].append(name)
    return done


def rebuild(ledger, fleet, now, interval, scheduler):
    """The decider's state was lost (deleted, damaged, or never there): what the limits need, from the scheduler,
    in place; returns ledger["rebuilt"] = {at, scheduler, drains_in_effect, recent_drains, resumes_from}.

    Our drains are recognisable in the scheduler itself (the reason starts with 'gpufabric:', its time is
    slurmctld's), and plan counts those in effect against max_nodes and max_percent from the fleet, ledger or no
    ledger. What Slurm keeps no trace of is a resume: the resumes gpufabric made before the loss are unknown, so
    while any drain of ours is in effect no resume is made for one interval (resumes_from); unknown is not a
    budget left. Kubernetes keeps the whole record on each Node (annotations), so nothing is held there.
    """
    ours = [name for name, entry in fleet.items() if entry.get("drained") and is_ours(entry.get("reason"))]
    recent = [name for name in ours if fleet[name].get("reason_time") is None
              or now - fleet[name]["reason_time"] <= interval]
    held = bool(ours) and scheduler != "kubernetes"
    ledger["rebuilt"] = {"at": now, "scheduler": scheduler, "drains_in_effect": len(ours),
                         "recent_drains": len(recent), "resumes_from": now + interval if held else now}
    return ledger["rebuilt"]


def rebuilt_text(rebuilt, scheduler):
    """One line on a rebuild, for the log and the one message that tells it."""
    name = {"slurm": "Slurm", "kubernetes": "Kubernetes"}.get(scheduler, scheduler)
    text = ("the decider's state was missing or set aside: its limits are rebuilt from %s: %d node(s) drained by "
            "gpufabric, %d of them within the rate interval" % (name, rebuilt["drains_in_effect"], rebuilt["recent_drains"]))
    if rebuilt["resumes_from"] > rebuilt["at"]:
        text += ("; %s keeps no record of the resumes gpufabric made before, so none is made for %d s"
                 % (name, rebuilt["resumes_from"] - rebuilt["at"]))
    return text


def confirmed(record):
    """The record with its last drain confirmed: what the decider keeps, and hands the scheduler, once it took it."""
    record = dict(record)
    if record.get("drains") and record["drains"][-1].get("pending"):
        record["drains"] = record["drains"][:-1] + [dict((k, v) for k, v in record["drains"][-1].items() if k != "pending")]
    return record
