# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The decider's plan, the rack's phases (racks.py says what a rack is and when it decides):

- 3b ``rack_view`` (after drain_causes, before the fleet is counted): what each reported node says of its rack is
  remembered, each tray's fabric finding is kept for ``rack.window``, the racks whose trays' findings make a rack
  event now are found, and the unit each node counts as in the limits: a node of a rack in an event, or drained or
  resumed by a rack's decision, counts as its rack - once;
- 8b ``gather`` (after triage): the drain candidates of a rack in an event and the rack's other nodes in service become
  one RackDrain; the resume candidates drained by a rack's decision become one RackResume per rack. plan_drains and
  plan_resumes weigh each as one action (remediation_drains.drain_rack, remediation_resumes.resume_rack).

The first tray to report drains on its own at once, as any node does; when more trays of its rack report within the
window its drain becomes the rack's (it is ``joined``), so the rack's action is still one against the limits.

Pure: the phases read their arguments only and record in the plan's copy of the ledger (``ledger["racks"]``:
``nodes`` - what each node said, its fault, when it was last ready to return - and ``decisions`` - each rack's last
decision); remediation_counts says what ``ctx`` holds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import racks
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import finding_key, findings_from_reason
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_counts import counted, current_drain
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.remediation_triage import new_decision

# rack_of {node: rack}; members {rack: [nodes], sorted}; events {rack: Event}; units {node: ("rack", rack)}: the nodes
# that count as their rack in the limits (count_fleet, recent_resumes).
RackView = namedtuple("RackView", "rack_of members events units")
# A rack event: the trays that reported a fabric finding within the window, their findings' signs, the switch side
# they agree on (or None), and where the nodes' reports disagree with the configured rack (or None).
Event = namedtuple("Event", "rack faulted signs side disagree")
# members: [(decision, causes)] of the rack's nodes to drain now; joined: its nodes already out for this event.
RackDrain = namedtuple("RackDrain", "rack event members joined")
# candidates: triage's resume candidates drained by the rack's decision; others: [(node, record, entry, reason)] of its
# nodes drained by it that did not report now; decisions: the plan's list (a node that did not report gets its
# decision when the rack returns).
RackResume = namedtuple("RackResume", "rack candidates others decisions")


def memory_of(ledger):
    """The ledger's rack memory, made when missing."""
    return ledger.setdefault("racks", {"nodes": {}, "decisions": {}})


def _remember(reports, fleet, ledger, ctx):
    """{node: rack}: the configured racks (rack.racks) first, else what the node said of its chassis or domain, now
    or before (a tray whose fabric broke may report no domain). Nodes the scheduler no longer lists are forgotten."""
    memory = ledger.get("racks")
    for node in [n for n in (memory or {}).get("nodes", {}) if n not in fleet]:
        del memory["nodes"][node]
    for node, report in reports.items():
        rack = racks.rack_id(report.get("domain"))
        if rack and node in fleet:
            memory_of(ledger)["nodes"].setdefault(node, {}).update(rack=rack, domain=report["domain"], seen=ctx.now)
    rack_of = dict((node, entry["rack"]) for node, entry in ((ledger.get("racks") or {}).get("nodes") or {}).items()
                   if entry.get("rack"))
    for name, nodes in ctx.rack["racks"].items():
        rack_of.update((node, name) for node in nodes if node in fleet)
    return rack_of


def _record_faults(reports, causes_of, rack_of, ledger, ctx):
    """Each reported tray's fabric findings the policy drains for (rack.checks) kept with the scheduler's time; a
    complete report without one clears the tray's fault. A report also clears the tray's readiness to return: only
    this report can say it again (resume_rack), never an older one."""
    for node, report in reports.items():
        if node not in rack_of:
            continue
        fabric = [f for f in causes_of.get(node) or [] if f["check"] in ctx.rack["checks"]]
        nodes = (ledger.get("racks") or {}).get("nodes") or {}   # made by the first fault recorded
        nodes.get(node, {}).pop("ready", None)
        if fabric:
            memory_of(ledger)["nodes"].setdefault(node, {})["fault"] = {
                "at": ctx.now, "findings": [finding_key(f) for f in fabric], "signs": racks.signs(fabric)}
        elif report["complete"] and node in nodes:
            nodes[node].pop("fault", None)


def _disagreement(rack, members, nodes, ctx):
    """Where the nodes of a configured rack report more than one chassis, for a person; None otherwise."""
    if rack not in ctx.rack["racks"]:
        return None
    chassis = {}
    for node in members:
        serial = ((nodes.get(node) or {}).get("domain") or {}).get("chassis_serial")
        if serial:
            chassis.setdefault(serial, []).append(node)
    if len(chassis) < 2:
        return None
    return "the configuration puts %s in rack %s, and they report %d chassis: %s" % (
        ", ".join(members[:6]) + (" and %d more" % (len(members) - 6) if len(members) > 6 else ""), rack, len(chassis),
        "; ".join("%s (%s)" % (serial, ", ".join(chassis[serial][:4])) for serial in sorted(chassis)))


def _rack_units(fleet, ledger, ctx):
    """{node: ("rack", rack)} for the nodes whose last counted drain was a rack's and is in effect or within the rate
    interval: a rack drain counts once against max_nodes and max_percent."""
    units = {}
    for node, record in ledger["nodes"].items():
        drains = counted(record.get("drains") or [], ctx.shadow)
        if node not in fleet or not drains or not drains[-1].get("rack"):
            continue
        last = drains[-1]
        resumed = any(e.get("at", 0) >= last.get("at", 0) for e in counted(record.get("resumes") or [], ctx.shadow))
        if not resumed or ctx.now - last.get("at", 0) <= ctx.interval:
            units[node] = ("rack", last["rack"])
    return units


def rack_view(reports, fleet, causes_of, ledger, ctx):
    """Phase 3b: RackView. Records what the nodes said of their racks and their fabric faults in the ledger's rack
    memory; a rack whose trays reported a fault within rack.window, ``min_nodes`` or more, is in an event. With
    rack.enabled false nothing is remembered, and only the rack drains already made count as one."""
    units = _rack_units(fleet, ledger, ctx)
    if not ctx.rack["enabled"]:
        return RackView({}, {}, {}, units)
    rack_of = _remember(reports, fleet, ledger, ctx)
    _record_faults(reports, causes_of, rack_of, ledger, ctx)
    members = {}
    for node in sorted(rack_of):
        members.setdefault(rack_of[node], []).append(node)
    nodes = (ledger.get("racks") or {}).get("nodes") or {}
    events = {}
    for rack, names in members.items():
        faulted = [n for n in names if (nodes.get(n) or {}).get("fault")
                   and ctx.now - nodes[n]["fault"]["at"] <= ctx.rack["window"]]
        if len(faulted) >= ctx.rack["min_nodes"]:
            signs = dict((n, nodes[n]["fault"].get("signs") or []) for n in faulted)
            events[rack] = Event(rack, faulted, signs, racks.switch_side(signs),
                                 _disagreement(rack, names, nodes, ctx))
            units.update((n, ("rack", rack)) for n in names)
    return RackView(rack_of, members, events, units)


# --- after triage: the racks' drains and resumes as one item each ------------------------------------------------

def _joined(node, record, entry, event, ctx):
    """Whether a node gpufabric drained is already out for this rack's event: drained by the rack's decision, or
    drained on its own for a fabric finding within the window (its drain becomes the rack's)."""
    current = current_drain(record, entry, ctx.shadow)
    if current is None:
        return False
    if current.get("rack") == event.rack:
        return True
    fabric = any(k.split("|", 1)[0] in ctx.rack["checks"] for k in current.get("findings") or [])
    return node in event.faulted and fabric and ctx.now - current.get("at", 0) <= ctx.rack["window"]


def _rack_drain(rack, candidates, by_node, decisions, fleet, view, states, ledger, ctx):
    """The RackDrain of a rack in an event, or None when none of its nodes is left in service. A node someone else
    drained is left as it is; one gpufabric drained for something else stays as it is."""
    event = view.events[rack]
    given = dict((d["node"], (d, causes)) for d, causes in candidates)
    members, joined = [], []
    for node in view.members[rack]:
        drained, ours = states[node][0], states[node][1]
        if not drained:
            if node not in given:
                given[node] = (by_node.get(node) or _added(node, decisions, ctx), [])
            members.append(given[node])
        elif ours and _joined(node, ledger["nodes"].get(node), fleet[node], event, ctx):
            joined.append(node)
    return RackDrain(rack, event, members, joined) if members else None


def _added(node, decisions, ctx):
    """A decision for a node of a rack that did not report now (the rack decides for it)."""
    decision = new_decision(node, {"source": "rack"}, [], ctx)
    decisions.append(decision)
    return decision


def drained_by_rack(record, entry, ctx):
    """The rack whose decision drained the node (the ledger's entry in effect names it; without one, the drain reason
    the scheduler holds does: 'gpufabric: nvlink_rack rack <id> ...'), or None."""
    current = current_drain(record, entry, ctx.shadow)
    if current is not None:
        return current.get("rack")
    return racks.rack_of_keys(findings_from_reason(entry.get("reason"))[0])


def _rack_drains_in_effect(fleet, states, ledger, ctx):
    """{rack: [node]}: the nodes gpufabric holds out of service now by a rack's drain."""
    out = {}
    for node, entry in fleet.items():
        if states[node][1]:
            rack = drained_by_rack(ledger["nodes"].get(node), entry, ctx)
            if rack:
                out.setdefault(rack, []).append(node)
    return out


def gather(decisions, drains, resumes, fleet, view, states, ledger, ctx):
    """Phase 8b: (drains, resumes) with the racks' nodes taken out of triage's lists and put back as one RackDrain per
    rack in an event and one RackResume per rack drained by its decision. ``states``: Counts.effective. Decisions are
    added (and kept sorted by node) for the nodes of a rack that did not report now and drain with it."""
    by_node = dict((d["node"], d) for d in decisions)
    singles, by_rack = [], {}
    for decision, causes in drains:
        rack = view.rack_of.get(decision["node"])
        if rack in view.events:
            by_rack.setdefault(rack, []).append((decision, causes))
        else:
            singles.append((decision, causes))
    for rack in sorted(view.events):
        item = _rack_drain(rack, by_rack.get(rack, []), by_node, decisions, fleet, view, states, ledger, ctx)
        if item is not None:
            singles.append(item)
    in_effect = _rack_drains_in_effect(fleet, states, ledger, ctx)
    back, rack_candidates = [], {}
    for item in resumes:
        rack = drained_by_rack(item[1], item[2], ctx)
        if rack:
            rack_candidates.setdefault(rack, []).append(item)
        else:
            back.append(item)
    for rack in sorted(rack_candidates):
        asked = set(item[0]["node"] for item in rack_candidates[rack])
        others = [(node, ledger["nodes"].get(node) or {}, fleet[node], states[node][3])
                  for node in sorted(in_effect.get(rack, [])) if node not in asked]
        back.append(RackResume(rack, rack_candidates[rack], others, decisions))
    decisions.sort(key=lambda d: d["node"])
    return singles, back


def rack_certification(ctx):
    """The certification a rack's node returns on: required, and the policy's checks plus rack.certify."""
    cert = ctx.certification
    return dict(cert, required=True, checks=list(cert["checks"]) + [c for c in ctx.rack["certify"] if c not in cert["checks"]])


def _names(nodes, shown=8):
    return ", ".join(nodes[:shown]) + (" and %d more" % (len(nodes) - shown) if len(nodes) > shown else "")


def rack_why(event, count, joined, window):
    """What a rack's drain says: the trays, the window, the switch side, and that its nodes drain together."""
    side = "switch side: %s" % event.side if event.side else "the trays' findings do not agree on one switch-side cause"
    why = ("rack %s: %d trays reported NVLink fabric faults within %d s (%s); %s; its %d node(s) in service drain "
           "together (a partial NVLink domain cannot run a multi-node job)" % (
               event.rack, len(event.faulted), window, _names(event.faulted), side, count))
    if joined:
        why += "; %s drained for it already: one action with them" % _names(joined)
    if event.disagree:
        why += "; %s" % event.disagree
    return why
