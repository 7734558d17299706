"""The decider survives its own faults (issue 35): a decider killed between its record and the scheduler, a state
file lost, full or damaged, a scheduler that refuses an update - the stand-in slurmctld of decider_world."""

import json
import os
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider


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


@pytest.mark.parametrize("loss", ["deleted", "truncated", "foreign"])
def test_a_lost_state_is_rebuilt_from_slurm_so_no_second_drain_and_no_unknown_resume(cluster, loss):
    """Before, a deleted, truncated or foreign decider.json started the decider afresh: with max_nodes 1 a second
    node was drained within the hour, and any node could be resumed at once. Now the limits are rebuilt from what
    slurmctld holds (the drain's reason and time are gpufabric's), and as Slurm keeps no record of earlier resumes,
    none is made for one interval; the humans are told once."""
    c = cluster(["n01", "n02", "n03"])
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"]
    c.messages(1)
    state_path, ignored = decider.paths(c.config["state_dir"])
    c.close()
    if loss == "deleted":
        os.unlink(state_path)
    else:
        with open(state_path, "w") as handle:
            handle.write('{"ledger": {"version": 1, "no' if loss == "truncated" else '{"hello": "another program"}')
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
    """Until the limits are rebuilt, nothing is drained or resumed: the mark survives a run that could not read
    slurmctld (that run saves the state), and the next run rebuilds before it acts."""
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
    os.environ["STUB_SINFO_MODE"] = "fail:1:slurm_load_partitions: Unable to contact slurm controller"
    c.fault("n02")
    c.run("n02")
    with open(state_path) as handle:
        assert json.load(handle)["rebuild"] is True
    del os.environ["STUB_SINFO_MODE"]
    lines = c.run("n02")
    assert c.drained() == ["n01"] and any("rate limit" in line for line in lines), lines
    with open(state_path) as handle:
        saved = json.load(handle)
    assert "rebuild" not in saved and saved["ledger"]["rebuilt"]["drains_in_effect"] == 1
