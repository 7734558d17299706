# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``nvidia-smi -q`` (or ``-a``) in its text form - what users paste and what every driver prints - to dictionaries.

The text is a tree by indentation: ``Key : Value`` lines, and section lines without a colon (``MIG Mode``, ``GPU
00000000:94:00.0``) whose indented lines belong to them. The header holds ``Driver Version``, ``CUDA Version`` and
``Attached GPUs``; each ``GPU <bus id>`` section holds the GPU's fields and sub-sections. Values stay text
(``N/A`` included), a section's fields are keyed by their names as printed. Prompt lines, launcher prefixes and the
``====NVSMI LOG====`` banner are skipped; a line of another shape is kept in ``unparsed``. One pass over the lines.
An excerpt of one GPU's record without its ``GPU <bus id>`` line (an indented section first) is that GPU, bus id None.

``memory_health`` reads each GPU's ECC errors, remapped rows and retired pages in the shape of the XML reader
(``gpu.parse_gpu_memory_health``), so ``gpu_memory_findings`` judges both the same way; it adds the
aggregate (lifetime) uncorrectable count, which the text shows beside the volatile one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.gpu import short_pci

_GPU_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_PAIR_RE = re.compile(r"^(\S(?:.*?\S)?)\s+:\s?(.*?)\s*$")


class NvidiaSmiQError(ValueError):
    """The text holds no nvidia-smi -q field; the message says what was expected."""


def parse_nvidia_smi_q(text):
    """-> {driver_version, cuda_version, attached_gpus, header: {field: value}, gpus: [{bus_id, product_name,
    vbios_version, board_id, serial, uuid, fields: {field or section: value or {...}}}], unparsed}."""
    header, gpus, unparsed = {}, [], []
    stack = []   # (indent, dict) of the open sections of the current GPU
    gpu = None
    for raw in _text.launcher_lines(text, "nvidia-smi -q output"):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("=") or re.match(r"^\[[^\]]*\][#$]\s|^\S+@\S+[:~]", stripped):
            continue
        indent = len(line) - len(line.lstrip())
        match = _GPU_RE.match(stripped)
        if match and indent == 0:
            gpu = {"bus_id": match.group(1), "fields": {}}
            gpus.append(gpu)
            stack = [(0, gpu["fields"])]
            continue
        pair = _PAIR_RE.match(stripped) if " :" in stripped or stripped.endswith(":") else None
        if gpu is None and pair is None and indent > 0 and ":" not in stripped:
            # An excerpt of one GPU's record pasted without its 'GPU <bus id>' line (an indented section first).
            gpu = {"bus_id": None, "fields": {}}
            gpus.append(gpu)
            stack = [(-1, gpu["fields"])]
        if gpu is None:
            if pair:
                header[pair.group(1)] = pair.group(2)
            elif not stripped.startswith(("#", "$")):
                unparsed.append(stripped[:200])
            continue
        while len(stack) > 1 and indent <= stack[-1][0]:
            stack.pop()
        target = stack[-1][1]
        if pair:
            target[pair.group(1)] = pair.group(2)
        elif ":" not in stripped:
            section = target.setdefault(stripped, {})
            if isinstance(section, dict):
                stack.append((indent, section))
        else:
            unparsed.append(stripped[:200])
    if not header and not gpus:
        raise NvidiaSmiQError("no 'Driver Version :' and no 'GPU 0000...' section: not nvidia-smi -q output")
    for entry in gpus:
        fields = entry["fields"]
        entry.update(product_name=fields.get("Product Name"), vbios_version=fields.get("VBIOS Version"),
                     board_id=fields.get("Board ID"), serial=fields.get("Serial Number"), uuid=fields.get("GPU UUID"))
    attached = header.get("Attached GPUs")
    return {"driver_version": header.get("Driver Version"), "cuda_version": header.get("CUDA Version"),
            "attached_gpus": int(attached) if attached and attached.isdigit() else None, "header": header,
            "gpus": gpus, "unparsed": unparsed}


def _count(value):
    value = (value or "").strip()
    return int(value) if value.isdigit() else None


def _uncorrectable(section):
    """Sum of a Volatile or Aggregate section's uncorrectable counters (SRAM/DRAM, parity, SEC-DED; old drivers'
    Double Bit Total); None where the section or every counter is missing or N/A."""
    if not isinstance(section, dict):
        return None
    values = [_count(v) for k, v in section.items() if isinstance(v, str) and "uncorrectable" in k.lower()]
    double = section.get("Double Bit")
    if isinstance(double, dict):
        values.append(_count(double.get("Total")))
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def memory_health(result):
    """parse_nvidia_smi_q's result -> per GPU: pci (the bus id as printed, None for an excerpt), ecc_uncorrectable (volatile), ecc_uncorrectable_aggregate,
    remap_pending, remap_failure, remapped_uncorrectable, retired_single, retired_double, retirement_pending."""
    out = []
    for gpu in result["gpus"]:
        fields = gpu["fields"]
        ecc = fields.get("ECC Errors") if isinstance(fields.get("ECC Errors"), dict) else {}
        remap = fields.get("Remapped Rows") if isinstance(fields.get("Remapped Rows"), dict) else {}
        retired = fields.get("Retired Pages") if isinstance(fields.get("Retired Pages"), dict) else {}
        pending = retired.get("Pending Page Blacklist", retired.get("Pending Page Retirement"))
        out.append({
            "pci": gpu["bus_id"],
            "ecc_uncorrectable": _uncorrectable(ecc.get("Volatile")),
            "ecc_uncorrectable_aggregate": _uncorrectable(ecc.get("Aggregate")),
            "remap_pending": remap.get("Pending") == "Yes",
            "remap_failure": remap.get("Remapping Failure Occurred") == "Yes",
            "remapped_uncorrectable": _count(remap.get("Uncorrectable Error")),
            "retired_single": _count(retired.get("Single Bit ECC")),
            "retired_double": _count(retired.get("Double Bit ECC")),
            "retirement_pending": pending == "Yes",
        })
    return out


def gpu_memory_health_text(result):
    """parse_nvidia_smi_q's result (the -q text) -> the entries gpu.parse_gpu_memory_health gives for the XML, plus
    ecc_uncorrectable_aggregate; an excerpt without its GPU line is GPU '?'."""
    entries = memory_health(result)
    for entry in entries:
        entry["pci"] = short_pci(entry["pci"]) if entry["pci"] else "?"
    return entries
