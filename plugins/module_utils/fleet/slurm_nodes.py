# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Slurm's node state as the decider reads and changes it: `sinfo` for the whole fleet, `sdiag` for slurmctld's
clock, `scontrol show node` for one node, and the `scontrol update` line of a drain or resume. Pure: the commands
are run by decider.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.protocol import plain_name
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import clean, one_line

# Times are read with SLURM_TIME_FORMAT=%s (epoch seconds: no time zone can shift them); the
# ISO form of a default installation is read too.
_REASON_STAMPED = re.compile(r"(?:^|\s)Reason=(.*?) \[([^@\]\s]{0,64})@(\d{9,12}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]")
_REASON_BARE = re.compile(r"(?:^|\s)Reason=(.*?)(?=\s+[A-Z][A-Za-z]{1,40}=|$)")
DRAIN_FLAGS = ("DRAIN", "DRAINED", "DRAINING")


def parse_scontrol_node(text):
    """`scontrol show node [-o] NAME` -> {name, state, flags, drained, reason, reason_user, reason_time}.

    The one-line (-o) and the indented forms read the same. Reason is free text: it ends at Slurm's
    "[user@time]" stamp ("Reason=gpufabric: gpu_xid n1 [root@1795526184]"), or at the next field.
    """
    lines = clean(text or "").splitlines()
    start = next((i for i, l in enumerate(lines) if l.lstrip().startswith("NodeName=")), None)
    if start is None:
        raise ValueError("no NodeName= in the scontrol output: %r" % one_line(text or "", 120))
    block = [lines[start].strip()]
    for line in lines[start + 1:]:
        if line.lstrip().startswith("NodeName="):
            break
        block.append(line.strip())
    flat = " ".join(l for l in block if l)
    reason = user = when = None
    match = _REASON_STAMPED.search(flat) or _REASON_BARE.search(flat)
    if match:
        reason = match.group(1).strip() or None
        if match.re is _REASON_STAMPED:
            user, when = match.group(2), match.group(3)
        flat = flat[:match.start()] + " " + flat[match.end():]
    fields = {}
    for found in re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]{0,40})=(\S*)", flat):
        fields.setdefault(found.group(1), found.group(2))
    state = fields.get("State", "")
    if not fields.get("NodeName") or not state:
        raise ValueError("the scontrol output has no NodeName or State: %r" % one_line(text or "", 120))
    flags = state.split("+")
    return {"name": fields.get("NodeName"), "state": state, "flags": flags,
            "drained": any(f.rstrip("*~#!%$@^-") in DRAIN_FLAGS for f in flags),
            "reason": reason, "reason_user": user, "reason_time": int(when) if when and when.isdigit() else when}


# %N, the node's name: %n is its host name, which several nodes can share (NodeHostname).
SINFO_FORMAT = "%N|%P|%H|%T|%E"
_SINFO_STATE = re.compile(r"^[a-z_+]{1,40}[*~#!%$@^-]?$")


def parse_sinfo_fleet(text):
    """`SLURM_TIME_FORMAT=%s sinfo -h -N -o '%N|%P|%H|%T|%E'` -> {node: {partitions, drained, idle, reason, reason_time}}
    (idle: drained and no job left on it).

    One line per node and partition. Any line that is not of that shape makes the whole view
    unusable (ValueError naming the line): a decider that cannot read its fleet does not act.
    """
    nodes = {}
    for number, line in enumerate(clean(text or "").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.strip().split("|", 4)
        if len(parts) != 5 or not plain_name(parts[0]) or not _SINFO_STATE.match(parts[3]):
            raise ValueError("sinfo line %d is not 'node|partition|time|state|reason': %r" % (number, one_line(line, 120)))
        name, partition, when, state, reason = parts
        entry = nodes.setdefault(name, {"partitions": [], "drained": False, "reason": None, "reason_time": None})
        partition = partition.rstrip("*")
        if partition and partition not in entry["partitions"]:
            entry["partitions"].append(partition)
        entry["drained"] = state.rstrip("*~#!%$@^-") in ("drained", "draining", "drain")
        # drained: no job runs on it any more (draining: some still do), what a firmware change waits for
        entry["idle"] = state.rstrip("*~#!%$@^-") == "drained"
        reason = reason.strip()
        if reason and reason != "none":
            entry["reason"] = reason
            when = when.strip()
            if when.isdigit():
                entry["reason_time"] = int(when)
            elif when not in ("Unknown", "", "None"):
                raise ValueError("sinfo line %d: the reason time %r is not epoch seconds (SLURM_TIME_FORMAT=%%s)"
                                 % (number, one_line(when, 40)))
    if not nodes:
        raise ValueError("sinfo listed no node")
    return nodes


_SDIAG_TIME = re.compile(r"^sdiag output at .{0,60}\((\d{9,12})\)\s*$", re.M)


def parse_sdiag_time(text):
    """The controller's clock from `sdiag` ('sdiag output at Tue Nov 24 13:16:24 2026 (1795526184)'), or None."""
    match = _SDIAG_TIME.search(clean(text or ""))
    return int(match.group(1)) if match else None


def slurm_argv(node, decision, scontrol="scontrol"):
    """The scontrol command line that carries out a decision (None for 'none' or held)."""
    if not plain_name(node or ""):
        raise ValueError("Slurm node name %r is not a plain host name" % (node,))
    if decision["action"] == "drain":
        return [scontrol, "update", "NodeName=%s" % node, "State=DRAIN", "Reason=%s" % one_line(decision["reason"])]
    if decision["action"] == "resume":
        return [scontrol, "update", "NodeName=%s" % node, "State=RESUME"]
    return None
