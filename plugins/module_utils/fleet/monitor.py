# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
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
import hashlib

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import imex_domain
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import all as node_checks_registry
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import chat, outbox, protocol, settings
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import SEVERITY_RANK, rank
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.messages import payload
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.settings import ConfigError

KINDS = ("new", "worse", "repeat", "recovered")
STATE_VERSION = 2


def event_key(found):
    return "%s|%s" % (found["check"], found["target"])


def new_event_id(cluster, host, key, first_seen):
    text = "%s\n%s\n%s\n%.6f" % (cluster, host, key, first_seen)
    return "gf-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
              "state_dir": "/var/lib/gpufabric-health-monitor", "decider": None, "textfile_dir": None, "interval": None,
              "epilog_dcgm_level": 2, "imex": None}
    unknown = sorted(set(config) - set(merged))
    if unknown:
        hint = {"state_file": " (state_file is now state_dir: a directory the role creates and owns)",
                "remediation": " (remediation is decided by one decider per cluster now: give decider: {url, secret})"}
        raise ConfigError("unknown configuration key(s): %s%s" % (", ".join(unknown), "".join(
            hint[k] for k in unknown if k in hint)))
    merged.update(config)
    if merged["min_severity"] not in SEVERITY_RANK:
        raise ConfigError("min_severity must be one of critical, warning, info, got %r" % merged["min_severity"])
    settings.seconds(merged, ("quiet_period", "timeout", "deliver_deadline"))
    settings.one_line_names(merged, ("cluster", "host"))
    chat.check_webhooks(merged["webhooks"])
    settings.state_dir(merged["state_dir"])
    textfile_dir = merged["textfile_dir"]
    if textfile_dir is not None and (not isinstance(textfile_dir, str) or not textfile_dir.startswith("/")
                                     or text.describe_unsafe(textfile_dir)):
        raise ConfigError("textfile_dir must be an absolute one-line path (node_exporter's textfile directory), got %r"
                          % (textfile_dir,))
    if merged["interval"] is not None:
        settings.seconds(merged, ("interval",))
    if merged["epilog_dcgm_level"] not in (1, 2):
        raise ConfigError("epilog_dcgm_level must be 1 or 2 (the DCGM level the Slurm epilog runs between jobs), got %r"
                          % (merged["epilog_dcgm_level"],))
    if merged["imex"] is not None:   # the Slurm IMEX prolog's settings (plan/imex_domain.DEFAULTS)
        try:
            merged["imex"] = imex_domain.check_settings(merged["imex"])
        except imex_domain.ImexPrologError as exc:
            raise ConfigError(str(exc))
    if merged["decider"] is not None:
        decider = merged["decider"]
        if not isinstance(decider, dict) or sorted(set(decider) - set(DECIDER_CLIENT_DEFAULTS)):
            raise ConfigError("decider must be a mapping with url, secret, node, timeout, got %r" % (
                sorted(decider) if isinstance(decider, dict) else decider,))
        decider = dict(DECIDER_CLIENT_DEFAULTS, **decider)
        if not isinstance(decider["url"], str) or not decider["url"].startswith(("http://", "https://")) \
                or text.describe_unsafe(decider["url"]):
            raise ConfigError("decider url must be the decider's http:// or https:// address, got %r" % (decider["url"],))
        settings.secret(decider["secret"], "decider secret")
        if decider["node"] is not None and not protocol.plain_name(decider["node"]):
            raise ConfigError("decider node must be a plain node name, got %r" % (decider["node"],))
        settings.seconds(decider, ("timeout",), 300)
        merged["decider"] = decider
    try:
        merged["checks"] = node_checks_registry.check_options(merged["checks"])
    except node_checks_registry.CheckOptionError as exc:
        raise ConfigError("checks: %s" % exc)
    return merged
