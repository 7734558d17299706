# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia-smi nvlink --status`` and ``-e`` read: each GPU's NVLinks, their speed and their error counters;
and the findings made from them: NVLinks down where the machine shows they should be up, error
counters that rose between two readings.

Pure functions, standard library only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError, integer as _int


_GPU_RE = re.compile(r"^GPU ([0-9]{1,3}):\s*(.*)$")
_LINK_RE = re.compile(r"^Link ([0-9]{1,3}): (.*)$")
_SPEED_RE = re.compile(r"^([0-9]{1,6}(?:\.[0-9]{1,6})?) ?GB/s")
_ELISION = ("...", "[...]")


def _gpu_header(match):
    rest = match.group(2).strip()
    name, uuid = rest, None
    at = rest.rfind("(UUID:")
    if at >= 0:
        name = rest[:at].strip()
        uuid = rest[at + 6:].rstrip(")").strip() or None
        if uuid in ("...",):
            uuid = None
    return {"index": int(match.group(1)), "name": name or None, "uuid": uuid, "links": [], "elided": False}


def _elision(line):
    return line.startswith(_ELISION) or (line and set(line) == {"."})


def parse_nvlink_status(value):
    """``nvidia-smi nvlink --status`` (``-s``) output -> list of GPUs.

    Each: ``index``, ``name``, ``uuid``, ``links`` and ``elided`` (the listing skipped some links: '[...]',
    '....'); each link: ``link``, ``speed_gbps`` (the GB/s figure nvidia-smi prints, per direction; None
    when the link is ``<inactive>``) and ``active``. A GPU without NVLink (or a VM given one GPU) prints
    nothing: the list is empty.
    """
    gpus = []
    gpu = None
    for raw in _text.clean_lines(value, "nvidia-smi nvlink output"):
        line = raw.strip()
        if not line:
            continue
        match = _GPU_RE.match(line)
        if match:
            gpu = _gpu_header(match)
            gpus.append(gpu)
            continue
        if gpu is None:
            continue
        if _elision(line):
            gpu["elided"] = True
            continue
        match = _LINK_RE.match(line)
        if not match:
            continue
        state = match.group(2).strip()
        speed = _SPEED_RE.match(state)
        inactive = "inactive" in state.lower()
        gpu["links"].append({"link": int(match.group(1)),
                             "speed_gbps": (float(speed.group(1)) if "." in speed.group(1) else int(speed.group(1)))
                             if speed and not inactive else None,
                             "active": bool(speed) and not inactive})
    return gpus


def _counter_name(text):
    return "_".join(text.strip().lower().replace("-", " ").split())


def parse_nvlink_errors(value):
    """``nvidia-smi nvlink -e`` (``--errorcounters``) output -> list of GPUs.

    Each: ``index``, ``name``, ``uuid``, ``links``, ``elided``; each link: ``link``, ``replay_errors``,
    ``recovery_errors``, ``crc_errors`` (None when not printed) and ``counters`` (every counter the
    driver printed for it, by snake_case name). Lines before any ``GPU n:`` header (some containers
    print none) go to a GPU whose index is None.
    """
    gpus = []
    gpu = None
    for raw in _text.clean_lines(value, "nvidia-smi nvlink output"):
        line = raw.strip()
        if not line:
            continue
        match = _GPU_RE.match(line)
        if match:
            gpu = _gpu_header(match)
            gpus.append(gpu)
            continue
        if _elision(line):
            if gpu is not None:
                gpu["elided"] = True
            continue
        match = _LINK_RE.match(line)
        if not match:
            continue
        name, sep, count = match.group(2).rpartition(":")
        number = _int(count)
        if not sep or number is None:
            continue
        if gpu is None:
            gpu = {"index": None, "name": None, "uuid": None, "links": [], "elided": False}
            gpus.append(gpu)
        link_number = int(match.group(1))
        link = next((l for l in gpu["links"] if l["link"] == link_number), None)
        if link is None:
            link = {"link": link_number, "replay_errors": None, "recovery_errors": None, "crc_errors": None,
                    "counters": {}}
            gpu["links"].append(link)
        key = _counter_name(name)
        link["counters"][key] = number
        if key in ("replay_errors", "recovery_errors", "crc_errors"):
            link[key] = number
    return gpus


def _check_gpus(gpus, what):
    if not isinstance(gpus, (list, tuple)):
        raise ToolTextError("%s must be a parsed nvidia-smi nvlink list, got %s" % (what, type(gpus).__name__))
    for number, gpu in enumerate(gpus):
        if not isinstance(gpu, dict) or not isinstance(gpu.get("links"), list):
            raise ToolTextError("%s[%d] is not a GPU of parse_nvlink_status / parse_nvlink_errors" % (what, number))
    return gpus


def nvlink_down_findings(status):
    """Findings for NVLinks down where the machine shows they should be up.

    critical: a GPU with no active link while its peers have some (its traffic goes over PCIe);
    warning: a link ``<inactive>`` while other links of the same GPU are active. A machine whose
    GPUs all have no NVLink (or a listing that printed nothing) gives no finding.
    """
    _check_gpus(status, "status")
    found = []
    peers_active = [g for g in status if any(l.get("active") for l in g["links"])]
    for gpu in status:
        target = "GPU %s" % gpu.get("index")
        active = [l for l in gpu["links"] if l.get("active")]
        down = [l for l in gpu["links"] if not l.get("active")]
        if not active and peers_active and gpu["links"]:
            found.append(finding("nvlink_down", "critical", target,
                                 "all %d NVLinks of %s (%s) are inactive while %d other GPU(s) have active links" % (
                                     len(gpu["links"]), target, gpu.get("name") or "GPU", len(peers_active)),
                                 "check the GPU's NVLink/NVSwitch (nvidia-smi nvlink -e, fabric manager); drain and reset or reboot"))
        elif not active and peers_active and not gpu["links"] and not gpu.get("elided"):
            found.append(finding("nvlink_down", "critical", target,
                                 "%s lists no NVLink while %d other GPU(s) have active links" % (target, len(peers_active)),
                                 "check the GPU's NVLink/NVSwitch and the fabric manager; drain and reset or reboot"))
        elif active and down:
            found.append(finding("nvlink_down", "warning", target,
                                 "%s link(s) %s inactive while %d of its links are active" % (
                                     target, ", ".join(str(l["link"]) for l in down), len(active)),
                                 "NCCL loses that share of NVLink bandwidth: check nvidia-smi nvlink -e and the cabling or baseboard"))
    return found


ERROR_COUNTER_SEVERITY = {"recovery_errors": "critical", "replay_errors": "warning", "crc_errors": "warning"}


def nvlink_error_findings(before, after, min_increase=1):
    """Findings for NVLink error counters that rose from ``before`` to ``after`` (two parse_nvlink_errors
    snapshots). Recovery errors are critical (the link retrained), replay and CRC errors a warning; a
    counter that went down was reset (info). ``before`` None: every non-zero counter is reported as info."""
    _check_gpus(after, "after")
    if before is not None:
        _check_gpus(before, "before")
    if isinstance(min_increase, bool) or not isinstance(min_increase, int) or min_increase < 1:
        raise ToolTextError("min_increase must be a whole number of 1 or more, got %r" % (min_increase,))
    old = {}
    for gpu in before or []:
        for link in gpu["links"]:
            for name, count in (link.get("counters") or {}).items():
                old[(gpu.get("uuid") or gpu.get("index"), link.get("link"), name)] = count
    found = []
    for gpu in after:
        for link in gpu["links"]:
            for name, count in sorted((link.get("counters") or {}).items()):
                target = "GPU %s link %s" % (gpu.get("index"), link.get("link"))
                label = name.replace("_", " ")
                if before is None:
                    if count:
                        found.append(finding("nvlink_errors", "info", target, "%s: %d" % (label, count),
                                             "take a second reading under load to see whether it rises"))
                    continue
                previous = old.get((gpu.get("uuid") or gpu.get("index"), link.get("link"), name))
                if previous is None or not isinstance(count, int):
                    continue
                if count < previous:
                    found.append(finding("nvlink_errors", "info", target,
                                         "%s went from %d to %d: the counters were reset" % (label, previous, count),
                                         "compare with a reading taken after the reset"))
                elif count - previous >= min_increase:
                    found.append(finding("nvlink_errors", ERROR_COUNTER_SEVERITY.get(name, "warning"), target,
                                         "%s rose by %d (%d -> %d)" % (label, count - previous, previous, count),
                                         "check the link under load (nvidia-smi nvlink -e); a steady rise needs the baseboard or GPU looked at"))
    return found
