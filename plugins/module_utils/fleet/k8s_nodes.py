# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Kubernetes Nodes as the decider reads and changes them: the fleet and each Node's ledger record from a NodeList
(our taint, our cordon annotation, the ledger annotation), the records merged with the decider's own file, and the
JSON patch of a drain or resume that touches only what is ours. Pure: kubectl is run by decider.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.protocol import plain_name
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import LEDGER_ANNOTATION, check_record
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import CORDON_ANNOTATION, OURS, TAINT_KEY

_TAINT_VALUE = re.compile(r"[^A-Za-z0-9._-]")


def _taints(node_obj):
    taints = ((node_obj or {}).get("spec") or {}).get("taints") or []
    return taints if isinstance(taints, list) else []


def _annotations(node_obj):
    annotations = ((node_obj or {}).get("metadata") or {}).get("annotations") or {}
    return annotations if isinstance(annotations, dict) else {}


def k8s_node_ledger(node_obj):
    """Our ledger record kept on the Node (the LEDGER_ANNOTATION), or None when absent or damaged."""
    raw = _annotations(node_obj).get(LEDGER_ANNOTATION)
    if not raw:
        return None
    try:
        return check_record(json.loads(raw))
    except (TypeError, ValueError):
        return None


def k8s_fleet(node_list, device_rules=None):
    """A NodeList (kubectl get nodes -o json, or k8s_info's resources) -> (fleet, ledger nodes, objects).

    Every node is in one pool; drained = our taint, our cordon annotation or our DeviceTaintRules on its devices
    (``device_rules``: {node: [rules]}, k8s_device_taints.ours); the reason and its time come from our ledger
    annotation. An object of another shape raises ValueError (never a traceback).
    """
    device_rules = device_rules or {}
    items = node_list.get("items") if isinstance(node_list, dict) else node_list
    if not isinstance(items, list):
        raise ValueError("the node list has no items list")
    fleet, records, objects = {}, {}, {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
            raise ValueError("node list item %d is not a Node object" % index)
        name = item["metadata"].get("name")
        if not isinstance(name, str) or not plain_name(name):
            raise ValueError("node list item %d has no usable name: %r" % (index, name))
        if not isinstance(item.get("spec", {}), (dict, type(None))) or not isinstance(
                item["metadata"].get("annotations", {}), (dict, type(None))) or not isinstance(
                (item.get("spec") or {}).get("taints", []), (list, type(None))):
            raise ValueError("node %s has a spec or annotations of another shape" % name)
        record = k8s_node_ledger(item)
        ours = [t for t in _taints(item) if isinstance(t, dict) and t.get("key") == TAINT_KEY]
        rules = device_rules.get(name) or []
        ours = ours or [((r.get("spec") or {}).get("taint") or {}) for r in rules[:1]]
        mine = bool(ours) or CORDON_ANNOTATION in _annotations(item)
        last = ((record or {}).get("drains") or [{}])[-1]
        if mine and last.get("reason") and not last.get("shadow"):
            entry = {"partitions": [], "drained": True, "reason": last["reason"], "reason_time": last.get("at")}
        elif mine:  # our taint or cordon without its record: what drained it, and how often, is unknown
            entry = {"partitions": [], "drained": True, "record_missing": True, "reason_time": None,
                     "reason": "%s %s" % (OURS, ours[0].get("value") if ours and isinstance(ours[0].get("value"), str)
                                          else "cordoned")}
        elif (item.get("spec") or {}).get("unschedulable"):
            entry = {"partitions": [], "drained": True, "reason": "cordoned by someone else", "reason_time": None}
        else:
            entry = {"partitions": [], "drained": False, "reason": None, "reason_time": None}
        fleet[name], objects[name] = entry, item
        if record is not None:
            records[name] = record
    return fleet, records, objects


def taint_value(check):
    """A check name as a taint value (at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric)."""
    value = _TAINT_VALUE.sub("-", str(check or "unknown"))[:63].strip("-._")
    return value or "unknown"


def _pointer(key):
    return key.replace("~", "~0").replace("/", "~1")


def k8s_json_patch(node_obj, decision, record, now, cordon=True):
    """The RFC 6902 JSON patch that carries out a decision on a Node (None for none/held).

    It touches only what is ours, so a taint or annotation another controller adds meanwhile
    survives: a drain appends our taint (``/spec/taints/-``), a resume removes it by index after a
    ``test`` that it is still ours at that index; a list that does not exist yet is created only
    under a ``test`` of the node's resourceVersion. The ledger record rides in the same patch. Without ``cordon`` (a
    drain carried out as device taints, k8s_device_taints.py) a drain patches the ledger record alone.
    """
    if decision["action"] not in ("drain", "resume"):
        return None
    metadata = (node_obj or {}).get("metadata") or {}
    annotations = _annotations(node_obj)
    taints = _taints(node_obj)
    ops = []
    if not isinstance(((node_obj or {}).get("metadata") or {}).get("annotations"), dict):
        ops.append({"op": "test", "path": "/metadata/resourceVersion", "value": metadata.get("resourceVersion")})
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
    # The Node keeps the real history only (what the decider alone needs stays in its own file).
    kept = dict((key, [e for e in (record or {}).get(key) or [] if not e.get("shadow")]) for key in ("drains", "resumes"))
    ledger_value = json.dumps(kept, sort_keys=True, separators=(",", ":"))
    ops.append({"op": "add", "path": "/metadata/annotations/" + _pointer(LEDGER_ANNOTATION), "value": ledger_value})
    if decision["action"] == "drain" and not cordon:
        return ops
    if decision["action"] == "drain":
        check = decision["findings"][0].split("|", 1)[0] if decision["findings"] else None
        taint = {"key": TAINT_KEY, "value": taint_value(check), "effect": "NoSchedule"}
        if any(isinstance(t, dict) and t.get("key") == TAINT_KEY for t in taints):
            pass
        elif isinstance(((node_obj or {}).get("spec") or {}).get("taints"), list):
            ops.append({"op": "add", "path": "/spec/taints/-", "value": taint})
        else:
            if ops[0]["op"] != "test":
                ops.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": metadata.get("resourceVersion")})
            ops.append({"op": "add", "path": "/spec/taints", "value": [taint]})
        if not ((node_obj or {}).get("spec") or {}).get("unschedulable"):
            ops.append({"op": "add", "path": "/spec/unschedulable", "value": True})
            ops.append({"op": "add", "path": "/metadata/annotations/" + _pointer(CORDON_ANNOTATION), "value": str(int(now))})
        return ops
    for index in reversed(range(len(taints))):
        if isinstance(taints[index], dict) and taints[index].get("key") == TAINT_KEY:
            ops.append({"op": "test", "path": "/spec/taints/%d" % index, "value": taints[index]})
            ops.append({"op": "remove", "path": "/spec/taints/%d" % index})
    if CORDON_ANNOTATION in annotations:
        ops.append({"op": "test", "path": "/metadata/annotations/" + _pointer(CORDON_ANNOTATION),
                    "value": annotations[CORDON_ANNOTATION]})
        ops.append({"op": "remove", "path": "/metadata/annotations/" + _pointer(CORDON_ANNOTATION)})
        if ((node_obj or {}).get("spec") or {}).get("unschedulable"):
            ops.append({"op": "replace", "path": "/spec/unschedulable", "value": False})
    return ops


def merge_records(saved, annotated):
    """Kubernetes: the Nodes' annotations hold the real drains and resumes (an AWX run writes them too);
    the decider's own file keeps what the annotations cannot - shadow decisions, when a node was last
    unhealthy (the breaker), whether it is held back (told once), and an open intent."""
    nodes = dict(saved)
    for name, record in annotated.items():
        mine = saved.get(name) or {}
        merged = dict(mine)
        for key in ("drains", "resumes"):
            merged[key] = _with_intent(sorted([e for e in mine.get(key) or [] if e.get("shadow")] + list(record.get(key) or []),
                                              key=lambda e: e.get("at", 0)),
                                       ([e for e in mine.get(key) or [] if not e.get("shadow")] or [{}])[-1])
        nodes[name] = merged
    return nodes


def _with_intent(entries, intent):
    """A drain or resume still open in our file stays open: when the Node's annotation holds it (same time and reason)
    the patch went through and the decider died before it heard so - reconcile confirms it and it is told; when the
    annotation does not, the patch never went through - reconcile drops it (and a resume's certificate goes back)."""
    if not intent.get("pending"):
        return entries
    real = [e for e in entries if not e.get("shadow")]
    if real and (real[-1].get("at"), real[-1].get("reason")) == (intent["at"], intent.get("reason")):
        return [intent if e is real[-1] else e for e in entries]
    if real and real[-1].get("at", 0) > intent["at"]:
        return entries   # the Node holds a later decision (another decider's run): the intent was overtaken
    return entries + [intent]
