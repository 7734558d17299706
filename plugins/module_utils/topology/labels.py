# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes node labels of the topology facts: gpufabric.io/leaf (the host's leaf switch) and
gpufabric.io/nvlink-domain (its NVLink domain as a block name), the same facts topology.conf holds.

Pure functions, standard library only, Python 3.8."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


LEAF_LABEL = "gpufabric.io/leaf"
NVLINK_DOMAIN_LABEL = "gpufabric.io/nvlink-domain"
_LABEL_VALUE_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def _label_value(value, what):
    text = str(value)
    if not _LABEL_VALUE_RE.match(text):
        raise TopologyError("%s %r cannot be a Kubernetes label value (at most 63 characters: letters, digits, '-', "
                            "'_', '.', starting and ending with a letter or digit)" % (what, text))
    return text


def node_labels(leaves=None, domains=None):
    """{node: {label: value}}: gpufabric.io/leaf from host_leaf_map's result or {host: leaf} (no spines label: a
    real fabric's spine list runs past a label value's 63 characters); gpufabric.io/nvlink-domain from
    nvlink_domains' result (the domain's block name, block1... in the order block_topology_conf writes them) or
    {host: domain}. The same facts as topology.conf."""
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
            groups = [d["hosts"] for d in domains["domains"]]
        else:
            by_key = {}
            for host, key in domains.items():
                if key not in (None, ""):
                    by_key.setdefault(str(key), []).append(host)
            groups = sorted((sorted(h, key=natural_key) for h in by_key.values()), key=lambda h: natural_key(h[0]))
        for number, hosts in enumerate(groups, 1):
            for host in hosts:
                labels.setdefault(str(host), {})[NVLINK_DOMAIN_LABEL] = "block%d" % number
    return labels
