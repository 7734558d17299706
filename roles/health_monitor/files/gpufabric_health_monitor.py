#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-health-monitor: the program the health_monitor role installs on each node; a systemd
timer runs it.

    python3 monitor.py --config /etc/gpufabric/health-monitor.json

Each run checks the node (node_checks.check_node, the checks of the node_health module), plans
the messages from the findings and the state the last run saved (monitor.plan, pure), posts them
to the webhooks, and saves the state. This file holds what touches the world - the clock, the
state file, HTTP - and imports the rest from the collection's module_utils, copied beside it.
Exit status: 0 when every message arrived, 1 when one did not, 2 on a bad configuration.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import sys
import tempfile
import time

from urllib.error import HTTPError, URLError
from urllib.request import Request, build_opener

# The role puts module_utils under <this directory>/ansible_collections/gpufabric/rdma/plugins/module_utils.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufabric.rdma.plugins.module_utils import monitor, node_checks  # noqa: E402


def post(webhook, body, now, timeout=10, opener=None):
    """Send one message; None when delivered, else the reason (redacted)."""
    url, data, headers = monitor.build_request(webhook, body, now)
    request = Request(url, data=data, headers=headers)
    try:
        response = (opener or build_opener()).open(request, timeout=timeout)
        try:
            status, text = response.getcode(), response.read().decode("utf-8", "replace")
        finally:
            response.close()
    except HTTPError as exc:
        status, text = exc.code, exc.read().decode("utf-8", "replace") if exc.fp else ""
    except (URLError, OSError, ValueError) as exc:
        return monitor.redact("not reachable: %s" % getattr(exc, "reason", exc), webhook)
    error = monitor.response_error(webhook["type"], status, text)
    return monitor.redact(error, webhook) if error else None


def load_state(path):
    try:
        with open(path) as handle:
            state = json.load(handle)
    except (IOError, OSError):
        return monitor.empty_state(), None
    except ValueError as exc:
        return monitor.empty_state(), "state file %s is not JSON (%s); starting afresh" % (path, exc)
    if not isinstance(state, dict) or state.get("version") != monitor.STATE_VERSION:
        return monitor.empty_state(), "state file %s has another format; starting afresh" % path
    return state, None


def save_state(path, state):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".state.")
    with os.fdopen(handle, "w") as out:
        json.dump(state, out, sort_keys=True, indent=1)
    os.rename(tmp, path)


def _say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _complain(line):
    sys.stderr.write(line + "\n")


def run_once(config, runner=None, now=None, opener=None, log=_say):
    """One monitor run: check, plan, send, save. Returns the number of messages that failed."""
    now = time.time() if now is None else now
    host = config["host"] or os.uname()[1]
    state, warning = load_state(config["state_file"])
    if warning:
        log(warning)
    result = node_checks.check_node(config["checks"], runner, host=host,
                                    previous_counters=state.get("counters"))
    names = [w["name"] for w in config["webhooks"]]
    by_name = dict((w["name"], w) for w in config["webhooks"])
    state, messages = monitor.plan(state, result["findings"], names, now, config["quiet_period"], config["cluster"],
                                   host, config["min_severity"], config["send_recovery"])
    failed = 0
    for key, name, kind in messages:
        event = state["events"][key]
        error = post(by_name[name], monitor.payload(config["cluster"], host, event, kind, now), now, config["timeout"],
                     opener)
        what = "%s %s %s (%s, %s)" % (kind, event["event_id"], event["check"], event["target"], event["severity"])
        if error:
            failed += 1
            log("webhook %s (%s): could not send %s: %s; the next run tries again" % (name, by_name[name]["type"],
                                                                                      what, error))
        else:
            monitor.delivered(state, key, name, kind, now)
            log("webhook %s (%s): sent %s" % (name, by_name[name]["type"], what))
    monitor.prune(state, names, config["send_recovery"])
    observed = result["observed"]
    state["counters"] = {"at": observed["counters_at"], "ports": observed["port_counters"]}
    state["last_run"] = {"at": monitor.iso(now), "counts": result["counts"], "healthy": result["healthy"],
                         "messages": len(messages), "failed": failed}
    save_state(config["state_file"], state)
    counts = result["counts"]
    log("%d finding(s): %d critical, %d warning, %d info; %d open event(s); %d message(s) sent, %d failed" % (
        len(result["findings"]), counts["critical"], counts["warning"], counts["info"],
        sum(1 for e in state["events"].values() if e["status"] == "open"), len(messages) - failed, failed))
    return failed


def main(argv=None):
    """gpufabric-health-monitor --config FILE: exit 0 when every message arrived, 1 when one did not, 2 on bad input."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "--config":
        _complain("usage: gpufabric-health-monitor --config FILE")
        return 2
    try:
        with open(argv[1]) as handle:
            config = monitor.check_config(json.load(handle))
    except (IOError, OSError) as exc:
        _complain("cannot read the configuration %s: %s" % (argv[1], exc.strerror))
        return 2
    except ValueError as exc:  # ConfigError and JSON errors; neither quotes a URL or a secret
        _complain("configuration %s: %s" % (argv[1], exc))
        return 2
    try:
        return 1 if run_once(config) else 0
    except node_checks.CheckOptionError as exc:
        _complain("checks: %s" % exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
