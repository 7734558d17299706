"""The decider survives its own faults (issue 35): a decider killed between its record and the scheduler, a state
file lost, full or damaged, a scheduler that refuses an update - the stand-in slurmctld of decider_world."""

import json
import os
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider, decider_settings


def test_the_ledger_cannot_be_saved_nothing_is_done(cluster, monkeypatch):
    c = cluster(["n01", "n02"])
    c.fault("n01")

    def full(path, data):
        raise statefile.StateError("could not save %s: No space left on device" % path)
    monkeypatch.setattr(statefile, "save_json", full)
    lines = c.run("n01")
    assert c.updates() == [] and any("No space left on device" in line for line in lines), lines


def test_a_damaged_ledger_is_set_aside_with_one_warning(cluster):
    c = cluster(["n01", "n02"])
    state_path, ignored = decider.paths(c.config["state_dir"])
    with open(state_path, "w") as handle:
        json.dump({"ledger": {"version": 1, "nodes": [], "breaker": {}}, "outbox": {}}, handle)
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"]
    warnings = [line for line in c.lines if "set aside as" in line]
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
    real_apply = decider.Slurm.apply

    def killed(self, decision, record, now):
        raise SystemExit("killed")   # what a SIGKILL leaves: the ledger saved, scontrol never run
    monkeypatch.setattr(decider.Slurm, "apply", killed)
    c.config["answer_within"] = 2   # the node does not wait long for a decider that died
    c.run("n01")
    assert c.drained() == [] and c.updates() == []
    monkeypatch.setattr(decider.Slurm, "apply", real_apply)
    c.close()   # the decider restarts with the same state directory
    c.config["answer_within"] = 20
    c.restart()
    c.run("n01")
    assert c.drained() == ["n01"] and len(c.updates()) == 1


def _lose(path, loss):
    if loss == "deleted":
        os.unlink(path)
    else:
        with open(path, "w") as handle:
            handle.write('{"ledger": {"version": 1, "no' if loss == "truncated" else '{"hello": "another program"}')


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
    _lose(state_path, loss)
    _lose(os.path.join(c.config["state_dir"], "decider.history.json"), loss)
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
    # ... and recorded as sent (the sender writes the state after the receiver answered): nothing writes it meanwhile
    deadline = time.time() + 5
    while time.time() < deadline:
        with open(state_path) as handle:
            if not any(json.load(handle).get("outbox", {}).values()):
                break
        time.sleep(0.05)
    os.unlink(state_path)
    _lose(os.path.join(c.config["state_dir"], "decider.history.json"), "truncated")
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
    real_apply = decider.Slurm.apply

    def killed(self, decision, record, now):
        real_apply(self, decision, record, now)   # slurmctld takes the drain ...
        raise SystemExit("killed")                # ... and the decider dies before it hears the answer
    monkeypatch.setattr(decider.Slurm, "apply", killed)
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
    _lose(state_path, loss)
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


@pytest.mark.parametrize("ledger_loss, history_loss", [("truncated", "foreign"), ("foreign", "truncated"),
                                                        ("deleted", "truncated")])
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
    _lose(state_path, ledger_loss)
    _lose(history_path, history_loss)
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
