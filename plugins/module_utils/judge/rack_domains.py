# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The rack as the unit: readiness groups the nodes by NVLink domain (their GPUs' ClusterUUID and CliqueId, kept by
gpu_facts as ``gpu.fabric``) and sets each domain against the trays it should have.

- ``nvlink_domain_size`` (warning): a domain with fewer trays than expected (a tray down, out of the domain, or
  not in the inventory: jobs sized to the domain do not fit) or more (the size set is not the racks');
- ``nvlink_chassis_split`` (warning): the trays of one chassis (one rack: a GB200/GB300 tray names its rack's chassis
  in Platform Info) in two domains, or some in a domain and some in none: a tray that joined another clique, or a
  rack partitioned on purpose.

The size expected is ``gpufabric_nvlink_domain_size`` where set (0: no domain expected; 18 for an NVL72 rack or a
NVL36x2 pair, 9 for one NVL36 rack), else derived from the SKU: a GB200 or GB300 domain holds 72 GPUs, so 72 over the
tray's GPU count (NVIDIA's multi-node tuning guide: "The 72x1 Configuration ... 18x 1RU Compute trays (4 GPUs per
compute tray)", "The 36x2 Configuration ... 9x 2RU Compute trays" per rack). Pure functions, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink

# GPUs in one multi-node NVLink domain by the product name nvidia-smi prints (the first name contained decides).
DOMAIN_GPUS = (("GB300", 72), ("GB200", 72))
_SIZE_FIX = ("find the trays missing from the domain (readiness' nvlink_fabric_* findings of each, `nvidia-smi -q | "
             "grep -A4 Fabric` on it); a rack partitioned on purpose, or a smaller system (9 trays for an NVL36 rack), "
             "sets gpufabric_nvlink_domain_size")


def derived_size(gpu):
    """Trays a domain of this node's GPUs holds, from the SKU (72 GPUs over the tray's count), and why; (None, None)
    for a GPU that is in no known rack-scale system."""
    names = [g.get("name") or "" for g in (gpu or {}).get("gpus") or []]
    count = (gpu or {}).get("count") or len(names)
    for part, gpus in DOMAIN_GPUS:
        if names and part in names[0] and count and gpus % count == 0:
            return gpus // count, "%s: %d GPUs a domain, %d a tray" % (part, gpus, count)
    return None, None


def check_size(value, host=None):
    """A domain size as the user typed it -> None (not set), 0 (no domain expected) or the trays a domain holds;
    ValueError naming it otherwise."""
    if value in (None, ""):
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or not text.isascii() or int(text) > 10000:
        raise ValueError("gpufabric_nvlink_domain_size%s must be the number of trays (nodes) of one NVLink domain - "
                         "18 for a GB200/GB300 NVL72 rack, 9 for one NVL36 rack - 0 where no domain is expected, or "
                         "null to derive it from the GPUs; got %r" % ("" if host is None else " of %s" % host, value))
    return int(text)


def expected_domain(size):
    """nvlink_fabric_findings' expected.domain for a node: True where trays of a domain are expected, False where
    none is (size 0), None where not set (the judge decides by the node's Platform Info)."""
    return None if size is None else size > 0


def _expected(hosts, records, sizes):
    """(trays expected, why) for a domain's hosts: the size set for them (the largest where they differ), else the
    SKU's."""
    chosen = [sizes.get(h) for h in hosts if sizes.get(h)]
    if chosen:
        return max(chosen), "gpufabric_nvlink_domain_size"
    return derived_size(((records.get(hosts[0]) or {}).get("gpu")) or {})


def group(records, sizes):
    """{host: record} and {host: size or None} -> [{domain, cluster_uuid, clique_id, hosts, chassis, expected,
    expected_from}] (nvlink_domains' order) and nvlink_domains' result."""
    fabrics = {}
    for host in records:
        fabric = ((records[host] or {}).get("gpu") or {}).get("fabric")
        if sizes.get(host) == 0 or fabric is None:
            continue
        try:
            nvlink.record_place(fabric)
        except ValueError:
            continue      # a fabric fact that is not one (a damaged record): its node says nothing of a domain
        fabrics[host] = fabric
    domains = nvlink.nvlink_domains(fabrics)
    groups = []
    for entry in domains["domains"]:
        want, why = _expected(entry["hosts"], records, sizes)
        groups.append(dict(entry, domain="%s/%d" % (entry["cluster_uuid"], entry["clique_id"]), expected=want,
                           expected_from=why))
    return groups, domains


def _size_findings(groups):
    found = []
    for entry in groups:
        want, have = entry["expected"], len(entry["hosts"])
        if not want or want == have:
            continue
        where = "NVLink domain %s" % entry["domain"]
        chassis = " (chassis %s)" % ", ".join(entry["chassis"]) if entry["chassis"] else ""
        if have < want:
            detail = "%d of its %d trays found%s: %s; expected from %s" % (
                have, want, chassis, ", ".join(entry["hosts"]), entry["expected_from"])
        else:
            detail = "%d trays in a domain of %d%s: %s; expected from %s" % (
                have, want, chassis, ", ".join(entry["hosts"]), entry["expected_from"])
        found.append(finding("nvlink_domain_size", "warning", where, detail, _SIZE_FIX))
    return found


def _chassis_findings(domains):
    by_chassis = {}
    for host, place in domains["host_place"].items():
        if place.get("chassis_serial"):
            by_chassis.setdefault(place["chassis_serial"], []).append(host)
    found = []
    for serial in sorted(by_chassis):
        hosts = sorted(by_chassis[serial], key=natural_key)
        keys = {}
        for host in hosts:
            keys.setdefault(domains["host_domain"].get(host) or "no domain", []).append(host)
        if len(keys) < 2:
            continue
        detail = "the trays of chassis %s are in %d NVLink domains: %s" % (serial, len(keys), "; ".join(
            "%s (%s)" % (key, ", ".join(keys[key])) for key in sorted(keys)))
        found.append(finding("nvlink_chassis_split", "warning", "chassis %s" % serial, detail,
                             "one rack's trays share one NVLink domain: a tray in another clique or none did not join "
                             "the rack's fabric (its nvlink_fabric_* findings say why); a rack partitioned on purpose "
                             "sets gpufabric_nvlink_domain_size to the partition's trays"))
    return found


def domain_findings(records, sizes):
    """The domains readiness shows, and their findings: (groups, findings)."""
    groups, domains = group(records, sizes)
    return groups, _size_findings(groups) + _chassis_findings(domains)
