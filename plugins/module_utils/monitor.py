# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the health monitor decides, as pure functions: the program itself (the clock, the state
file, HTTP) is roles/health_monitor/files/gpufabric_health_monitor.py, which a systemd timer runs.

Each run checks the node (node_checks.check_node, the checks of the node_health module), compares
the findings with the state the last run saved (``plan``), and posts what changed to every webhook:

- ``new``: a finding not seen before (one message per finding and webhook);
- ``worse``: a finding whose severity rose;
- ``repeat``: a finding still present a quiet period after it was last sent;
- ``recovered``: a finding that is gone, sent to each webhook that was told of it.

A message that could not be delivered is tried again by the next run; nothing else is re-sent.
Webhook types: Lark/Feishu custom bots (text, optional signature), DingTalk custom robots (text,
optional signature), Slack incoming webhooks and a generic JSON endpoint (the event itself, with an
optional HMAC-SHA256 signature header). URLs and secrets are read from the configuration file and
never printed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import hashlib
import hmac
import json
import base64
import uuid

try:
    from urllib.parse import quote_plus
except ImportError:  # pragma: no cover - Python 2
    from urllib import quote_plus

from ansible_collections.gpufabric.rdma.plugins.module_utils import health, remediation, text
from ansible_collections.gpufabric.rdma.plugins.module_utils.health import SEVERITY_ORDER as SEVERITY_RANK

WEBHOOK_TYPES = ("lark", "feishu", "dingtalk", "slack", "generic")
KINDS = ("new", "worse", "repeat", "recovered")
TITLES = {"new": "FAULT", "worse": "FAULT WORSE", "repeat": "STILL FAULTY", "recovered": "RECOVERED"}
SOURCE = "gpufabric.rdma.health_monitor"
STATE_VERSION = 1


class ConfigError(ValueError):
    """The monitor's configuration cannot be used; the message names the bad entry (never a URL or secret)."""


def event_key(found):
    return "%s|%s" % (found["check"], found["target"])


def new_event_id(cluster, host, key, first_seen):
    text = "%s\n%s\n%s\n%.6f" % (cluster, host, key, first_seen)
    return "gf-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def iso(timestamp):
    if timestamp is None:
        return None
    moment = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def empty_state():
    return {"version": STATE_VERSION, "events": {}, "counters": None}


def plan(state, findings, webhook_names, now, quiet_period, cluster, host, min_severity="warning", send_recovery=True,
         actions=None):
    """The next state and the messages to send: [(event key, webhook name, kind)].

    ``actions`` ({event key: text}) records what was done about an event (a drain, a resume); the
    messages carry it.

    Findings below ``min_severity`` are not events. The state is not changed by sending: call
    ``delivered`` for each message that arrived, then ``prune``.
    """
    state = copy.deepcopy(state) if state else empty_state()
    events = state.setdefault("events", {})
    limit = SEVERITY_RANK[min_severity]
    current = dict((event_key(f), f) for f in findings if SEVERITY_RANK.get(f["severity"], 9) <= limit)
    for key in sorted(current):
        found = current[key]
        event = events.get(key)
        if event is None:
            event = events[key] = {"event_id": new_event_id(cluster, host, key, now), "check": found["check"],
                                   "target": found["target"], "first_seen": now, "delivered": {}}
        event.update(severity=found["severity"], detail=found["detail"], fix_hint=found["fix_hint"], last_seen=now,
                     status="open", cleared_at=None)
    for key, event in events.items():
        if key not in current and event["status"] == "open":
            event.update(status="cleared", cleared_at=now)
        if actions and key in actions:
            event["action"] = actions[key]

    messages = []
    for key in sorted(events):
        event = events[key]
        for name in webhook_names:
            last = event["delivered"].get(name)
            if event["status"] == "open":
                if last is None or last["kind"] == "recovered":
                    kind = "new"
                elif SEVERITY_RANK[event["severity"]] < SEVERITY_RANK[last["severity"]]:
                    kind = "worse"
                elif now - last["at"] >= quiet_period:
                    kind = "repeat"
                else:
                    continue
            elif send_recovery and last is not None and last["kind"] != "recovered":
                kind = "recovered"
            else:
                continue
            messages.append((key, name, kind))
    return state, messages


def delivered(state, key, webhook_name, kind, now):
    event = state["events"][key]
    event["delivered"][webhook_name] = {"kind": kind, "at": now, "severity": event["severity"]}


def prune(state, webhook_names, send_recovery=True):
    """Drop cleared events that no webhook still has to hear the recovery of."""
    for key in list(state["events"]):
        event = state["events"][key]
        if event["status"] != "cleared":
            continue
        pending = [n for n in webhook_names
                   if send_recovery and (event["delivered"].get(n) or {}).get("kind") not in (None, "recovered")]
        if not pending:
            del state["events"][key]
    return state


def payload(cluster, host, event, kind, now, message_id=None):
    """The event as the generic webhook receives it; the chat messages are rendered from it."""
    return {
        "source": SOURCE, "status": kind, "event_id": event["event_id"],
        "message_id": message_id or str(uuid.uuid4()),
        "cluster": cluster, "host": host, "fault_type": event["check"], "target": event["target"],
        "severity": event["severity"], "detail": event["detail"], "fix_hint": event["fix_hint"],
        "detected_at": iso(event["first_seen"]), "last_seen_at": iso(event["last_seen"]),
        "cleared_at": iso(event.get("cleared_at")), "sent_at": iso(now),
        "action": event.get("action"),
    }


def text_message(body):
    """Seed 004's E-HPC fault notice, in English: one field per line, the event id to quote."""
    title = TITLES[body["status"]]
    if body["status"] == "recovered":
        head = "[gpufabric] %s: %s on %s (cluster %s) is gone since %s" % (
            title, body["fault_type"], body["host"], body["cluster"], body["cleared_at"])
    elif body["status"] == "repeat":
        head = "[gpufabric] %s: node %s in cluster %s has had this fault since %s" % (
            title, body["host"], body["cluster"], body["detected_at"])
    else:
        head = "[gpufabric] %s: node %s in cluster %s has a %s fault, detected at %s" % (
            title, body["host"], body["cluster"], body["severity"], body["detected_at"])
    lines = [head,
             "Cluster: %s" % body["cluster"],
             "Host: %s" % body["host"],
             "Fault type: %s" % body["fault_type"],
             "Fault target: %s" % body["target"],
             "Severity: %s" % body["severity"],
             "Detail: %s" % body["detail"],
             "Fix hint: %s" % body["fix_hint"],
             "Detected at: %s" % body["detected_at"]]
    if body["cleared_at"]:
        lines.append("Cleared at: %s" % body["cleared_at"])
    if body.get("action"):
        lines.append("Action: %s" % body["action"])
    lines += ["Message ID: %s" % body["message_id"],
              "Event ID: %s (quote it when you follow up)" % body["event_id"]]
    return "\n".join(lines)


def lark_sign(secret, timestamp):
    """Lark/Feishu custom bot: base64(HMAC-SHA256 keyed with "timestamp\\nsecret", empty message)."""
    key = ("%s\n%s" % (timestamp, secret)).encode("utf-8")
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode("ascii")


def dingtalk_sign(secret, timestamp_ms):
    """DingTalk custom robot: base64(HMAC-SHA256 keyed with the secret over "timestamp\\nsecret")."""
    text = ("%s\n%s" % (timestamp_ms, secret)).encode("utf-8")
    return base64.b64encode(hmac.new(secret.encode("utf-8"), text, hashlib.sha256).digest()).decode("ascii")


def generic_sign(secret, timestamp, body_bytes):
    """Generic endpoint: hex HMAC-SHA256 keyed with the secret over "timestamp." + body."""
    return hmac.new(secret.encode("utf-8"), ("%s." % timestamp).encode("ascii") + body_bytes,
                    hashlib.sha256).hexdigest()


def build_request(webhook, body, now):
    """(url, body bytes, headers) for one webhook and one event payload."""
    kind = webhook["type"]
    url = webhook["url"]
    secret = webhook.get("secret") or ""
    headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": SOURCE}
    if kind in ("lark", "feishu"):
        message = {"msg_type": "text", "content": {"text": text_message(body)}}
        if secret:
            stamp = str(int(now))
            message.update(timestamp=stamp, sign=lark_sign(secret, stamp))
    elif kind == "dingtalk":
        message = {"msgtype": "text", "text": {"content": text_message(body)}}
        if secret:
            stamp = str(int(now * 1000))
            url += "%stimestamp=%s&sign=%s" % ("&" if "?" in url else "?", stamp, quote_plus(dingtalk_sign(secret, stamp)))
    elif kind == "slack":
        message = {"text": text_message(body)}
    else:
        message = body
    data = json.dumps(message, sort_keys=True).encode("utf-8")
    if kind == "generic":
        headers["X-Gpufabric-Event"] = body["status"]
        if secret:
            stamp = str(int(now))
            headers["X-Gpufabric-Timestamp"] = stamp
            headers["X-Gpufabric-Signature"] = "sha256=" + generic_sign(secret, stamp, data)
    return url, data, headers


def response_error(kind, status, text):
    """None when the webhook accepted the message, else why not (from the service's own answer)."""
    if status < 200 or status >= 300:
        return "HTTP %d %s" % (status, (text or "").strip()[:200])
    if kind in ("lark", "feishu", "dingtalk"):
        try:
            answer = json.loads(text or "{}")
        except ValueError:
            return "HTTP %d with a body that is not JSON: %s" % (status, (text or "").strip()[:200])
        code = answer.get("errcode") if kind == "dingtalk" else answer.get("code", answer.get("StatusCode", 0))
        if code not in (0, None):
            return "%s answered code %s: %s" % (kind, code, answer.get("errmsg") or answer.get("msg") or "")
    if kind == "slack" and (text or "").strip() != "ok":
        return "slack answered %r" % (text or "").strip()[:200]
    return None


def redact(text, webhook):
    """The text with the webhook's URL, its secret, its query values and its token-like path parts replaced."""
    text = str(text)
    url = webhook.get("url") or ""
    path, query = (url.split("?", 1) + [""])[:2]
    secrets = [webhook.get("secret") or "", url]
    secrets += [pair.partition("=")[2] for pair in query.split("&")]
    secrets += [part for part in path.split("/") if len(part) >= 8 and any(c.isdigit() for c in part)]
    for secret in sorted(set(s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def carried_secret(webhook):
    """What secret a request to the webhook reveals on the wire, or None: its signing secret, a token in the
    query string, or a chat service's URL path (Lark, DingTalk and Slack put the token there)."""
    if webhook.get("secret"):
        return "its signing secret"
    if "?" in webhook["url"]:
        return "the token in its URL's query string"
    if webhook["type"] != "generic":
        return "its URL path (a %s webhook's path is its token)" % webhook["type"]
    return None


def check_config(config):
    """The configuration with defaults, or ConfigError naming the bad entry."""
    if not isinstance(config, dict):
        raise ConfigError("the configuration must be a JSON object")
    merged = {"cluster": "gpufabric", "host": None, "checks": {}, "webhooks": [], "quiet_period": 21600,
              "min_severity": "warning", "send_recovery": True, "timeout": 10,
              "state_file": "/var/lib/gpufabric/health-monitor/state.json", "remediation": {}}
    unknown = sorted(set(config) - set(merged))
    if unknown:
        raise ConfigError("unknown configuration key(s): %s" % ", ".join(unknown))
    merged.update(config)
    if merged["min_severity"] not in SEVERITY_RANK:
        raise ConfigError("min_severity must be one of critical, warning, info, got %r" % merged["min_severity"])
    for name in ("quiet_period", "timeout"):
        value = merged[name]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError("%s must be a positive number of seconds, got %r" % (name, value))
    names = set()
    for index, webhook in enumerate(merged["webhooks"]):
        label = webhook.get("name") if isinstance(webhook, dict) else None
        where = "webhooks[%d]%s" % (index, " (%s)" % label if label else "")
        if not isinstance(webhook, dict) or not label:
            raise ConfigError("%s needs a name" % where)
        if label in names:
            raise ConfigError("%s: the name is used twice" % where)
        names.add(label)
        if webhook.get("type") not in WEBHOOK_TYPES:
            raise ConfigError("%s: type must be one of %s, got %r" % (where, ", ".join(WEBHOOK_TYPES), webhook.get("type")))
        url = webhook.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError("%s: url must start with http:// or https://" % where)
        if text.describe_unsafe(url) or (webhook.get("secret") is not None and (
                not isinstance(webhook["secret"], str) or text.describe_unsafe(webhook["secret"]))):
            raise ConfigError("%s: the url and the secret must be one-line strings" % where)
        extra = sorted(set(webhook) - set(("name", "type", "url", "secret", "insecure_http")))
        if extra:
            raise ConfigError("%s: unknown key(s) %s" % (where, ", ".join(extra)))
        if not isinstance(webhook.get("insecure_http", False), bool):
            raise ConfigError("%s: insecure_http must be true or false" % where)
        secret = carried_secret(webhook) if url.startswith("http://") else None
        if secret and not webhook.get("insecure_http"):
            raise ConfigError("%s: the url is http://, so %s would cross the network in clear text: use https://, "
                              "or set insecure_http: true to send it anyway" % (where, secret))
    try:
        merged["checks"] = health.check_options(merged["checks"])
    except health.CheckOptionError as exc:
        raise ConfigError("checks: %s" % exc)
    try:
        merged["remediation"] = remediation.check_config(merged["remediation"])
    except remediation.PolicyError as exc:
        raise ConfigError(str(exc))
    return merged
