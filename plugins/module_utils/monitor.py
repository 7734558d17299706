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

import base64
import copy
import datetime
import hashlib
import hmac
import json
import uuid

try:
    from urllib.parse import quote_plus
except ImportError:  # pragma: no cover - Python 2
    from urllib import quote_plus

from ansible_collections.gpufabric.rdma.plugins.module_utils import health, outbox, ownership, remediation, text
from ansible_collections.gpufabric.rdma.plugins.module_utils.findings import SEVERITY_RANK, rank

WEBHOOK_TYPES = ("lark", "feishu", "dingtalk", "slack", "generic")
KINDS = ("new", "worse", "repeat", "recovered")
TITLES = {"new": "FAULT", "worse": "FAULT WORSE", "repeat": "STILL FAULTY", "recovered": "RECOVERED"}
SOURCE = "gpufabric.rdma.health_monitor"
STATE_VERSION = 2


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
    return {"version": STATE_VERSION, "events": {}, "counters": None, "outbox": {}}


def check_state(state):
    """A state read back from disk, or ValueError for one that is not ours (it is then set aside)."""
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise ValueError("not a version %d state" % STATE_VERSION)
    events = state.get("events")
    if not isinstance(events, dict):
        raise ValueError("events must be an object")
    for key, event in events.items():
        if not isinstance(event, dict) or not isinstance(event.get("notified", {}), dict) or not all(
                isinstance(event.get(k), str) for k in ("event_id", "check", "target", "status", "severity")):
            raise ValueError("event %r is not an event" % (key,))
        if not all(isinstance(event.get(k), (int, float)) for k in ("first_seen", "last_seen")):
            raise ValueError("event %r has no times" % (key,))
    outbox.check(state.setdefault("outbox", {}))
    if not isinstance(state.get("history") or [], list) or not isinstance(state.get("counters") or {}, dict):
        raise ValueError("history must be a list and counters an object")
    return state


def _pending_for(state, name, key):
    return outbox.holds(state["outbox"], name, lambda body: body.get("event_key") == key)


def plan(state, findings, webhook_names, now, quiet_period, cluster, host, min_severity="warning", send_recovery=True):
    """Compare the findings with the saved events and queue what changed: returns (state, [(key, name, kind)]).

    The messages go into ``state["outbox"]`` here, before anything is sent: saving the state saves
    them, and only a webhook's acceptance takes them off (``outbox.sent``). A fault that clears while
    its webhook is down is still told, then its recovery, in that order. A repeat is not queued while
    an earlier message of the same event still waits. Findings below ``min_severity`` are not events.
    Returns how many old messages fell off full queues in ``state["dropped"]``.
    """
    state = copy.deepcopy(state) if state else empty_state()
    events = state.setdefault("events", {})
    queues = state.setdefault("outbox", {})
    limit = SEVERITY_RANK[min_severity]
    current = dict((event_key(f), f) for f in findings if rank(f["severity"]) <= limit)
    for key in sorted(current):
        found = current[key]
        event = events.get(key)
        if event is None:
            event = events[key] = {"event_id": new_event_id(cluster, host, key, now), "check": found["check"],
                                   "target": found["target"], "first_seen": now, "notified": {}}
        event.update(severity=found["severity"], detail=found["detail"], fix_hint=found["fix_hint"], last_seen=now,
                     status="open", cleared_at=None)
    for key, event in events.items():
        if key not in current and event["status"] == "open":
            event.update(status="cleared", cleared_at=now)

    queued, dropped = [], 0
    for key in sorted(events):
        event = events[key]
        for name in webhook_names:
            last = event["notified"].get(name)
            if event["status"] == "open":
                if last is None or last["kind"] == "recovered":
                    kind = "new"
                elif SEVERITY_RANK[event["severity"]] < SEVERITY_RANK[last["severity"]]:
                    kind = "worse"
                elif now - last["at"] >= quiet_period and not _pending_for(state, name, key):
                    kind = "repeat"
                else:
                    continue
            elif send_recovery and last is not None and last["kind"] != "recovered":
                kind = "recovered"
            else:
                continue
            body = payload(cluster, host, event, kind, now)
            body["event_key"] = key
            dropped += outbox.enqueue(queues, [name], body, now)
            event["notified"][name] = {"kind": kind, "at": now, "severity": event["severity"]}
            queued.append((key, name, kind))
    # A cleared event whose recovery is queued everywhere it was told (or that nobody was told of) is done.
    for key in list(events):
        event = events[key]
        if event["status"] == "cleared" and all(
                (event["notified"].get(n) or {}).get("kind") in (None, "recovered") or not send_recovery
                for n in webhook_names):
            del events[key]
    outbox.forget(queues, webhook_names)
    state["dropped"] = state.get("dropped", 0) + dropped
    return state, queued


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
                   "breaker-closed": "CIRCUIT BREAKER CLOSED"}
DECIDER_SOURCE = "gpufabric.rdma.remediator"


def decision_payload(cluster, decider, message, now, message_id=None):
    """A decision of the remediation decider as a message: drained, resumed, held back, escalated, shadow,
    could-not-act, breaker-open, breaker-closed or rebuilt; ``message`` comes from remediation.messages."""
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


def report_signature(secret, body_bytes):
    """A node's report to the decider: hex HMAC-SHA256 of the body (which carries the decider's nonce)."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body_bytes, hashlib.sha256).hexdigest()


REPORT_PATH = "/v1/report"
CHALLENGE_PATH = "/v1/challenge"
MAX_REPORT_BYTES = 4 * 1024 * 1024


def report_body(node, result, source, nonce):
    """What a node sends the decider: its findings, whether every source was read, and the decider's nonce."""
    findings = [dict((k, f.get(k)) for k in ("check", "severity", "target", "detail", "fix_hint")) for f in result["findings"]]
    report = {"node": node, "findings": findings, "complete": bool(result.get("complete")),
              "unreadable": list(result.get("unreadable") or []), "source": source}
    return json.dumps({"report": report, "nonce": nonce}, sort_keys=True).encode("utf-8")


def report_headers(secret, body):
    return {"Content-Type": "application/json", "User-Agent": SOURCE, "X-Gpufabric-Signature": report_signature(secret, body)}


def challenge_body(node):
    return json.dumps({"node": node}, sort_keys=True).encode("utf-8")


def verify_challenge(secret, body, signature):
    """The decider's side of a nonce request: the node's name from a signed body, or ValueError."""
    if not isinstance(signature, str) or not hmac.compare_digest(report_signature(secret, body), signature):
        raise ValueError("the challenge's signature does not match (wrong secret)")
    try:
        node = json.loads(body.decode("utf-8")).get("node")
    except (ValueError, AttributeError):
        raise ValueError("the challenge is not a JSON object with the node's name")
    if not remediation.plain_name(node):
        raise ValueError("the challenge names no plain node name")
    return node


def verify_report(secret, body, signature):
    """The decider's side: (report, nonce) from a signed body, or ValueError saying why it is refused."""
    if not isinstance(signature, str) or not hmac.compare_digest(report_signature(secret, body), signature):
        raise ValueError("the report's signature does not match (wrong secret, or the body was changed)")
    try:
        data = json.loads(body.decode("utf-8"))
    except ValueError:
        raise ValueError("the report is not JSON")
    if not isinstance(data, dict) or not isinstance(data.get("nonce"), str):
        raise ValueError("the report has no nonce")
    return remediation.check_report(data.get("report")), data["nonce"]


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
    """None when the webhook accepted the message, else why not (from the service's own answer, not cut:
    ``redact`` cuts it after the secrets are out)."""
    text = (text or "").strip()
    if status < 200 or status >= 300:
        return "HTTP %d %s" % (status, text)
    if kind in ("lark", "feishu", "dingtalk"):
        try:
            answer = json.loads(text or "{}")
        except ValueError:
            return "HTTP %d with a body that is not JSON: %s" % (status, text)
        if not isinstance(answer, dict):
            return "HTTP %d with a JSON answer that is not an object: %s" % (status, text)
        code = answer.get("errcode") if kind == "dingtalk" else answer.get("code", answer.get("StatusCode", 0))
        if code not in (0, None):
            return "%s answered code %s: %s" % (kind, code, answer.get("errmsg") or answer.get("msg") or "")
    if kind == "slack" and text != "ok":
        return "slack answered %r" % text
    return None


def _url_secrets(url):
    """Every part of a webhook URL that may be a token, whatever its characters: the userinfo, each query
    value, the last path segment (Lark and Slack put the token there), and any other segment that is long
    (16 characters) or holds a digit - not the words of a path such as 'services' or 'hook'."""
    rest = url.split("://", 1)[-1]
    authority, _sep, tail = rest.partition("/")
    path, _sep, query = tail.partition("?")
    tokens = [pair.partition("=")[2] for pair in query.split("&")]
    if "@" in authority:
        tokens.append(authority.rsplit("@", 1)[0])
    segments = [segment for segment in path.split("/") if segment]
    tokens += segments[-1:]
    tokens += [segment for segment in segments if len(segment) >= 16 or (len(segment) >= 6 and any(c.isdigit() for c in segment))]
    return [url, url.split("?", 1)[0], tail], tokens


def redact(text, webhook, limit=300):
    """The text with everything secret about the webhook replaced by ***, then cut to ``limit``.

    Secrets: its signing secret and every token-like part of its URL (``_url_secrets``), also when the
    text holds only the start of one (a service that echoed it cut). Cut after replacing, so a cut
    never leaves half a token behind.
    """
    text = str(text)
    whole, tokens = _url_secrets(webhook.get("url") or "")
    tokens = sorted(set(s for s in tokens + [webhook.get("secret") or ""] if len(s) >= 4), key=len, reverse=True)
    for secret in sorted(set(s for s in whole if len(s) >= 4), key=len, reverse=True) + tokens:
        text = text.replace(secret, "***")
    for secret in tokens:  # the start of a token that someone cut (a proxy, the service), wherever it stands
        if len(secret) < 12:
            continue
        for size in range(len(secret) - 1, 7, -1):
            if secret[:size] in text:
                text = text.replace(secret[:size], "***")
                break
    return text if len(text) <= limit else text[:limit - 3] + "..."


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


def check_webhooks(webhooks):
    """The webhooks list, checked (the monitor and the decider post with the same rules)."""
    if not isinstance(webhooks, list):
        raise ConfigError("webhooks must be a list, got %s" % type(webhooks).__name__)
    names = set()
    for index, webhook in enumerate(webhooks):
        label = webhook.get("name") if isinstance(webhook, dict) else None
        where = "webhooks[%d]%s" % (index, " (%s)" % label if isinstance(label, str) and label else "")
        if not isinstance(webhook, dict) or not isinstance(label, str) or not label or text.describe_unsafe(label):
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
    return webhooks


def _seconds(merged, names, maximum=None):
    for name in names:
        value = merged[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf") \
                or (maximum and value > maximum):
            raise ConfigError("%s must be a positive number of seconds%s, got %r"
                              % (name, " (at most %d)" % maximum if maximum else "", value))


def _state_dir(value):
    why = ownership.refused_directory(value)
    if why:
        raise ConfigError("state_dir: %s" % why)
    return value


def _secret(value, where):
    if not isinstance(value, str) or len(value) < 16 or text.describe_unsafe(value):
        raise ConfigError("%s must be a one-line string of at least 16 characters (the role generates one)" % where)
    return value


DECIDER_CLIENT_DEFAULTS = {"url": None, "secret": None, "node": None, "timeout": 20}


def check_config(config):
    """The health monitor's configuration with defaults, or ConfigError naming the bad entry.

    ``decider`` (optional) is where the node reports its findings: the remediation decider's URL, the
    shared report secret, the node's name in the scheduler (default: the short host name).
    """
    if not isinstance(config, dict):
        raise ConfigError("the configuration must be a JSON object")
    merged = {"cluster": "gpufabric", "host": None, "checks": {}, "webhooks": [], "quiet_period": 21600,
              "min_severity": "warning", "send_recovery": True, "timeout": 10, "deliver_deadline": 60,
              "state_dir": "/var/lib/gpufabric-health-monitor", "decider": None, "textfile_dir": None, "interval": None}
    unknown = sorted(set(config) - set(merged))
    if unknown:
        hint = {"state_file": " (state_file is now state_dir: a directory the role creates and owns)",
                "remediation": " (remediation is decided by one decider per cluster now: give decider: {url, secret})"}
        raise ConfigError("unknown configuration key(s): %s%s" % (", ".join(unknown), "".join(
            hint[k] for k in unknown if k in hint)))
    merged.update(config)
    if merged["min_severity"] not in SEVERITY_RANK:
        raise ConfigError("min_severity must be one of critical, warning, info, got %r" % merged["min_severity"])
    _seconds(merged, ("quiet_period", "timeout", "deliver_deadline"))
    for name in ("cluster", "host"):
        if merged[name] is not None and (not isinstance(merged[name], str) or text.describe_unsafe(merged[name])):
            raise ConfigError("%s must be a one-line string, got %r" % (name, merged[name]))
    check_webhooks(merged["webhooks"])
    _state_dir(merged["state_dir"])
    textfile_dir = merged["textfile_dir"]
    if textfile_dir is not None and (not isinstance(textfile_dir, str) or not textfile_dir.startswith("/")
                                     or text.describe_unsafe(textfile_dir)):
        raise ConfigError("textfile_dir must be an absolute one-line path (node_exporter's textfile directory), got %r"
                          % (textfile_dir,))
    if merged["interval"] is not None:
        _seconds(merged, ("interval",))
    if merged["decider"] is not None:
        decider = merged["decider"]
        if not isinstance(decider, dict) or sorted(set(decider) - set(DECIDER_CLIENT_DEFAULTS)):
            raise ConfigError("decider must be a mapping with url, secret, node, timeout, got %r" % (
                sorted(decider) if isinstance(decider, dict) else decider,))
        decider = dict(DECIDER_CLIENT_DEFAULTS, **decider)
        if not isinstance(decider["url"], str) or not decider["url"].startswith(("http://", "https://")) \
                or text.describe_unsafe(decider["url"]):
            raise ConfigError("decider url must be the decider's http:// or https:// address, got %r" % (decider["url"],))
        _secret(decider["secret"], "decider secret")
        if decider["node"] is not None and not remediation.plain_name(decider["node"]):
            raise ConfigError("decider node must be a plain node name, got %r" % (decider["node"],))
        _seconds(decider, ("timeout",), 300)
        merged["decider"] = decider
    try:
        merged["checks"] = health.check_options(merged["checks"])
    except health.CheckOptionError as exc:
        raise ConfigError("checks: %s" % exc)
    return merged


DECIDER_DEFAULTS = {"cluster": "gpufabric", "name": None, "listen": "0.0.0.0", "port": 8740, "secret": None,
                    "state_dir": "/var/lib/gpufabric-remediator", "remediation": {}, "webhooks": [], "timeout": 10,
                    "deliver_deadline": 60, "deliver_interval": 30, "command_timeout": 30, "batch_window": 0.3,
                    "answer_within": 45, "max_per_run": 20, "alertmanager_token": None}


def check_decider_config(config):
    """The remediation decider's configuration (the remediator service and the remediate module)."""
    if not isinstance(config, dict):
        raise ConfigError("the configuration must be a JSON object")
    unknown = sorted(set(config) - set(DECIDER_DEFAULTS))
    if unknown:
        raise ConfigError("unknown configuration key(s): %s" % ", ".join(unknown))
    merged = dict(DECIDER_DEFAULTS, **config)
    for name in ("cluster", "name", "listen"):
        if merged[name] is not None and (not isinstance(merged[name], str) or text.describe_unsafe(merged[name])
                                         or not merged[name]):
            raise ConfigError("%s must be a one-line string, got %r" % (name, merged[name]))
    port = merged["port"]
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError("port must be a TCP port number, got %r" % (port,))
    if merged["secret"] is not None:
        _secret(merged["secret"], "secret")
    if merged["alertmanager_token"] is not None:
        _secret(merged["alertmanager_token"], "alertmanager_token")
    _seconds(merged, ("timeout", "deliver_deadline", "deliver_interval", "command_timeout", "batch_window",
                      "answer_within"))
    mpr = merged["max_per_run"]
    if isinstance(mpr, bool) or not isinstance(mpr, int) or mpr < 1:
        raise ConfigError("max_per_run must be a whole number above 0, got %r" % (mpr,))
    check_webhooks(merged["webhooks"])
    _state_dir(merged["state_dir"])
    try:
        merged["remediation"] = remediation.check_config(merged["remediation"])
    except remediation.PolicyError as exc:
        raise ConfigError(str(exc))
    return merged
