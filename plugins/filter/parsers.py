# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that parse RDMA and GPU tools' text (thin wrappers over module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types
from ansible_collections.gpufabric.rdma.plugins.module_utils import gpu, nccl_tests, perftest, rdma


def _text(value, name):
    if isinstance(value, dict) and "stdout" in value:
        value = value["stdout"]   # a registered command result works as it is
    if not isinstance(value, string_types):
        raise AnsibleFilterError("gpufabric.rdma.%s expects the tool's text (or a registered result), got %s"
                                 % (name, type(value).__name__))
    return value


def _parse(parser, value, name):
    """Run a module_utils parser on the tool's text; its ValueError becomes a filter error naming the filter."""
    try:
        return parser(_text(value, name))
    except ValueError as exc:   # the parsers' own errors derive from ValueError
        raise AnsibleFilterError("gpufabric.rdma.%s: %s" % (name, exc))


def parse_ibv_devinfo(value):
    return _parse(rdma.parse_ibv_devinfo, value, "parse_ibv_devinfo")


def parse_nvidia_topo(value):
    return _parse(gpu.parse_nvidia_topo, value, "parse_nvidia_topo")


def parse_nccl_tests(value):
    if isinstance(value, dict) and "results" in value:
        return nccl_tests.parse_json(value)   # the -J document, already loaded
    return _parse(nccl_tests.parse, value, "parse_nccl_tests")


def parse_perftest(value):
    return _parse(perftest.parse, value, "parse_perftest")


def nvcc_gencode(value):
    if isinstance(value, dict) and "stdout_lines" in value:
        value = value["stdout_lines"]
    if not isinstance(value, (list, str)):
        raise AnsibleFilterError("gpufabric.rdma.nvcc_gencode expects compute_cap lines, got %s" % type(value).__name__)
    return gpu.nvcc_gencode(value)


class FilterModule(object):
    def filters(self):
        return {"parse_ibv_devinfo": parse_ibv_devinfo, "parse_nvidia_topo": parse_nvidia_topo,
                "parse_nccl_tests": parse_nccl_tests, "parse_perftest": parse_perftest,
                "nvcc_gencode": nvcc_gencode}
