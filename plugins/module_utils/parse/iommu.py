# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The IOMMU mode of a node, for GPUDirect: from what the kernel says (``iommu: Default domain type: Passthrough``
or ``Translated`` in its log), from the boot command line (``iommu=pt``, ``intel_iommu=off``, ``amd_iommu=off``), and
from sysfs, the one that decides: each PCI device's ``iommu_group/type`` (``identity`` is passthrough, ``DMA`` and
``DMA-FQ`` translated; no group, no IOMMU). Modes: ``passthrough``, ``translated``, ``off``, or None (unknown).
Pure, one pass over each text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_DOMAIN_RE = re.compile(r"iommu: Default domain type:\s*(Passthrough|Translated|Translated \(lazy\)|Identity|DMA)\b", re.I)
_GROUP_TYPES = {"identity": "passthrough", "dma": "translated", "dma-fq": "translated", "unmanaged": "passthrough"}
_ARGS = ("iommu", "intel_iommu", "amd_iommu")


def parse_cmdline(text):
    """/proc/cmdline (or a log line holding it) -> {'iommu': 'pt', 'intel_iommu': 'on', ...} of the IOMMU arguments."""
    found = {}
    for line in _text.launcher_lines(text or "", "kernel command line"):
        for word in line.split():
            name, sep, value = word.partition("=")
            if sep and name in _ARGS:
                found[name] = value
    return found


def parse_kernel_log(text):
    """`dmesg | grep -i iommu` (or the whole log) -> {'default_domain': 'passthrough'|'translated'|None, 'cmdline': {...}}."""
    domain, cmdline = None, {}
    for line in _text.launcher_lines(text or "", "kernel log"):
        match = _DOMAIN_RE.search(line)
        if match:
            word = match.group(1).lower()
            domain = "passthrough" if word in ("passthrough", "identity") else "translated"
        if "command line:" in line.lower():
            cmdline.update(parse_cmdline(line.split(":", 1)[1] if ":" in line else line))
    return {"default_domain": domain, "cmdline": cmdline}


def mode_from_cmdline(args):
    """The mode the boot arguments ask for, or None when they leave it to the kernel's default."""
    if args.get("iommu") == "pt":
        return "passthrough"
    if args.get("iommu") == "off" or args.get("intel_iommu") == "off" or args.get("amd_iommu") == "off":
        return "off"
    return None


def mode_from_groups(types):
    """{pci address: iommu_group/type text, or None where the device has no IOMMU group} -> {address: mode}."""
    return dict((address, "off" if kind is None else _GROUP_TYPES.get(kind.strip().lower(), kind.strip().lower()))
                for address, kind in (types or {}).items())
