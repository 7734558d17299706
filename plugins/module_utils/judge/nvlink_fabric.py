# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""A node's NVLink fabric judged without crying wolf: what parse_nvidia_smi_fabric read (each GPU's registration,
domain and Health rows), and, when given, ``nvidia-smi nvlink --status`` and two ``-e`` readings (parse/nvlink.py).

- ``nvlink_fabric_registration``: a GPU that has a fabric but whose registration is not Completed (critical; In
  Progress a warning: it may finish) or whose Status is not Success (critical: Insufficient Resources and the like);
- ``nvlink_fabric_domain`` (critical): a registered GPU with an all-zero ClusterUUID or CliqueId 0 where a domain is
  expected - an HGX board's zero UUID is normal, a rack tray's is not;
- ``nvlink_fabric_clique`` (critical): the node's GPUs in different cliques (or some in a domain and some not);
- ``nvlink_fabric_health``: Summary Unhealthy (critical) or Limited Capacity (warning); where the driver prints no
  Summary row, a Bandwidth that is not Full or a route/timeout/configuration row that is set (warning);
- ``nvlink_links``: fewer active NVLinks per GPU than its SKU has (critical when none, else a warning), or links
  slower than the SKU's speed (warning);
- ``nvlink_errors``: link error counters that rose (judge/nvlink_links.nvlink_error_findings, the one owner of that rule).

A GPU whose fabric is N/A (no NVLink fabric: PCIe cards, VMs) gives nothing. Pure functions, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nvlink_links
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import UUID_RE as _UUID_RE, ZERO_UUID as _ZERO_UUID
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError

# NVLinks per GPU and the GB/s a link that `nvidia-smi nvlink --status` prints (the signalling rate, not the data rate
# judge/ceiling.py counts with), by the product name nvidia-smi prints; the first name the GPU's contains decides.
# GB200: 18 x 53.125 (a real GB200's nvidia-smi nvlink -s, NVIDIA/k8s-test-infra#371), GB300 the same (issue 55);
# H100 SXM 18 x 26.562 (stas00/ml-engineering's H100 capture); A100 SXM4 12 x 25 (leptonai/gpud's A100 capture);
# H100 PCIe: 12 through its bridge, none without one ("bridged": judged only where a GPU of the node shows a link).
SKUS = (("GB300", 18, 53.125, False), ("GB200", 18, 53.125, False), ("H100 PCIe", 12, None, True),
        ("H100 80GB HBM3", 18, 26.562, False), ("A100-SXM4", 12, 25.0, False))
EXPECTED_KEYS = ("domain", "links", "link_gbps")
_NOMINAL = {"bandwidth": ("Full",), "route_recovery_in_progress": ("False",), "route_unhealthy": ("False",),
            "access_timeout_recovery": ("False",), "incorrect_configuration": ("None",)}
_ROW_NAMES = {"bandwidth": "Bandwidth", "route_recovery_in_progress": "Route Recovery in progress",
              "route_unhealthy": "Route Unhealthy", "access_timeout_recovery": "Access Timeout Recovery",
              "incorrect_configuration": "Incorrect Configuration"}
_FABRIC_FIX = ("check the NVLink switch trays and NVIDIA's fabric management for this tray (nmx-c / NMX-M, the "
               "fabric manager on HGX), then reset the GPUs or reboot the node; drain it meanwhile")


def sku_links(name):
    """{links, link_gbps, bridged} of the first SKUS entry the product name contains, or None."""
    for part, links, gbps, bridged in SKUS:
        if name and part in name:
            return {"links": links, "link_gbps": gbps, "bridged": bridged}
    return None


def _check(fabric, expected):
    if not isinstance(fabric, dict) or not isinstance(fabric.get("gpus"), list) or \
            not all(isinstance(g, dict) for g in fabric["gpus"]):
        raise ToolTextError("nvlink_fabric_findings needs parse_nvidia_smi_fabric's result (gpus as a list of GPUs)")
    if expected is None:
        return {}
    if not isinstance(expected, dict):
        raise ToolTextError("expected must be a mapping (%s), got %s" % (", ".join(EXPECTED_KEYS), type(expected).__name__))
    unknown = sorted(set(expected) - set(EXPECTED_KEYS))
    if unknown:
        raise ToolTextError("expected has unknown key(s) %s; it takes %s" % (", ".join(unknown), ", ".join(EXPECTED_KEYS)))
    if expected.get("domain") is not None and not isinstance(expected["domain"], bool):
        raise ToolTextError("expected.domain must be true, false or null, got %r" % (expected["domain"],))
    links = expected.get("links")
    if links is not None and (isinstance(links, bool) or not isinstance(links, int) or links < 0):
        raise ToolTextError("expected.links must be a whole number of 0 or more, got %r" % (links,))
    gbps = expected.get("link_gbps")
    if gbps is not None and (isinstance(gbps, bool) or not isinstance(gbps, (int, float)) or not math.isfinite(gbps)
                             or gbps <= 0):
        raise ToolTextError("expected.link_gbps must be a positive finite number, got %r" % (gbps,))
    return expected


def _where(gpu):
    return "GPU %s%s" % (gpu.get("index"), " (%s)" % gpu["bus_id"] if gpu.get("bus_id") else "")


def in_domain(gpu):
    """A GPU record of parse_nvidia_smi_fabric names a multi-node domain: a ClusterUUID not all zeros and a CliqueId
    other than 0 (whatever its registration says: a stuck tray may still print them)."""
    uuid = (gpu.get("cluster_uuid") or "").lower()
    return bool(_UUID_RE.match(uuid)) and uuid != _ZERO_UUID and gpu.get("clique_id") not in (None, "0")


def _ids(gpu):
    uuid = (gpu.get("cluster_uuid") or "").lower()
    shown = "all zeros" if uuid == _ZERO_UUID else gpu.get("cluster_uuid") or "N/A"
    return "CliqueId %s, ClusterUUID %s" % (gpu.get("clique_id") or "N/A", shown)


def domain_expected(fabric, expected):
    """expected.domain when given; else whether a GPU names its rack's chassis in Platform Info (a GB200/GB300
    compute tray does; an HGX board, a PCIe card, a laptop or a driver before R560 names none)."""
    if expected.get("domain") is not None:
        return expected["domain"]
    return any((gpu.get("platform") or {}).get("chassis_serial") not in (None, "", "0") for gpu in fabric["gpus"])


def _registration(gpu):
    where = _where(gpu)
    if gpu["state"] != "Completed":
        return finding("nvlink_fabric_registration", "warning" if gpu["state"] == "In Progress" else "critical", where,
                       "%s: fabric registration is %s, not Completed (%s)" % (where, gpu["state"], _ids(gpu)), _FABRIC_FIX)
    if gpu.get("status") != "Success":
        return finding("nvlink_fabric_registration", "critical", where,
                       "%s: fabric registration Completed with Status %s (%s)" % (where, gpu.get("status") or "N/A", _ids(gpu)),
                       _FABRIC_FIX)
    return None


def _health(gpu):
    health = gpu.get("health") or {}
    summary = health.get("summary") or gpu.get("health_summary")
    printed = [(_ROW_NAMES[key], health[key]) for key in _ROW_NAMES if health.get(key) is not None]
    odd = [(_ROW_NAMES[key], health[key]) for key in _ROW_NAMES if health.get(key) not in (None,) + _NOMINAL[key]]
    if summary == "Healthy" or (summary is None and not odd):
        return None
    where = _where(gpu)
    fix = "the GPU's NVLink fabric lost routes or bandwidth: " + _FABRIC_FIX
    if summary is None:
        return finding("nvlink_fabric_health", "warning", where, "%s: fabric health %s (no Summary row)" % (
            where, ", ".join("%s is %s" % row for row in odd)), fix)
    rows = ", ".join("%s %s" % row for row in odd or printed)
    detail = "%s: fabric health Summary is %s%s" % (where, summary, " (%s)" % rows if rows else "")
    return finding("nvlink_fabric_health", "critical" if summary == "Unhealthy" else "warning", where, detail, fix)


def _cliques(registered, wanted):
    groups = {}
    for gpu in registered:
        key = "%s/%s" % (gpu["cluster_uuid"].lower(), gpu["clique_id"]) if in_domain(gpu) else "no domain"
        groups.setdefault(key, []).append(gpu["index"])
    domains = [key for key in groups if key != "no domain"]
    if len(domains) > 1 or (domains and "no domain" in groups and not wanted):
        return [finding("nvlink_fabric_clique", "critical", "GPU " + ", ".join(str(g["index"]) for g in registered),
                        "the node's GPUs are in different NVLink cliques: %s" % ", ".join(
                            "%s (GPU %s)" % (key, ", ".join(str(i) for i in groups[key])) for key in sorted(groups)),
                        "one node's GPUs belong to one NVLink domain: " + _FABRIC_FIX)]
    return []


def _domain_gap(gpu):
    """Why a registered GPU is in no domain: 'ClusterUUID all zeros and CliqueId 0', or None when it is in one."""
    if in_domain(gpu):
        return None
    uuid = (gpu.get("cluster_uuid") or "").lower()
    parts = ["ClusterUUID all zeros" if uuid in ("", _ZERO_UUID) else
             "ClusterUUID %r is no UUID" % uuid[:40] if not _UUID_RE.match(uuid) else None,
             "CliqueId 0" if gpu.get("clique_id") in (None, "0") else None]
    return " and ".join(part for part in parts if part)


def _fabric_findings(fabric, wanted):
    found, registered = [], []
    for gpu in fabric["gpus"]:
        if gpu.get("state") is None:     # N/A: no NVLink fabric on this GPU
            continue
        problem = _registration(gpu)
        if problem:
            found.append(problem)
        else:
            registered.append(gpu)
            gap = _domain_gap(gpu) if wanted else None
            if gap:
                found.append(finding("nvlink_fabric_domain", "critical", _where(gpu), "%s: %s: the GPU is in no NVLink "
                                     "domain where one is expected" % (_where(gpu), gap), _FABRIC_FIX))
        health = _health(gpu)
        if health:
            found.append(health)
    return found + _cliques(registered, wanted)


def _link_numbers(numbers):
    """[0, 1, 2, 5] -> 'links 0-2, 5'; [4] -> 'link 4'."""
    spans = []
    for number in sorted(numbers):
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    text = ", ".join("%d-%d" % (a, b) if b > a else "%d" % a for a, b in spans)
    return ("links " if len(numbers) > 1 else "link ") + text


def _gpu_links(gpu, want, gbps):
    """A GPU's nvlink_links findings against `want` links at `gbps`."""
    where, name = "GPU %s" % gpu.get("index"), gpu.get("name") or "GPU"
    active = [link for link in gpu["links"] if link.get("active")]
    found = []
    if len(active) < want:
        inactive = [link["link"] for link in gpu["links"] if not link.get("active")]
        unlisted = max(0, want - len(gpu["links"]))
        why = ", ".join(part for part in ("%s inactive" % _link_numbers(inactive) if inactive else "",
                                          "%d not listed" % unlisted if unlisted else "") if part)
        found.append(finding("nvlink_links", "critical" if not active else "warning", where,
                             "%s (%s): %d of its %d NVLinks active (%s)" % (where, name, len(active), want, why),
                             "NCCL loses that share of NVLink bandwidth: nvidia-smi nvlink -s and -e, the fabric's "
                             "health (nvidia-smi -q), then the tray's or baseboard's NVLink cabling; drain and reset"))
    slow = [link for link in active if gbps and link.get("speed_gbps") is not None and link["speed_gbps"] < gbps * 0.99]
    if slow:
        speeds = sorted(set(link["speed_gbps"] for link in slow))
        found.append(finding("nvlink_links", "warning", where, "%s (%s): %s at %s GB/s, %g expected" % (
            where, name, _link_numbers([link["link"] for link in slow]), "/".join("%g" % v for v in speeds), gbps),
            "a link trained below its speed: nvidia-smi nvlink -s and -e, then the NVLink cabling or the GPU"))
    return found


def _links_findings(fabric, expected, status):
    names = dict((gpu.get("index"), gpu.get("name")) for gpu in fabric["gpus"])
    node_has_links = any(link.get("active") for gpu in status for link in gpu["links"])
    found = []
    for gpu in status:
        if gpu.get("elided"):
            continue      # a listing with '...' cannot be counted
        sku = sku_links(gpu.get("name") or names.get(gpu.get("index"))) or {}
        want = expected.get("links") if expected.get("links") is not None else sku.get("links")
        gbps = expected.get("link_gbps") if expected.get("link_gbps") is not None else sku.get("link_gbps")
        if want is None or (sku.get("bridged") and expected.get("links") is None and not node_has_links):
            continue
        found.extend(_gpu_links(dict(gpu, name=gpu.get("name") or names.get(gpu.get("index"))), want, gbps))
    return found


def nvlink_fabric_findings(fabric, expected=None, status=None, errors_before=None, errors_after=None):
    """parse_nvidia_smi_fabric's result judged; ``status`` (parse_nvlink_status's list) adds the links per GPU against
    the SKU's, ``errors_after`` (and ``errors_before``, parse_nvlink_errors' lists) the counters that rose.

    ``expected``: {domain: true/false/null - whether this node belongs to a multi-node NVLink domain; null decides by
    Platform Info (a GPU naming its rack's chassis: a GB200/GB300 tray), links: NVLinks each GPU must have active
    (null: the SKU's, SKUS), link_gbps: the GB/s a link nvidia-smi nvlink -s must print (null: the SKU's)}."""
    expected = _check(fabric, expected)
    found = _fabric_findings(fabric, domain_expected(fabric, expected))
    if status is not None:
        if not isinstance(status, list) or not all(isinstance(g, dict) and isinstance(g.get("links"), list) for g in status):
            raise ToolTextError("status must be parse_nvlink_status' list of GPUs, got %s" % type(status).__name__)
        found.extend(_links_findings(fabric, expected, status))
    if errors_after is not None:
        found.extend(nvlink_links.nvlink_error_findings(errors_before, errors_after))
    return found
