# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Rails: the GPU -> closest NIC map (nvidia-smi topo -m) across nodes - the map most nodes agree on,
the nodes that differ (two NICs swapped named as such), NCCL_IB_HCA in rail order, and whether
NCCL_CROSS_NIC=0 is safe (every node the same and, given each NIC's leaf, every leaf carrying one rail).

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as _gpu
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


def _gpu_order(name):
    digits = name[3:] if name.startswith("GPU") else name
    return (0, int(digits)) if digits.isdigit() else (1, name)


def _gpu_nic_map(value, host):
    """(gpu -> [closest NICs], note) from parse_nvidia_topo's result, its text, or {GPU0: 'mlx5_0'}."""
    if isinstance(value, dict) and "stdout" in value and "gpu_nics" not in value:
        value = value["stdout"]
    if isinstance(value, (str, bytes)):
        try:
            value = _gpu.parse_nvidia_topo(value)
        except (_gpu.GpuParseError, _text.TextError) as exc:
            return None, "nvidia-smi topo -m output cannot be read: %s" % exc
    if not isinstance(value, dict):
        raise TopologyError("the topology of %s must be nvidia-smi topo -m output or parse_nvidia_topo's result, got %s"
                            % (host, type(value).__name__))
    raw = value.get("gpu_nics", value)
    result = {}
    for gpu_name, nics in raw.items():
        if not isinstance(gpu_name, str):
            raise TopologyError("%s: GPU key %r is not a name like GPU0" % (host, gpu_name))
        if isinstance(nics, str):
            nics = [nics]
        if nics is None:
            nics = []
        if not isinstance(nics, (list, tuple)) or not all(isinstance(n, str) for n in nics):
            raise TopologyError("%s: the NICs of %s must be names, got %r" % (host, gpu_name, nics))
        result[gpu_name] = list(nics)
    return result, None


def _describe_diff(host, diffs, majority, nic_of):
    parts = ["%s -> %s, majority %s" % (gpu_name, nic_of[gpu_name], majority[gpu_name]) for gpu_name in diffs]
    tags = []
    pairs = set()
    for a in diffs:
        for b in diffs:
            if a < b and nic_of[a] == majority[b] and nic_of[b] == majority[a]:
                pairs.add((a, b))
    for a, b in sorted(pairs, key=lambda p: (_gpu_order(p[0]), _gpu_order(p[1]))):
        tags.append("%s and %s swapped between %s and %s" % (majority[a], majority[b], a, b))
    text = "%s: %s" % (host, "; ".join(parts))
    if len(tags) == 1:
        text += " (two NICs swapped: %s)" % tags[0]
    elif tags:
        text += " (NICs swapped: %s)" % "; ".join(tags)
    return text


def _host_maps(host_topologies):
    """-> maps {host: {GPU: its one closest NIC}}, hosts with no NIC, unreadable {host: why}, ambiguous
    {host: {GPU: NICs at the same distance}}."""
    maps, no_nics, unreadable, ambiguous = {}, [], {}, {}
    for host in sorted(host_topologies, key=natural_key):
        found, problem = _gpu_nic_map(host_topologies[host], host)
        if problem:
            unreadable[host] = problem
            continue
        if not any(found.values()):
            no_nics.append(host)
            continue
        single = {}
        for gpu_name, nics in found.items():
            if len(nics) == 1:
                single[gpu_name] = nics[0]
            elif len(nics) > 1:
                ambiguous.setdefault(host, {})[gpu_name] = nics
        maps[host] = single
    return maps, no_nics, unreadable, ambiguous


def _majority(maps, warnings):
    """{GPU: the NIC most nodes give it} (a tie: the first by name, said in warnings)."""
    votes = {}
    for host, single in maps.items():
        for gpu_name, nic in single.items():
            votes.setdefault(gpu_name, {}).setdefault(nic, 0)
            votes[gpu_name][nic] += 1
    majority = {}
    for gpu_name in sorted(votes, key=_gpu_order):
        counts = votes[gpu_name]
        best = max(counts.values())
        winners = sorted((n for n in counts if counts[n] == best), key=natural_key)
        majority[gpu_name] = winners[0]
        if len(winners) > 1:
            warnings.append("%s: no majority NIC (%s each on %d node(s)); %s taken" % (
                gpu_name, ", ".join(winners), best, winners[0]))
    return majority


def _against_majority(maps, majority, ambiguous, warnings):
    """-> differing (hosts whose GPU -> NIC map is not the majority's, described), consistent hosts; a GPU with no
    NIC or several at the same distance said in warnings."""
    differing, consistent = [], []
    for host, single in maps.items():
        diffs = sorted((g for g in single if single[g] != majority.get(g)), key=_gpu_order)
        missing = sorted((g for g in majority if g not in single and g not in ambiguous.get(host, {})), key=_gpu_order)
        if diffs:
            differing.append({"host": host, "gpus": dict((g, {"nic": single[g], "majority": majority[g]}) for g in diffs),
                              "text": _describe_diff(host, diffs, majority, single)})
        elif not missing and host not in ambiguous:
            consistent.append(host)
        if missing:
            warnings.append("%s has no NIC for %s (the majority has %s)" % (
                host, ", ".join(missing), ", ".join(majority[g] for g in missing)))
    for host, gpus in ambiguous.items():
        for gpu_name, nics in sorted(gpus.items(), key=lambda i: _gpu_order(i[0])):
            warnings.append("%s: %s has %d NICs at the same distance (%s), majority %s: no single closest NIC "
                            "(a damaged topo -m capture, or a GPU without its own NIC)"
                            % (host, gpu_name, len(nics), ", ".join(nics), majority.get(gpu_name, "none")))
    return differing, consistent


def _cross_nic(maps, majority, rail_nics, odd_hosts, nic_leaves):
    """NCCL_CROSS_NIC: 0 only where every node agrees, one NIC per GPU, and each leaf carries one rail."""
    if not maps:
        return {"value": None, "reason": "no node shows a GPU with its own NIC: nothing to build rails from"}
    if odd_hosts:
        return {"value": None, "reason": "rails are not the same on every node (%s): keep NCCL's default "
                                         "NCCL_CROSS_NIC=2 until they are" % ", ".join(odd_hosts)}
    if len(rail_nics) != len(majority):
        return {"value": None, "reason": "several GPUs share a NIC (%d GPUs, %d NICs): rails are not one NIC per GPU; "
                                         "keep NCCL's default" % (len(majority), len(rail_nics))}
    if nic_leaves is None:
        return {"value": None, "reason": "rails are consistent across nodes, but which leaf each NIC is cabled to is "
                                         "not known (give nic_leaves): cannot tell whether the fabric is rail-optimized; "
                                         "keep NCCL's default"}
    return _cross_nic_from_leaves(maps, majority, rail_nics, nic_leaves)


def rail_report(host_topologies, nic_leaves=None):
    """{host: parse_nvidia_topo result, nvidia-smi topo -m text or {GPU0: 'mlx5_0', ...}} -> the rail plan.

    majority: {GPU: NIC} most nodes agree on (ties: the first NIC by name, said in warnings);
    differing: [{host, gpus: {GPU: {nic, majority}}, text}] with text such as
    "node07: GPU2 -> mlx5_3, majority mlx5_2; GPU3 -> mlx5_2, majority mlx5_3 (two NICs swapped: ...)";
    consistent / no_nics / unreadable / ambiguous hosts; nccl_ib_hca: '=mlx5_0,...' (the majority NICs in
    GPU order, '=' for exact names: mlx5_1 would also select mlx5_10); nccl_cross_nic: {value, reason}:
    0 when every node agrees and, given nic_leaves ({host: {nic: leaf}}), every leaf carries one rail;
    else None (keep NCCL's default 2) with the reason."""
    if not isinstance(host_topologies, dict) or not host_topologies:
        raise TopologyError("rail_report needs a mapping of host to its nvidia-smi topo -m (parsed or text)")
    maps, no_nics, unreadable, ambiguous = _host_maps(host_topologies)
    warnings = []
    majority = _majority(maps, warnings)
    differing, consistent = _against_majority(maps, majority, ambiguous, warnings)
    rail_nics = []
    for gpu_name in sorted(majority, key=_gpu_order):
        if majority[gpu_name] not in rail_nics:
            rail_nics.append(majority[gpu_name])
    odd_hosts = [d["host"] for d in differing] + sorted(ambiguous, key=natural_key) + sorted(unreadable, key=natural_key)
    return {"majority": majority, "rail_nics": rail_nics, "nccl_ib_hca": ("=" + ",".join(rail_nics)) if rail_nics else None,
            "nccl_cross_nic": _cross_nic(maps, majority, rail_nics, odd_hosts, nic_leaves),
            "differing": differing, "consistent": consistent, "no_nics": no_nics, "unreadable": unreadable,
            "ambiguous": ambiguous, "warnings": warnings}


def _cross_nic_from_leaves(maps, majority, rail_nics, nic_leaves):
    if not isinstance(nic_leaves, dict):
        raise TopologyError("nic_leaves must be a mapping of host to {nic: leaf}, got %s" % type(nic_leaves).__name__)
    rail_of = dict((nic, index) for index, nic in enumerate(rail_nics))
    leaf_rails, unknown = {}, []
    for host in maps:
        nics = nic_leaves.get(host)
        if not isinstance(nics, dict):
            unknown.append(host)
            continue
        for nic, rail in rail_of.items():
            leaf = nics.get(nic)
            if isinstance(leaf, dict):
                leaf = leaf.get("leaf")
            if leaf is None:
                unknown.append("%s %s" % (host, nic))
                continue
            leaf_rails.setdefault(leaf, set()).add(rail)
    if unknown:
        return {"value": None, "reason": "the leaf of %d NIC(s) is not known (%s): cannot tell whether the fabric is "
                                         "rail-optimized; keep NCCL's default" % (len(unknown), ", ".join(unknown[:5]))}
    mixed = sorted((leaf for leaf, rails in leaf_rails.items() if len(rails) > 1), key=natural_key)
    if mixed:
        leaf = mixed[0]
        return {"value": None, "reason": "leaf %s carries rails %s (NICs %s): not rail-optimized, NCCL must be free "
                                         "to cross NICs; keep NCCL's default" % (
                                             leaf, ", ".join(str(r) for r in sorted(leaf_rails[leaf])),
                                             ", ".join(rail_nics[r] for r in sorted(leaf_rails[leaf])))}
    return {"value": 0, "reason": "rail-optimized: every node uses the same NIC for each GPU and every leaf carries one "
                                  "rail (%d rails on %d leaves); NCCL_CROSS_NIC=0 keeps each ring on its rail"
                                  % (len(rail_nics), len(leaf_rails))}
