#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-health-monitor: the program the health_monitor role installs on each node; a systemd
timer runs it.

    python3 monitor.py --config /etc/gpufabric/health-monitor.json [--healthcheck | --gate]

Each run checks the node (node_checks.check_node, the checks of the node_health module), plans
the messages from the findings and the state the last run saved (monitor.plan, pure), posts them
to the webhooks, and saves the state. This file holds what touches the world - the clock, the
state file, HTTP - and imports the rest from the collection's module_utils, copied beside it.
With a remediation policy it also takes the node out of service (Slurm drain, Kubernetes cordon and
taint) and back (remediation.decide, pure). --healthcheck is Slurm's HealthCheckProgram (check and
act, no messages); --gate is Slurm's Prolog (refuse a job on a node that should be drained).
Exit status: 0 when every message arrived, 1 when one did not, 2 on a bad configuration.
"""

from __future__ import absolute_import, division, print_function

import fcntl
import json
import os
import sys
import tempfile
import time

from urllib.error import HTTPError, URLError
from urllib.request import Request, build_opener

# The role puts module_utils under <this directory>/ansible_collections/gpufabric/rdma/plugins/module_utils.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufabric.rdma.plugins.module_utils import commands, monitor, node_checks, remediation  # noqa: E402


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


def _slurm_epoch(text):
    """A Slurm timestamp (the controller's local time) as epoch seconds, None when it is not one."""
    moment = remediation.parse_slurm_time(text)
    return time.mktime(moment.timetuple()) if moment else None


class Scheduler(object):
    """Carries out remediation decisions on one scheduler through its command-line tool."""

    def __init__(self, kind, settings, runner, log):
        self.kind, self.settings, self.runner, self.log = kind, settings, runner, log

    def _run(self, argv):
        result = self.runner.run(argv)
        if not result.ok:
            raise RuntimeError(result.describe())
        return result.stdout

    def state_and_view(self, node):
        if self.kind == "slurm":
            scontrol, sinfo = self.settings["scontrol"], self.settings["sinfo"]
            state = remediation.parse_scontrol_node(self._run([scontrol, "show", "node", "-o", node]))
            view = {}
            for name, entry in remediation.parse_sinfo_nodes(self._run([sinfo, "-h", "-N", "-o", "%n|%P|%H|%E"])).items():
                ours = remediation.is_ours(entry["reason"])
                view[name] = {"partitions": entry["partitions"],
                              "ours_since": _slurm_epoch(entry["reason_time"]) if ours else None}
            return state, view, None
        node_obj = json.loads(self._run(self._kubectl(["get", "node", node, "-o", "json"])))
        view = remediation.k8s_view(json.loads(self._run(self._kubectl(["get", "nodes", "-o", "json"]))))
        return remediation.k8s_state(node_obj), view, node_obj

    def _kubectl(self, args):
        argv = [self.settings["kubectl"]]
        if self.settings.get("kubeconfig"):
            argv += ["--kubeconfig", self.settings["kubeconfig"]]
        return argv + args

    def apply(self, node, decision, node_obj, check, now):
        if self.kind == "slurm":
            argv = remediation.slurm_argv(node, decision, self.settings["scontrol"])
        else:
            body = remediation.k8s_patch(node_obj, decision, check, now)
            argv = self._kubectl(["patch", "node", node, "--type", "merge", "-p", json.dumps(body, sort_keys=True)])
        if argv:
            self._run(argv)
        return argv


def remediate(config, findings, state, now, runner, log, schedulers=None):
    """Decide and act on each enabled scheduler; returns {event key: action text} for the messages."""
    settings = config["remediation"]
    rules = settings["policy"]
    causes = remediation.drain_findings(findings, rules)
    actions = {}
    record = state.setdefault("remediation", {})
    for kind in ("slurm", "kubernetes"):
        if not settings[kind]["enabled"]:
            continue
        node = settings[kind]["node"] or (config["host"] or os.uname()[1]).split(".")[0]
        scheduler = (schedulers or {}).get(kind) or Scheduler(kind, settings[kind], runner, log)
        try:
            sched_state, view, node_obj = scheduler.state_and_view(node)
            decision = remediation.decide(node, findings, rules, sched_state, view, settings["rate_limit"], now)
            check = causes[0]["check"] if causes else None
            if not settings["dry_run"]:
                argv = scheduler.apply(node, decision, node_obj, check, now)
                if argv:
                    log("%s: ran %s" % (kind, " ".join(argv)))
            text = remediation.action_text(kind, decision, settings["dry_run"])
        except (RuntimeError, ValueError) as exc:
            decision = {"action": "error", "findings": [], "why": str(exc)}
            text = "%s: could not act: %s" % (kind, exc)
        log(text)
        previous = record.get(kind) or {}
        record[kind] = {"action": decision["action"], "why": decision.get("why"), "at": monitor.iso(now),
                        "findings": decision.get("findings") or previous.get("findings") or []}
        for key in record[kind]["findings"]:
            actions[key] = (actions[key] + "; " + text) if key in actions else text
        if decision["action"] == "resume":
            record[kind]["findings"] = []
    return actions


def run_once(config, runner=None, now=None, opener=None, log=_say, notify=True, schedulers=None):
    """One monitor run: check, act, plan, send, save. Returns the number of messages that failed.

    notify=False (the Slurm HealthCheckProgram) checks and acts but leaves the messages to the timer's
    next run: their events are saved undelivered.
    """
    now = time.time() if now is None else now
    host = config["host"] or os.uname()[1]
    state, warning = load_state(config["state_file"])
    if warning:
        log(warning)
    result = node_checks.check_node(config["checks"], runner, host=host,
                                    previous_counters=state.get("counters"), history=state.get("history") or [])
    actions = remediate(config, result["findings"], state, now, runner or commands.Runner(config["checks"]["command_timeout"]),
                        log, schedulers)
    names = [w["name"] for w in config["webhooks"]] if notify else []
    by_name = dict((w["name"], w) for w in config["webhooks"])
    state, messages = monitor.plan(state, result["findings"], names, now, config["quiet_period"], config["cluster"],
                                   host, config["min_severity"], config["send_recovery"], actions)
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
    if notify:
        monitor.prune(state, names, config["send_recovery"])
    observed = result["observed"]
    state["counters"] = {"at": observed["counters_at"], "ports": observed["port_counters"]}
    state["history"] = observed["history"]
    state["last_run"] = {"at": monitor.iso(now), "counts": result["counts"], "healthy": result["healthy"],
                         "messages": len(messages), "failed": failed}
    save_state(config["state_file"], state)
    counts = result["counts"]
    log("%d finding(s): %d critical, %d warning, %d info; %d open event(s); %d message(s) sent, %d failed" % (
        len(result["findings"]), counts["critical"], counts["warning"], counts["info"],
        sum(1 for e in state["events"].values() if e["status"] == "open"), len(messages) - failed, failed))
    return failed


def gate(config, runner=None, log=_complain):
    """The Slurm prolog gate: 1 (refuse the job) when a finding's policy action is drain, else 0.

    It reads the node afresh (rates need the timer's history and are left to it) and changes nothing:
    Slurm drains the node and requeues the job when a prolog fails.
    """
    host = config["host"] or os.uname()[1]
    result = node_checks.check_node(config["checks"], runner, host=host, sleep=lambda seconds: None)
    causes = remediation.drain_findings(result["findings"], config["remediation"]["policy"])
    if causes:
        log("gpufabric prolog: refusing the job: %s" % remediation.drain_reason(causes))
        return 1
    return 0


class Lock(object):
    """An exclusive lock beside the state file, so the timer and the HealthCheckProgram take turns."""

    def __init__(self, state_file, wait=60):
        self.path, self.wait, self.handle = state_file + ".lock", wait, None

    def __enter__(self):
        directory = os.path.dirname(self.path) or "."
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o700)
        self.handle = open(self.path, "a")
        deadline = time.time() + self.wait
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except (IOError, OSError):
                if time.time() > deadline:
                    self.handle.close()
                    raise RuntimeError("another monitor run holds %s for more than %d s" % (self.path, self.wait))
                time.sleep(0.2)

    def __exit__(self, *exc):
        self.handle.close()


USAGE = "usage: gpufabric-health-monitor --config FILE [--healthcheck | --gate]"


def main(argv=None):
    """gpufabric-health-monitor --config FILE [--healthcheck | --gate].

    Default (the timer): exit 0 when every message arrived, 1 when one did not. --healthcheck (Slurm's
    HealthCheckProgram): check and act, no messages, exit 0. --gate (Slurm's Prolog): exit 1 to refuse a
    job on a node with a finding whose policy action is drain. 2 on bad input everywhere.
    """
    argv = sys.argv[1:] if argv is None else argv
    mode = argv[2] if len(argv) == 3 else None
    if len(argv) not in (2, 3) or argv[0] != "--config" or mode not in (None, "--healthcheck", "--gate"):
        _complain(USAGE)
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
        if mode == "--gate":
            return gate(config)
        with Lock(config["state_file"]):
            failed = run_once(config, notify=mode is None)
        return 0 if mode == "--healthcheck" else (1 if failed else 0)
    except node_checks.CheckOptionError as exc:
        _complain("checks: %s" % exc)
        return 2
    except RuntimeError as exc:
        _complain(str(exc))
        return 0 if mode == "--healthcheck" else 1


if __name__ == "__main__":
    sys.exit(main())
