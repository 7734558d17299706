# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The rack as the decider's unit: an NVL72 rack (GB200, GB300: 18 compute trays joined by NVLink switch trays into
one NVLink domain, run by IMEX across the trays) is decided, limited and returned as one.

- **Which rack a node is in.** The node says it: its report carries ``domain`` (protocol.check_report; what
  ``nvidia-smi -q`` prints under Platform Info and Fabric, topology/nvlink.node_domain) and the rack is its chassis
  serial number - a fact of the hardware that stays when the fabric breaks (a tray stuck in registration reports an
  all-zero ClusterUUID, never another chassis) - or, on a tray that names no chassis, its NVLink domain (cluster
  UUID/clique). The decider remembers what each node said (the ledger's ``racks``, its shape checked by
  ledger.check_ledger), so a tray whose report lacks it is still known. ``rack.racks`` in the policy names racks the
  admin knows (from Slurm's topology/block BlockName lines, or discovery's records): it decides membership, and the
  decider says where the nodes' reports disagree with it (two chassis in one configured rack). A rack of two chassis
  joined into one domain (NVL36x2) is one rack only when ``rack.racks`` says so.
- **When the rack decides.** When ``min_nodes`` trays of one rack report a finding of ``checks`` (the NVLink fabric and
  IMEX checks) that the policy drains for within ``window`` seconds, the rack's nodes drain together, as one action
  against the rate limit and the circuit breaker; where every such tray's findings agree, the decision names the
  switch side they point to (switch_side).
- **When the rack returns.** Its nodes resume together, once every one of them may (a fresh, complete report with
  the findings recorded at the drain cleared, within ``window``) and holds a certificate that passes the policy's
  checks and ``certify`` (IMEX up across the domain, an NVLink-domain nccl-tests run that meets its expectation).

Pure, standard library only; remediation_racks.py applies it in the plan.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import settings as fields

# The findings that can make a rack decision: the NVLink fabric (judge/nvlink_fabric.py) and IMEX (judge/imex.py).
RACK_CHECKS = ("nvlink_fabric_registration", "nvlink_fabric_domain", "nvlink_fabric_clique", "nvlink_fabric_health",
               "nvlink_links", "nvlink_errors", "imex_node", "imex_connection", "imex_domain")
# What a rack's return needs besides the policy's certification checks (certificate.CHECKS).
RACK_CERTIFY = ("imex", "nvlink_domain")
# window: the health monitor's interval (300 s by default): unsynchronised timers see a switch tray's failure within it.
DEFAULTS = {"enabled": True, "min_nodes": 2, "window": 300, "checks": list(RACK_CHECKS), "certify": list(RACK_CERTIFY),
            "racks": {}}
# The key a rack drain records for each of its nodes, beside the node's own findings ("nvlink_rack|rack <id>"); its
# drain reason names it first ("gpufabric: nvlink_rack rack <id> ..."), so the rack is known from the scheduler too.
RACK_FINDING = "nvlink_rack"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,79}$")
_CHECK = re.compile(r"^[a-z0-9_]{1,64}$")


class RackError(ValueError):
    """A rack setting or a rack record that cannot be used; the message names the value."""


def _names(value, where):
    if not isinstance(value, list) or not all(isinstance(v, str) and _NAME.match(v) for v in value) \
            or len(set(value)) != len(value):
        raise RackError("%s must be a list of distinct plain names, got %r" % (where, value))
    return list(value)


def check_settings(given, certify_checks):
    """The policy's ``rack`` section over DEFAULTS: {enabled, min_nodes, window, checks, certify, racks}.
    ``certify_checks``: the certificate's check names (certificate.CHECKS)."""
    merged = fields.section(given, DEFAULTS, "remediation rack", RackError)
    if not isinstance(merged["enabled"], bool):
        raise RackError("remediation rack enabled must be true or false, got %r" % (merged["enabled"],))
    nodes = merged["min_nodes"]
    if isinstance(nodes, bool) or not isinstance(nodes, int) or not 2 <= nodes <= 1000:
        raise RackError("remediation rack min_nodes must be a whole number from 2 to 1000 (one tray alone is decided as "
                        "a node), got %r" % (nodes,))
    window = merged["window"]
    if isinstance(window, bool) or not isinstance(window, int) or not 10 <= window <= 86400:
        raise RackError("remediation rack window must be whole seconds from 10 to 86400, got %r" % (window,))
    checks = merged["checks"]
    if not isinstance(checks, list) or not checks or not all(isinstance(c, str) and _CHECK.match(c) for c in checks):
        raise RackError("remediation rack checks must be a list of check names (like nvlink_fabric_health), got %r" % (checks,))
    certify = merged["certify"]
    if not isinstance(certify, list) or not all(c in certify_checks for c in certify) or len(set(certify)) != len(certify):
        raise RackError("remediation rack certify must be a list of distinct names from %s, got %r"
                        % (", ".join(certify_checks), certify))
    racks = merged["racks"]
    if not isinstance(racks, dict) or not all(isinstance(k, str) and _NAME.match(k) for k in racks):
        raise RackError("remediation rack racks must map rack names (plain names) to their nodes, got %r" % (racks,))
    seen = {}
    for name in sorted(racks):
        for node in _names(racks[name], "remediation rack racks %s" % name):
            if node in seen:
                raise RackError("remediation rack racks: %s is in both %s and %s" % (node, seen[node], name))
            seen[node] = name
    return dict(merged, checks=list(checks), certify=list(certify), racks=dict((k, list(v)) for k, v in racks.items()))


def rack_of_keys(keys):
    """The rack a drain's finding keys (or the keys its reason names) name, or None."""
    for key in keys or []:
        check, _sep, target = key.partition("|")
        if check == RACK_FINDING and target.startswith("rack "):
            return target[len("rack "):]
    return None


def rack_id(domain):
    """The rack a report's ``domain`` names: its chassis serial, else 'uuid/clique' of its NVLink domain, else None
    (no chassis and no domain: an HGX board, or a tray out of its domain that names no chassis)."""
    if not domain:
        return None
    if domain.get("chassis_serial"):
        return domain["chassis_serial"]
    if domain.get("cluster_uuid") and domain.get("clique") is not None:
        return "%s/%s" % (domain["cluster_uuid"], domain["clique"])
    return None


# What one finding says about the side of the fabric it points to: (pattern on its detail, the sign). The details are
# judge/nvlink_fabric.py's and judge/imex.py's own words.
_SIGNS = {
    "nvlink_fabric_registration": (re.compile(r"(?:Status (?P<status>[^(]+?) \(|registration is (?P<state>[^,]+),)"),
                                   "registration {status}{state}"),
    "nvlink_fabric_health": (re.compile(r"(?:Summary is (?P<summary>[A-Za-z ]+?)(?: \(|$)|health (?P<row>.+?) \(no Summary)"),
                             "fabric health {summary}{row}"),
    "nvlink_links": (re.compile(r"\((?P<links>links? [0-9, -]+) inactive"), "NVLink {links} down"),
}


def signs(findings):
    """The sorted signs of one tray's fabric findings: 'registration Insufficient Resources', 'fabric health Unhealthy',
    'NVLink links 4-5 down', or the check's name where its detail says no more."""
    out = set()
    for found in findings:
        pattern, template = _SIGNS.get(found.get("check"), (None, None))
        match = pattern.search(found.get("detail") or "") if pattern else None
        if match:
            out.add(template.format(**dict((k, v or "") for k, v in match.groupdict().items())).strip())
        else:
            out.add(found.get("check") or "?")
    return sorted(out)


def _side(sign):
    if sign.startswith("registration"):
        return ("the NVLink fabric manager (NVLink Management on the switch trays: nmx-c, NMX-M) refused or did not "
                "finish every tray's registration: %s" % sign)
    if sign.startswith("NVLink "):
        return "the NVSwitch tray (or the cable cartridge) every tray's %s reaches" % sign[len("NVLink "):]
    if sign.startswith("imex"):
        return "IMEX, not the switches: every tray reports %s" % sign
    return "the NVLink switch trays or their fabric manager: every tray reports %s" % sign


def switch_side(signs_by_node):
    """Where every faulted tray's findings agree, the side they point to, for a person ('the NVSwitch tray ... links 4-5
    down reaches (all 4 trays)'), else None. Only a sign every tray shares counts: one tray's own fault names nothing."""
    shared = None
    for tray_signs in signs_by_node.values():
        shared = set(tray_signs) if shared is None else shared & set(tray_signs)
    if not shared:
        return None
    # The most specific sign first: a link, then a registration status, then a health summary, then a check's name.
    order = ("NVLink ", "registration", "fabric health", "imex")
    sign = sorted(shared, key=lambda s: (next((i for i, p in enumerate(order) if s.startswith(p)), len(order)), s))[0]
    return "%s (all %d trays)" % (_side(sign), len(signs_by_node))
