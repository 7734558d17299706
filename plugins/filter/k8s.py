# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that render Kubernetes manifests for RDMA (thin wrappers over module_utils.k8s)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.rdma.plugins.module_utils import k8s


def rdma_device_plugin_manifests(plugin, options=None):
    try:
        return k8s.device_plugin_manifests(plugin, options)
    except k8s.ManifestError as exc:
        raise AnsibleFilterError("gpufabric.rdma.rdma_device_plugin_manifests: %s" % exc)


def rdma_workload_manifest(kind, options=None):
    try:
        return k8s.workload_manifest(kind, options or {})
    except k8s.ManifestError as exc:
        raise AnsibleFilterError("gpufabric.rdma.rdma_workload_manifest: %s" % exc)


def rdma_node_labels(record, erdma_label=True):
    if not isinstance(record, dict):
        raise AnsibleFilterError("gpufabric.rdma.rdma_node_labels expects a discovery node record (a dict)")
    return k8s.node_labels(record, erdma_label)


class FilterModule(object):
    def filters(self):
        return {"rdma_device_plugin_manifests": rdma_device_plugin_manifests,
                "rdma_workload_manifest": rdma_workload_manifest, "rdma_node_labels": rdma_node_labels}
