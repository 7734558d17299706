# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the RDMA/NVLink tools operators run by hand and NCCL_DEBUG=INFO logs (thin wrappers
over the readers in module_utils/parse/ - ibstat.py, ibdev2netdev.py, show_gids.py, rdma_link.py, eadm.py,
nvlink.py, nccl_debug.py, dcgm.py, mlxconfig.py, mlxlink.py, iblinkinfo.py, nvidia_imex.py - and module_utils/judge/port_traffic.py,
module_utils/judge/nccl_path.py, module_utils/judge/link_health.py, module_utils/judge/nvlink_fabric.py and
module_utils/judge/imex.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import gid_table, imex, link_health, nccl_path, nvlink_fabric, nvlink_links
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import port_traffic
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import (
    dcgm, eadm, ibdev2netdev, iblinkinfo, ibstat, mlxconfig, mlxlink, nccl_debug, nccl_ras, nvidia_imex, nvidia_smi_fabric,
    nvlink, rdma_link, show_gids)
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import cabling
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    TEXT, Mapping, expect, expect_list_of_mappings, fail, filters, number_or_none)


def _text(value, name):
    if isinstance(value, Mapping) and "stdout" in value:
        value = value["stdout"]   # a registered command result works as it is
    return expect(name, value, TEXT, "the tool's text (or a registered result)")


def parse_ibstat(value):
    return ibstat.parse_ibstat(_text(value, "parse_ibstat"))


def parse_ibstatus(value):
    return ibstat.parse_ibstatus(_text(value, "parse_ibstatus"))


def parse_ibdev2netdev(value):
    return ibdev2netdev.parse_ibdev2netdev(_text(value, "parse_ibdev2netdev"))


def parse_show_gids(value):
    return show_gids.parse_show_gids(_text(value, "parse_show_gids"))


def parse_rdma_link(value):
    return rdma_link.parse_rdma_link(_text(value, "parse_rdma_link"))


def parse_eadm_stat(value):
    return eadm.parse_eadm_stat(_text(value, "parse_eadm_stat"))


def parse_nvlink_status(value):
    return nvlink.parse_nvlink_status(_text(value, "parse_nvlink_status"))


def parse_nvlink_errors(value):
    return nvlink.parse_nvlink_errors(_text(value, "parse_nvlink_errors"))


def parse_mlxconfig(value):
    return mlxconfig.parse_mlxconfig(_text(value, "parse_mlxconfig"))


def parse_mlxlink(value, host="node", device="", max_effective_ber=link_health.MAX_EFFECTIVE_BER,
                  max_raw_ber=link_health.MAX_RAW_BER, fabric=None):
    expect("parse_mlxlink", host, TEXT, "the host name to name in findings")
    expect("parse_mlxlink", device, TEXT, "the device the text is of (for a text without its command line)")
    limits = [number_or_none("parse_mlxlink", name, value) for name, value in (
        ("max_effective_ber", max_effective_ber), ("max_raw_ber", max_raw_ber))]
    if None in limits or min(limits) <= 0:
        fail("parse_mlxlink", "max_effective_ber and max_raw_ber must be positive numbers, got %r and %r"
             % (max_effective_ber, max_raw_ber))
    result = mlxlink.parse_mlxlink(_text(value, "parse_mlxlink"))
    if device and len(result["devices"]) == 1 and not result["devices"][0]["device"]:
        result["devices"][0]["device"] = device
    result["findings"] = link_health.mlxlink_findings(host, result["devices"], *limits)
    if fabric:
        result["findings"] = link_health.with_switch_ports(result["findings"], cabling.observed_attachment(ibnetdiscover=fabric))
    return result


def parse_iblinkinfo(value):
    result = iblinkinfo.parse_iblinkinfo(_text(value, "parse_iblinkinfo"))
    result["findings"] = link_health.iblinkinfo_findings(result["ports"])
    return result


def parse_nccl_ras(value):
    if isinstance(value, Mapping) and "text" in value and "stdout" not in value:
        value = value["text"]     # the nccl_ras module's result works as it is
    return nccl_ras.parse_nccl_ras(_text(value, "parse_nccl_ras"))


def parse_dcgmi_diag(value):
    return dcgm.parse_dcgmi_diag(_text(value, "parse_dcgmi_diag"))


def parse_nccl_debug(value):
    return nccl_debug.parse_nccl_debug(_text(value, "parse_nccl_debug"))


def _gids(name, value):
    if isinstance(value, TEXT) or (isinstance(value, Mapping) and "stdout" in value):
        return show_gids.parse_show_gids(_text(value, name))
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
    if isinstance(value, TEXT) or (isinstance(value, Mapping) and "stdout" in value):
        return parser(_text(value, name))
    return expect_list_of_mappings(name, value, "a parsed nvidia-smi nvlink list (or its text)")


def nvlink_findings(status, errors_after=None, errors_before=None):
    found = nvlink_links.nvlink_down_findings(_nvlink("nvlink_findings", status, nvlink.parse_nvlink_status))
    if errors_after is not None:
        after = _nvlink("nvlink_findings", errors_after, nvlink.parse_nvlink_errors)
        before = None if errors_before is None else _nvlink("nvlink_findings", errors_before, nvlink.parse_nvlink_errors)
        found.extend(nvlink_links.nvlink_error_findings(before, after))
    return found


def nvlink_fabric_findings(value, expected=None, status=None, errors_after=None, errors_before=None):
    if isinstance(value, TEXT) or (isinstance(value, Mapping) and "stdout" in value):
        value = nvidia_smi_fabric.parse_nvidia_smi_fabric(_text(value, "nvlink_fabric_findings"))
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


def _imex(name, value):
    if isinstance(value, Mapping) and "nodes" in value and "stdout" not in value:
        return dict(value)     # -N -j output already loaded by from_json, or parse_nvidia_imex_ctl's result
    return _text(value, name)


def parse_nvidia_imex_ctl(value):
    return nvidia_imex.parse_nvidia_imex_ctl(_imex("parse_nvidia_imex_ctl", value))


def imex_findings(value, expected_nodes=None):
    if not (isinstance(value, Mapping) and isinstance(value.get("nodes"), list) and "domain_state" in value):
        value = nvidia_imex.parse_nvidia_imex_ctl(_imex("imex_findings", value))   # the output, not yet read
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
    if isinstance(value, TEXT) or (isinstance(value, Mapping) and "stdout" in value):
        value = nccl_debug.parse_nccl_debug(_text(value, "judge_nccl_debug"))
    expect("judge_nccl_debug", value, (Mapping,), "parse_nccl_debug's result or the log's text")
    if expected is not None:
        expect("judge_nccl_debug", expected, (Mapping,), "expected as a mapping (rdma, ib_hca, gdr, p2p)")
    return nccl_path.judge_nccl_debug(dict(value), dict(expected) if expected is not None else None)


class FilterModule(object):
    def filters(self):
        return filters({
            "parse_ibstat": parse_ibstat, "parse_ibstatus": parse_ibstatus, "parse_ibdev2netdev": parse_ibdev2netdev,
            "parse_show_gids": parse_show_gids, "parse_rdma_link": parse_rdma_link, "parse_eadm_stat": parse_eadm_stat,
            "parse_nvlink_status": parse_nvlink_status, "parse_nvlink_errors": parse_nvlink_errors,
            "parse_nccl_debug": parse_nccl_debug, "judge_nccl_debug": judge_nccl_debug, "parse_dcgmi_diag": parse_dcgmi_diag,
            "parse_mlxconfig": parse_mlxconfig, "parse_mlxlink": parse_mlxlink, "parse_iblinkinfo": parse_iblinkinfo,
            "parse_nccl_ras": parse_nccl_ras,
            "roce_v2_gid_index": roce_v2_gid_index, "show_gids_cross_check": show_gids_cross_check,
            "nvlink_findings": nvlink_findings, "port_counter_deltas": port_counter_deltas,
            "nvlink_fabric_findings": nvlink_fabric_findings, "parse_nvidia_imex_ctl": parse_nvidia_imex_ctl,
            "imex_findings": imex_findings,
        })
