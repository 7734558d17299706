# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that judge what the RDMA/NVLink tools and NCCL_DEBUG=INFO logs say (thin wrappers over
module_utils/judge/ - gid_table.py, nvlink_links.py, nvlink_fabric.py, imex.py, port_traffic.py, nccl_path.py - and
the RoCE v2 GID index of parse/show_gids.py). Each takes a reader's result or the tool's text; the ``parse_*``
filters that read the tools are in parsers.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import gid_table, imex, nccl_path, nvlink_fabric, nvlink_links, port_traffic
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug, nvidia_imex, nvidia_smi_fabric, nvlink, show_gids
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    TEXT, Mapping, expect, expect_list_of_mappings, fail, filters, is_tool_text, loaded_or_text, number_or_none, tool_text)


def _gids(name, value):
    if is_tool_text(value):
        return show_gids.parse_show_gids(tool_text(name, value))
    return expect_list_of_mappings(name, value, "parse_show_gids' list (or show_gids' text)")


def roce_v2_gid_index(value, netdev=None, ipv4=None, device=None):
    for option, given in (("netdev", netdev), ("ipv4", ipv4), ("device", device)):
        if given is not None:
            expect("roce_v2_gid_index", given, (str,), "%s as a string" % option)
    return show_gids.roce_v2_gid_index(_gids("roce_v2_gid_index", value), netdev or None, ipv4 or None, device or None)


def show_gids_cross_check(value, rdma_devices):
    expect_list_of_mappings("show_gids_cross_check", rdma_devices, "the rdma_devices fact as the second argument")
    return gid_table.cross_check_gids(_gids("show_gids_cross_check", value), rdma_devices)


def _nvlink(name, value, parser):
    if is_tool_text(value):
        return parser(tool_text(name, value))
    return expect_list_of_mappings(name, value, "a parsed nvidia-smi nvlink list (or its text)")


def nvlink_findings(status, errors_after=None, errors_before=None):
    found = nvlink_links.nvlink_down_findings(_nvlink("nvlink_findings", status, nvlink.parse_nvlink_status))
    if errors_after is not None:
        after = _nvlink("nvlink_findings", errors_after, nvlink.parse_nvlink_errors)
        before = None if errors_before is None else _nvlink("nvlink_findings", errors_before, nvlink.parse_nvlink_errors)
        found.extend(nvlink_links.nvlink_error_findings(before, after))
    return found


def nvlink_fabric_findings(value, expected=None, status=None, errors_after=None, errors_before=None):
    if is_tool_text(value):
        value = nvidia_smi_fabric.parse_nvidia_smi_fabric(tool_text("nvlink_fabric_findings", value))
    expect("nvlink_fabric_findings", value, (Mapping,), "parse_nvidia_smi_fabric's result or nvidia-smi -q (-x) output")
    if expected is not None:
        expect("nvlink_fabric_findings", expected, (Mapping,), "expected as a mapping (domain, links, link_gbps)")
    status = None if status is None else _nvlink("nvlink_fabric_findings", status, nvlink.parse_nvlink_status)
    after = None if errors_after is None else _nvlink("nvlink_fabric_findings", errors_after, nvlink.parse_nvlink_errors)
    before = None if errors_before is None else _nvlink("nvlink_fabric_findings", errors_before, nvlink.parse_nvlink_errors)
    if before is not None and after is None:
        fail("nvlink_fabric_findings", "errors_before needs errors_after, the later nvidia-smi nvlink -e reading")
    return nvlink_fabric.nvlink_fabric_findings(dict(value), dict(expected) if expected is not None else None,
                                                status=status, errors_before=before, errors_after=after)


def imex_findings(value, expected_nodes=None):
    if not (isinstance(value, Mapping) and isinstance(value.get("nodes"), list) and "domain_state" in value):
        value = nvidia_imex.parse_nvidia_imex_ctl(loaded_or_text("imex_findings", value, "nodes"))   # the output, not yet read
    if isinstance(expected_nodes, TEXT):
        fail("imex_findings", "expected_nodes must be a list of the domain's node names or addresses, or their number, "
             "got the string %r (a list such as [%r] is read)" % (expected_nodes[:60], expected_nodes[:60]))
    return imex.imex_findings(value, list(expected_nodes) if isinstance(expected_nodes, (list, tuple)) else expected_nodes)


def port_counter_deltas(before, after, gpu_for_port=None, low_fraction=0.1):
    expect("port_counter_deltas", before, (Mapping,), "the counters before the run ({port: {counter: value}})")
    expect("port_counter_deltas", after, (Mapping,), "the counters after the run as the second argument")
    if gpu_for_port is not None:
        expect("port_counter_deltas", gpu_for_port, (Mapping,), "gpu_for_port as {port: GPU}")
    fraction = number_or_none("port_counter_deltas", "low_fraction", low_fraction)
    if fraction is None or not 0 <= fraction <= 1:
        fail("port_counter_deltas", "low_fraction must be a number between 0 and 1, got %r" % (low_fraction,))
    return port_traffic.port_counter_deltas(dict(before), dict(after), dict(gpu_for_port) if gpu_for_port else None, fraction)


def judge_nccl_debug(value, expected=None):
    if is_tool_text(value):
        value = nccl_debug.parse_nccl_debug(tool_text("judge_nccl_debug", value))
    expect("judge_nccl_debug", value, (Mapping,), "parse_nccl_debug's result or the log's text")
    if expected is not None:
        expect("judge_nccl_debug", expected, (Mapping,), "expected as a mapping (%s)" % ", ".join(nccl_path.EXPECTED_KEYS))
    return nccl_path.judge_nccl_debug(dict(value), dict(expected) if expected is not None else None)


class FilterModule(object):
    def filters(self):
        return filters({
            "roce_v2_gid_index": roce_v2_gid_index, "show_gids_cross_check": show_gids_cross_check,
            "nvlink_findings": nvlink_findings, "nvlink_fabric_findings": nvlink_fabric_findings,
            "imex_findings": imex_findings, "port_counter_deltas": port_counter_deltas, "judge_nccl_debug": judge_nccl_debug,
        })
