# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Messages waiting for their webhooks, as pure data: {webhook name: [message, ...]}, oldest first.

A message is put here (and the state holding it saved) before anything is sent, and leaves only when
its webhook accepted it: a fault, the drain it caused and its resume, all decided during a webhook
outage, are delivered afterwards, in order, once each. Each webhook has its own queue, so a dead one
never holds back the others. The queue is bounded (MAX_PENDING per webhook); what falls off during a
very long outage is counted and said, never silently dropped.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

MAX_PENDING = 1000
# An outbox kept in a file of its own (the decider's), apart from the state that decides: a damaged ledger never takes
# the undelivered messages with it. The file is {"kind": FILE_KIND, "version": 1, "outbox": {...}}.
FILE_KIND = "gpufabric outbox"
FILE_VERSION = 1


def check(outbox):
    """An outbox read back from disk, or ValueError for another shape."""
    if not isinstance(outbox, dict):
        raise ValueError("the outbox must be an object")
    for name, queue in outbox.items():
        if not isinstance(queue, list) or not all(
                isinstance(m, dict) and isinstance(m.get("id"), str) and isinstance(m.get("body"), dict) for m in queue):
            raise ValueError("outbox %r must be a list of messages with id and body" % name)
    return outbox


def check_file(data):
    """An outbox file read back from disk, or ValueError when it is not one of ours (the caller sets it aside)."""
    if not isinstance(data, dict) or data.get("kind") != FILE_KIND or data.get("version") != FILE_VERSION:
        raise ValueError("not a version %d outbox file of gpufabric" % FILE_VERSION)
    check(data.get("outbox"))
    return data


def as_file(outbox):
    return {"kind": FILE_KIND, "version": FILE_VERSION, "outbox": outbox}


def merge(outbox, older, limit=MAX_PENDING):
    """Put the messages of ``older`` (an outbox saved before) ahead of each queue, once (by message id); returns how
    many old messages had to fall off full queues (the newest are kept)."""
    dropped = 0
    for name, queue in older.items():
        have = set(m["id"] for m in outbox.get(name) or [])
        outbox[name] = [m for m in queue if m["id"] not in have] + list(outbox.get(name) or [])
        if len(outbox[name]) > limit:
            dropped += len(outbox[name]) - limit
            del outbox[name][:len(outbox[name]) - limit]
    return dropped


def enqueue(outbox, names, body, now, limit=MAX_PENDING):
    """Queue ``body`` (it carries its message_id) for each webhook named; returns how many old messages
    had to fall off full queues."""
    dropped = 0
    for name in names:
        queue = outbox.setdefault(name, [])
        queue.append({"id": body["message_id"], "body": copy.deepcopy(body), "queued_at": now, "attempts": 0,
                      "last_error": None})
        if len(queue) > limit:
            dropped += len(queue) - limit
            del queue[:len(queue) - limit]
    return dropped


def pending(outbox, name):
    return list(outbox.get(name) or [])


def holds(outbox, name, predicate):
    """Whether a message still waiting for ``name`` matches ``predicate(body)``."""
    return any(predicate(m["body"]) for m in outbox.get(name) or [])


def sent(outbox, name, message_id):
    """Take a delivered message off its queue (nothing when it is gone already)."""
    queue = outbox.get(name) or []
    outbox[name] = [m for m in queue if m["id"] != message_id]


def failed(outbox, name, message_id, error, now):
    for message in outbox.get(name) or []:
        if message["id"] == message_id:
            message["attempts"] = message.get("attempts", 0) + 1
            message["last_error"] = error
            message["last_try"] = now


def forget(outbox, names):
    """Drop the queues of webhooks no longer configured; returns how many messages went with them."""
    gone = 0
    for name in list(outbox):
        if name not in names:
            gone += len(outbox[name])
            del outbox[name]
    return gone


def count(outbox):
    return sum(len(queue) for queue in outbox.values())
