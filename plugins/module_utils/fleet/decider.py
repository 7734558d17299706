# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The one decider of a cluster, where it touches the world: the scheduler's records and clock, the
ledger and outbox on disk (the outbox in a file of its own, so a damaged ledger never takes the undelivered messages
with it), the drain and resume commands. The decisions are remediation.plan's (pure).

The remediator service (roles/remediator/files/gpufabric_remediator.py) calls ``decide`` for each batch
of node reports; the ``remediate`` module (playbooks/remediate.yml, AWX) calls it once for the whole
inventory. Both take the same lock and read the same ledger, so there is one decider even when both run:

1. lock the state directory; read the ledger, the outbox (OUTBOX_FILE) and the second copy of the decision history (a
   damaged file, or one not ours, is set aside; a lost outbox is told);
2. read the whole fleet and the clock from the scheduler (Slurm: `sinfo` with SLURM_TIME_FORMAT=%s and
   `sdiag`; Kubernetes: `kubectl get nodes -o json`); anything unreadable stops here - could not act;
   without a ledger it is rebuilt first: the drains and resumes from the history copy, our drains in effect from the
   scheduler (their reasons), and with no usable history every drain and resume held for one interval (ledger.rebuild);
3. plan (pure; open intents reconciled with the scheduler first: a drain or resume it took while the decider was
   down is told now, one it never took is dropped), save the ledger and its history copy - the decisions as intents -
   before anything is done (a full disk stops here);
4. carry out each drain and resume after reading the node again (a node someone else drained or resumed
   meanwhile is left alone; a failed one waits a backoff before it is tried again, and counts toward no limit),
   confirm what the scheduler took, then queue the messages of what it answered (a failure once per episode) and
   save the outbox, then the ledger: a crash in between tells a decision twice, never not at all.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import (
    certificate, delivery, evidence, k8s_nodes, k8s_taint_client, messages, outbox, remediation, slurm_nodes)
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import metrics as render_metrics
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import (
    HISTORY_FILE, check_history, check_ledger, confirmed, empty_ledger, held_until, history_of, rebuild, rebuilt_text,
    restore, settle)
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import is_ours


class CouldNotAct(Exception):
    """The scheduler could not be read or did not do what was asked; the message says which and why."""


def _ok(result, what):
    if not result.ok:
        raise CouldNotAct("%s: %s" % (what, result.describe()))
    return result.stdout


class Slurm(object):
    """Slurm through its own tools; times as epoch seconds (SLURM_TIME_FORMAT=%s), so no time zone of
    the decider's or of a node's can shift them, and the clock is slurmctld's own (sdiag)."""

    kind = "slurm"

    def __init__(self, settings, timeout):
        self.settings = settings
        self.runner = commands.Runner(timeout, env=dict(os.environ, SLURM_TIME_FORMAT="%s"))
        self.note = None

    def read(self):
        """(fleet, now, ledger records or None)"""
        out = _ok(self.runner.run([self.settings["sinfo"], "-h", "-N", "-o", slurm_nodes.SINFO_FORMAT]), "sinfo")
        try:
            fleet = slurm_nodes.parse_sinfo_fleet(out)
        except ValueError as exc:
            raise CouldNotAct("sinfo: %s" % exc)
        result = self.runner.run([self.settings["sdiag"]])
        now = slurm_nodes.parse_sdiag_time(result.stdout) if result.ok else None
        if now is None:
            raise CouldNotAct("sdiag gave no clock (%s): the limits are counted by slurmctld's clock only"
                              % (result.describe() if not result.ok else "no 'sdiag output at' line"))
        return fleet, now, None

    def node(self, name):
        out = _ok(self.runner.run([self.settings["scontrol"], "show", "node", "-o", name]), "scontrol show node")
        try:
            return slurm_nodes.parse_scontrol_node(out)
        except ValueError as exc:
            raise CouldNotAct("scontrol show node %s: %s" % (name, exc))

    def apply(self, decision, record, now):
        """Carry out a drain or resume, after reading the node again; returns the argv run."""
        node = self.node(decision["node"])
        if decision["action"] == "drain" and node["drained"]:
            raise CouldNotAct("%s was drained meanwhile (%s): left as it is" % (decision["node"], node["reason"]))
        if decision["action"] == "resume" and (not node["drained"] or node["reason"] != decision["reason"]):
            raise CouldNotAct("%s changed meanwhile (now %s, %s): not resumed" % (decision["node"], node["state"],
                                                                                  node["reason"] or "no reason"))
        argv = slurm_nodes.slurm_argv(decision["node"], decision, self.settings["scontrol"])
        _ok(self.runner.run(argv), "scontrol update")
        return argv


class Kubernetes(object):
    """Kubernetes through kubectl: the ledger lives on each Node (an annotation), every change is a JSON
    patch that touches only our taint, our cordon and our annotations."""

    kind = "kubernetes"

    def __init__(self, settings, timeout, clock):
        self.settings = settings
        self.runner = commands.Runner(timeout)
        self.clock = clock
        self.objects = {}
        # Health as device taints (kubernetes.device_taints): read with the Nodes, carried out before their patch.
        self.taints = k8s_taint_client.DeviceTaints(settings.get("device_taints"),
                                                    lambda argv, data: self.runner.run(argv, data=data), self._kubectl)

    def _kubectl(self, args):
        argv = [self.settings["kubectl"]]
        if self.settings.get("kubeconfig"):
            argv += ["--kubeconfig", self.settings["kubeconfig"]]
        return argv + args

    def read(self):
        out = _ok(self.runner.run(self._kubectl(["get", "nodes", "-o", "json"])), "kubectl get nodes")
        try:
            self.taints.read()
        except k8s_taint_client.TaintError as exc:  # our rules unread: a node they drained would look in service
            raise CouldNotAct(str(exc))
        try:
            fleet, records, self.objects = k8s_nodes.k8s_fleet(json.loads(out), self.taints.rules)
        except ValueError as exc:  # JSON errors too
            raise CouldNotAct("kubectl get nodes: %s" % str(exc)[:300])
        return fleet, self.clock(), records

    def annotate(self, result):
        self.taints.annotate(result)

    def apply(self, decision, record, now):
        """Read the Node again, check it is as the plan saw it, and patch it only if it did not change
        since (a test of its resourceVersion): an admin's cordon in between is never claimed as ours."""
        name = decision["node"]
        out = _ok(self.runner.run(self._kubectl(["get", "node", name, "-o", "json"])), "kubectl get node")
        try:
            ignored_fleet, ignored_records, objects = k8s_nodes.k8s_fleet([json.loads(out)], self.taints.rules)
        except ValueError as exc:
            raise CouldNotAct("kubectl get node %s: %s" % (name, str(exc)[:300]))
        fresh = objects.get(name)
        entry = ignored_fleet.get(name) or {}
        if decision["action"] == "drain" and entry.get("drained"):
            raise CouldNotAct("%s was cordoned meanwhile (%s): left as it is" % (name, entry.get("reason")))
        if decision["action"] == "resume" and entry.get("reason") != decision["reason"]:
            raise CouldNotAct("%s changed meanwhile (%s): not resumed" % (name, entry.get("reason") or "in service"))
        taints = decision.get("device_taints") if self.taints.api else None
        done = self.taints.carry_out(decision["action"], taints) if taints else []
        patch = k8s_nodes.k8s_json_patch(fresh, decision, record, now, cordon=not taints)
        version = (fresh.get("metadata") or {}).get("resourceVersion")
        if version is not None:
            patch = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] + [
                op for op in patch if op.get("path") != "/metadata/resourceVersion"]
        argv = self._kubectl(["patch", "node", name, "--type", "json", "-p", json.dumps(patch, sort_keys=True)])
        _ok(self.runner.run(argv), "kubectl patch")
        return done + argv[:-2] + ["-p", "<json patch>"]


def scheduler_for(settings, timeout, clock):
    if settings["slurm"]["enabled"]:
        return Slurm(settings["slurm"], timeout)
    if settings["kubernetes"]["enabled"]:
        return Kubernetes(settings["kubernetes"], timeout, clock)
    raise CouldNotAct("no scheduler enabled: set remediation slurm.enabled or kubernetes.enabled")


def check_state(data):
    if not isinstance(data, dict):
        raise ValueError("not an object")
    check_ledger(data.get("ledger"))
    if "outbox" in data:   # a ledger saved before the outbox had its own file: moved there when read (_open_outbox)
        outbox.check(data["outbox"])
    if not isinstance(data.get("rebuild", False), bool) or not isinstance(data.get("lost", ""), str):
        raise ValueError("rebuild must be true or false, and lost a text")
    failing = data.get("failing", {})
    if not isinstance(failing, dict) or not all(
            isinstance(e, dict) and all(isinstance(e.get(k), (int, float)) and not isinstance(e.get(k), bool)
                                        for k in ("since", "tries", "next")) for e in failing.values()):
        raise ValueError("failing must map node|action to {since, tries, next, error}")
    return data


def empty_state():
    return {"ledger": empty_ledger(), "last_error": None, "failing": {}}


def paths(state_dir):
    return os.path.join(state_dir, "decider.json"), os.path.join(state_dir, "decider.lock")


# The messages waiting for the webhooks, apart from the ledger (outbox.check_file's shape).
OUTBOX_FILE = "decider.outbox.json"


def outbox_path(state_dir):
    return os.path.join(state_dir, OUTBOX_FILE)


def history_path(state_dir):
    """The second copy of the decision history (ledger.history_of), beside the ledger."""
    return os.path.join(state_dir, HISTORY_FILE)


def default_name():
    return "gpufabric-remediator@%s" % socket.gethostname().split(".")[0]


def _queue(box, config, told, now, log):
    """Queue what is told for every webhook; returns whether the outbox changed (else it need not be written)."""
    names = [w["name"] for w in config["webhooks"]]
    gone = outbox.forget(box, names)
    if gone:
        log("%d message(s) for webhooks no longer configured were dropped" % gone)
    for message in told:
        body = messages.decision_payload(config["cluster"], config["name"] or default_name(), message, now)
        dropped = outbox.enqueue(box, names, body, now)
        if dropped:
            log("outbox full: %d old message(s) dropped to keep %d per webhook" % (dropped, outbox.MAX_PENDING))
    return bool(gone or (told and names))


def _open_outbox(config, state, act, log):
    """(box, told, changed): the messages still waiting for the webhooks, from their own file. One that cannot be
    used (damaged, or not ours) is set aside and its loss told first; the outbox of a ledger saved before the outbox
    had a file of its own is moved in (kept ahead of anything newer)."""
    data, aside = statefile.load_json(outbox_path(config["state_dir"]), outbox.check_file, set_aside=act)
    box = data["outbox"] if data else {}
    changed = False
    if state is not None and "outbox" in state:
        outbox.merge(box, state.pop("outbox"))
        changed = True
    if not aside:
        return box, [], changed
    log(aside)
    return box, [{"node": config["name"] or default_name(), "check": "remediation", "target": "decider outbox",
                  "severity": "critical", "status": "outbox-lost", "policy": None,
                  "detail": "%s: the messages it held for the webhooks (decided, not yet delivered) are lost; the "
                            "decider's log and ledger hold what it decided" % aside,
                  "action": "undelivered messages lost: the outbox %s could not be read" % OUTBOX_FILE}], True


def deliver(config, log, clock=time.time):
    """Send what the decider's outbox holds (delivery.deliver_state over OUTBOX_FILE, under the decider's lock); a
    damaged file is left for the next decision to set aside and tell."""
    return delivery.deliver_state(outbox_path(config["state_dir"]), paths(config["state_dir"])[1], outbox.check_file,
                                  config["webhooks"], log, deadline=config["deliver_deadline"], timeout=config["timeout"],
                                  max_per_run=config["max_per_run"], clock=clock, set_aside=False)


def decide(reports, config, clock, log, act=True, scheduler=None, lock_wait=60, certificates=None):
    """Decide (and with ``act``, carry out) for a batch of reports {node: report}; ``certificates`` {node: checked
    certificate} are active checks made since the drain (remediate.yml), recorded before the plan reads them.

    Returns {"decisions": [...], "breaker": {...}, "error": None or why nothing was done, "warning": ...}.
    ``act=False`` (check mode) reads the scheduler and the ledger, plans, and changes nothing anywhere.
    """
    settings = config["remediation"]
    state_path, lock_path = paths(config["state_dir"])
    scheduler = scheduler or scheduler_for(settings, config["command_timeout"], clock)
    decider_name = config["name"] or default_name()
    try:
        with statefile.Lock(lock_path, lock_wait, create=act):
            state, warning = statefile.load_json(state_path, check_state, set_aside=act)
            history, history_warning = statefile.load_json(history_path(config["state_dir"]), check_history, set_aside=act)
            for line in (warning, history_warning):
                if line:
                    log(line)
            box, lost_box, moved = _open_outbox(config, state, act, log)
            state = _lost(state, warning, history, history_warning)
            try:
                fleet, now, records = scheduler.read()
            except CouldNotAct as exc:
                return _could_not_act(state, box, lost_box, config, reports, str(exc), clock(), log, act, warning)
            ledger, told = _ledger_to_plan(state, history, records, fleet, now, config, scheduler.kind, log)
            told = lost_box + told
            result = remediation.plan(reports, fleet, ledger, settings, now, decider_name, certificates)
            if hasattr(scheduler, "annotate"):   # how each decision is carried out (Kubernetes: device taints)
                scheduler.annotate(result)
            _log_reconciled(result["reconciled"], scheduler.kind, log)
            if not act:
                out_of_service(result, fleet)
                return dict(result, error=None, warning=warning, now=now)
            state["ledger"] = result["ledger"]
            state["last_error"] = None
            failing = state.setdefault("failing", {})
            saved = _copied(history)
            # What is known before anything is done - a lost outbox, a rebuild, what the scheduler took while the decider
            # was down - is queued and saved with the intents: the intents are settled now, so a decider that dies
            # before its last save must have told it already.
            queued = _queue(box, config, told + remediation.confirmed_messages(result["reconciled"], scheduler.kind),
                            now, log)
            try:  # the decisions are recorded (the ledger and its second copy) before anything is done
                saved = _save(config["state_dir"], state, now, saved, box if moved or queued else None)
            except statefile.StateError as exc:
                return dict(result, error="%s: nothing was done (a decision that cannot be recorded is not carried out)"
                            % exc, warning=warning, now=now, decisions=[dict(d, action="none", error=str(exc))
                                                                        for d in result["decisions"]])
            for decision in result["decisions"]:
                if decision["action"] not in ("drain", "resume") or decision["shadow"]:
                    continue
                _carry_out(scheduler, decision, state["ledger"]["nodes"].get(decision["node"]) or {}, failing, now, log)
            asked = set("%s|%s" % (d["node"], d["action"]) for d in result["decisions"]
                        if d["action"] in ("drain", "resume") and not d["shadow"])
            for key in list(failing):  # an episode ends when its node no longer asks for that action
                if key.split("|", 1)[0] in reports and key not in asked:
                    del failing[key]
            out_of_service(result, fleet)
            ask_for_evidence(result, state, settings["evidence"])
            # What happened, told once the scheduler answered: never "DRAINED" before (or instead of) a failure,
            # and a failing action once per episode, not on every report.
            said = [d for d in result["decisions"] if not d.get("error") or d.get("new_failure")]
            queued = _queue(box, config, remediation.messages(dict(result, decisions=said), scheduler.kind), now, log)
            try:
                _save(config["state_dir"], state, now, saved, box if queued else None)
            except statefile.StateError as exc:
                log("%s; what was done is not recorded as told" % exc)
            return dict(result, error=None, warning=warning, now=now)
    except statefile.StateError as exc:
        return {"decisions": [_none(node, str(exc)) for node in sorted(reports)], "error": str(exc),
                "breaker": {"open": [], "opened": [], "closed": [], "shares": {}}, "warning": None, "now": None}


def _ledger_to_plan(state, history, records, fleet, now, config, kind, log):
    """(ledger, messages): the ledger the plan starts from - on Kubernetes with the Nodes' records merged in - and,
    when it was lost, rebuilt (the drains and resumes from the history copy, if it is there) and told once."""
    ledger = state["ledger"]
    restored = None
    if state.get("rebuild") and history is not None:   # the decisions already over, from the second copy
        ledger = dict(ledger, nodes=dict(ledger["nodes"]))
        restored = restore(ledger, history)
    if records is not None:  # Kubernetes: the real history lives on the Nodes
        ledger = dict(ledger, nodes=k8s_nodes.merge_records(ledger["nodes"], records))
    if not state.pop("rebuild", False):
        return ledger, []
    ledger = dict(ledger)
    rebuilt = rebuild(ledger, fleet, now, config["remediation"]["rate_limit"]["interval"], kind, restored,
                      state.pop("lost", None))
    log(rebuilt_text(rebuilt, kind))
    if rebuilt["drains_in_effect"] or rebuilt["restored"] or held_until(rebuilt)["drain"]:
        return ledger, [_rebuilt_message(config, rebuilt, kind)]
    return ledger, []


def _lost(state, warning, history, history_warning):
    """The state to decide with: without one (deleted, set aside, or a first start) a new one marked to be rebuilt
    before anything is drained or resumed - a mark saved even by a run that cannot read the scheduler - with why the
    decision history is lost when it is known to be (the ledger or its copy set aside)."""
    if state is None:
        state = dict(empty_state(), rebuild=True)
        if warning and history is None and not history_warning:
            state["lost"] = "%s, and its second copy %s is missing" % (warning, HISTORY_FILE)
    if state.get("rebuild") and history_warning:
        state["lost"] = history_warning
    return state


def _copied(history):
    """What a history copy holds, its time aside, as text (a copy is written again only when this changed). Text, not
    the entries themselves: they are the ledger's, and settling an intent in place would change the copy's memory of
    what was saved too - the settled drain was then never written, and a restore told it again."""
    if history is None:
        return None
    return json.dumps(dict((k, v) for k, v in history.items() if k != "saved_at"), sort_keys=True)


def _save(state_dir, state, now, saved, box=None):
    """Save the outbox when given (what is told is saved before the ledger that says it was done), the state, then the
    second copy of its decision history when that changed (most batches change no drain or resume: one write, not
    two); returns what the copy holds. StateError when any cannot be written."""
    if box is not None:
        statefile.save_json(outbox_path(state_dir), outbox.as_file(box))
    statefile.save_json(paths(state_dir)[0], state)
    second = history_of(state["ledger"], now)
    if _copied(second) != saved:
        statefile.save_json(history_path(state_dir), second)
    return _copied(second)


def _log_reconciled(reconciled, kind, log):
    for entry in reconciled["confirmed"]:
        log("%s: the %s of %s recorded before the decider stopped was taken (%s): confirmed, and told now"
            % (kind, entry["action"], entry["node"], entry.get("reason")))
    for entry in reconciled["dropped"]:
        if entry["action"] == "drain":
            log("%s: the drain of %s recorded before the decider stopped never reached the scheduler: dropped (it counts "
                "toward no limit; the node's next report decides again)" % (kind, entry["node"]))
        else:
            log("%s: the resume of %s recorded before the decider stopped never reached the scheduler (it still holds the "
                "drain %s): dropped - it counts toward no limit, its certificate is not spent, and the node's next report "
                "decides again" % (kind, entry["node"], entry.get("reason")))


# A drain or resume that fails is tried again on a later report after this many seconds, doubling up to the last.
RETRY_FIRST, RETRY_MAX = 60, 900


def _carry_out(scheduler, decision, record, failing, now, log):
    """One drain or resume: skipped while its failure's backoff runs, else carried out; a failure starts or extends
    its episode (``failing``: {node|action: since, tries, next, error}) and is marked new only when it starts one."""
    key = "%s|%s" % (decision["node"], decision["action"])
    episode = failing.get(key)
    if episode and now < episode["next"]:
        error = "not tried again before %d s from now (%d failure(s) since %s: %s)" % (
            episode["next"] - now, episode["tries"], messages.iso(episode["since"]), episode["error"])
    else:
        try:
            argv = scheduler.apply(decision, confirmed(record), now)
            decision["done"] = True
            failing.pop(key, None)
            _settle(record, decision["action"], True)   # the scheduler took it: no longer an open intent
            log("%s: ran %s" % (scheduler.kind, " ".join(argv)))
            return
        except (CouldNotAct, ValueError) as exc:
            error = str(exc)
            tries = episode["tries"] + 1 if episode else 1
            failing[key] = {"since": episode["since"] if episode else now, "tries": tries, "error": error[:300],
                            "next": now + min(RETRY_MAX, RETRY_FIRST * 2 ** (tries - 1))}
            decision["new_failure"] = episode is None
            log("%s: could not act on %s: %s" % (scheduler.kind, decision["node"], exc))
    decision["done"], decision["error"] = False, error
    # It did not happen: it counts toward no limit (a drain toward no escalation), and a resume's certificate is kept.
    _settle(record, decision["action"], False)


def _settle(record, action, taken):
    entries = record.get(action + "s") or []
    if entries and entries[-1].get("pending"):
        settle(record, action + "s", taken)


def ask_for_evidence(result, state, settings):
    """Each node out of service by a drain of ours whose bundle has not arrived is asked for it in its answer
    (``evidence_request``): right after the drain, and again on every report until it arrives."""
    if not settings["enabled"]:
        return
    received = state.get("evidence") or {}
    for decision in result["decisions"]:
        drains = (state["ledger"]["nodes"].get(decision["node"]) or {}).get("drains") or []
        ident = evidence.ident_of(drains[-1].get("evidence")) if drains and decision.get("out_of_service") else None
        if ident and ident not in received:
            decision["evidence_request"] = evidence.request(ident, settings)


def metrics_text(config):
    """The decider's metrics for Prometheus (GET /metrics): each node's time from drain to its last resume, whether a
    certificate resumed it, each rack's last decision (when, how many nodes), and the evidence store's bundles - read
    from the state file, never waiting on the lock."""
    state, ignored = statefile.load_json(paths(config["state_dir"])[0], check_state, set_aside=False)
    state = state or empty_state()
    base = {"cluster": config["cluster"]}
    samples = certificate.mttr_samples(_settled(state["ledger"]))
    received = list((state.get("evidence") or {}).values())
    held = held_until(state["ledger"].get("rebuilt"))
    racks = sorted(((state["ledger"].get("racks") or {}).get("decisions") or {}).items())
    return render_metrics.render([
        render_metrics.family("gpufabric_remediation_held_until_timestamp_seconds", "gauge",
                              "Until when (the scheduler's clock) every drain or resume is held: the decider's decision "
                              "history was lost and could not be rebuilt (0: nothing held)",
                              [(dict(base, action=action), until) for action, until in sorted(held.items())]),
        render_metrics.family("gpufabric_remediation_mttr_seconds", "gauge",
                              "Seconds from the drain of a node by gpufabric to its last resume (the decider's MTTR)",
                              [(dict(base, node=node, certified="true" if certified else "false"), seconds)
                               for node, seconds, certified in samples]),
        render_metrics.family("gpufabric_remediation_rack_decision_timestamp_seconds", "gauge",
                              "When (the scheduler's clock) the decider last drained or resumed a rack's nodes together "
                              "(the rack's NVLink domain as one unit)",
                              [(dict(base, rack=rack, action=d["action"], shadow="true" if d.get("shadow") else "false"),
                                d["at"]) for rack, d in racks]),
        render_metrics.family("gpufabric_remediation_rack_nodes", "gauge",
                              "How many nodes the rack's last decision drained or resumed together",
                              [(dict(base, rack=rack, action=d["action"], shadow="true" if d.get("shadow") else "false"),
                                len(d.get("nodes") or [])) for rack, d in racks]),
        render_metrics.family("gpufabric_remediation_evidence_bundles", "gauge",
                              "Evidence bundles received from drained nodes and kept in the decider's state",
                              [(base, len(received))]),
        render_metrics.family("gpufabric_remediation_evidence_bytes", "gauge",
                              "Bytes of the evidence bundles the decider's state records",
                              [(base, sum(e.get("bytes") or 0 for e in received))]),
    ])


def _settled(ledger):
    """The ledger without its open intents (a resume not yet known to have happened has no MTTR)."""
    return {"nodes": dict((name, dict(record, resumes=[e for e in record.get("resumes") or [] if not e.get("pending")]))
                          for name, record in ledger["nodes"].items())}


def evidence_dir(config):
    return config["remediation"]["evidence"]["dir"] or os.path.join(config["state_dir"], "evidence")


def receive_evidence(config, node, ident, data, clock, log, lock_wait=30):
    """Keep a bundle a node posted, if the decider asked that node for it and it has not arrived: written whole
    (a temporary file renamed), the store's oldest dropped first to stay within its limits, recorded in the state.
    Returns (HTTP status, answer)."""
    settings = config["remediation"]["evidence"]
    state_path, lock_path = paths(config["state_dir"])
    try:
        name = evidence.bundle_name(ident)
    except evidence.EvidenceError as exc:
        return 400, {"error": str(exc)}
    if name.split("/", 1)[0] != node:
        return 403, {"error": "%s is another node's bundle" % ident}
    if len(data) > settings["max_bytes"]:
        return 413, {"error": "the bundle has %d bytes, more than max_bytes %d" % (len(data), settings["max_bytes"])}
    try:
        with statefile.Lock(lock_path, lock_wait):
            state, ignored = statefile.load_json(state_path, check_state, set_aside=False)
            state = state or empty_state()
            drains = (state["ledger"]["nodes"].get(node) or {}).get("drains") or []
            if not any(d.get("evidence") == name for d in drains):
                return 404, {"error": "no drain of %s asked for %s" % (node, ident)}
            received = state.setdefault("evidence", {})
            if ident in received:
                return 200, {"stored": received[ident].get("path"), "already": True}
            where = evidence_dir(config)
            held = statefile.owned_files(where, evidence.BUNDLE)
            for old in evidence.to_drop(held, node, len(data), settings):
                statefile.remove_owned(where, old)
                log("evidence: dropped %s to stay within the store's limits" % old)
            path = statefile.write_owned(where, name, data)
            evidence.remember(received, ident, {"node": node, "path": path, "bytes": len(data), "at": clock()})
            statefile.save_json(state_path, state)
            log("evidence: %s from %s (%d bytes)" % (path, node, len(data)))
            return 200, {"stored": path, "bytes": len(data)}
    except statefile.StateError as exc:
        return 503, {"error": "the bundle could not be kept: %s; send it again" % exc}


def out_of_service(result, fleet):
    """Whether each node is out of service by gpufabric once the batch is carried out (the prolog gate
    refuses a job exactly then); a shadow decision changes nothing."""
    for decision in result["decisions"]:
        entry = fleet.get(decision["node"]) or {}
        ours = bool(entry.get("drained")) and is_ours(entry.get("reason"))
        done = decision.get("done") and not decision["shadow"]
        decision["out_of_service"] = bool((decision["action"] == "drain" and done)
                                          or (ours and not (decision["action"] == "resume" and done)))


def _rebuilt_message(config, rebuilt, scheduler):
    held = held_until(rebuilt)["drain"]
    if held:
        action = "decision history lost: every drain and resume held for %d s" % (held - rebuilt["at"])
    elif rebuilt["source"] == "history":
        action = "decision history restored from its second copy (%d node record(s))" % rebuilt["restored"]
    else:
        action = "limits rebuilt from the scheduler (%d drain(s) of gpufabric in effect)" % rebuilt["drains_in_effect"]
    return {"node": config["name"] or default_name(), "check": "remediation", "target": "decider state",
            "severity": "critical" if held else "warning", "status": "rebuilt", "policy": None,
            "detail": rebuilt_text(rebuilt, scheduler), "action": action}


def _none(node, why):
    return {"node": node, "action": "none", "held": False, "why": "could not act: %s" % why, "reason": None,
            "findings": [], "escalated": False, "shadow": False, "policy": None, "via": None, "error": why,
            "out_of_service": False}


def _could_not_act(state, box, told, config, reports, why, now, log, act, warning):
    """Nothing can be decided: every report gets 'could not act'; the humans hear it once per cause (and a lost outbox
    at once: its file is set aside already)."""
    log("could not act: %s" % why)
    if act and state.get("last_error") != why:
        state["last_error"] = why
        told = told + [{"node": config["name"] or default_name(), "check": "remediation", "target": "scheduler",
                        "severity": "critical", "status": "could-not-act", "policy": None,
                        "detail": "the decider could not read the scheduler: %s; nothing is drained or resumed "
                                  "until it can" % why, "action": "could not act"}]
    if act and told:   # the outbox first, with the ledger (an outbox moved out of it) right after
        _queue(box, config, told, now, log)
        try:
            statefile.save_json(outbox_path(config["state_dir"]), outbox.as_file(box))
            statefile.save_json(paths(config["state_dir"])[0], state)
        except statefile.StateError as exc:
            log(str(exc))
    return {"decisions": [_none(node, why) for node in sorted(reports)], "error": why, "warning": warning,
            "breaker": {"open": [], "opened": [], "closed": [], "shares": {}}, "now": now}
