# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that parse RDMA and GPU tools' text (thin wrappers over module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu, nccl_tests, nvidia_smi_q, perftest, rdma
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import TEXT, Mapping, expect, filters


def _text(value, name):
    if isinstance(value, Mapping) and "stdout" in value:
        value = value["stdout"]   # a registered command result works as it is
    return expect(name, value, TEXT, "the tool's text (or a registered result)")


def parse_ibv_devinfo(value):
    return rdma.parse_ibv_devinfo(_text(value, "parse_ibv_devinfo"))


def parse_nvidia_topo(value):
    return gpu.parse_nvidia_topo(_text(value, "parse_nvidia_topo"))


def parse_nccl_tests(value):
    if isinstance(value, Mapping) and "results" in value:
        return nccl_tests.parse_json(value)   # the -J document, already loaded
    return nccl_tests.parse(_text(value, "parse_nccl_tests"))


def parse_perftest(value):
    return perftest.parse(_text(value, "parse_perftest"))


def parse_nvidia_smi_q(value, host="node"):
    expect("parse_nvidia_smi_q", host, TEXT, "the host name to name in findings")
    result = nvidia_smi_q.parse_nvidia_smi_q(_text(value, "parse_nvidia_smi_q"))
    result["memory"] = health.gpu_memory_health_text(result)
    result["findings"] = health.gpu_memory_findings(host, result["memory"])
    return result


def nvcc_gencode(value):
    if isinstance(value, Mapping) and "stdout_lines" in value:
        value = value["stdout_lines"]
    expect("nvcc_gencode", value, (list, tuple) + TEXT, "compute_cap lines (a list or the text)")
    if isinstance(value, (list, tuple)):
        for index, line in enumerate(value):
            expect("nvcc_gencode", line, TEXT, "compute_cap lines; line %d" % index)
    return gpu.nvcc_gencode(value)


class FilterModule(object):
    def filters(self):
        return filters({"parse_ibv_devinfo": parse_ibv_devinfo, "parse_nvidia_topo": parse_nvidia_topo,
                        "parse_nccl_tests": parse_nccl_tests, "parse_perftest": parse_perftest,
                        "parse_nvidia_smi_q": parse_nvidia_smi_q, "nvcc_gencode": nvcc_gencode})
