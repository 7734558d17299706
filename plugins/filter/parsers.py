# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every ``parse_*`` filter: a tool's output read (thin wrappers over the readers in module_utils/parse/, one reader
per tool output). Each takes the text or the command's registered result; a filter that judges what was read
lives with its subject (rdma_tools.py, topology.py, ...). parse_nvidia_smi_q, parse_mlxlink and parse_iblinkinfo
also attach the findings of what they read (judge/health.py, judge/link_health.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import health, link_health
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import (
    dcgm, eadm, gpu, ibdev2netdev, iblinkinfo, ibnetdiscover, ibstat, lldp, mlxconfig, mlxlink, nccl_debug, nccl_inspector,
    nccl_ras, nccl_tests, nvidia_imex, nvidia_smi_fabric, nvidia_smi_q, nvlink, perftest, rdma, rdma_link, show_gids)
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import cabling
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    TEXT, Mapping, expect, fail, filters, loaded_or_text, number_or_none, plain, tool_text)


# --- GPUs, RDMA devices, nccl-tests and perftest -------------------------------------------------------------------

def parse_ibv_devinfo(value):
    return rdma.parse_ibv_devinfo(tool_text("parse_ibv_devinfo", value))


def parse_nvidia_topo(value):
    return gpu.parse_nvidia_topo(tool_text("parse_nvidia_topo", value))


def parse_nccl_tests(value):
    if isinstance(value, Mapping) and "results" in value:
        return nccl_tests.parse_json(value)   # the -J document, already loaded
    return nccl_tests.parse(tool_text("parse_nccl_tests", value))


def parse_perftest(value):
    return perftest.parse(tool_text("parse_perftest", value))


def parse_nvidia_smi_q(value, host="node"):
    expect("parse_nvidia_smi_q", host, TEXT, "the host name to name in findings")
    result = nvidia_smi_q.parse_nvidia_smi_q(tool_text("parse_nvidia_smi_q", value))
    result["memory"] = nvidia_smi_q.gpu_memory_health_text(result)
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


# --- the RDMA and NVLink tools operators run by hand, NCCL's logs, DCGM ---------------------------------------------

def parse_ibstat(value):
    return ibstat.parse_ibstat(tool_text("parse_ibstat", value))


def parse_ibstatus(value):
    return ibstat.parse_ibstatus(tool_text("parse_ibstatus", value))


def parse_ibdev2netdev(value):
    return ibdev2netdev.parse_ibdev2netdev(tool_text("parse_ibdev2netdev", value))


def parse_show_gids(value):
    return show_gids.parse_show_gids(tool_text("parse_show_gids", value))


def parse_rdma_link(value):
    return rdma_link.parse_rdma_link(tool_text("parse_rdma_link", value))


def parse_eadm_stat(value):
    return eadm.parse_eadm_stat(tool_text("parse_eadm_stat", value))


def parse_nvlink_status(value):
    return nvlink.parse_nvlink_status(tool_text("parse_nvlink_status", value))


def parse_nvlink_errors(value):
    return nvlink.parse_nvlink_errors(tool_text("parse_nvlink_errors", value))


def parse_mlxconfig(value):
    return mlxconfig.parse_mlxconfig(tool_text("parse_mlxconfig", value))


def parse_mlxlink(value, host="node", device="", max_effective_ber=link_health.MAX_EFFECTIVE_BER,
                  max_raw_ber=link_health.MAX_RAW_BER, fabric=None):
    expect("parse_mlxlink", host, TEXT, "the host name to name in findings")
    expect("parse_mlxlink", device, TEXT, "the device the text is of (for a text without its command line)")
    limits = [number_or_none("parse_mlxlink", name, value) for name, value in (
        ("max_effective_ber", max_effective_ber), ("max_raw_ber", max_raw_ber))]
    if None in limits or min(limits) <= 0:
        fail("parse_mlxlink", "max_effective_ber and max_raw_ber must be positive numbers, got %r and %r"
             % (max_effective_ber, max_raw_ber))
    result = mlxlink.parse_mlxlink(tool_text("parse_mlxlink", value))
    if device and len(result["devices"]) == 1 and not result["devices"][0]["device"]:
        result["devices"][0]["device"] = device
    result["findings"] = link_health.mlxlink_findings(host, result["devices"], *limits)
    if fabric:
        result["findings"] = link_health.with_switch_ports(result["findings"], cabling.observed_attachment(ibnetdiscover=fabric))
    return result


def parse_iblinkinfo(value):
    result = iblinkinfo.parse_iblinkinfo(tool_text("parse_iblinkinfo", value))
    result["findings"] = link_health.iblinkinfo_findings(result["ports"])
    return result


def parse_nccl_ras(value):
    if isinstance(value, Mapping) and "text" in value and "stdout" not in value:
        value = value["text"]     # the nccl_ras module's result works as it is
    return nccl_ras.parse_nccl_ras(tool_text("parse_nccl_ras", value))


def parse_nccl_inspector(value, limits=None, job=None):
    """One Inspector file's text, [{name, content}], or what the nccl_inspector module returned on each node (one
    result, or a list of them: merged, a record two nodes read counted once)."""
    name = "parse_nccl_inspector"
    if limits is not None:
        expect(name, limits, (Mapping,), "limits as a mapping (max_communicators, max_collectives, ...)")
    if job is not None:
        expect(name, job, TEXT + (int,), "job as a Slurm job id")
    if isinstance(value, Mapping) and "parsed" in value:
        value = [value]
    results = isinstance(value, (list, tuple)) and value and all(
        isinstance(v, Mapping) and ("parsed" in v or "communicators" in v) for v in value)
    if results:
        parts = [plain(v.get("parsed") if "parsed" in v else v) for v in value]
        return nccl_inspector.merge([p for p in parts if p], plain(limits) if limits else None)
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            expect(name, item, (Mapping,), "files as [{name, content}]; item %d" % index)
        files = [{"name": item.get("name"), "content": tool_text(name, item.get("content"))} for item in value]
    else:
        files = tool_text(name, value)
    return nccl_inspector.parse_nccl_inspector(files, plain(limits) if limits else None,
                                               None if job is None else str(job))


def parse_dcgmi_diag(value):
    return dcgm.parse_dcgmi_diag(tool_text("parse_dcgmi_diag", value))


def parse_nccl_debug(value):
    return nccl_debug.parse_nccl_debug(tool_text("parse_nccl_debug", value))


def parse_nvidia_imex_ctl(value):
    # -N -j output already loaded by from_json, or parse_nvidia_imex_ctl's result, works as it is
    return nvidia_imex.parse_nvidia_imex_ctl(loaded_or_text("parse_nvidia_imex_ctl", value, "nodes"))


# --- the fabric: ibnetdiscover, LLDP, nvidia-smi's Fabric section ---------------------------------------------------

def parse_ibnetdiscover(value, node_name_map=None):
    if node_name_map is not None and not isinstance(node_name_map, TEXT):
        node_name_map = plain(expect("parse_ibnetdiscover", node_name_map, (Mapping,),
                                     "node_name_map as {GUID: name} or the map file's text"))
    return ibnetdiscover.parse_ibnetdiscover(tool_text("parse_ibnetdiscover", value, "ibnetdiscover's text (or a registered result)"),
                                             node_name_map=node_name_map)


def parse_lldp_neighbors(value):
    if isinstance(value, Mapping) and "lldp" in value:
        return lldp.parse_lldp_neighbors(plain(value))   # lldpcli -f json, already loaded by from_json
    return lldp.parse_lldp_neighbors(tool_text("parse_lldp_neighbors", value, "lldpcli show neighbors output (text, json or keyvalue)"))


def parse_nvidia_smi_fabric(value):
    return nvidia_smi_fabric.parse_nvidia_smi_fabric(tool_text("parse_nvidia_smi_fabric", value, "nvidia-smi -q (or -q -x) output"))


class FilterModule(object):
    def filters(self):
        return filters({
            "parse_ibv_devinfo": parse_ibv_devinfo, "parse_nvidia_topo": parse_nvidia_topo,
            "parse_nccl_tests": parse_nccl_tests, "parse_perftest": parse_perftest,
            "parse_nvidia_smi_q": parse_nvidia_smi_q, "nvcc_gencode": nvcc_gencode,
            "parse_ibstat": parse_ibstat, "parse_ibstatus": parse_ibstatus, "parse_ibdev2netdev": parse_ibdev2netdev,
            "parse_show_gids": parse_show_gids, "parse_rdma_link": parse_rdma_link, "parse_eadm_stat": parse_eadm_stat,
            "parse_nvlink_status": parse_nvlink_status, "parse_nvlink_errors": parse_nvlink_errors,
            "parse_nccl_debug": parse_nccl_debug, "parse_dcgmi_diag": parse_dcgmi_diag,
            "parse_mlxconfig": parse_mlxconfig, "parse_mlxlink": parse_mlxlink, "parse_iblinkinfo": parse_iblinkinfo,
            "parse_nccl_ras": parse_nccl_ras, "parse_nccl_inspector": parse_nccl_inspector,
            "parse_nvidia_imex_ctl": parse_nvidia_imex_ctl,
            "parse_ibnetdiscover": parse_ibnetdiscover, "parse_lldp_neighbors": parse_lldp_neighbors,
            "parse_nvidia_smi_fabric": parse_nvidia_smi_fabric,
        })
