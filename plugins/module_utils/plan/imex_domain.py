# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A job's IMEX domain, as the health monitor's Slurm IMEX prolog makes it: its settings checked, the job's nodes'
addresses checked and written one per line into nodes_config.cfg (our file marked as ours, so the epilog takes back
only what the prolog wrote), and the daemon's answer judged while the prolog waits - every node of the job READY and
CONNECTED to every other, the domain UP - or why not.

Pure functions, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import one_line
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import imex
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_imex import CELLS

# The first line of every nodes_config.cfg the prolog writes: the epilog restores or removes only such a file.
MARKER = "# gpufabric IMEX prolog"
_HOSTNAME = re.compile(r"^(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z")
_JOB = re.compile(r"^[0-9]{1,20}\Z")
DEFAULTS = {"config_file": "/etc/nvidia-imex/nodes_config.cfg", "service": "nvidia-imex", "ctl": None,
            "channel": "/dev/nvidia-caps-imex-channels/channel0", "wait": 120, "poll": 2, "addresses": {}}


class ImexPrologError(ValueError):
    """A setting, a node or an address the prolog cannot write; the message names the value."""


def check_address(value, node=None):
    """An IPv4 or IPv6 address or a DNS host name, as one line of nodes_config.cfg holds it; else ImexPrologError naming
    it (a newline, a space or a '#' would smuggle another line or comment into the file)."""
    where = " (node %s)" % one_line(str(node), 80) if node is not None else ""
    if not isinstance(value, str):
        raise ImexPrologError("IMEX address%s must be an IP address or a host name, got %r" % (where, value))
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if _HOSTNAME.match(value):
        return value
    raise ImexPrologError("IMEX address%s must be an IP address or a host name (letters, digits, '-' and '.'), got %r"
                          % (where, one_line(value, 120)))


def check_settings(given):
    """The prolog's settings (the health monitor's ``imex``) over DEFAULTS, or ImexPrologError naming the bad one."""
    if not isinstance(given, dict):
        raise ImexPrologError("imex must be a mapping (%s), got %r" % (", ".join(sorted(DEFAULTS)), given))
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ImexPrologError("imex has unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    merged = dict(DEFAULTS, **dict((k, v) for k, v in given.items() if v is not None))
    for key in ("config_file", "channel") + (("ctl",) if merged["ctl"] else ()):
        if not isinstance(merged[key], str) or not merged[key].startswith("/") or "\n" in merged[key]:
            raise ImexPrologError("imex %s must be an absolute one-line path, got %r" % (key, merged[key]))
    if not isinstance(merged["service"], str) or not re.match(r"^[A-Za-z0-9@._-]{1,128}\Z", merged["service"]):
        raise ImexPrologError("imex service must be a systemd unit name, got %r" % (merged["service"],))
    for key, high in (("wait", 3600), ("poll", 60)):
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise ImexPrologError("imex %s must be whole seconds from 1 to %d, got %r" % (key, high, value))
    if not isinstance(merged["addresses"], dict):
        raise ImexPrologError("imex addresses must map node names to their IMEX addresses, got %r" % (merged["addresses"],))
    for node, address in merged["addresses"].items():
        check_address(address, node)
    return merged


def nodes_config_text(addresses, job):
    """nodes_config.cfg for Slurm job ``job``: our marker line, then each address once, one per line, in order."""
    job = str(job)
    if not _JOB.match(job):
        raise ImexPrologError("the Slurm job ID must be a number, got %r" % one_line(job, 60))
    checked = [check_address(address) for address in addresses]
    if not checked:
        raise ImexPrologError("the job names no node: nothing to write into nodes_config.cfg")
    seen, twice = set(), []
    for address in checked:
        if address in seen:
            twice.append(address)
        seen.add(address)
    if twice:
        raise ImexPrologError("two of the job's nodes have the same IMEX address: %s" % ", ".join(sorted(set(twice))))
    return "%s: Slurm job %s; the epilog puts the site's own file back\n%s\n" % (MARKER, job, "\n".join(checked))


def ours(text):
    """Whether a nodes_config.cfg's text is one the prolog wrote."""
    return isinstance(text, str) and text.startswith(MARKER)


def matrix(parsed):
    """The connectivity matrix in one line, for the log and the report: '#0 10.0.0.1 READY: C C | #1 ...'."""
    cells = dict((status, cell) for cell, status in CELLS.items())   # the text's cells, as nvidia-imex-ctl -N prints them
    rows = ["#%s %s %s: %s" % (node["index"], node.get("address"), node.get("status"),
                               " ".join(cells.get(c.get("status"), "?") for c in node.get("connections") or ()))
            for node in parsed.get("nodes") or ()]
    return "%s; Domain State %s" % (" | ".join(rows), parsed.get("domain_state") or "not printed")


def verdict(parsed, addresses):
    """(ready, findings) of one answer of ``nvidia-imex-ctl -N -j`` while the prolog waits: ready when the domain is UP
    and every one of the job's addresses is listed, READY and connected to the others (imex_findings gives nothing
    above information)."""
    found = imex.imex_findings(parsed, list(addresses))
    ready = parsed.get("domain_state") == "UP" and not [f for f in found if f["severity"] != "info"]
    return ready, found
