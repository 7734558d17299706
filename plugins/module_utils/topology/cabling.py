# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Cabling: where each host NIC is seen on the fabric (ibnetdiscover, LLDP), checked against the
plan - a leaf per host or per NIC, or rail k of every host on leaf k - naming every port on the wrong leaf.

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.ibnetdiscover import as_parsed
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.tree import switch_names
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.host_leaf import lldp_host_leaves, user_leaf_map
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


def observed_attachment(ibnetdiscover=None, lldp=None, lldp_interfaces=None):
    """{host: {nic: {leaf, port, source}}} from ibnetdiscover (nic = the device in the NodeDescription,
    'node01 mlx5_0' -> mlx5_0; leaf = the switch's Slurm name as fabric_tree gives it) and from LLDP
    (nic = the local interface; leaf = the neighbour's SysName). ibnetdiscover wins where both know a NIC."""
    result = {}
    if ibnetdiscover is not None:
        parsed = as_parsed(ibnetdiscover)
        names = switch_names(parsed)
        for host, entry in parsed["hosts"].items():
            for hca in entry["hcas"]:
                nic = hca["device"] or hca["guid"]
                if hca["port"] != 1:
                    nic = "%s:%d" % (nic, hca["port"])
                result.setdefault(host, {})[nic] = {"leaf": names.get(hca["switch"], hca["switch"]),
                                                    "port": hca["switch_port"], "source": "ibnetdiscover"}
    if lldp is not None:
        for host, entry in lldp_host_leaves(lldp, lldp_interfaces).items():
            for nic, where in entry["nics"].items():
                result.setdefault(host, {}).setdefault(nic, {"leaf": where["leaf"], "port": where["port"], "source": "lldp"})
    return dict(sorted(result.items(), key=lambda i: natural_key(i[0])))


def _leaf_and_port(value):
    if isinstance(value, dict):
        return value.get("leaf"), value.get("port")
    return value, None


def _plan_from_expected(expected, observed):
    """{host: {nic: leaf}} from expected ({host: leaf}: every NIC the host shows, or {host: {nic: leaf}})."""
    if isinstance(expected, str):
        expected = user_leaf_map(expected)
    if not isinstance(expected, dict):
        raise TopologyError("expected must be a mapping of host to leaf or to {nic: leaf}, got %s" % type(expected).__name__)
    plan = {}
    for host, value in expected.items():
        if isinstance(value, str):
            plan[host] = dict((nic, value) for nic in observed.get(host, {})) or {None: value}
        elif isinstance(value, dict):
            plan[host] = dict((nic, _leaf_and_port(leaf)[0]) for nic, leaf in value.items())
        else:
            raise TopologyError("expected[%s] must be a leaf name or {nic: leaf}, got %r" % (host, value))
    return plan


def _majority_rail_leaves(rail_nics, observed, warnings):
    """[leaf of rail 0, ...]: the leaf most hosts put rail k on (None where no leaf holds most), said in warnings."""
    rail_leaves = []
    for index, nic in enumerate(rail_nics):
        counts = {}
        for host, nics in observed.items():
            leaf = _leaf_and_port(nics.get(nic))[0] if nic in nics else None
            if leaf:
                counts[leaf] = counts.get(leaf, 0) + 1
        if not counts:
            rail_leaves.append(None)
            warnings.append("rail %d (%s): no host shows where it is cabled" % (index, nic))
            continue
        best = max(counts.values())
        winners = sorted((l for l in counts if counts[l] == best), key=natural_key)
        rail_leaves.append(winners[0] if len(winners) == 1 else None)
        if len(winners) > 1:
            warnings.append("rail %d (%s): no leaf holds most hosts (%s with %d each): give rail_leaves"
                            % (index, nic, ", ".join(winners), best))
        else:
            warnings.append("rail %d (%s): planned on %s, the leaf %d of %d host(s) use" % (
                index, nic, winners[0], best, sum(counts.values())))
    return rail_leaves


def _plan_from_rails(rail_nics, rail_leaves, observed, warnings):
    """{host: {nic: leaf}} from rail k of every host on leaf k (rail_leaves a list, or one per host)."""
    if not isinstance(rail_nics, (list, tuple)) or not all(isinstance(n, str) for n in rail_nics):
        raise TopologyError("rail_nics must be a list of NIC names in rail order, got %r" % (rail_nics,))
    rail_nics = [n.lstrip("=") for n in rail_nics]
    if rail_leaves is None:
        rail_leaves = _majority_rail_leaves(rail_nics, observed, warnings)
    plan = {}
    for host in observed:
        leaves = rail_leaves.get(host) if isinstance(rail_leaves, dict) else rail_leaves
        if leaves is None:
            continue
        if not isinstance(leaves, (list, tuple)) or len(leaves) != len(rail_nics):
            raise TopologyError("rail_leaves%s must list one leaf per rail (%d), got %r" % (
                "[%s]" % host if isinstance(rail_leaves, dict) else "", len(rail_nics), leaves))
        plan[host] = dict((nic, leaf) for nic, leaf in zip(rail_nics, leaves) if leaf)
    return plan


def cabling_check(observed, expected=None, rail_nics=None, rail_leaves=None):
    """Every host NIC cabled to another leaf than planned.

    observed: observed_attachment's result ({host: {nic: leaf or {leaf, port}}}).
    The plan, one of: expected = {host: {nic: leaf}} or {host: leaf} (every NIC of the host on that leaf);
    or rail_nics = NICs in rail order (rail_report's rail_nics) with rail_leaves = [leaf of rail 0, ...]
    (or {host: [leaf per rail]} for several units), "rail k of every host on leaf k"; with rail_nics and no
    rail_leaves, the leaf most hosts put rail k on is taken as the plan (said in warnings).
    Returns {miscabled: [{host, nic, port, observed, expected}], missing: [{host, nic, expected}],
    checked, correct, messages, warnings}."""
    if not isinstance(observed, dict):
        raise TopologyError("observed must be a mapping of host to {nic: leaf}, got %s" % type(observed).__name__)
    warnings = []
    if expected is not None:
        plan = _plan_from_expected(expected, observed)
    elif rail_nics:
        plan = _plan_from_rails(rail_nics, rail_leaves, observed, warnings)
    else:
        raise TopologyError("cabling_check needs a plan: expected ({host: leaf} or {host: {nic: leaf}}) or rail_nics")
    miscabled, missing, messages = [], [], []
    checked = correct = 0
    for host in sorted(plan, key=natural_key):
        seen = observed.get(host)
        for nic in sorted(plan[host], key=lambda n: natural_key(n or "")):
            want = plan[host][nic]
            if nic is None or seen is None or nic not in seen:
                missing.append({"host": host, "nic": nic, "expected": want})
                messages.append("%s %s: not seen on the fabric, expected on %s" % (host, nic or "(any NIC)", want))
                continue
            checked += 1
            got, port = _leaf_and_port(seen[nic])
            if got == want:
                correct += 1
                continue
            miscabled.append({"host": host, "nic": nic, "port": port, "observed": got, "expected": want})
            messages.append("%s %s%s: on %s, expected on %s" % (host, nic, " (switch port %s)" % port if port is not None else "",
                                                                got, want))
    return {"miscabled": miscabled, "missing": missing, "checked": checked, "correct": correct,
            "messages": messages, "warnings": warnings}
