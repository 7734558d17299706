# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn gathered facts into node records and summaries (thin wrappers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import rack_domains, readiness, versions
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import report
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import TEXT, Mapping, expect, filters


def node_record(facts, rdma_devices=None, gpu_facts=None, nccl=None):
    expect("node_record", facts, (Mapping,), "the ansible_facts mapping of one host")
    if rdma_devices is not None:
        expect("node_record", rdma_devices, (list,), "rdma_devices as a list (the rdma_devices module's facts)")
    for what, value in (("gpu", gpu_facts), ("nccl", nccl)):
        if value is not None:
            expect("node_record", value, (Mapping,), "%s as a mapping" % what)
    return report.node_record(facts, rdma_devices, gpu_facts, nccl)


def _records(name, records):
    expect(name, records, (Mapping,), "a mapping of host name to node record")
    for host, record in records.items():
        if not isinstance(record, Mapping):
            expect(name, record, (Mapping,), "a node record for host %s" % host)
    return records


def node_summary(records):
    return report.node_summary(_records("node_summary", records))


def _gpu_count(value, host=None):
    """A count of GPUs as the user typed it (a number, digits, or null/'' for none), or ValueError naming it."""
    if value in (None, ""):
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or not text.isascii():
        raise ValueError("expected_gpu_count%s must be a whole number of GPUs per node (0 or more), got %r"
                         % ("" if host is None else " of %s" % host, value))
    return int(text)


def _per_host_or_one(value, check):
    """One setting for every node, or each host's own (as its inventory says), each checked."""
    if isinstance(value, Mapping):
        return dict((str(host), check(item, host)) for host, item in value.items())
    return check(value)


def readiness_report(records, expected_gpu_count=None, nccl_check=None, known_good=None, nvlink_domain_size=None):
    expected_gpu_count = _per_host_or_one(expected_gpu_count, _gpu_count)
    nvlink_domain_size = _per_host_or_one(nvlink_domain_size, rack_domains.check_size)
    if nccl_check is not None and (not isinstance(nccl_check, (list, tuple)) or
                                   not all(isinstance(run, Mapping) for run in nccl_check)):
        raise ValueError("nccl_check must be nccl_tests_judge's result (a list of judged runs), got %r" % (nccl_check,))
    return readiness.build_report(_records("readiness_report", records), expected_gpu_count,
                                  None if nccl_check is None else [dict(run) for run in nccl_check],
                                  versions.check_policy(known_good or None), nvlink_domain_size)


def readiness_markdown(report_data):
    return readiness.render_markdown(expect("readiness_markdown", report_data, (Mapping,), "the readiness_report result"))


def readiness_text(report_data):
    return readiness.render_text(expect("readiness_text", report_data, (Mapping,), "the readiness_report result"))


def peermem_plan(gpu_facts, available, ib_core_loaded, in_container, wanted="auto"):
    expect("peermem_plan", gpu_facts, (Mapping,), "the gpu_facts mapping (ansible_facts.gpu)")
    expect("peermem_plan", available, (Mapping, list), "the modules modinfo found (a list, or a mapping of name to bool)")
    if isinstance(available, list):
        available = dict((name, True) for name in available)
    return gpu.peermem_plan(gpu_facts, available, bool(ib_core_loaded), bool(in_container), wanted)


def loaded_modules(proc_modules):
    return gpu.loaded_modules(expect("loaded_modules", proc_modules, TEXT, "the text of /proc/modules"))


class FilterModule(object):
    def filters(self):
        return filters({
            "node_record": node_record,
            "node_summary": node_summary,
            "readiness_report": readiness_report,
            "readiness_markdown": readiness_markdown,
            "readiness_text": readiness_text,
            "peermem_plan": peermem_plan,
            "loaded_modules": loaded_modules,
        })
