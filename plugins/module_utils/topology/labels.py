# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Kubernetes node labels of the topology facts: gpufabric.io/leaf (the host's leaf switch),
gpufabric.io/nvlink-domain (its NVLink domain as a block name), the same facts topology.conf holds, and
nvidia.com/gpu.clique (the domain as NVIDIA's GPU feature discovery labels it).

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


LEAF_LABEL = "gpufabric.io/leaf"
NVLINK_DOMAIN_LABEL = "gpufabric.io/nvlink-domain"
# NVIDIA's GPU feature discovery labels a node whose GPUs share one fabric with "<ClusterUUID>.<CliqueId>": the UUID in
# its canonical lower-case form, the clique in decimal (NVIDIA/k8s-device-plugin internal/lm/imex.go and
# internal/resource/nvml-device.go, GetFabricIDs, at 1b826acc); the DRA driver's ComputeDomains and Kueue/KAI
# topologies select on it.
CLIQUE_LABEL = "nvidia.com/gpu.clique"
_LABEL_VALUE_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def _label_value(value, what):
    text = str(value)
    if not _LABEL_VALUE_RE.match(text):
        raise TopologyError("%s %r cannot be a Kubernetes label value (at most 63 characters: letters, digits, '-', "
                            "'_', '.', starting and ending with a letter or digit)" % (what, text))
    return text


def clique_label(cluster_uuid, clique_id):
    """nvidia.com/gpu.clique's value for a domain: '<ClusterUUID>.<CliqueId>' as GPU feature discovery writes it."""
    return _label_value("%s.%d" % (str(cluster_uuid).lower(), int(clique_id)), "NVLink clique of %s" % cluster_uuid)


def _clique_of_key(key):
    """nvidia.com/gpu.clique's value for a {host: domain} entry that names one as node_domain does ('uuid/clique'),
    else None (a site's own names, such as rack-a)."""
    uuid, sep, clique = str(key).partition("/")
    if sep and clique.isdigit() and len(uuid) == 36 and uuid.count("-") == 4:
        return clique_label(uuid, int(clique))
    return None


def node_labels(leaves=None, domains=None):
    """{node: {label: value}}: gpufabric.io/leaf from host_leaf_map's result or {host: leaf} (no spines label: a
    real fabric's spine list runs past a label value's 63 characters); gpufabric.io/nvlink-domain from
    nvlink_domains' result (the domain's block name, block1... in the order block_topology_conf writes them) or
    {host: domain}, and nvidia.com/gpu.clique where the domain is a (ClusterUUID, CliqueId): nvlink_domains' result,
    or a {host: 'uuid/clique'} as the node record keeps it. The same facts as topology.conf."""
    labels = {}
    if leaves:
        if not isinstance(leaves, dict):
            raise TopologyError("leaves must be host_leaf_map's result or a mapping of host to leaf, got %s"
                                % type(leaves).__name__)
        hosts = leaves["hosts"] if "hosts" in leaves and isinstance(leaves["hosts"], dict) else leaves
        for host, entry in hosts.items():
            leaf = entry.get("leaf") if isinstance(entry, dict) else entry
            if leaf in (None, ""):
                continue
            labels.setdefault(str(host), {})[LEAF_LABEL] = _label_value(leaf, "leaf of %s" % host)
    if domains:
        if not isinstance(domains, dict):
            raise TopologyError("domains must be nvlink_domains' result or a mapping of host to domain, got %s"
                                % type(domains).__name__)
        if "domains" in domains:
            groups = [(d["hosts"], clique_label(d["cluster_uuid"], d["clique_id"])) for d in domains["domains"]]
        else:
            by_key = {}
            for host, key in domains.items():
                if key not in (None, ""):
                    by_key.setdefault(str(key), []).append(host)
            groups = sorted(((sorted(h, key=natural_key), _clique_of_key(k)) for k, h in by_key.items()),
                            key=lambda g: natural_key(g[0][0]))
        for number, (hosts, clique) in enumerate(groups, 1):
            for host in hosts:
                labels.setdefault(str(host), {})[NVLINK_DOMAIN_LABEL] = "block%d" % number
                if clique:
                    labels[str(host)][CLIQUE_LABEL] = clique
    return labels
