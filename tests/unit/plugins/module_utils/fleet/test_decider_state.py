"""The decider survives its own faults (issue 35): a decider killed between its record and the scheduler, a state
file lost, full or damaged, a scheduler that refuses an update - the stand-in slurmctld of decider_world."""

import json
import os
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider, decider_settings
from decider_world import kill_in_apply, lose


def test_the_ledger_cannot_be_saved_nothing_is_done(cluster, monkeypatch):
    c = cluster(["n01", "n02"])
    c.fault("n01")

    def full(path, data):
        raise statefile.StateError("could not save %s: No space left on device" % path)
    monkeypatch.setattr(statefile, "save_json", full)
    lines = c.run("n01")
    assert c.updates() == [] and any("No space left on device" in line for line in lines), lines


def test_a_damaged_ledger_is_set_aside_with_one_warning(cluster):
    """Set aside by the decider itself, which then knows its history is lost (no second copy): every drain is held for
    one interval. (Before issue 53's outbox file, the delivery thread read decider.json first and set it aside, so the
    decider took a damaged ledger for a first start.)"""
    c = cluster(["n01", "n02"])
    state_path, ignored = decider.paths(c.config["state_dir"])
    with open(state_path, "w") as handle:
        json.dump({"ledger": {"version": 1, "nodes": [], "breaker": {}}, "outbox": {}}, handle)
    c.fault("n01")
    lines = c.run("n01")
    assert c.drained() == [] and any("drain budget unknown" in line for line in lines), lines
    warnings = [line for line in c.lines if line.startswith(state_path + " could not be used")]
    assert len(warnings) == 1 and "not a state file of ours: nodes and breaker must be objects" in warnings[0]
    assert [p for p in os.listdir(c.config["state_dir"]) if ".damaged-" in p]


def test_a_drain_slurm_refuses_is_told_once_as_could_not_act_never_as_drained_and_tried_again_later(cluster):
    """Before, a failing `scontrol update` gave the chat "DRAINED" and then "COULD NOT ACT" on every report, and the
    node's journal said drained. Now the message says what happened after slurmctld answered, once per episode; the
    action is tried again after a backoff, and told when it succeeds."""
    c = cluster(["n01", "n02"])
    os.environ["STUB_SCONTROL_UPDATE_FAIL"] = "slurm_update error: Access/permission denied"
    c.fault("n01")
    lines = c.run("n01")
    assert any(line.startswith("decider: Slurm: could not drain n01: scontrol update: ") and
               line.endswith("slurm_update error: Access/permission denied") for line in lines), lines
    assert c.drained() == [] and len(c.updates()) == 1
    assert [m["status"] for m in c.messages(1)] == ["could-not-act"]
    lines = c.run("n01")   # within the backoff: not tried, not told again
    assert any("not tried again before" in line for line in lines), lines
    assert len(c.updates()) == 1
    time.sleep(1)
    assert [m["status"] for m in c.messages(2, wait=1)] == ["could-not-act"]
    del os.environ["STUB_SCONTROL_UPDATE_FAIL"]   # slurmctld takes updates again; the controller's clock is past the backoff
    os.environ["STUB_SLURM_CLOCK"] = str(int(time.time()) + decider.RETRY_FIRST + 5)
    c.run("n01")
    assert c.drained() == ["n01"] and len(c.updates()) == 2
    assert [m["status"] for m in c.messages(2)] == ["could-not-act", "drained"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_decider_killed_between_its_record_and_scontrol_drains_the_node_on_its_next_report(cluster, monkeypatch):
    """The decision is recorded, then the decider dies before slurmctld took the drain; after the restart the node's
    next report drains it (its phantom drain spends no rate limit), and the message says so once."""
    c = cluster(["n01", "n02"])
    c.fault("n01")
    real_apply = kill_in_apply(monkeypatch, decider.Slurm, after=False)   # the ledger saved, scontrol never run
    c.config["answer_within"] = 2   # the node does not wait long for a decider that died
    c.run("n01")
    assert c.drained() == [] and c.updates() == []
    monkeypatch.setattr(decider.Slurm, "apply", real_apply)
    c.close()   # the decider restarts with the same state directory
    c.config["answer_within"] = 20
    c.restart()
    c.run("n01")
    assert c.drained() == ["n01"] and len(c.updates()) == 1


@pytest.mark.parametrize("loss", ["deleted", "truncated", "foreign"])
def test_a_lost_state_is_rebuilt_from_slurm_so_no_second_drain_and_no_unknown_resume(cluster, loss):
    """Before, a deleted, truncated or foreign decider.json started the decider afresh: with max_nodes 1 a second
    node was drained within the hour, and any node could be resumed at once. Now, when the decision history's second
    copy is lost with it, the limits are rebuilt from what slurmctld holds (the drain's reason and time are
    gpufabric's), and as Slurm keeps no record of earlier drains and resumes, none is made for one interval; the
    humans are told once."""
    c = cluster(["n01", "n02", "n03"])
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"]
    c.messages(1)
    state_path, ignored = decider.paths(c.config["state_dir"])
    c.close()
    lose(state_path, loss)
    lose(os.path.join(c.config["state_dir"], "decider.history.json"), loss)
    c.restart()
    c.fault("n02")
    lines = c.run("n02")
    assert c.drained() == ["n01"], lines
    assert any("rate limit: 1 node(s) of partition gpu already drained by gpufabric" in line for line in lines), lines
    assert any("limits are rebuilt from Slurm: 1 node(s) drained by gpufabric, 1 of them within the rate interval"
               in line for line in c.lines), c.lines
    c.fault("n01", False)   # n01's fault cleared: a resume, but the resume budget is unknown for one interval
    lines = c.run("n01")
    assert c.drained() == ["n01"]
    assert any("resume budget unknown: the decider's state was rebuilt from the scheduler" in line for line in lines)
    statuses = [m["status"] for m in c.messages(3)]
    assert statuses.count("rebuilt") == 1 and "drained" not in statuses[1:], statuses
    # One interval later (slurmctld's clock) the ledger holds every resume since: n01 is resumed.
    os.environ["STUB_SLURM_CLOCK"] = str(int(time.time()) + 3600 + 5)
    c.run("n01")
    assert "n01" not in c.drained()


def test_a_state_lost_while_slurm_cannot_be_read_acts_only_once_it_is_rebuilt(cluster):
    """Until the limits are rebuilt, nothing is drained or resumed: the mark, and why the decision history is lost
    (its copy set aside), survive a run that could not read slurmctld (that run saves the state), and the next run
    rebuilds before it acts."""
    c = cluster(["n01", "n02"])
    c.fault("n01")
    c.run("n01")
    c.messages(1)   # the drain's message sent
    state_path, ignored = decider.paths(c.config["state_dir"])
    # ... and recorded as sent (the sender writes the outbox after the receiver answered): nothing writes it meanwhile
    deadline = time.time() + 5
    while time.time() < deadline:
        with open(decider.outbox_path(c.config["state_dir"])) as handle:
            if not any(json.load(handle)["outbox"].values()):
                break
        time.sleep(0.05)
    os.unlink(state_path)
    lose(os.path.join(c.config["state_dir"], "decider.history.json"), "truncated")
    os.environ["STUB_SINFO_MODE"] = "fail:1:slurm_load_partitions: Unable to contact slurm controller"
    c.fault("n02")
    c.run("n02")
    with open(state_path) as handle:
        saved = json.load(handle)
    assert saved["rebuild"] is True and "decider.history.json could not be used" in saved["lost"], saved
    del os.environ["STUB_SINFO_MODE"]
    lines = c.run("n02")
    assert c.drained() == ["n01"] and any("rate limit" in line for line in lines), lines
    with open(state_path) as handle:
        saved = json.load(handle)
    assert "rebuild" not in saved and "lost" not in saved and saved["ledger"]["rebuilt"]["drains_in_effect"] == 1
    assert "decider.history.json could not be used" in saved["ledger"]["rebuilt"]["why"]
    assert saved["ledger"]["rebuilt"]["drains_from"] == saved["ledger"]["rebuilt"]["at"] + 3600


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_drain_slurm_took_while_the_decider_died_is_announced_once_after_the_restart(cluster, monkeypatch):
    """Issue 53 fault 5: the decider dies while `scontrol update` runs - slurmctld drained the node, the decider never
    heard its answer. Before, the restart confirmed the open intent (ledger.reconcile) and dropped the result: no
    message, so the node was out of service and nobody was told. Now the confirmed drain is told once, as drained."""
    c = cluster(["n01", "n02"])
    c.fault("n01")
    real_apply = kill_in_apply(monkeypatch, decider.Slurm, after=True)   # slurmctld takes the drain, the decider dies
    c.config["answer_within"] = 2
    c.run("n01")
    assert c.drained() == ["n01"] and len(c.updates()) == 1
    assert c.messages(1, wait=1) == []
    monkeypatch.setattr(decider.Slurm, "apply", real_apply)
    c.close()
    c.config["answer_within"] = 20
    c.restart()
    lines = c.run("n02")   # any report after the restart: the open intent is reconciled with slurmctld
    assert len(c.updates()) == 1, lines
    told = c.messages(1)
    assert [(m["status"], m["host"]) for m in told] == [("drained", "n01")], told
    assert told[0]["detail"].startswith("confirmed after the decider restarted: slurmctld drained n01 "), told[0]["detail"]
    assert "gpufabric: gpu_xid" in told[0]["action"], told[0]["action"]
    c.run("n01")   # told once: the next reports do not tell it again
    assert [m["status"] for m in c.messages(2, wait=1)] == ["drained"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_drain_confirmed_by_a_run_that_dies_too_is_still_told(cluster, monkeypatch):
    """The run after the restart confirms the drain slurmctld took (ledger.reconcile) and saves that with its intents,
    then dies too, before its last save. Before, the confirmation was saved but its message was queued only at the
    end: lost, and never told again (the intent was settled). Now it is queued and saved with the intents."""
    c = cluster(["n01", "n02"])
    c.fault("n01")
    real_apply = kill_in_apply(monkeypatch, decider.Slurm, after=True)
    c.config["answer_within"] = 2
    c.run("n01")
    assert c.drained() == ["n01"] and c.messages(1, wait=1) == []
    monkeypatch.setattr(decider.Slurm, "apply", real_apply)

    def dies(*args):
        raise SystemExit("killed")   # after the intents are saved and carried out, before the last save
    monkeypatch.setattr(decider, "ask_for_evidence", dies)
    for death in (True, False):   # the run after the restart dies; the one after the next restart lives
        c.close()
        c.restart()
        c.run("n02")
        monkeypatch.undo()
        c.config["answer_within"] = 20
    told = c.messages(1)
    assert [(m["status"], m["host"]) for m in told] == [("drained", "n01")], told
    c.run("n02")
    assert len(c.messages(2, wait=1)) == 1


def test_a_drain_told_before_the_ledger_was_lost_is_not_told_again_from_its_history_copy(cluster):
    """The history copy is written again only when it changed. Before, what it last held was remembered by reference
    to the ledger's own entries, so settling the drain (its open mark taken off after scontrol) changed that memory
    too: the copy on disk kept the drain open for ever. A ledger lost later was restored with the open drain, and the
    drain - told long before - was told again, as 'confirmed after the decider restarted'."""
    c = cluster(["n01", "n02"])
    c.fault("n01")
    c.run("n01")
    assert [m["status"] for m in c.messages(1)] == ["drained"]
    history = os.path.join(c.config["state_dir"], "decider.history.json")
    with open(history) as handle:
        assert "pending" not in json.load(handle)["nodes"]["n01"]["drains"][-1]
    state_path, ignored = decider.paths(c.config["state_dir"])
    c.close()
    lose(state_path, "deleted")
    c.restart()
    c.run("n02")
    c.messages(2)
    time.sleep(1)
    assert sorted(m["status"] for m in c.messages(3, wait=1)) == ["drained", "rebuilt"]


def _drain_and_resume_n01(c):
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"]
    c.fault("n01", False)
    c.run("n01")
    assert c.drained() == [] and [u["argv"][2] for u in c.updates()] == ["State=DRAIN", "State=RESUME"]
    c.messages(2)


@pytest.mark.parametrize("loss", ["deleted", "truncated", "foreign"])
def test_a_ledger_lost_after_a_drain_and_its_resume_keeps_the_hours_drain_so_no_second_drain(cluster, loss):
    """Issue 53 fault 6: drain n01, resume it, then the ledger is deleted, truncated or replaced by another program's
    file. Before, the rebuild saw only the drains in effect in Slurm (none), so with max_nodes 1 n02 was drained within
    the hour: two drains. Now the decision history has a second copy (decider.history.json) that the rebuild restores:
    n01's drain still counts, n02 is held by the rate limit, and the humans are told once where the history came from."""
    c = cluster(["n01", "n02", "n03"])
    _drain_and_resume_n01(c)
    state_path, ignored = decider.paths(c.config["state_dir"])
    c.close()
    lose(state_path, loss)
    c.restart()
    c.fault("n02")
    lines = c.run("n02")
    assert c.drained() == [], lines
    assert any("rate limit: 1 node(s) of partition gpu already drained by gpufabric in the last 3600 s" in line
               for line in lines), lines
    told = [m for m in c.messages(4) if m["status"] == "rebuilt"]
    assert len(told) == 1 and "restored from its second copy" in told[0]["detail"], told
    # the history holds every resume too: nothing is held for an unknown budget
    assert not any("budget unknown" in line for line in lines + c.lines), lines


@pytest.mark.parametrize("ledger_loss, history_loss",
                         [("truncated", "foreign"), ("foreign", "truncated"), ("deleted", "truncated")])
def test_a_ledger_and_its_history_both_lost_hold_every_drain_for_one_interval_and_say_why(cluster, ledger_loss,
                                                                                          history_loss):
    """When the history cannot be rebuilt (both copies damaged, or not ours), the drains gpufabric made in the last
    interval are unknown: every drain and resume is held for one interval (slurmctld's clock), the ledger records
    why, the humans are told once, and the metrics show until when."""
    c = cluster(["n01", "n02", "n03"])
    _drain_and_resume_n01(c)
    state_path, ignored = decider.paths(c.config["state_dir"])
    history_path = os.path.join(c.config["state_dir"], "decider.history.json")   # the name the README gives
    c.close()
    lose(state_path, ledger_loss)
    lose(history_path, history_loss)
    # A chat webhook too: before, a 'rebuilt' message had no title, so its text raised and blocked the chat's queue.
    c.config.update(decider_settings.check_config(dict(c.config, webhooks=c.config["webhooks"] + [
        {"name": "chat", "type": "slack", "url": c.base + "/slack/chat", "insecure_http": True}])))
    c.restart()
    c.fault("n02")
    lines = c.run("n02")
    assert c.drained() == [], lines
    assert any("drain budget unknown: the decider's decision history could not be rebuilt" in line for line in lines), lines
    with open(state_path) as handle:
        rebuilt = json.load(handle)["ledger"]["rebuilt"]
    assert rebuilt["drains_from"] == rebuilt["at"] + 3600 and "decider.history.json" in rebuilt["why"], rebuilt
    got = c.messages(6)
    told = [m for m in got if m.get("status") in ("rebuilt", "held")]
    assert [m["status"] for m in told] == ["rebuilt", "held"], told
    assert "every drain and resume is held for 3600 s" in told[0]["detail"], told[0]["detail"]
    chat = [m["text"].splitlines()[0] for m in got if "text" in m]
    assert chat == ["[gpufabric] DECIDER STATE REBUILT: decision history lost: every drain and resume held for 3600 s "
                    "(cluster lab)", "[gpufabric] HELD BACK: n02 held back: drain budget unknown (cluster lab)"], chat
    metrics = decider.metrics_text(c.config)
    assert 'gpufabric_remediation_held_until_timestamp_seconds{action="drain",cluster="lab"} %d' % rebuilt["drains_from"] \
        in metrics, metrics
    # One interval later the ledger holds every drain since: n02 is drained.
    os.environ["STUB_SLURM_CLOCK"] = str(rebuilt["drains_from"] + 5)
    c.run("n02")
    assert c.drained() == ["n02"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_resume_slurm_took_while_the_decider_died_is_announced_once_after_the_restart(cluster, monkeypatch):
    """Issue 53: the decider dies while `scontrol update ... State=RESUME` runs - slurmctld resumed the node, the decider
    never heard its answer. Before, a resume was recorded as done before scontrol ran and nothing looked at it again:
    the node was back in service and nobody was told. Now the resume is an open intent, confirmed against slurmctld
    after the restart and told once."""
    c = cluster(["n01", "n02"])
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"] and [m["status"] for m in c.messages(1)] == ["drained"]
    real_apply = kill_in_apply(monkeypatch, decider.Slurm, after=True)   # slurmctld takes the resume, the decider dies
    c.config["answer_within"] = 2
    c.fault("n01", False)
    c.run("n01")
    assert c.drained() == [] and [u["argv"][2] for u in c.updates()] == ["State=DRAIN", "State=RESUME"]
    assert [m["status"] for m in c.messages(2, wait=1)] == ["drained"]
    monkeypatch.setattr(decider.Slurm, "apply", real_apply)
    c.close()
    c.config["answer_within"] = 20
    c.restart()
    c.run("n02")   # any report after the restart: the open intent is reconciled with slurmctld
    told = c.messages(2)
    assert [(m["status"], m["host"]) for m in told] == [("drained", "n01"), ("resumed", "n01")], told
    assert told[1]["detail"].startswith("confirmed after the decider restarted: slurmctld resumed n01 (the resume was "
                                        "recorded, then the decider stopped before it heard the answer"), told[1]
    assert told[1]["fault_type"] == "gpu_xid" and told[1]["action"].startswith("Slurm: resumed n01 (confirmed after")
    assert any("the resume of n01 recorded before the decider stopped was taken" in line for line in c.lines), c.lines
    c.run("n01")   # told once
    assert len(c.messages(3, wait=1)) == 2 and len(c.updates()) == 2


DCGM_PASS = {"host": "n01", "status": "pass", "level": 2, "failures": [], "reason": None, "dcgm_version": "4.2.3"}


def _certified_resume_world(cluster):
    """n01 and n02 drained by gpufabric; a resume needs a DCGM certificate; one resume an hour (max_resumes 1). The
    certificates come as remediate.yml hands them to the same decider (decider.decide, the remediate module's call)."""
    c = cluster(["n01", "n02", "n03"], certification={"required": True, "checks": ["dcgm"]},
                rate_limit={"max_nodes": 2, "max_percent": 100, "interval": 3600, "max_resumes": 1})
    for name in ("n01", "n02"):
        c.fault(name)
        c.run(name)
        c.fault(name, False)
    assert c.drained() == ["n01", "n02"]
    return c


def _decide(c, node, log, certified=False):
    from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate, protocol
    report = protocol.check_report({"node": node, "findings": [], "complete": True, "unreadable": [], "source": "awx"})
    certs = {node: certificate.check_certificate(certificate.from_results(
        dict(DCGM_PASS, host=node), measured_at=int(time.time())), node)} if certified else {}
    return decider.decide({node: report}, c.config, time.time, log, certificates=certs)["decisions"][0]


@pytest.mark.parametrize("how", ["killed before scontrol", "refused by slurmctld"])
def test_a_resume_that_did_not_happen_keeps_its_certificate_and_counts_toward_no_limit(cluster, monkeypatch, how):
    """Issue 53: a resume was recorded before scontrol ran, so one that never happened - the decider killed first, or
    slurmctld refusing it - stayed recorded: it spent the node's certificate (the node could not return without a new
    active check) and counted toward max_resumes. Now it is an open intent: dropped (and said) when slurmctld shows
    the node still drained, its certificate kept; the node returns on that certificate, and only the resume that
    happened counts."""
    c = _certified_resume_world(cluster)
    lines = []
    if how == "killed before scontrol":
        real_apply = kill_in_apply(monkeypatch, decider.Slurm, after=False)   # the intent saved, scontrol never run
        with pytest.raises(SystemExit):
            _decide(c, "n01", lines.append, certified=True)
        monkeypatch.setattr(decider.Slurm, "apply", real_apply)
    else:
        os.environ["STUB_SCONTROL_UPDATE_FAIL"] = "slurm_update error: Access/permission denied"
        decision = _decide(c, "n01", lines.append, certified=True)
        assert decision["action"] == "resume" and decision["error"].endswith("Access/permission denied"), decision
        del os.environ["STUB_SCONTROL_UPDATE_FAIL"]
        os.environ["STUB_SLURM_CLOCK"] = str(int(time.time()) + decider.RETRY_FIRST + 5)   # past the backoff
    assert c.drained() == ["n01", "n02"]
    # No new certificate: the one handed in before still certifies, and max_resumes 1 is not spent.
    decision = _decide(c, "n01", lines.append)
    assert decision["action"] == "resume" and decision.get("done") and not decision.get("error"), (decision, lines)
    assert c.drained() == ["n02"]
    if how == "killed before scontrol":
        assert any("the resume of n01 recorded before the decider stopped never reached the scheduler (it still holds "
                   "the drain gpufabric: gpu_xid" in line and "its certificate is not spent" in line for line in lines), lines
    # The resume that happened counts: n02, certified, waits for the next hour.
    decision = _decide(c, "n02", lines.append, certified=True)
    assert decision["held"] and decision["why"] == "rate limit: 1 node(s) resumed by gpufabric in the last 3600 s, at most 1"
    with open(decider.paths(c.config["state_dir"])[0]) as handle:
        resumes = json.load(handle)["ledger"]["nodes"]["n01"]["resumes"]
    assert len(resumes) == 1 and "pending" not in resumes[0] and "certificate_kept" not in resumes[0], resumes


def test_the_delivery_thread_never_sets_a_damaged_ledger_aside_behind_the_deciders_back(cluster):
    """Before, the delivery thread read decider.json (the outbox lived in it) and set a damaged one aside on its own,
    within deliver_interval of the start: the decider then found no ledger and no warning, took it for a first start,
    and with the history copy gone drained a second node within the hour. Now the delivery thread reads only the
    outbox's own file; the decider sets its ledger aside itself, knows its history is lost, and holds the drain."""
    c = cluster(["n01", "n02", "n03"])
    _drain_and_resume_n01(c)
    state_path, ignored = decider.paths(c.config["state_dir"])
    c.close()
    lose(state_path, "truncated")
    lose(os.path.join(c.config["state_dir"], "decider.history.json"), "deleted")
    c.restart()
    time.sleep(1)   # the delivery thread runs every 0.2 s
    c.fault("n02")
    lines = c.run("n02")
    assert c.drained() == [], lines
    assert any("drain budget unknown" in line and "decider.json could not be used" in line for line in lines), lines
