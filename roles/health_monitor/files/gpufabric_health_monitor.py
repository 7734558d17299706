# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-health-monitor: the program the health_monitor role installs on each node; a systemd
timer runs it.

    python3 monitor.py --config /etc/gpufabric/health-monitor.json [--healthcheck | --gate | --epilog | --imex-prolog |
                                                                    --imex-epilog]

Each run checks the node (node_checks.check_node, the checks of the node_health module), reports the
findings to the cluster's one remediation decider when one is configured (the decider alone drains
and resumes: a node never takes itself out of service), queues what changed since the last run in the
outbox of its state (monitor.plan) and saves the state, then sends the outbox to the webhooks.
This file holds what touches the world - the clock, the state directory, HTTP - and imports the rest
from the collection's module_utils, copied beside it.

--healthcheck is Slurm's HealthCheckProgram: check, report (the decider may drain the node, within its
limits), queue the messages for the timer, exit 0. --gate is Slurm's Prolog: exit 1 (refuse the job)
only when the decider has this node out of service. --epilog is Slurm's Epilog: the healthcheck's run plus DCGM's
level epilog_dcgm_level (2: PCIe and GPU memory, about two minutes) between jobs, reported as such; exit 0 (a failing
epilog would make slurmd drain the node itself: only the decider drains). --imex-prolog and --imex-epilog (with
``imex`` settings) give a job its IMEX domain: the job's nodes into nodes_config.cfg, nvidia-imex restarted and waited
for; exit 1 (Slurm fails the job's prolog) when the domain is not UP, after telling the decider; the epilog stops the
daemon and takes back the file the prolog wrote, exit 0.
Exit status: 0 when every message arrived, 1 when one did not or the state could not be saved, 2 on a
bad configuration. A state that cannot be saved (a full disk) is never silence: the decider is still told, each
webhook gets one alert an hour that says so (the hour kept in /run), and gpufabric_health_state_writable is 0.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import json
import os
import sys
import time

# The role puts module_utils under <this directory>/ansible_collections/gpufabric/rdma/plugins/module_utils.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, evidence, imex, node_checks, statefile, webhook  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import counts as count_findings, finding  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.slurm_jobs import expand_hostlist  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.evidence import EVIDENCE_PATH  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import metrics  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import chat, delivery, messages, monitor, outbox, protocol  # noqa: E402


def _say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _complain(line):
    sys.stderr.write(line + "\n")


def paths(config):
    return os.path.join(config["state_dir"], "state.json"), os.path.join(config["state_dir"], "lock")


def node_name(config):
    decider = config.get("decider") or {}
    return decider.get("node") or (config["host"] or os.uname()[1]).split(".")[0]


def report(config, result, source, clock=time.time):
    """Tell the decider what this node found; (answer, None) or (None, why it could not be told).

    Two requests within the decider's ``timeout``: a nonce (so a recorded report cannot be replayed),
    then the report signed with the shared secret. The decider answers with its decision.
    """
    decider = config["decider"]
    base = decider["url"].rstrip("/")
    started = clock()
    challenge = protocol.challenge_body(node_name(config))
    answer = webhook.send(base + protocol.CHALLENGE_PATH, challenge, protocol.report_headers(decider["secret"], challenge),
                          deadline=decider["timeout"])
    try:
        if answer.error or answer.status != 200:
            raise ValueError(answer.error or "HTTP %s %s" % (answer.status, answer.text.strip()[:200]))
        nonce = json.loads(answer.text)["nonce"]
        body = protocol.report_body(node_name(config), result, source, nonce)
        left = decider["timeout"] - (clock() - started)
        if left < 1:
            raise ValueError("no time left within %s s" % decider["timeout"])
        answer = webhook.send(base + protocol.REPORT_PATH, body, protocol.report_headers(decider["secret"], body),
                              deadline=left)
        if answer.error or answer.status != 200:
            raise ValueError(answer.error or "HTTP %s %s" % (answer.status, answer.text.strip()[:200]))
        decided = json.loads(answer.text)
        if not isinstance(decided, dict) or not isinstance(decided.get("decision"), dict):
            raise ValueError("the answer has no decision")
        return decided, None
    except (ValueError, KeyError, TypeError) as exc:
        return None, "the decider at %s did not take the report: %s" % (base, str(exc)[:300])


# When the state cannot be saved, the alert that says so is sent at most once in this many seconds; when it was last
# sent is kept in /run (memory), not in the state directory whose disk is full.
UNSAVED_EVERY = 3600
UNSAVED_MARKS = "/run/gpufabric-health-monitor"


def tell_decider(config, result, mode, clock, log):
    """Report to the decider when one is configured, and log its answer or why it did not take the report; the
    answer, or None."""
    if not config["decider"]:
        return None
    decided, error = report(config, result, mode if mode in ("healthcheck", "epilog") else "timer", clock)
    log("decider: %s" % (decided.get("text") or decided["decision"].get("why")) if decided else error)
    return decided


def _unsaved_alert_due(config, now):
    """Whether the 'state not writable' alert is due, marking it sent now (False when /run cannot keep the mark either:
    then it is sent every run rather than never)."""
    name = hashlib.sha256(config["state_dir"].encode("utf-8", "surrogateescape")).hexdigest()[:16]
    mark = os.path.join(UNSAVED_MARKS, name)
    try:
        if now - os.stat(mark).st_mtime < UNSAVED_EVERY:
            return False
    except OSError:
        pass
    try:
        os.makedirs(UNSAVED_MARKS, mode=0o700, exist_ok=True)
        with open(mark, "w"):
            pass
        os.utime(mark, (now, now))
    except OSError:
        pass
    return True


def unsaved(config, why, host, now, log, clock, runner=None, result=None, duration=None, told=False, mode="timer"):
    """The state cannot be saved (a full or read-only disk): nothing is tracked or queued, but the node is not silent.
    The checks run (when they have not), the decider is told (when it was not), each webhook gets one alert an hour
    that says the state is not writable with what the checks found, and the metric says so. Returns 1."""
    log("%s: the state cannot be saved; the decider is told and the webhooks alerted directly" % why)
    if result is None:
        started = clock()
        result = node_checks.check_node(config["checks"], runner, host=node_name(config))
        duration = clock() - started
    if not told:
        tell_decider(config, result, mode, clock, log)
    write_metrics(config, result, host, now, duration, {}, log, state_saved=False)
    if mode != "timer" or not config["webhooks"] or not _unsaved_alert_due(config, now):
        return 1
    counts = result["counts"]
    event = {"event_id": monitor.new_event_id(config["cluster"], host, "health_state|" + host, now),
             "check": "health_state", "target": host, "severity": "critical", "first_seen": now, "last_seen": now,
             "detail": "the health monitor cannot save its state (%s): findings are not tracked until it can; this run "
                       "found %d critical, %d warning, %d info: %s" % (
                           why[:300], counts["critical"], counts["warning"], counts["info"],
                           "; ".join("%s %s" % (f["check"], f["target"]) for f in result["findings"][:10]) or "none"),
             "fix_hint": "free space on the file system of %s (df -h), or make it writable again" % config["state_dir"]}
    body = messages.payload(config["cluster"], host, event, "new", now)
    for hook in config["webhooks"]:
        body["sent_at"] = messages.iso(clock())
        url, data, headers = chat.build_request(hook, body, clock())
        answer = webhook.send(url, data, headers, deadline=config["timeout"])
        log("alert to %s: %s" % (hook["name"], answer.error or "HTTP %s" % answer.status))
    return 1


def write_metrics(config, result, host, now, duration, state, log, state_saved=True):
    """The findings and the check's health into node_exporter's textfile directory (when configured),
    atomically: a scrape sees the last run or this one, never half a file. A file that cannot be written is
    said; the stale-exporter alert then fires from its age."""
    if not config.get("textfile_dir"):
        return
    path = os.path.join(config["textfile_dir"], metrics.HEALTH_FILE)
    try:
        families = metrics.health_families(result, config["cluster"], host.split(".")[0], now, duration,
                                           config.get("interval"), state.get("last_success"),
                                           state.get("decisions") if config["decider"] else None,
                                           result["observed"].get("gpus") or (), state_saved=state_saved)
        statefile.save_bytes(path, metrics.render(families).encode("utf-8"), mode=0o644)
    except (statefile.StateError, metrics.MetricsError) as exc:
        log("metrics: %s" % exc)


def send_evidence(config, request, result, runner, log, clock=time.time):
    """Collect the bundle the decider asked for (node/evidence.py: within its budget and size) and post it, signed.
    The drain happened before the decider asked; a collection that fails or runs out of time sends what it has."""
    try:
        ident, budget, max_bytes = str(request["id"]), int(request["budget"]), int(request["max_bytes"])
    except (KeyError, TypeError, ValueError):
        return log("evidence: the decider's request is not one this monitor reads: %r" % (request,))
    data, manifest = evidence.collect(config["checks"], result["findings"], runner or commands.Runner(), budget, max_bytes,
                                      paths(config)[0], clock, (result.get("observed") or {}).get("dcgm"))
    if data is None:
        return log("evidence %s: even the manifest is larger than %d bytes; nothing sent" % (ident, max_bytes))
    decider = config["decider"]
    answer = webhook.send(decider["url"].rstrip("/") + EVIDENCE_PATH, data,
                          protocol.evidence_headers(decider["secret"], node_name(config), ident, data),
                          deadline=max(decider["timeout"], 60))
    log("evidence %s: %d bytes (%s): %s" % (ident, len(data), evidence.manifest_line(manifest),
                                            answer.error or "HTTP %s %s" % (answer.status, answer.text.strip()[:200])))


def run_once(config, runner=None, now=None, log=_say, mode="timer", clock=time.time):
    """One run: check, report to the decider, queue, save, send (the timer only). Returns the number of
    messages that failed (1 as well when the state could not be saved)."""
    now = clock() if now is None else now
    host = config["host"] or os.uname()[1]
    state_path, lock_path = paths(config)
    try:
        with statefile.Lock(lock_path):
            state, warning = statefile.load_json(state_path, monitor.check_state)
            if warning:
                log(warning)
            state = state or monitor.empty_state()
            started = clock()
            result = node_checks.check_node(config["checks"], runner, host=node_name(config),
                                            previous_counters=state.get("counters"), history=state.get("history") or [],
                                            dcgm_level=config["epilog_dcgm_level"] if mode == "epilog" else None)
            duration = clock() - started
            decided = tell_decider(config, result, mode, clock, log)
            if decided:
                state["decisions"] = metrics.count_decision(state.get("decisions"), decided["decision"])
            if result["complete"]:
                state["last_success"] = now
            names = [w["name"] for w in config["webhooks"]]
            state, queued = monitor.plan(state, result["findings"], names, now, config["quiet_period"], config["cluster"],
                                         host, config["min_severity"], config["send_recovery"])
            observed = result["observed"]
            state["counters"] = {"at": observed["counters_at"], "ports": observed["port_counters"]}
            state["history"] = observed["history"]
            state["last_run"] = {"at": messages.iso(now), "counts": result["counts"], "healthy": result["healthy"],
                                 "complete": result["complete"], "queued": len(queued)}
            if state.pop("dropped", 0):
                log("outbox full: the oldest messages were dropped to keep %d per webhook" % outbox.MAX_PENDING)
            try:
                statefile.save_json(state_path, state)
            except statefile.StateError as exc:
                return unsaved(config, str(exc), host, now, log, clock, runner, result, duration, True, mode)
            write_metrics(config, result, host, now, duration, state, log)
    except statefile.StateError as exc:  # the lock (or the state) could not be had
        return unsaved(config, str(exc), host, now, log, clock, runner, mode=mode)
    if decided and decided["decision"].get("evidence_request"):   # the drain is done; the decider wants the evidence
        send_evidence(config, decided["decision"]["evidence_request"], result, runner, log, clock)
    totals = {"sent": 0, "failed": 0, "pending": outbox.count(state["outbox"])}
    if mode == "timer" and config["webhooks"]:
        totals = delivery.deliver_state(state_path, lock_path, monitor.check_state, config["webhooks"], log,
                                        deadline=config["deliver_deadline"], timeout=config["timeout"], clock=clock)
    counts = result["counts"]
    log("%d finding(s): %d critical, %d warning, %d info%s; %d open event(s); %d message(s) sent, %d failed, %d waiting" % (
        len(result["findings"]), counts["critical"], counts["warning"], counts["info"],
        "" if result["complete"] else " (incomplete: %s)" % "; ".join(result["unreadable"]),
        sum(1 for e in state["events"].values() if e["status"] == "open"), totals["sent"], totals["failed"],
        totals["pending"]))
    return totals["failed"] + (1 if totals.get("save_error") else 0)


def gate(config, runner=None, log=_complain, clock=time.time):
    """The Slurm prolog gate: 1 (refuse the job) when the decider has this node out of service, else 0.

    The node never refuses on its own account: refusing makes Slurm drain the node, and only the decider
    may take a node out of service (within the cluster's limits). A decider that does not answer lets
    the job run, and says why on stderr (slurmd's log).
    """
    if not config["decider"]:
        return 0
    result = node_checks.check_node(config["checks"], runner, host=node_name(config), sleep=lambda seconds: None)
    decided, error = report(config, result, "gate", clock)
    if decided is None:
        log("gpufabric prolog: %s; the job is not refused" % error)
        return 0
    if decided.get("out_of_service"):
        log("gpufabric prolog: refusing the job: %s" % (decided.get("text") or decided["decision"].get("why")))
        return 1
    return 0


def _imex_runner(config):
    return commands.Runner(node_checks.options(config["checks"])["command_timeout"])


def imex_prolog(config, runner=None, log=_complain, clock=time.time, env=None, **hooks):
    """Slurm's IMEX prolog (plan/imex_domain, node/imex): the job's nodes into nodes_config.cfg, the daemon restarted,
    waited for (bounded) and the channel device looked for. 0 when the domain is ready; else 1 - Slurm fails the
    job's prolog - after telling the decider, with the connectivity matrix (the decider alone drains). ``hooks``:
    node/imex.prolog's resolve, sleep and exists (tests)."""
    env = os.environ if env is None else env
    settings, job, host = config["imex"], env.get("SLURM_JOB_ID", ""), node_name(config)
    runner = runner or _imex_runner(config)
    try:
        nodes = expand_hostlist(env.get("SLURM_JOB_NODELIST") or "")
        done = imex.prolog(settings, job, nodes, runner, clock=clock, **hooks)
    except (ValueError, statefile.StateError, OSError) as exc:   # ImexPrologError, SlurmParseError: they name the value
        done = {"ok": False, "why": str(exc), "findings": [], "matrix": None}
    if done["ok"]:
        log("gpufabric IMEX prolog: job %s: the IMEX domain of %s is UP" % (job, env.get("SLURM_JOB_NODELIST")))
        return 0
    why = "IMEX prolog of Slurm job %s: %s%s" % (job, done["why"], "; matrix %s" % done["matrix"] if done["matrix"] else "")
    log("gpufabric %s" % why)
    found = [f for f in done["findings"] if f["severity"] != "info"] or [finding(
        "imex_domain", "critical", host, done["why"], "see slurmd's log and journalctl -u %s on %s" % (settings["service"], host))]
    # Only IMEX was read: the report is incomplete, so it can drain (by the decider's policy) but never resume a node.
    result = {"findings": found, "counts": count_findings(found), "complete": False, "unreadable": [why[:1000]],
              "observed": {}}
    if config["decider"]:
        decided, error = report(config, result, "gate", clock)
        log("gpufabric IMEX prolog: decider: %s" % ((decided.get("text") or decided["decision"].get("why")) if decided else error))
        if decided and decided["decision"].get("evidence_request"):
            send_evidence(config, decided["decision"]["evidence_request"], result, runner, log, clock)
    return 1


def imex_epilog(config, runner=None, log=_complain):
    """Slurm's IMEX epilog: the daemon stopped and the prolog's nodes_config.cfg taken back (the site's own put back);
    always 0 - a failing epilog would make slurmd drain the node, and only the decider drains."""
    for line in imex.epilog(config["imex"], runner or _imex_runner(config)):
        log("gpufabric IMEX epilog: %s" % line)
    return 0


USAGE = "usage: gpufabric-health-monitor --config FILE [--healthcheck | --gate | --epilog | --imex-prolog | --imex-epilog]"


def main(argv=None):
    """gpufabric-health-monitor --config FILE [--healthcheck | --gate | --epilog | --imex-prolog | --imex-epilog]; see the
    module docstring."""
    argv = sys.argv[1:] if argv is None else argv
    mode = argv[2] if len(argv) == 3 else None
    modes = (None, "--healthcheck", "--gate", "--epilog", "--imex-prolog", "--imex-epilog")
    if len(argv) not in (2, 3) or argv[0] != "--config" or mode not in modes:
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
    if mode in ("--imex-prolog", "--imex-epilog") and not config["imex"]:
        _complain("configuration %s: no imex settings: the IMEX prolog and epilog are off" % argv[1])
        return 2
    try:
        if mode == "--gate":
            return gate(config)
        if mode == "--imex-prolog":
            return imex_prolog(config)
        if mode == "--imex-epilog":
            return imex_epilog(config)
        failed = run_once(config, mode={"--healthcheck": "healthcheck", "--epilog": "epilog"}.get(mode, "timer"))
        return 0 if mode in ("--healthcheck", "--epilog") else (1 if failed else 0)
    except node_checks.CheckOptionError as exc:
        _complain("checks: %s" % exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
