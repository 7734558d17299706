# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What an NCCL_DEBUG=INFO log says about multi-node NVLink (MNNVL) and NVLink SHARP (NVLS), for
parse/nccl_debug.py. The lines, as NCCL prints them (src/init.cc, src/mnnvl.cc, src/transport/nvls.cc):

- the communicator's line, 2.20 and later: ``comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d``
  - MNNVL 1 when the communicator runs over the multi-node NVLink fabric, 0 when it does not;
- the clique NCCL found, 2.21 to 2.24 (init.cc) and 2.25 and later (mnnvl.cc):
  ``MNNVL %d cliqueId %x cliqueSize %d cliqueRank %d`` (2.30 adds `` nvlDomainSize %d``);
- each GPU's fabric as NVML gives it, 2.20 and later:
  ``MNNVL busId 0x%lx fabric UUID %lx.%lx cliqueId 0x%x state %d healthMask 0x%x`` (state 3 is
  NVML_GPU_FABRIC_STATE_COMPLETED), and 2.28 and later ``MNNVL rack serial %s slot %d tray %d hostId %d peerType %d
  moduleId %d``;
- a connection ``via P2P/MNNVL`` (2.30's P2P transport over the fabric);
- ``NVLS multicast support is %savailable on dev %d`` and ``NVLS comm %p headRank ...`` (NVLink SHARP set up).

Pure functions, standard library only; no regular expression here has two repetitions that can match the same
characters."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Kept with their text at most this many (a 72-GPU log prints 72 fabric lines per communicator).
MAX_DETAIL = 72

_COMM_RE = re.compile(r"^comm \S{1,24} rank ([0-9]{1,7}) nRanks ([0-9]{1,7}) nNodes ([0-9]{1,6}) localRanks [0-9]{1,7} "
                      r"localRank [0-9]{1,7} MNNVL ([0-9]{1,3})\s*$")
_CLIQUE_RE = re.compile(r"^MNNVL ([0-9]{1,3}) cliqueId ([0-9a-fA-F]{1,8}) cliqueSize ([0-9]{1,7}) cliqueRank ([0-9]{1,7})"
                        r"(?: nvlDomainSize ([0-9]{1,7}))?\s*$")
_FABRIC_RE = re.compile(r"^MNNVL busId 0x([0-9a-fA-F]{1,16}) fabric UUID ([0-9a-fA-F]{1,16})\.([0-9a-fA-F]{1,16}) "
                        r"cliqueId 0x([0-9a-fA-F]{1,8}) state ([0-9]{1,3}) healthMask 0x([0-9a-fA-F]{1,8})")
_RACK_RE = re.compile(r"^MNNVL rack serial (\S{0,64}) slot (-?[0-9]{1,6}) tray (-?[0-9]{1,6}) hostId (-?[0-9]{1,6}) "
                      r"peerType (-?[0-9]{1,6}) moduleId (-?[0-9]{1,6})")
_NVLS_SUPPORT_RE = re.compile(r"^NVLS multicast support is (not )?available on dev ([0-9]{1,4})")
# NVML_GPU_FABRIC_STATE_* (nvml.h): what the fabric line's state number means.
FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}


def empty():
    """The MNNVL details of a log that printed none: counts of communicators with MNNVL on and off, the cliques NCCL
    found, each GPU's fabric and its place in the rack."""
    return {"comms_on": 0, "comms_off": 0, "cliques": [], "fabric": [], "racks": []}


def _keep(items, item):
    if item not in items and len(items) < MAX_DETAIL:
        items.append(item)


def _communicator(result, message):
    match = _COMM_RE.match(message)
    if not match:
        return False
    on = match.group(4) != "0"
    result["mnnvl_detail"]["comms_on" if on else "comms_off"] += 1
    result["mnnvl"] = True if on else (result["mnnvl"] or False)
    return True


def _clique(result, message):
    match = _CLIQUE_RE.match(message)
    if not match:
        return False
    on = match.group(1) != "0"
    result["mnnvl"] = True if on else (result["mnnvl"] or False)
    _keep(result["mnnvl_detail"]["cliques"], {
        "mnnvl": on, "clique_id": int(match.group(2), 16), "clique_size": int(match.group(3)),
        "nvl_domain_size": int(match.group(5)) if match.group(5) else None})
    return True


def _fabric(result, host, message):
    match = _FABRIC_RE.match(message)
    if match:
        state = int(match.group(5))
        _keep(result["mnnvl_detail"]["fabric"], {
            "host": host, "bus_id": "0x" + match.group(1).lower(),
            "fabric_uuid": "%s.%s" % (match.group(2).lower(), match.group(3).lower()),
            "clique_id": int(match.group(4), 16), "state": state, "state_name": FABRIC_STATES.get(state),
            "health_mask": "0x" + match.group(6).lower()})
        return True
    match = _RACK_RE.match(message)
    if match:
        _keep(result["mnnvl_detail"]["racks"], {
            "host": host, "rack_serial": match.group(1), "slot": int(match.group(2)), "tray": int(match.group(3)),
            "host_id": int(match.group(4))})
        return True
    return False


def _nvls(result, message):
    match = _NVLS_SUPPORT_RE.match(message)
    if match:
        if not match.group(1):
            result["nvls"] = True
        elif result["nvls"] is None:
            result["nvls"] = False
        return True
    if message.startswith("NVLS comm "):
        result["nvls"] = True
        return True
    return False


def read(result, host, message, line, remember):
    """One INFO message read for MNNVL and NVLS (``remember(key, line)`` keeps a line as evidence); True when it was
    one of theirs. The communicator's line is read for MNNVL here and for its size and ranks by the caller."""
    if _communicator(result, message):
        remember("mnnvl", line)
        return False
    if _clique(result, message) or _fabric(result, host, message):
        remember("mnnvl", line)
        return True
    if _nvls(result, message):
        remember("nvls", line)
        return True
    return False


def finish(result):
    """A log with connections over the fabric (``via P2P/MNNVL``) but no MNNVL line left (cut, or filtered) used it."""
    if result["mnnvl"] is None and result["transport_counts"].get("P2P/MNNVL"):
        result["mnnvl"] = True
