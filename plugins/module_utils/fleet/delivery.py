# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Sending the outbox: each webhook in its own thread with its own deadline, oldest message first.

Host access (threads, sockets through webhook.py). Used by the health monitor and the remediation
decider. A queue stops at its first failure (order is kept; the next run tries again), so a webhook
that is down or hangs costs only its own deadline, never another webhook's messages. Each delivery is
recorded at once (``commit``); if that fails (a full disk), every queue stops, so nothing more is sent
that could not be recorded.

``deliver_state`` sends what a state file's outbox holds without keeping the state locked while it
waits on the network: the lock is taken only to read the queues and to record each delivery, so a
Slurm HealthCheckProgram never waits behind a slow webhook.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile, webhook
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import chat, messages, outbox


def _describe(message):
    body = message["body"]
    return "%s %s %s (%s, %s)" % (body["status"], body["event_id"], body["fault_type"], body["target"], body["severity"])


def deliver(box, webhooks, commit, log, deadline=60, timeout=10, max_per_run=20, clock=time.time):
    """Send what waits in ``box`` ({name: [message]}); returns {sent, failed, save_error}.

    ``commit(sent, failures)`` records deliveries ([(name, id)]) and failures ([(name, id, error, at)]);
    it is called under one lock after each delivery and once at the end, and may raise StateError.
    ``timeout`` bounds one request (its answer too: webhook.send reads at most 64 KiB), ``deadline`` one
    webhook's whole turn, ``max_per_run`` the messages one webhook gets per run (a DingTalk robot takes
    20 a minute): the rest waits for the next run, in order.
    """
    lock = threading.Lock()
    totals = {"sent": 0, "failed": 0, "save_error": None}
    failures = []
    stop = threading.Event()
    started = clock()

    def one_webhook(hook):
        name = hook["name"]
        for message in outbox.pending(box, name)[:max_per_run]:
            left = deadline - (clock() - started)
            if stop.is_set() or left < 1:
                return
            body = dict(message["body"], sent_at=messages.iso(clock()))
            url, data, headers = chat.build_request(hook, body, clock())
            answer = webhook.send(url, data, headers, deadline=min(timeout, left))
            error = answer.error or chat.response_error(hook["type"], answer.status, answer.text)
            if error is None and answer.truncated:
                error = "the answer was larger than %d bytes and was not read whole" % webhook.MAX_ANSWER_BYTES
            with lock:
                if error:
                    error = chat.redact(error, hook)
                    failures.append((name, message["id"], error, clock()))
                    totals["failed"] += 1
                    log("webhook %s (%s): could not send %s: %s; the next run tries again"
                        % (name, hook["type"], _describe(message), error))
                    return
                if stop.is_set():
                    return
                totals["sent"] += 1
                try:
                    commit([(name, message["id"])], [])
                except statefile.StateError as exc:
                    totals["save_error"] = str(exc)
                    stop.set()
                    log("webhook %s (%s): sent %s, but %s: stopping, so nothing more is sent that could not be "
                        "recorded (this one may be sent again, with the same message id)" % (
                            name, hook["type"], _describe(message), exc))
                    return
                log("webhook %s (%s): sent %s" % (name, hook["type"], _describe(message)))

    threads = [threading.Thread(target=one_webhook, args=(hook,), name="webhook-%s" % hook["name"])
               for hook in webhooks if outbox.pending(box, hook["name"])]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        # Each request is bounded by webhook.send's own deadline, so the join ends soon after ours.
        thread.join(max(0.0, deadline - (clock() - started)) + timeout + 5)
    if failures and not totals["save_error"]:
        try:
            commit([], failures)
        except statefile.StateError as exc:
            totals["save_error"] = str(exc)
    return totals


def deliver_state(state_path, lock_path, check_state, webhooks, log, deadline=60, timeout=10, max_per_run=20,
                  clock=time.time, lock_wait=60, set_aside=True):
    """Send a state file's outbox (``state["outbox"]``), recording each delivery in the file as it happens.

    One sender at a time: a second process that finds another one sending the same outbox leaves it to
    that one (two senders would post the same messages twice). Returns deliver()'s totals plus
    ``pending`` (what still waits) and ``busy`` (another sender had it). StateError when the file
    cannot be read. ``set_aside=False``: a damaged file is left where it is, for its owner to set aside and tell.
    """
    with statefile.Lock(lock_path + ".send", wait=0) as sender:
        if not sender.held:
            return {"sent": 0, "failed": 0, "save_error": None, "pending": None, "busy": True}
        with statefile.Lock(lock_path, lock_wait):
            state, warning = statefile.load_json(state_path, check_state, set_aside)
        if warning:
            log(warning)
        box = dict((name, list(queue)) for name, queue in ((state or {}).get("outbox") or {}).items())

        def commit(sent, failures):
            with statefile.Lock(lock_path, lock_wait):
                current, again = statefile.load_json(state_path, check_state, set_aside)
                if current is None:
                    raise statefile.StateError("%s vanished while sending%s" % (state_path, ": " + again if again else ""))
                for name, message_id in sent:
                    outbox.sent(current["outbox"], name, message_id)
                for name, message_id, error, at in failures:
                    outbox.failed(current["outbox"], name, message_id, error, at)
                statefile.save_json(state_path, current)

        totals = deliver(box, webhooks, commit, log, deadline, timeout, max_per_run, clock)
        with statefile.Lock(lock_path, lock_wait):
            current, ignored = statefile.load_json(state_path, check_state, set_aside)
        totals["pending"] = outbox.count((current or {}).get("outbox") or {})
        totals["busy"] = False
        return totals
