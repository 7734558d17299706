# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What the topology modules share: TopologyError, the one error they raise (it names the value),
short() for a value quoted in a message, and Slurm's names: what topology.conf can hold (check_slurm_name)
and a switch's own name made into one (sanitize_name); and a node's place in its NVLink rack as a node's report to the
decider carries it (report_domain: the node side computes it, fleet/protocol checks it).

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


class TopologyError(ValueError):
    """The input is not what the tool prints, or a name cannot go into a Slurm file; says which value."""


def short(value, limit=60):
    """value (its repr when not a string) cut to `limit` characters, to quote it in a message."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# topology.conf is parsed as Key=Value words separated by white space, "#" starts a comment and
# Nodes=/Switches= are hostlist expressions (",", "[", "]"). Slurm refuses a SwitchName of more
# than 64 characters (switch_record.c, HOST_NAME_MAX).
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
MAX_SWITCH_NAME = 64
MAX_NODE_NAME = 255
_BAD_CHARS = {" ": "a space", "\t": "a tab", "\n": "a newline", "\r": "a carriage return", "=": "'='",
              ",": "','", "#": "'#'", "[": "'['", "]": "']'", "\"": "a double quote", "'": "a quote"}


def check_slurm_name(value, what, limit=MAX_NODE_NAME):
    """value as a name topology.conf can hold, or TopologyError naming `what`, the value and the bad character."""
    if not isinstance(value, str) or isinstance(value, bool):
        raise TopologyError("%s must be a string, got %s" % (what, "null" if value is None else type(value).__name__))
    if not value:
        raise TopologyError("%s must not be empty" % what)
    if len(value) > limit:
        raise TopologyError("%s %r is %d characters long; Slurm takes at most %d" % (what, short(value), len(value), limit))
    if _NAME_RE.match(value):
        return value
    for index, char in enumerate(value):
        if not re.match(r"[A-Za-z0-9_.-]", char) or (index == 0 and char in ".-"):
            control = ord(char) < 32 or 127 <= ord(char) < 160
            described = _BAD_CHARS.get(char) or ("the control character %r" % char if control else "%r" % char)
            raise TopologyError("%s %r holds %s (character %d): a Slurm name takes letters, digits, '_', '.' and '-' "
                                "and starts with a letter, a digit or '_'" % (what, short(value), described, index + 1))
    raise TopologyError("%s %r is not a Slurm name" % (what, short(value)))


def sanitize_name(text, limit=MAX_SWITCH_NAME):
    """A switch's own name made into a Slurm name, the same way every time: runs of other characters become
    '-', leading and trailing '-' and '.' go; None when nothing is left."""
    if not text:
        return None
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:limit].strip("-.")
    return name or None


# What a node's report to the decider holds as ``domain`` (fleet/protocol.py, version 2): the node's NVLink domain and
# its place in the rack, as nvidia-smi -q prints them (topology/nvlink.node_domain; report_domain maps its keys).
DOMAIN_KEYS = ("cluster_uuid", "clique", "chassis_serial", "slot", "tray")


def report_domain(place):
    """topology/nvlink.node_domain's result -> the report's ``domain`` {cluster_uuid, clique, chassis_serial, slot,
    tray}, or None when it names neither a domain nor a chassis (an HGX board, a PCIe card: no rack to tell)."""
    if not isinstance(place, dict):
        return None
    domain = {"cluster_uuid": place.get("cluster_uuid"), "clique": place.get("clique_id"),
              "chassis_serial": place.get("chassis_serial"), "slot": place.get("slot_number"), "tray": place.get("tray_index")}
    if not domain["chassis_serial"] and not domain["cluster_uuid"]:
        return None
    return domain
