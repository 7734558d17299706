"""The decider's outbox survives its ledger (issue 53): the messages decided but not yet delivered live in a file of
their own (decider.OUTBOX_FILE), saved before anything is sent, so a ledger deleted, truncated or replaced by another
program's file never takes them with it; a damaged outbox file is set aside and its loss told. Driven for real: the
remediator service over HTTP, the stand-in slurmctld and the real webhook receiver of decider_world."""

import json
import os
import threading
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider, decider_settings
from decider_world import lose, receiver_module, service


def _webhook_down(c):
    c.receiver.shutdown()
    c.receiver.server_close()   # connection refused from now on


def _webhook_up(c):
    c.receiver = receiver_module.serve({"bind": "127.0.0.1", "port": c.port, "log": str(c.received)})
    threading.Thread(target=c.receiver.serve_forever, daemon=True).start()


def _decider_again(c):
    """The decider starts again with the same state directory; the webhook stays as it is."""
    c.server, c.stop, ignored = service.serve(c.config, log=c.lines.append)
    c.url = "http://127.0.0.1:%d" % c.server.server_address[1]


def _queued_while_down(cluster):
    """n01 drained while the webhook is down: its DRAINED message waits in the outbox (the sender tried and failed);
    then the decider stops."""
    c = cluster(["n01", "n02", "n03"])
    c.port = c.receiver.server_address[1]
    _webhook_down(c)
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"]
    deadline = time.time() + 5
    while not any("webhook events (generic): could not send drained" in line for line in c.lines) and time.time() < deadline:
        time.sleep(0.1)
    assert any("could not send drained" in line for line in c.lines), c.lines
    c.stop.set()
    c.server.shutdown()
    c.server.server_close()
    return c


@pytest.mark.parametrize("loss", ["deleted", "truncated", "foreign"])
def test_a_message_queued_while_the_webhook_is_down_survives_a_lost_ledger_and_arrives_once(cluster, loss):
    """Before, the outbox lived in decider.json: a ledger deleted, truncated or not ours was set aside with every
    message it held for the webhooks - the DRAINED of n01, decided during the outage, never arrived. Now it arrives,
    once, after the restart and the rebuild, when the webhook is back."""
    c = _queued_while_down(cluster)
    with open(decider.outbox_path(c.config["state_dir"])) as handle:
        (queued,) = [m["body"] for m in json.load(handle)["outbox"]["events"]]
    state_path, ignored = decider.paths(c.config["state_dir"])
    lose(state_path, loss)
    _decider_again(c)
    c.run("n02")   # a report: the decider reads what is left, sets the damaged ledger aside and rebuilds it
    assert any("restored from its second copy" in line for line in c.lines), c.lines
    _webhook_up(c)
    told = c.messages(2, wait=10)
    time.sleep(1)   # sent once: nothing comes again
    told = c.messages(3, wait=1)
    assert sorted((m["status"], m["host"]) for m in told) == [("drained", "n01"), ("rebuilt", "decider@ctl")], told
    drained = [m for m in told if m["status"] == "drained"][0]
    assert (drained["message_id"], drained["detail"]) == (queued["message_id"], queued["detail"]), drained   # that one
    assert drained["detail"].startswith("1 finding(s) ask for a drain") and drained["action"].startswith("Slurm: drained n01")


def test_a_damaged_outbox_file_is_set_aside_and_its_loss_is_told(cluster):
    """The outbox's own file truncated (a crash of the disk, not of our writes: they are atomic): it is set aside
    (never deleted), the decider says so in its log, and the webhooks get one MESSAGES LOST message naming the file
    kept, ahead of what the decider tells next - the chat too."""
    c = _queued_while_down(cluster)
    path = decider.outbox_path(c.config["state_dir"])
    with open(path, "w") as handle:
        handle.write('{"kind": "gpufabric outbox", "version": 1, "outbox": {"events": [{"id": "')
    c.config.update(decider_settings.check_config(dict(c.config, webhooks=c.config["webhooks"] + [
        {"name": "chat", "type": "slack", "url": c.base + "/slack/chat", "insecure_http": True}])))
    _decider_again(c)
    time.sleep(1)   # the sender leaves a damaged outbox to the decider: it is told, not silently set aside
    assert os.path.exists(path) and not any(".damaged-" in p for p in os.listdir(c.config["state_dir"]))
    c.fault("n02")
    c.run("n02")   # held by the rate limit (n01's drain): told in one HELD BACK after the loss
    aside = [p for p in os.listdir(c.config["state_dir"]) if p.startswith("decider.outbox.json.damaged-")]
    assert len(aside) == 1 and any(line.startswith(path + " could not be used") for line in c.lines), c.lines
    _webhook_up(c)
    got = c.messages(4, wait=10)
    events = [m for m in got if "text" not in m]
    assert [m["status"] for m in events] == ["outbox-lost", "held"], events
    assert events[0]["severity"] == "critical" and aside[0] in events[0]["detail"], events[0]
    assert "(decided, not yet delivered) are lost" in events[0]["detail"]
    chat = [m["text"].splitlines()[0] for m in got if "text" in m]
    assert chat[0] == ("[gpufabric] MESSAGES LOST: undelivered messages lost: the outbox decider.outbox.json could not "
                       "be read (cluster lab)"), chat
    c.run("n02")   # told once
    assert len(c.messages(5, wait=1)) == 4


def test_an_outbox_an_older_decider_kept_in_its_ledger_moves_to_its_own_file_and_is_sent_once(cluster):
    """An upgrade: decider.json of an older decider holds the outbox. The first decision moves it to its own file,
    ahead of what is told now; decider.json no longer holds it, and each message arrives once."""
    c = _queued_while_down(cluster)
    state_path, ignored = decider.paths(c.config["state_dir"])
    path = decider.outbox_path(c.config["state_dir"])
    with open(path) as handle:
        box = json.load(handle)["outbox"]
    with open(state_path) as handle:
        state = json.load(handle)
    state["outbox"] = box
    statefile.save_json(state_path, state)
    os.unlink(path)
    _decider_again(c)
    c.fault("n02")
    c.run("n02")
    with open(state_path) as handle:
        assert "outbox" not in json.load(handle)
    _webhook_up(c)
    c.messages(2, wait=10)
    time.sleep(1)
    assert [(m["status"], m["host"]) for m in c.messages(3, wait=1)] == [("drained", "n01"), ("held", "n02")]


def test_an_outbox_that_cannot_be_saved_loses_nothing_its_open_intents_tell_it_later(cluster, monkeypatch):
    """The disk fills after the drain was recorded: the outbox cannot be saved, so neither is the ledger that would say
    the drain was told. The open intent stays; the next decision confirms it with slurmctld and tells it then."""
    c = cluster(["n01", "n02"])
    real_save, failed = statefile.save_json, []

    def full_once(path, data):
        if path.endswith(decider.OUTBOX_FILE) and not failed:
            failed.append(path)
            raise statefile.StateError("could not save %s: No space left on device" % path)
        return real_save(path, data)
    monkeypatch.setattr(statefile, "save_json", full_once)
    c.fault("n01")
    c.run("n01")
    assert c.drained() == ["n01"] and failed
    assert any("No space left on device; what was done is not recorded as told" in line for line in c.lines), c.lines
    c.run("n02")
    told = c.messages(1)
    assert [(m["status"], m["host"]) for m in told] == [("drained", "n01")], told
    assert told[0]["detail"].startswith("confirmed after the decider restarted: slurmctld drained n01")
