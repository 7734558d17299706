# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The decider's ledger: what it remembers between runs (each node's drains with the findings recorded at
the drain, its resumes, the cause it was last held back by; the open circuit breaker), checked when read back,
reconciled with the scheduler (a drain or resume recorded as an intent before the decider acts is settled: confirmed,
or dropped with a resume's certificate put back), and rebuilt when it was lost: from its second copy, the decision
history (HISTORY_FILE: every node's drains and resumes, written with the ledger), or, when that is lost too, from the
scheduler with every drain and resume held for one interval.

Pure functions, standard library only; decider.py keeps the ledger and its history on disk (Slurm) or on each Node
(Kubernetes, the LEDGER_ANNOTATION), remediation.plan reads and updates it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import math

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import is_ours

# The per-node ledger on Kubernetes (the API server holds it, so a one-shot AWX run sees it too).
LEDGER_ANNOTATION = "gpufabric.io/remediation"
LEDGER_VERSION = 1
# The second copy of the decision history, beside the ledger in the decider's state directory.
HISTORY_FILE = "decider.history.json"
HISTORY_KIND = "gpufabric decider history"
# An open resume keeps here the certificate it would spend: put back when the resume did not happen.
KEPT_CERTIFICATE = "certificate_kept"
# What only an open intent carries (the Node's annotation never holds it).
INTENT_KEYS = ("pending", KEPT_CERTIFICATE)


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
    _check_rebuilt(ledger.get("rebuilt"))
    if "racks" in ledger:   # what the nodes said of their racks, and each rack's last decision (racks.py)
        _check_racks(ledger["racks"])
    return ledger


def _check_racks(memory):
    """The ledger's rack memory (remediation_racks): {"nodes": {node: {rack, domain, seen, fault, ready}}, "decisions":
    {rack: {action, at, nodes, ...}}}, every field typed (ValueError otherwise)."""
    if not isinstance(memory, dict) or not isinstance(memory.get("nodes", {}), dict) or \
            not isinstance(memory.get("decisions", {}), dict):
        raise ValueError("racks must be {nodes, decisions} objects")
    for name, entry in memory.get("nodes", {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("rack", ""), (str, type(None))) \
                or not all(_number_or_none(entry.get(k)) for k in ("seen", "ready")):
            raise ValueError("racks: %s needs a rack name and times" % name)
        fault = entry.get("fault")
        if fault is not None and (not isinstance(fault, dict) or fault.get("at") is None or not _number_or_none(fault["at"])
                                  or not all(isinstance(fault.get(k, []), list) and all(isinstance(f, str) for f in fault.get(k, []))
                                             for k in ("findings", "signs"))):
            raise ValueError("racks: %s's fault needs a time 'at' and findings" % name)
    for rack, decision in memory.get("decisions", {}).items():
        if not isinstance(decision, dict) or decision.get("action") not in ("drain", "resume") \
                or decision.get("at") is None or not _number_or_none(decision["at"]) \
                or not isinstance(decision.get("nodes", []), list) or not all(isinstance(n, str) for n in decision.get("nodes", [])):
            raise ValueError("racks: the decision of rack %s needs an action, a time and nodes" % rack)


def _check_rebuilt(rebuilt):
    if rebuilt is not None and (not isinstance(rebuilt, dict) or rebuilt.get("at") is None
                                or rebuilt.get("resumes_from") is None
                                or not all(_number_or_none(rebuilt.get(k)) for k in ("at", "resumes_from", "drains_from", "restored"))
                                or not all(isinstance(rebuilt.get(k), (str, type(None))) for k in ("why", "source"))):
        raise ValueError("rebuilt must be {at, resumes_from, drains_from, ...} times and why a text")


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
                                    or not all(isinstance(f, str) for f in entry.get("findings", []))):
                raise ValueError("%s: a drain needs findings (texts) and a reason" % name)
            if not isinstance(entry.get("reason", ""), (str, type(None))) or not isinstance(entry.get("pending", False), bool):
                raise ValueError("%s: an entry of %s needs a reason (a text) and pending true or false" % (name, key))
            if not all(isinstance(entry.get(k, ""), (str, type(None))) for k in ("rack", "side")):
                raise ValueError("%s: the rack of an entry of %s must be a text" % (name, key))
            if entry.get(KEPT_CERTIFICATE) is not None:
                certificate.check_stored(entry[KEPT_CERTIFICATE], name)
                if entry[KEPT_CERTIFICATE].get("at") is None or not _number_or_none(entry[KEPT_CERTIFICATE]["at"]):
                    raise ValueError("%s: the kept certificate needs a time 'at'" % name)
    if record.get("certificate") is not None:
        certificate.check_stored(record["certificate"], name)
        if record["certificate"].get("at") is None or not _number_or_none(record["certificate"]["at"]):
            raise ValueError("%s: the certificate needs a time 'at'" % name)
    if not _number_or_none(record.get("unhealthy_at")) or not isinstance(record.get("held"), (str, type(None))):
        raise ValueError("%s: unhealthy_at must be a time and held a text" % name)
    return record


def reconcile(ledger, fleet):
    """Open intents against what the scheduler shows (in place). A drain or a resume is recorded as an intent
    (``pending``) before the decider acts, and settled once the scheduler answered; a decider killed in between
    leaves it open, and the next run settles it here. A drain is taken when the scheduler shows the node drained with
    that reason; a resume when it no longer does (the node is in service, drained by someone else since, or gone).
    An intent not taken never happened: it is dropped and counts toward no limit (a resume's certificate goes back).
    Until then it counts: an open resume is a resume. Returns {"confirmed": [...], "dropped": [...]}: the entries,
    each with its ``node``, ``action`` (drain or resume) and ``now`` (the scheduler's entry for the node, or None)."""
    done = {"confirmed": [], "dropped": []}
    for name in sorted(ledger["nodes"]):
        record = ledger["nodes"][name]
        for key, action in (("drains", "drain"), ("resumes", "resume")):
            entries = record.get(key) or []
            if not entries or not entries[-1].get("pending"):
                continue
            now = fleet.get(name)
            holds = bool(now and now.get("drained") and now.get("reason") == entries[-1].get("reason"))
            taken = holds if action == "drain" else not holds
            entry = settle(record, key, taken)
            done["confirmed" if taken else "dropped"].append(dict(entry, node=name, action=action, now=now))
    return done


def settle(record, key, taken):
    """The open intent ending ``record[key]`` (drains or resumes) settled, in place; returns it. Taken: the mark goes
    (a resume spends its certificate). Not taken: the entry goes, and a resume's certificate is put back unless a
    newer one was recorded since."""
    entry = record[key][-1]
    if taken:
        record[key][-1] = dict((k, v) for k, v in entry.items() if k not in INTENT_KEYS)
        return record[key][-1]
    record[key].pop()
    kept = entry.get(KEPT_CERTIFICATE)
    if kept is not None and (record.get("certificate") or {}).get("at", -1) < kept.get("at", 0):
        record["certificate"] = kept
    return dict((k, v) for k, v in entry.items() if k != KEPT_CERTIFICATE)


def history_of(ledger, saved_at):
    """The ledger's second copy: every node's drains and resumes (open intents and shadow ones too: reconcile and
    shadow mode read them as they read the ledger), and a hold a rebuild put on drains or resumes while it lasts."""
    nodes = dict((name, {"drains": list(record.get("drains") or []), "resumes": list(record.get("resumes") or [])})
                 for name, record in ledger["nodes"].items() if record.get("drains") or record.get("resumes"))
    history = {"kind": HISTORY_KIND, "version": LEDGER_VERSION, "saved_at": saved_at, "nodes": nodes}
    if any(held_until(ledger.get("rebuilt")).values()):
        history["rebuilt"] = ledger["rebuilt"]
    return history


def held_until(rebuilt):
    """{"drain": time, "resume": time}: until when a rebuild holds each (the scheduler's clock), 0 when it does not."""
    rebuilt = rebuilt or {}
    return dict((action, rebuilt[key] if (rebuilt.get(key) or 0) > rebuilt.get("at", 0) else 0)
                for action, key in (("drain", "drains_from"), ("resume", "resumes_from")))


def check_history(history):
    """A decision history read back from disk, or ValueError when it is not ours (the caller sets it aside)."""
    if not isinstance(history, dict) or history.get("kind") != HISTORY_KIND or history.get("version") != LEDGER_VERSION:
        raise ValueError("not a version %d decision history of gpufabric's decider" % LEDGER_VERSION)
    if not isinstance(history.get("nodes"), dict) or history.get("saved_at") is None or not _number_or_none(history["saved_at"]):
        raise ValueError("nodes must be an object and saved_at a time")
    for name, record in history["nodes"].items():
        check_record(record, name)
    _check_rebuilt(history.get("rebuilt"))
    return history


def restore(ledger, history):
    """The drains and resumes of a decision history put back into a ledger that was lost (in place); a hold the
    lost ledger still had stays. Returns how many nodes' records came back."""
    for name, record in history["nodes"].items():
        ledger["nodes"].setdefault(name, {}).update(copy.deepcopy(record))
    if history.get("rebuilt"):
        ledger["rebuilt"] = copy.deepcopy(history["rebuilt"])
    return len(history["nodes"])


def rebuild(ledger, fleet, now, interval, scheduler, restored=None, lost=None):
    """The decider's ledger was lost (deleted, damaged, or never there): what the limits need, in place; returns
    ledger["rebuilt"] = {at, scheduler, source, drains_in_effect, recent_drains, drains_from, resumes_from, why}.

    Our drains are recognisable in the scheduler itself (the reason starts with 'gpufabric:', its time is
    slurmctld's), and plan counts those in effect against max_nodes and max_percent from the fleet, ledger or no
    ledger. The drains and resumes already over are in the decision history only: ``restored`` says how many
    nodes' records came back from it (restore), and then nothing is held. Without it, Slurm keeps no trace of them:
    when the history was set aside or lost (``lost`` says why), or Slurm shows drains of ours the history should
    hold, no drain and no resume is made for one interval (drains_from, resumes_from): unknown is not a budget left.
    Only a decider with no file and no drain of its own anywhere - its first start - acts at once. Kubernetes keeps
    the whole record on each Node (annotations), so nothing is held there.
    """
    ours = [name for name, entry in fleet.items() if entry.get("drained") and is_ours(entry.get("reason"))]
    recent = [name for name in ours if fleet[name].get("reason_time") is None
              or now - fleet[name]["reason_time"] <= interval]
    why = None
    if restored is None and scheduler != "kubernetes":
        why = lost or ("no copy of the decision history (%s) was found, and %d node(s) drained by gpufabric show it "
                       "ran before" % (HISTORY_FILE, len(ours)) if ours else None)
    held = now + interval if why else now
    previous = ledger.get("rebuilt") or {}   # a hold restored with the history runs to its end
    ledger["rebuilt"] = {"at": now, "scheduler": scheduler, "source": "history" if restored is not None else scheduler,
                         "restored": restored or 0, "drains_in_effect": len(ours), "recent_drains": len(recent),
                         "drains_from": max(held, previous.get("drains_from") or now),
                         "resumes_from": max(held, previous.get("resumes_from") or now),
                         "why": why[:400] if why else previous.get("why")}
    return ledger["rebuilt"]


def rebuilt_text(rebuilt, scheduler):
    """One line on a rebuild, for the log and the one message that tells it."""
    name = {"slurm": "Slurm", "kubernetes": "Kubernetes"}.get(scheduler, scheduler)
    counted = "%d node(s) drained by gpufabric, %d of them within the rate interval" % (
        rebuilt["drains_in_effect"], rebuilt["recent_drains"])
    if rebuilt.get("source") == "history":
        text = ("the decider's state was missing or set aside: its decision history was restored from its second copy "
                "(%s): %d node record(s); %s shows %s" % (HISTORY_FILE, rebuilt.get("restored", 0), name, counted))
    else:
        text = "the decider's state was missing or set aside: its limits are rebuilt from %s: %s" % (name, counted)
    held = max(held_until(rebuilt).values())
    if held:
        text += ("; its decision history could not be rebuilt (%s): the drains and resumes gpufabric made before are "
                 "unknown, so every drain and resume is held for %d s" % (rebuilt.get("why") or "unknown", held - rebuilt["at"]))
    return text


def confirmed(record):
    """The record with its open intents as the scheduler will hold them once it took them: what the Node's annotation
    is patched with (Kubernetes), never an open mark or a kept certificate."""
    record = dict(record)
    for key in ("drains", "resumes"):
        entries = record.get(key) or []
        if entries and any(k in entries[-1] for k in INTENT_KEYS):
            record[key] = entries[:-1] + [dict((k, v) for k, v in entries[-1].items() if k not in INTENT_KEYS)]
    return record
