# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Alertmanager's webhook notifications, as pure functions: checked, turned into the chat messages the
health monitor sends (one per alert group, every node named, split only where a chat service's size
limit needs it), and into reports for the one remediation decider.

Alertmanager cannot sign a Lark or DingTalk message, so a small relay (roles/fleet_monitoring/files/
gpufabric_alert_relay.py) receives its notifications on loopback, queues these messages in an outbox
before it answers (a notification it could not save is answered 500, and Alertmanager sends it again),
and delivers them with the monitor's own formatting and signing (chat.build_request). Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import hostlist
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import chat, messages, outbox, protocol, settings
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import SEVERITIES, rank

SOURCE = "gpufabric.rdma.alert_relay"
# A notification holds at most this many alerts (the webhook receivers' max_alerts, what the relay and the decider
# take): a group of a 100,000-node fleet, in at most MAX_NOTIFICATION_BYTES.
MAX_ALERTS = 100000
# The largest notification the relay and the decider take: 10,000 nodes' alerts are about 6.3 MB, MAX_ALERTS about 63.
MAX_NOTIFICATION_BYTES = 64 * 1024 * 1024
# DingTalk takes 20,000 bytes of text, a Lark bot's request 20 KB: a part stays well inside both.
MAX_TEXT_BYTES = 12000
# What a message holds besides its node lines (heading, fields, fix hint, ids): kept free of the budget.
HEADER_BYTES = 1000
NODE_LABELS = ("node", "Hostname")


class AlertError(ValueError):
    """A notification that is not Alertmanager's webhook payload; the message says what is wrong."""


def _labels(value, where):
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise AlertError("%s must be an object of strings" % where)
    return value


def check_payload(data):
    """Alertmanager's webhook payload (version 4), checked: {status, groupKey, groupLabels, commonLabels,
    alerts: [{status, labels, annotations, startsAt, endsAt, fingerprint}]}; AlertError names what is wrong."""
    if not isinstance(data, dict):
        raise AlertError("the notification must be a JSON object")
    alerts = data.get("alerts")
    if not isinstance(alerts, list) or not alerts or len(alerts) > MAX_ALERTS:
        raise AlertError("alerts must be a list of 1 to %d alerts" % MAX_ALERTS)
    clean = []
    for index, alert in enumerate(alerts):
        if not isinstance(alert, dict) or alert.get("status") not in ("firing", "resolved"):
            raise AlertError("alerts[%d] needs a status of firing or resolved" % index)
        clean.append({"status": alert["status"], "labels": _labels(alert.get("labels") or {}, "alerts[%d].labels" % index),
                      "annotations": _labels(alert.get("annotations") or {}, "alerts[%d].annotations" % index),
                      "startsAt": str(alert.get("startsAt") or ""), "endsAt": str(alert.get("endsAt") or ""),
                      "fingerprint": str(alert.get("fingerprint") or "")})
    return {"status": "firing" if any(a["status"] == "firing" for a in clean) else "resolved",
            "groupKey": str(data.get("groupKey") or ""), "receiver": str(data.get("receiver") or ""),
            "groupLabels": _labels(data.get("groupLabels") or {}, "groupLabels"),
            "commonLabels": _labels(data.get("commonLabels") or {}, "commonLabels"), "alerts": clean}


def node_of(labels):
    """The node an alert is about: its ``node`` label, else dcgm-exporter's ``Hostname``, else the
    scrape ``instance`` without its port; None for a cluster-wide alert."""
    for name in NODE_LABELS:
        if labels.get(name):
            return labels[name]
    instance = labels.get("instance") or ""
    return instance.rsplit(":", 1)[0] if instance else None


def _what(alert):
    """One line's key: what is wrong where on a node, without the node's name (so the nodes sharing it
    are named together)."""
    labels, node = alert["labels"], node_of(alert["labels"])
    target = labels.get("target") or ""
    if node and target.startswith(node + "/"):
        target = target[len(node) + 1:]
    elif node and target.startswith(node + ":"):
        target = target[len(node) + 1:]
    summary = alert["annotations"].get("summary") or labels.get("alertname") or ""
    return "%s%s" % (target + ": " if target and target != node else "", summary)


def _entries(alerts, limit):
    """[(line, nodes)]: one line per fault and place, naming every node that has it; when the nodes' hostlist
    would pass ``limit`` bytes (names that do not compress), the nodes are spread over several lines."""
    by_what = {}
    for alert in alerts:
        by_what.setdefault(_what(alert), set()).add(node_of(alert["labels"]) or "(cluster)")
    entries = []
    for what, nodes in sorted(by_what.items()):
        ordered = sorted(nodes)
        line = "- %s: %s" % (hostlist.compress_hostlist(ordered), what)
        if len(line.encode("utf-8")) < limit:
            entries.append((line, set(ordered)))
            continue
        budget = max(100, limit - len(what.encode("utf-8")) - 20)
        chunk, size = [], 0
        for node in ordered + [None]:
            cost = len(node.encode("utf-8")) + 1 if node is not None else 0
            if chunk and (node is None or size + cost > budget):
                entries.append(("- %s: %s" % (hostlist.compress_hostlist(chunk), what), set(chunk)))
                chunk, size = [], 0
            if node is not None:
                chunk.append(node)
                size += cost
    return entries


def _split(entries, limit):
    """The entries in parts of at most ``limit`` bytes of text; a line longer than that is cut (its nodes
    stay in the part's host field)."""
    parts, current, size = [], [], 0
    for line, nodes in entries:
        cost = len(line.encode("utf-8")) + 1
        if current and size + cost > limit and any(named for ignored, named in current):
            parts.append(current)
            current, size = [], 0
        if cost > limit:
            line = line.encode("utf-8")[:max(limit - 4, 0)].decode("utf-8", "ignore") + "..."
        current.append((line, nodes))
        size += min(cost, limit)
    if current:
        parts.append(current)
    return parts


def group_bodies(payload, cluster, now, max_text=MAX_TEXT_BYTES):
    """One Alertmanager notification -> the message bodies to send (one, or several parts when the nodes'
    lines pass ``max_text`` bytes). Each body has the monitor's fields (source, status firing/resolved,
    event_id - the same for every notification of the group -, message_id - the same when Alertmanager
    sends the same notification again, so it is queued once -, cluster, host (every node, as a hostlist),
    fault_type, target, severity, detail, fix_hint, detected_at, cleared_at) and ``lines``: one per
    fault and place, naming its nodes."""
    labels = dict(payload["commonLabels"], **payload["groupLabels"])
    cluster = labels.get("cluster") or cluster
    firing = [a for a in payload["alerts"] if a["status"] == "firing"]
    resolved = [a for a in payload["alerts"] if a["status"] == "resolved"]
    severities = [a["labels"].get("severity") for a in firing or resolved if a["labels"].get("severity") in SEVERITIES]
    severity = sorted(severities, key=rank)[0] if severities else "warning"
    fault = labels.get("check") or labels.get("alertname") or "alert"
    entries = []
    if firing:
        entries += [("Firing (%d):" % len(firing), set())] + _entries(firing, max_text - HEADER_BYTES)
    if resolved:
        entries += [("Resolved (%d):" % len(resolved), set())] + _entries(resolved, max_text - HEADER_BYTES)
    group = hashlib.sha256(("%s\n%s" % (cluster, payload["groupKey"])).encode("utf-8")).hexdigest()[:16]
    content = "\n".join(sorted("%s|%s|%s|%s" % (a["fingerprint"], a["status"], a["startsAt"], a["endsAt"])
                               for a in payload["alerts"]))
    digest = hashlib.sha256(("%s\n%s" % (payload["groupKey"], content)).encode("utf-8")).hexdigest()[:24]
    starts = sorted(a["startsAt"] for a in payload["alerts"] if a["startsAt"])
    ends = sorted(a["endsAt"] for a in resolved if a["endsAt"] and not a["endsAt"].startswith("0001"))
    fix = sorted(set(a["annotations"].get("fix_hint") or a["annotations"].get("description") or ""
                     for a in firing or resolved) - set([""]))
    parts = _split(entries, max_text - HEADER_BYTES)
    everyone = set(node_of(a["labels"]) or "(cluster)" for a in payload["alerts"])
    # The heading names the nodes the message is about: those still firing, or, when all resolved, those.
    about = set(node_of(a["labels"]) or "(cluster)" for a in firing or resolved)
    bodies = []
    for number, part in enumerate(parts, 1):
        nodes = sorted(set().union(*[named for line, named in part]) & about if len(parts) > 1 else about)
        bodies.append({
            "source": SOURCE, "status": payload["status"], "event_id": "ga-" + group,
            "message_id": "ga-%s-%d" % (digest, number), "cluster": cluster,
            "host": hostlist.compress_hostlist(nodes), "fault_type": fault,
            "target": "%d alert(s) on %d node(s)%s" % (
                len(payload["alerts"]), len(everyone), " (part %d of %d)" % (number, len(parts)) if len(parts) > 1 else ""),
            "severity": severity, "detail": "%d firing, %d resolved" % (len(firing), len(resolved)),
            "fix_hint": "; ".join(fix)[:500], "detected_at": starts[0] if starts else messages.iso(now),
            "last_seen_at": messages.iso(now), "cleared_at": ends[-1] if payload["status"] == "resolved" and ends else None,
            "queued_at": messages.iso(now), "sent_at": None, "action": None, "lines": [line for line, named in part],
            "part": number, "parts": len(parts), "nodes": nodes,
        })
    return bodies


def decider_reports(payload):
    """The firing finding alerts of a notification as reports for the remediation decider: {node: report}.

    An alert names only the findings of its group, so a report made from alerts is never complete: it can
    lead to a drain (within the decider's limits and mode), never to a resume - a resume still needs the
    node's own complete check. Alerts without a check, severity and node (a stale exporter, a cluster-wide
    rule) are not findings and are left out.
    """
    reports = {}
    for alert in payload["alerts"]:
        labels = alert["labels"]
        node = node_of(labels)
        if alert["status"] != "firing" or not node or not labels.get("check") or labels.get("severity") not in SEVERITIES:
            continue
        if not protocol.plain_name(node):
            continue
        report = reports.setdefault(node, {
            "node": node, "findings": [], "complete": False, "source": "alert",
            "unreadable": ["alertmanager: an alert names only the findings of its group (a resume needs the node's own check)"]})
        report["findings"].append({"check": labels["check"], "severity": labels["severity"],
                                   "target": labels.get("target") or node,
                                   "detail": alert["annotations"].get("summary") or labels.get("alertname") or "",
                                   "fix_hint": alert["annotations"].get("fix_hint") or ""})
    return dict((node, protocol.check_report(report)) for node, report in reports.items())


# --- the relay's configuration and state ---------------------------------------------------------

RELAY_DEFAULTS = {"cluster": "gpufabric", "listen": "127.0.0.1", "port": 9095, "state_dir": "/var/lib/gpufabric-alert-relay",
                  "webhooks": [], "max_per_minute": 20, "timeout": 10, "deliver_deadline": 50, "deliver_interval": 5,
                  "max_text_bytes": MAX_TEXT_BYTES}
STATE_VERSION = 1
SEEN_SECONDS = 86400


def check_relay_config(config):
    """The relay's configuration with defaults, or settings.ConfigError naming the bad entry (never a URL or secret)."""
    if not isinstance(config, dict):
        raise settings.ConfigError("the configuration must be a JSON object")
    unknown = sorted(set(config) - set(RELAY_DEFAULTS))
    if unknown:
        raise settings.ConfigError("unknown configuration key(s): %s" % ", ".join(unknown))
    merged = dict(RELAY_DEFAULTS, **config)
    for name in ("cluster", "listen"):
        if not isinstance(merged[name], str) or not merged[name] or "\n" in merged[name] or " " in merged[name]:
            raise settings.ConfigError("%s must be a one-line string without spaces, got %r" % (name, merged[name]))
    for name, low, high in (("port", 0, 65535), ("max_per_minute", 1, 10000), ("max_text_bytes", 1000, 1000000)):
        value = merged[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise settings.ConfigError("%s must be a whole number from %d to %d, got %r" % (name, low, high, value))
    settings.seconds(merged, ("timeout", "deliver_deadline", "deliver_interval"), 3600)
    chat.check_webhooks(merged["webhooks"])
    if not merged["webhooks"]:
        raise settings.ConfigError("webhooks must name at least one webhook: the relay has nothing to send to")
    settings.state_dir(merged["state_dir"])  # the same rules for a directory we own
    return merged


def empty_state():
    return {"version": STATE_VERSION, "outbox": {}, "seen": {}}


def check_state(state):
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION or not isinstance(state.get("seen"), dict):
        raise ValueError("not a version %d relay state" % STATE_VERSION)
    outbox.check(state.get("outbox"))
    return state


def accept(state, payload, names, cluster, now, max_text=MAX_TEXT_BYTES):
    """Queue one notification's messages for the webhooks ``names`` in ``state`` (changed in place);
    returns how many messages were queued. A notification Alertmanager sends again (the same alerts in
    the same states) is queued once: its message ids are remembered for a day."""
    state["seen"] = dict((k, v) for k, v in state["seen"].items() if now - v < SEEN_SECONDS)
    queued = 0
    for body in group_bodies(payload, cluster, now, max_text):
        key = "%s|%s" % (",".join(sorted(names)), body["message_id"])
        if key in state["seen"]:
            continue
        state["seen"][key] = now
        outbox.enqueue(state["outbox"], names, body, now)
        queued += 1
    return queued


# --- Alertmanager's configuration ----------------------------------------------------------------

FINDING_ALERTS = "GpufabricFinding|GpufabricHealthCheckStale|GpufabricHealthCheckIncomplete|GpufabricHealthMetricsMissing"
DURATION = r"^[0-9]{1,6}(ms|s|m|h|d)$"


def alertmanager_config(webhook_names, relay_url, cluster="gpufabric", decider_url=None, decider_token=None,
                        group_wait="30s", group_interval="5m", repeat_interval="4h"):
    """Alertmanager's configuration (a dict for YAML) routing gpufabric's alerts.

    - grouped by cluster and check: a fault on many nodes is one notification naming them all;
    - each chat webhook (Lark/Feishu, DingTalk, Slack, generic) gets them through the relay at
      ``relay_url``/v1/alerts/<name>, which formats and signs them as the health monitor does;
    - with ``decider_url``, the findings also go to the remediation decider (bearer ``decider_token``);
    - inhibition: a node that is down silences its finding and exporter alerts (equal cluster, Hostname).
    Everything else goes to ``gpufabric-none``, which sends nothing: a site merging this into its own
    configuration takes the routes, receivers and inhibition rule.
    """
    for name, value in (("group_wait", group_wait), ("group_interval", group_interval), ("repeat_interval", repeat_interval)):
        if not isinstance(value, str) or not re.match(DURATION, value):
            raise settings.ConfigError("%s must be a duration such as 30s or 5m, got %r" % (name, value))
    if not isinstance(relay_url, str) or not re.match(r"^https?://[^\s/]+(:[0-9]+)?/?$", relay_url):
        raise settings.ConfigError("relay_url must be the relay's http://host:port, got %r" % (relay_url,))
    if not webhook_names and not decider_url:
        raise settings.ConfigError("give at least one webhook, or a decider: Alertmanager would have nowhere to send")
    receivers = [{"name": "gpufabric-none"}]
    routes = []
    if webhook_names:
        receivers.append({"name": "gpufabric-chat", "webhook_configs": [
            {"url": "%s/v1/alerts/%s" % (relay_url.rstrip("/"), name), "send_resolved": True, "max_alerts": MAX_ALERTS}
            for name in webhook_names]})
        routes.append({"receiver": "gpufabric-chat", "matchers": ['source="gpufabric"'], "continue": bool(decider_url)})
    if decider_url:
        if not isinstance(decider_url, str) or not re.match(r"^https?://\S+$", decider_url):
            raise settings.ConfigError("decider_url must be the decider's http:// or https:// address, got %r" % (decider_url,))
        if not isinstance(decider_token, str) or len(decider_token) < 16 or "\n" in decider_token:
            raise settings.ConfigError("decider_token must be a one-line secret of at least 16 characters")
        receivers.append({"name": "gpufabric-decider", "webhook_configs": [{
            "url": decider_url.rstrip("/") + ALERTMANAGER_PATH, "send_resolved": False, "max_alerts": MAX_ALERTS,
            "http_config": {"authorization": {"type": "Bearer", "credentials": decider_token}}}]})
        routes.append({"receiver": "gpufabric-decider", "matchers": ['alertname="GpufabricFinding"', 'severity="critical"'],
                       "group_wait": "10s", "group_interval": "1m"})
    return {
        "route": {"receiver": "gpufabric-none", "group_by": ["cluster", "check"],
                  "group_wait": group_wait, "group_interval": group_interval, "repeat_interval": repeat_interval,
                  "routes": routes},
        "inhibit_rules": [{"source_matchers": ['alertname="GpufabricNodeDown"'],
                           "target_matchers": ['alertname=~"%s"' % FINDING_ALERTS],
                           "equal": ["cluster", "Hostname"]}],
        "receivers": receivers,
    }


ALERTMANAGER_PATH = "/v1/alertmanager"
