# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that render Kubernetes manifests for RDMA (thin wrappers over module_utils plan/k8s.py and plan/k8s_dra.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import k8s, k8s_compute_domain, k8s_dra
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import Mapping, expect, filters, plain


def _options(name, options):
    return expect(name, options if options is not None else {}, (Mapping,), "options as a mapping")


def rdma_device_plugin_manifests(plugin, options=None):
    expect("rdma_device_plugin_manifests", plugin, (str,), "the plugin name (erdma or shared)")
    return k8s.device_plugin_manifests(plugin, _options("rdma_device_plugin_manifests", options))


def rdma_workload_manifest(kind, options=None):
    expect("rdma_workload_manifest", kind, (str,), "the workload kind (acs_deployment, pytorchjob, mpijob, tfjob)")
    return k8s_compute_domain.workload_manifest(kind, plain(_options("rdma_workload_manifest", options)))


def rdma_node_labels(record, erdma_label=True):
    expect("rdma_node_labels", record, (Mapping,), "a discovery node record (a mapping)")
    return k8s.node_labels(record, bool(erdma_label))


def rdma_resource_api(api, kubernetes_version=""):
    expect("rdma_resource_api", api, (str,), "the resource API (device_plugin or dra)")
    return k8s_dra.resource_api(api, kubernetes_version)


def rdma_dra_claims(records, options=None):
    expect("rdma_dra_claims", records, (Mapping,), "the discovery records by node (a mapping)")
    return k8s_dra.dra_claims(plain(records), plain(_options("rdma_dra_claims", options)))


def rdma_compute_domain(records, options=None):
    expect("rdma_compute_domain", records, (Mapping,), "the discovery records by node (a mapping)")
    return k8s_compute_domain.compute_domain(plain(records), plain(_options("rdma_compute_domain", options)))


class FilterModule(object):
    def filters(self):
        return filters({"rdma_device_plugin_manifests": rdma_device_plugin_manifests,
                        "rdma_workload_manifest": rdma_workload_manifest, "rdma_node_labels": rdma_node_labels,
                        "rdma_resource_api": rdma_resource_api, "rdma_dra_claims": rdma_dra_claims,
                        "rdma_compute_domain": rdma_compute_domain})
