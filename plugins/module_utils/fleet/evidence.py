# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Evidence at the drain, the decider's side: its settings, the name of each drain's bundle, and which bundles the
store drops to stay within its limits.

When the one decider drains a node (not in shadow mode), the drain's ledger entry names a bundle
(``<node>/<node>-<drain time>.tar.gz``) and the message says it. The decider's answer to the node asks for it (again on
every report while it has not arrived); the node's health monitor collects it within ``budget`` seconds (node/evidence.py)
and posts it, signed, to EVIDENCE_PATH; the decider keeps it under ``dir`` (default ``<state_dir>/evidence``), each
bundle at most ``max_bytes``, at most ``keep_per_node`` per node and ``max_total_bytes`` in all, the oldest dropped
first. The drain never waits for it.

Pure, standard library only (decider.py and the remediator service do the writing).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import settings as fields

EVIDENCE_PATH = "/v1/evidence"
DEFAULTS = {"enabled": True, "dir": None, "max_bytes": 64 * 1024 * 1024, "max_total_bytes": 2 * 1024 ** 3,
            "keep_per_node": 5, "budget": 45}
# What the store holds: <node>-<YYYYmmddTHHMMSSZ>.tar.gz under a directory named after the node; nothing else is ours.
BUNDLE = re.compile(r"^(?P<node>[A-Za-z0-9][A-Za-z0-9._-]{0,252})-(?P<at>\d{8}T\d{6}Z)\.tar\.gz$")
MAX_RECEIVED = 2000


class EvidenceError(ValueError):
    """A setting or an upload that cannot be used; the message names it."""


def check_settings(given):
    """remediation ``evidence`` over DEFAULTS; EvidenceError names a bad value."""
    merged = fields.section(given, DEFAULTS, "remediation evidence", EvidenceError)
    if not isinstance(merged["enabled"], bool):
        raise EvidenceError("remediation evidence enabled must be true or false, got %r" % (merged["enabled"],))
    for key, low, high in (("max_bytes", 4096, 1024 ** 3), ("max_total_bytes", 4096, 1024 ** 4), ("keep_per_node", 1, 1000),
                           ("budget", 5, 600)):
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise EvidenceError("remediation evidence %s must be a whole number from %d to %d, got %r" % (key, low, high, value))
    if merged["max_total_bytes"] < merged["max_bytes"]:
        raise EvidenceError("remediation evidence max_total_bytes (%d) must be at least max_bytes (%d)"
                            % (merged["max_total_bytes"], merged["max_bytes"]))
    where = merged["dir"]
    if where is not None and (not isinstance(where, str) or not where.startswith("/") or re.search(r"[\x00-\x1f\x7f]", where)):
        raise EvidenceError("remediation evidence dir must be an absolute path on one line, got %r" % (where,))
    return merged


def bundle_id(node, at):
    """'n1-20261127T080000Z': one bundle per drain (the scheduler's time of the drain)."""
    stamp = datetime.datetime.fromtimestamp(int(at), tz=datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return "%s-%s" % (node, stamp)


def bundle_name(ident):
    """'n1/n1-20261127T080000Z.tar.gz' (relative to the store), or EvidenceError when ``ident`` is not one of ours."""
    match = BUNDLE.match("%s.tar.gz" % ident) if isinstance(ident, str) else None
    if not match:
        raise EvidenceError("%r is not an evidence bundle's name" % (ident,))
    return "%s/%s.tar.gz" % (match.group("node"), ident)


def ident_of(name):
    """bundle_name's inverse: 'n1/n1-20261127T080000Z.tar.gz' -> 'n1-20261127T080000Z', None for a name not ours."""
    base = name.rsplit("/", 1)[-1] if isinstance(name, str) else ""
    match = BUNDLE.match(base)
    return base[:-len(".tar.gz")] if match else None


def request(ident, settings):
    """What the decider's answer asks of the node."""
    return {"id": ident, "name": bundle_name(ident), "max_bytes": settings["max_bytes"], "budget": settings["budget"]}


def to_drop(held, node, incoming, settings):
    """held: [(name 'node/file', bytes, mtime)] of the store's bundles -> the names to delete, oldest first, so that
    ``node`` keeps at most keep_per_node - 1 before the new one and the store stays within max_total_bytes with it."""
    drop = []
    mine = sorted((e for e in held if e[0].split("/", 1)[0] == node), key=lambda e: e[2])
    extra = len(mine) - (settings["keep_per_node"] - 1)
    drop += [e[0] for e in mine[:max(0, extra)]]
    total = sum(e[1] for e in held if e[0] not in drop) + incoming
    for entry in sorted((e for e in held if e[0] not in drop), key=lambda e: e[2]):
        if total <= settings["max_total_bytes"]:
            break
        drop.append(entry[0])
        total -= entry[1]
    return drop


def remember(received, ident, entry):
    """Record a received bundle in the decider's state (bounded: the oldest forgotten first)."""
    received[ident] = entry
    while len(received) > MAX_RECEIVED:
        del received[min(received, key=lambda k: received[k].get("at") or 0)]
    return received
