# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What the hardware can carry: the ceiling of an nccl-tests run's busbw, from what discovery records of its nodes.

nccl-tests' bus bandwidth (PERFORMANCE.md) is normalised so that it can be set against the speed of the slowest
link each rank drives: for a ring collective (all_reduce, all_gather, reduce_scatter, broadcast, reduce) busbw never
exceeds what one GPU can send a second through its slowest hop. So:

- **one node**: each GPU's NVLink (links joining it to the run's other GPUs, at most the links the GPU has, times
  the per-link rate of its generation; more links to its peers than it has means an NVSwitch), or PCIe (the
  generation and width the GPU trains to) where NVLink does not join the run's GPUs into one ring;
- **across nodes**: also what the node's RDMA ports carry (active ports NCCL_IB_HCA lets NCCL use, their rates
  summed): every byte a ring carries leaves each node once. all_reduce may take NCCL's tree, which sends each byte
  across the network once where the ring's busbw counts it 2(n-1)/n times: its ceiling is the ports' sum times that
  factor (2x p4de over 4 EFA of 100 Gb/s measured 78 GB/s busbw, above the ports' 50). alltoall sends only the other
  nodes' share over the network; sendrecv crosses between two nodes from one GPU, through one port.

``ceiling`` returns the figure with the link that bounds it, or why none can be given (no record, a GPU
generation whose NVLink rate is not known, no port rates). ``judge`` sets a run's figure against it. Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug as _nccl_debug

MIB = 1 << 20

# One NVLink, one direction, in GB/s, by compute capability, with the links a GPU of it has: NVIDIA's published
# totals (both directions) over the link count: V100 300 GB/s over 6, A100 600 over 12, A40 and RTX A6000 bridges
# 112.5 over 4, H100/H200 900 over 18 ("450GB/s is the line rate", NCCL's maintainer in NVIDIA/nccl-tests#212;
# nvidia-smi nvlink --status prints 26.562 a link, the signalling rate), B200 1.8 TB/s over 18.
NVLINK = {
    "7.0": {"generation": 2, "gbps": 25.0, "links": 6},
    "8.0": {"generation": 3, "gbps": 25.0, "links": 12},
    "8.6": {"generation": 3, "gbps": 14.0625, "links": 4},
    "9.0": {"generation": 4, "gbps": 25.0, "links": 18},
    "10.0": {"generation": 5, "gbps": 50.0, "links": 18},
}
# Where a record has no compute capability (records of earlier releases): the GPU's model, as nvidia-smi names it.
CAPABILITY_BY_MODEL = (("GH200", "9.0"), ("H100", "9.0"), ("H200", "9.0"), ("H800", "9.0"), ("GB200", "10.0"),
                       ("B200", "10.0"), ("B100", "10.0"), ("A100", "8.0"), ("A800", "8.0"), ("V100", "7.0"),
                       ("A40", "8.6"), ("RTX A6000", "8.6"))
# One PCIe lane, one direction, in GB/s after line coding (8b/10b to Gen 2, 128b/130b from Gen 3, FLIT for Gen 6).
PCIE_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}

RING = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
KNOWN = RING + ("alltoall", "sendrecv")

# Below this size latency, not bandwidth, sets busbw (8x H200: 175 GB/s at 8 MiB, 318 at 64 MiB, 365 at 4 GiB):
# a run whose largest size is smaller is not judged against the hardware.
MIN_SIZE = 64 * MIB
# A run below this share of its ceiling fails, by the link that bounds it (docs/expected-figures.md has the table).
# NVLink: healthy runs reach 0.60 to 0.82 from 64 MiB up, peer-to-peer disabled 0.05 (23 of 450 GB/s, 4x H200).
# Network: healthy public runs 0.57 to 1.0, the degraded ones their threads report 0.20 to 0.35. PCIe: GPUs that
# cannot reach each other peer-to-peer (GeForce cards, a root complex that does not forward it) copy through host
# memory: a healthy 2x RTX 2080 Ti reaches 0.25 of its Gen3 x16 link.
FRACTION = {"nvlink": 0.4, "network": 0.4, "pcie": 0.2}

_NV_RE = re.compile(r"^NV([0-9]{1,3})$")


class CeilingError(ValueError):
    """A node's facts are not what discovery records; the message names the value."""


def _gpu_entries(gpu, count):
    gpus = sorted((g for g in (gpu or {}).get("gpus") or [] if isinstance(g, dict)),
                  key=lambda g: g.get("index") if isinstance(g.get("index"), int) else 0)
    return gpus[:count]


def _pcie(gpus):
    """(GB/s a direction of the slowest GPU's PCIe link, 'PCIe Gen5 x16'), or (None, why)."""
    rates = []
    for entry in gpus:
        link = entry.get("pcie") or {}
        gen, width = link.get("gen"), link.get("width")
        if gen not in PCIE_LANE or not isinstance(width, int) or width < 1:
            return None, "GPU %s's PCIe generation and width are not recorded (run gpufabric.rdma.discover)" % entry.get("index")
        rates.append((PCIE_LANE[gen] * width, "PCIe Gen%d x%d" % (gen, width)))
    if not rates:
        return None, "no GPU is recorded"
    return min(rates)


def _capability(gpu, gpus):
    recorded = (gpu.get("compute_capabilities") or [None])[0]
    if recorded:
        return str(recorded)
    name = str(gpus[0].get("name") or "")
    return next((cap for model, cap in CAPABILITY_BY_MODEL if model in name), "unknown")


def _nvlink_counts(matrix, names):
    counts = {}
    for a in names:
        for b in names:
            match = _NV_RE.match(str(((matrix or {}).get(a) or {}).get(b) or ""))
            if a != b and match:
                counts[(a, b)] = int(match.group(1))
    return counts


def _joined(names, counts):
    """True when NVLink joins the GPUs into one ring: connected, and (three or more GPUs) each with two NVLink peers."""
    peers = dict((n, set(b for (a, b) in counts if a == n)) for n in names)
    if len(names) > 2 and any(len(p) < 2 for p in peers.values()):
        return False
    seen, todo = set(), [names[0]]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(peers[name] - seen)
    return len(seen) == len(names)


def node_ceiling(gpu, count):
    """One node's ceiling for ``count`` of its GPUs (the first ones, as nccl-tests -g and local ranks take them).

    ``gpu``: the node record's gpu (gpu_facts: gpus with pcie, topology.matrix, compute_capabilities).
    Returns {busbw, link ('nvlink' | 'pcie'), bound (what bounds it, in words)}, or {busbw: None, why}.
    """
    if not isinstance(gpu, dict):
        return {"busbw": None, "why": "no GPU record for this node (run gpufabric.rdma.discover)"}
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise CeilingError("the GPU count of a run must be a whole number of 1 or more, got %r" % (count,))
    gpus = _gpu_entries(gpu, count)
    if len(gpus) < count:
        return {"busbw": None, "why": "the run uses %d GPUs and the node's record lists %d" % (count, len(gpus))}
    if count == 1:
        return {"busbw": None, "why": "one GPU a node: no link inside the node is crossed"}
    names = ["GPU%s" % g.get("index") for g in gpus]
    counts = _nvlink_counts(((gpu.get("topology") or {}).get("matrix")), names)
    capability = _capability(gpu, gpus)
    pcie, pcie_text = _pcie(gpus)
    if counts and _joined(names, counts):
        spec = NVLINK.get(capability)
        if spec is None:
            return {"busbw": None, "why": "the NVLink rate of compute capability %s is not known" % capability}
        per_gpu = []   # (links, through a switch: more links to the run's other GPUs than the GPU has)
        for name in names:
            joined = sum(n for (a, b), n in counts.items() if a == name)
            per_gpu.append((min(joined, spec["links"]), joined > spec["links"]))
        links, switch = min(per_gpu)
        return {"busbw": round(links * spec["gbps"], 1), "link": "nvlink",
                "bound": "NVLink %d: %d links x %g GB/s a direction per GPU%s" % (
                    spec["generation"], links, spec["gbps"], ", through NVSwitch" if switch else "")}
    if pcie is None:
        return {"busbw": None, "why": pcie_text}
    rate = round(pcie, 1)
    return {"busbw": rate, "link": "pcie", "bound": "%s: %s GB/s a direction per GPU%s" % (
        pcie_text, "%.1f" % rate, ", NVLink does not join the run's GPUs into one ring" if counts else "")}


def p2p_expected(nodes, gpus_per_node):
    """Whether the ranks of each node must talk peer-to-peer: True where NVLink joins every node's GPUs of the run into
    one ring, False where PCIe bounds them (peer-to-peer may be impossible there), None when unknown or one GPU a node."""
    if gpus_per_node < 2 or not nodes:
        return None
    links = set(node_ceiling(n.get("gpu"), gpus_per_node).get("link") for n in nodes)
    if links == {"nvlink"}:
        return True
    return False if links == {"pcie"} else None


def _port_rates(devices, ib_hca):
    rates = []
    for device in devices or []:
        for port in (device or {}).get("ports") or []:
            if port.get("state") != "ACTIVE" or not isinstance(port.get("rate_gbps"), (int, float)):
                continue
            if ib_hca and not _nccl_debug.ib_hca_allows(ib_hca, device.get("name") or "", port.get("port")):
                continue
            rates.append(port["rate_gbps"] / 8.0)
    return rates


def ceiling(collective, nodes, gpus_per_node, ib_hca=None):
    """The ceiling of one run's busbw.

    ``nodes``: [{'host', 'gpu' (the record's gpu), 'rdma_devices'}], the run's nodes; ``gpus_per_node`` its ranks on
    each. Returns {busbw, link ('nvlink' | 'pcie' | 'network'), bound} or {busbw: None, why}.
    """
    if collective not in KNOWN:
        return {"busbw": None, "why": "no ceiling is derived for %s" % (collective or "an unnamed collective")}
    if not nodes:
        return {"busbw": None, "why": "the run's nodes are not known"}
    inside = None
    if gpus_per_node > 1:
        found = [dict(node_ceiling(n.get("gpu"), gpus_per_node), host=n.get("host")) for n in nodes]
        unknown = [f for f in found if f["busbw"] is None]
        if unknown:
            return {"busbw": None, "why": "%s: %s" % (unknown[0]["host"], unknown[0]["why"])}
        inside = dict((k, v) for k, v in min(found, key=lambda f: f["busbw"]).items() if k != "host")
    if len(nodes) == 1:
        return inside or {"busbw": None, "why": "one GPU on one node: nothing crosses a link"}
    per_node = []
    for node in nodes:
        rates = _port_rates(node.get("rdma_devices"), ib_hca)
        if not rates:
            return {"busbw": None, "why": "%s: no active RDMA port with a rate%s: what the network carries is unknown"
                    % (node.get("host"), " that NCCL_IB_HCA=%s allows" % ib_hca if ib_hca else "")}
        per_node.append((sum(rates), max(rates), len(rates), node.get("host")))
    total, widest, ports, host = min(per_node)
    ranks, count = gpus_per_node * len(nodes), len(nodes)
    if collective == "all_reduce":
        network = total * 2.0 * (ranks - 1) / ranks
        text = ("%d RDMA port(s) of %s, %g GB/s a direction together, times 2(n-1)/n = %.3g for NCCL's tree"
                % (ports, host, total, 2.0 * (ranks - 1) / ranks))
    elif collective == "alltoall":
        network = total * (ranks - 1) / (gpus_per_node ** 2 * (count - 1))
        text = "%d RDMA ports, %g GB/s together, carrying the other nodes' share of alltoall" % (ports, total)
    elif collective == "sendrecv":
        network, text = widest, "one RDMA port of %g GB/s between neighbouring nodes" % widest
    else:
        network, text = total, "%d RDMA port(s) of %s, %g GB/s a direction together" % (ports, host, total)
    if inside is not None and inside["busbw"] <= network:
        return inside
    return {"busbw": round(network, 1), "link": "network", "bound": text}


def share(expected, fraction=None, default=None):
    """The share of a ceiling a run must reach: ``fraction`` where one is given, else FRACTION by the link that bounds
    ``expected``, else ``default`` (a ceiling that names no link)."""
    if fraction is not None:
        return fraction
    return FRACTION.get(expected.get("link"), default) if expected.get("link") else default


def floor(expected, fraction=None):
    """The busbw a run must reach: ``expected`` (a ceiling) with its ``fraction`` (None: by the bounding link) and
    ``floor`` (None where no ceiling is known or the fraction is 0)."""
    out = dict(expected)
    fraction = share(expected, fraction)
    out["fraction"] = fraction
    out["floor"] = round(expected["busbw"] * fraction, 1) if expected.get("busbw") is not None and fraction else None
    return out


def judge(size, busbw, expected, fraction=None):
    """A run's figure (busbw at its largest size) against its ceiling -> (failure or None, note or None, ratio).

    ``fraction``: the share below which the run fails; None takes FRACTION by the bounding link, 0 judges nothing."""
    if not expected or expected.get("busbw") is None or busbw is None or size is None:
        return None, None, None
    if isinstance(busbw, float) and (math.isnan(busbw) or math.isinf(busbw)):
        return None, None, None
    ratio = busbw / expected["busbw"]
    fraction = share(expected, fraction, FRACTION["nvlink"])
    if size < MIN_SIZE:
        return None, ("the largest size, %d bytes, is below %d MiB, where latency and not bandwidth sets busbw: not "
                      "judged against what the hardware carries (%g GB/s)" % (size, MIN_SIZE // MIB, expected["busbw"])), ratio
    if fraction and ratio < fraction:
        return ("busbw %g GB/s at %d bytes is %.0f %% of what the hardware carries (%g GB/s, bound by %s); below "
                "%.0f %%" % (busbw, size, ratio * 100, expected["busbw"], expected["bound"], fraction * 100)), None, ratio
    return None, None, ratio
