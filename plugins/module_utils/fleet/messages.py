# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The messages gpufabric sends people, as data and as text: a node's event (new, worse, repeat, recovered), a
decision of the remediation decider (drained, resumed, held back, ...), an Alertmanager group. The generic webhook
receives the payload itself; every chat message is ``text_message`` of it. Pure; the chat services' envelopes and
signatures are chat.py's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import hashlib
import uuid

SOURCE = "gpufabric.rdma.health_monitor"
DECIDER_SOURCE = "gpufabric.rdma.remediator"
TITLES = {"new": "FAULT", "worse": "FAULT WORSE", "repeat": "STILL FAULTY", "recovered": "RECOVERED"}


def iso(timestamp):
    if timestamp is None:
        return None
    moment = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def payload(cluster, host, event, kind, now, message_id=None):
    """The event as the generic webhook receives it; the chat messages are rendered from it.

    ``sent_at`` is filled in when it is sent (a message can wait in the outbox through an outage).
    """
    return {
        "source": SOURCE, "status": kind, "event_id": event["event_id"],
        "message_id": message_id or str(uuid.uuid4()),
        "cluster": cluster, "host": host, "fault_type": event["check"], "target": event["target"],
        "severity": event["severity"], "detail": event["detail"], "fix_hint": event["fix_hint"],
        "detected_at": iso(event["first_seen"]), "last_seen_at": iso(event["last_seen"]),
        "cleared_at": iso(event.get("cleared_at")), "queued_at": iso(now), "sent_at": None,
        "action": event.get("action"),
    }


DECISION_TITLES = {"drained": "DRAINED", "resumed": "RESUMED", "held": "HELD BACK", "escalated": "ESCALATED",
                   "shadow": "SHADOW MODE", "could-not-act": "COULD NOT ACT", "breaker-open": "CIRCUIT BREAKER OPEN",
                   "breaker-closed": "CIRCUIT BREAKER CLOSED", "rebuilt": "DECIDER STATE REBUILT",
                   "outbox-lost": "MESSAGES LOST"}
DECIDER_SOURCE = "gpufabric.rdma.remediator"


def decision_payload(cluster, decider, message, now, message_id=None):
    """A decision of the remediation decider as a message: drained, resumed, held back, escalated, shadow,
    could-not-act, breaker-open, breaker-closed, rebuilt or outbox-lost; ``message`` comes from remediation.messages
    (or the decider's own, for its state and its outbox)."""
    event_id = "gd-" + hashlib.sha256(("%s\n%s\n%s\n%.3f" % (
        cluster, message["node"], message["status"], now)).encode("utf-8")).hexdigest()[:16]
    return {
        "source": DECIDER_SOURCE, "status": message["status"], "event_id": event_id,
        "message_id": message_id or str(uuid.uuid4()), "cluster": cluster, "host": message["node"],
        "fault_type": message.get("check") or "remediation", "target": message.get("target") or message["node"],
        "severity": message.get("severity") or "warning", "detail": message["detail"],
        "fix_hint": message.get("fix_hint") or "", "detected_at": iso(now), "last_seen_at": iso(now),
        "cleared_at": None, "queued_at": iso(now), "sent_at": None, "action": message.get("action"),
        "policy": message.get("policy"), "decided_by": decider,
    }


GROUP_TITLES = {"firing": "FIRING", "resolved": "RESOLVED"}


def text_message(body):
    """Seed 004's E-HPC fault notice, in English: one field per line, the event id to quote. An alert
    group from Alertmanager (alerts.group_bodies) names its nodes, one line per fault and place."""
    status = body["status"]
    if body.get("lines") is not None:
        nodes = body["host"] if len(body["host"]) <= 200 else "%d nodes (named below)" % len(body.get("nodes") or [])
        head = "[gpufabric] %s: %s (%s) on %s in cluster %s%s" % (
            GROUP_TITLES.get(status, status.upper()), body["fault_type"], body["severity"], nodes, body["cluster"],
            " - part %d of %d" % (body["part"], body["parts"]) if body.get("parts", 1) > 1 else "")
        lines = [head, "Cluster: %s" % body["cluster"], "Fault type: %s" % body["fault_type"],
                 "Severity: %s" % body["severity"], "Alerts: %s (%s)" % (body["target"], body["detail"])]
        lines += body["lines"]
        if body.get("fix_hint"):
            lines.append("Fix hint: %s" % body["fix_hint"])
        lines.append("Since: %s" % body["detected_at"])
        if body.get("cleared_at"):
            lines.append("Cleared at: %s" % body["cleared_at"])
        lines += ["Message ID: %s" % body["message_id"], "Event ID: %s (quote it when you follow up)" % body["event_id"]]
        return "\n".join(lines)
    if status in DECISION_TITLES:
        head = "[gpufabric] %s: %s (cluster %s)" % (DECISION_TITLES[status], body["action"] or body["detail"],
                                                    body["cluster"])
    elif status == "recovered":
        head = "[gpufabric] %s: %s on %s (cluster %s) is gone since %s" % (
            TITLES[status], body["fault_type"], body["host"], body["cluster"], body["cleared_at"])
    elif status == "repeat":
        head = "[gpufabric] %s: node %s in cluster %s has had this fault since %s" % (
            TITLES[status], body["host"], body["cluster"], body["detected_at"])
    else:
        head = "[gpufabric] %s: node %s in cluster %s has a %s fault, detected at %s" % (
            TITLES[status], body["host"], body["cluster"], body["severity"], body["detected_at"])
    lines = [head,
             "Cluster: %s" % body["cluster"],
             "Host: %s" % body["host"],
             "Fault type: %s" % body["fault_type"],
             "Fault target: %s" % body["target"],
             "Severity: %s" % body["severity"],
             "Detail: %s" % body["detail"]]
    if body.get("fix_hint"):
        lines.append("Fix hint: %s" % body["fix_hint"])
    lines.append("%s at: %s" % ("Decided" if status in DECISION_TITLES else "Detected", body["detected_at"]))
    if body.get("cleared_at"):
        lines.append("Cleared at: %s" % body["cleared_at"])
    if body.get("action") and status not in DECISION_TITLES:
        lines.append("Action: %s" % body["action"])
    if body.get("policy"):
        lines.append("Policy: %s, decided by %s" % (body["policy"], body.get("decided_by")))
    if body.get("queued_at") and body.get("sent_at") and body["queued_at"] != body["sent_at"]:
        lines.append("Queued at: %s (sent %s, after a delivery failure)" % (body["queued_at"], body["sent_at"]))
    lines += ["Message ID: %s" % body["message_id"],
              "Event ID: %s (quote it when you follow up)" % body["event_id"]]
    return "\n".join(lines)
