# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A node's NVLinks judged from what parse/nvlink.py read of ``nvidia-smi nvlink --status`` and ``-e``: NVLinks down
where the machine shows they should be up (``nvlink_down``), error counters that rose between two readings
(``nvlink_errors``). judge/nvlink_fabric.py and the node's health check take them from here.

Pure functions, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError


def _check_gpus(gpus, what):
    if not isinstance(gpus, (list, tuple)):
        raise ToolTextError("%s must be a parsed nvidia-smi nvlink list, got %s" % (what, type(gpus).__name__))
    for number, gpu in enumerate(gpus):
        if not isinstance(gpu, dict) or not isinstance(gpu.get("links"), list):
            raise ToolTextError("%s[%d] is not a GPU of parse_nvlink_status / parse_nvlink_errors" % (what, number))
    return gpus


def nvlink_status_findings(host, why):
    """`nvidia-smi nvlink --status` gave no answer (``why``; None: it did): an NVLink that went down goes unseen."""
    if why is None:
        return []
    return [finding("nvlink_status", "warning", host, "nvidia-smi nvlink --status gave no answer: %s" % why,
                    "run it by hand; until it answers, an NVLink that went down goes unseen")]


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
