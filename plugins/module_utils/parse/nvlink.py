# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``nvidia-smi nvlink --status`` and ``-e`` read: each GPU's NVLinks, their speed and their error counters.
The findings made from them (NVLinks down, error counters that rose) are judge/nvlink_links.py's.

Pure functions, standard library only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import integer as _int


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
