# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The known-good state of a fleet: what each node runs (its versions), which kind of node it is (its SKU: GPU model x
NIC model), and the two ways a node falls out of it.

- **version_floor**: a version below the site's floor or the collection's security floor for its branch is critical
  (``floors``); one that differs from a site's exact pin is a warning (``pins``). The shipped floors live in
  known_good_floors.py, each with the advisory it comes from.
- **version_drift**: a node whose version differs from what most nodes of its SKU run (more than half of them, at least
  three nodes) is a warning naming the majority and how many run it. A fleet with no majority for a key says nothing:
  which one is right is the site's call (a pin says it).

Pure, standard library only: discovery's node records in, findings out (readiness.cluster_findings).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding

# What a record says, by key: the names the policy, the findings and the metrics use.
KEYS = ("driver", "cuda", "kernel", "vbios", "nic_fw", "nic_psid", "ofed")
# What a floor or a pin may name (a PSID - the NIC's board id - has no order: it drifts, it has no floor).
POLICY_KEYS = ("driver", "cuda", "kernel", "vbios", "nic_fw", "ofed")
MIN_FLEET = 3


class KnownGoodError(ValueError):
    """A known_good policy that cannot be used; the message names the entry."""


def version_key(text):
    """'570.124.06' -> (570, 124, 6); '28.39.1002' -> (28, 39, 1002); None when it holds no number."""
    parts = re.findall(r"\d+", str(text or ""))
    return tuple(int(p) for p in parts) if parts else None


def branch(driver):
    """The driver branch: '570.124.06' -> '570'."""
    key = version_key(driver)
    return str(key[0]) if key else None


def _model(text):
    return " ".join(str(text).split()) if text else None


def sku(record):
    """'NVIDIA H100 80GB HBM3 x MT_0000000838' - the GPU model and the NICs' board id (or driver), from the record."""
    gpus = ((record or {}).get("gpu") or {}).get("gpus") or []
    gpu = _model(gpus[0].get("name")) if gpus else None
    nics = sorted(set(_model(d.get("hca_type") or d.get("board_id") or d.get("driver")) for d in (record or {}).get(
        "rdma_devices") or [] if d.get("hca_type") or d.get("board_id") or d.get("driver")))
    return "%s x %s" % (gpu or "no GPU", "+".join(n for n in nics if n) or "no RDMA NIC")


def versions(record):
    """{driver, cuda, kernel, vbios, nic_fw: {device: fw}, nic_psid: {device: board id}, ofed: 'MLNX_OFED 23.07-0.5.1.2'}
    of a node record (None where the record has none)."""
    record = record or {}
    gpu = record.get("gpu") or {}
    vbios = sorted(set(g.get("vbios_version") or g.get("vbios") for g in gpu.get("gpus") or []
                       if g.get("vbios_version") or g.get("vbios")))
    devices = [d for d in record.get("rdma_devices") or [] if d.get("name")]
    fw = dict((d["name"], d.get("fw_ver")) for d in devices if d.get("fw_ver"))
    psid = dict((d["name"], d.get("board_id")) for d in devices if d.get("board_id"))
    stack = record.get("rdma_stack") or {}
    return {"driver": gpu.get("driver_version"), "cuda": gpu.get("cuda_version"), "kernel": record.get("kernel"),
            "vbios": ",".join(vbios) or None, "nic_fw": fw or None, "nic_psid": psid or None,
            "ofed": "%s %s" % (stack["stack"], stack["version"]) if stack.get("version") else None}


def check_policy(policy):
    """known_good: {sku or '*': {floors: {key: version}, pins: {key: version}}}; KnownGoodError names a bad entry."""
    if policy is None:
        return {}
    if not isinstance(policy, dict):
        raise KnownGoodError("known_good must be a mapping of SKU (or '*') to floors and pins, got %r" % (policy,))
    for name, entry in policy.items():
        if not isinstance(entry, dict) or set(entry) - {"floors", "pins"}:
            raise KnownGoodError("known_good[%s] must be a mapping with floors and pins, got %r" % (name, entry))
        for kind in ("floors", "pins"):
            given = entry.get(kind) or {}
            if not isinstance(given, dict):
                raise KnownGoodError("known_good[%s].%s must be a mapping of key to version, got %r" % (name, kind, given))
            for key, value in given.items():
                if key not in POLICY_KEYS:
                    known = ", ".join(POLICY_KEYS)
                    raise KnownGoodError("known_good[%s].%s: unknown key %r (known: %s)" % (name, kind, key, known))
                if version_key(value) is None:
                    raise KnownGoodError("known_good[%s].%s.%s must be a version, got %r" % (name, kind, key, value))
    return policy


def _values(found, key):
    """A record's values for ``key`` as [(target suffix, version)]: one per NIC for nic_fw."""
    value = found.get(key)
    if isinstance(value, dict):
        return sorted(("/" + dev, fw) for dev, fw in value.items())
    return [("", value)] if value else []


def floor_findings(records, policy=None, shipped=None):
    """version_floor findings: below a floor (the site's for the node's SKU or '*', else the shipped security floor of
    its driver branch) is critical; off a pin is a warning. ``shipped``: {branch: (version, source)}."""
    policy = check_policy(policy)
    out = []
    for host in sorted(records):
        record = records[host] or {}
        found = versions(record)
        kind = sku(record)
        entry = policy.get(kind) or policy.get("*") or {}
        floors = dict(entry.get("floors") or {})
        sources = dict((k, "the site's floor for %s" % (kind if kind in policy else "every SKU")) for k in floors)
        driver_branch = branch(found["driver"])
        if "driver" not in floors and driver_branch and driver_branch in (shipped or {}):
            floors["driver"], sources["driver"] = shipped[driver_branch]
        elif "driver" not in floors and driver_branch and shipped:
            out.append(finding("version_floor", "info", host, "driver %s: no security floor is known for branch %s "
                               "(the collection knows %s)" % (found["driver"], driver_branch, ", ".join(sorted(shipped))),
                               "check NVIDIA's security bulletins for branch %s, or set a known_good floor" % driver_branch))
        for key, floor in sorted(floors.items()):
            for suffix, value in _values(found, key):
                if version_key(value) < version_key(floor):
                    out.append(finding("version_floor", "critical", host + suffix, "%s %s is below the floor %s (%s)" % (
                        key, value, floor, sources[key]), "upgrade %s to %s or later" % (key, floor)))
        for key, pin in sorted((entry.get("pins") or {}).items()):
            for suffix, value in _values(found, key):
                if version_key(value) != version_key(pin):
                    out.append(finding("version_floor", "warning", host + suffix, "%s %s is not the pinned %s (%s)" % (
                        key, value, pin, kind), "install %s %s, or change the pin" % (key, pin)))
    return out


def drift_findings(records):
    """version_drift findings: per SKU and key, nodes off the majority (more than half, at least MIN_FLEET nodes)."""
    by_sku = {}
    for host in sorted(records):
        by_sku.setdefault(sku(records[host]), []).append(host)
    out = []
    for kind, hosts in sorted(by_sku.items()):
        if len(hosts) < MIN_FLEET:
            continue
        found = dict((h, versions(records[h])) for h in hosts)
        for key in KEYS:
            seen = {}
            for host in hosts:
                for suffix, value in _values(found[host], key):
                    seen.setdefault(suffix, {}).setdefault(value, []).append(host)
            for suffix, by_value in sorted(seen.items()):
                total = sum(len(v) for v in by_value.values())
                value, holders = max(by_value.items(), key=lambda item: (len(item[1]), str(item[0])))
                if len(holders) * 2 <= total:
                    continue   # no majority: the site says which is right (a pin)
                for other, others in sorted(by_value.items(), key=lambda item: str(item[0])):
                    if other == value:
                        continue
                    for host in others:
                        out.append(finding("version_drift", "warning", host + suffix, "%s %s differs from its SKU's "
                                           "majority %s (%d of %d %s nodes)" % (key, other, value, len(holders), total, kind),
                                           "bring it to %s %s like the others, or pin the version you want" % (key, value)))
    return out


def findings(records, policy=None, shipped=None):
    """Floors and pins first; drift only where no floor or pin finding already names that node and key: one finding
    per cause."""
    floors = floor_findings(records, policy, shipped)
    named = set((f["target"], f["detail"].split(" ", 1)[0]) for f in floors if f["severity"] != "info")
    drift = [f for f in drift_findings(records) if (f["target"], f["detail"].split(" ", 1)[0]) not in named]
    return floors + drift


def majority(records):
    """Per SKU: {sku: {nodes, versions: {key: majority value or None}}} for the readiness report's known-good section."""
    by_sku = {}
    for host in sorted(records):
        by_sku.setdefault(sku(records[host]), []).append(host)
    out = {}
    for kind, hosts in sorted(by_sku.items()):
        values = {}
        for key in KEYS:
            counted = {}
            for host in hosts:
                for suffix, value in _values(versions(records[host]), key):
                    counted[value] = counted.get(value, 0) + 1
            best = max(counted.items(), key=lambda item: (item[1], str(item[0])))[0] if counted else None
            values[key] = best
        out[kind] = {"nodes": hosts, "versions": values}
    return out
