# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the DCGM diagnostics the dcgm_diag role ran (thin wrappers over module_utils/judge/dcgm_diag.py) and
the return-to-service certificate made of them (module_utils/fleet/certificate.py); a hung job's report (hang.yml,
module_utils/judge/hang.py); a slow job's stragglers and report (slow.yml, module_utils/judge/stragglers.py and
slow_job.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import dcgm_diag, hang, slow_job, stragglers
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    Mapping, expect, expect_list_of_mappings, fail, filters, plain)

_RECORD_KEYS = ("level", "status", "failures", "skipped", "reason", "findings", "command", "timeout", "seconds",
                "exit_status", "gpus", "expected_gpus", "planned")


def dcgm_diag_records(results):
    """{host: what the dcgm_diag module returned there} -> [{host, level, status, failures, skipped, reason, findings,
    command, timeout, seconds, exit_status, gpus, expected_gpus, planned, dcgm_version, driver_version}], by host. A
    host whose task did not return a verdict (unreachable, the task itself failed) is 'not run', saying so: never left
    out, never a pass."""
    expect("dcgm_diag_records", results, (Mapping,), "a mapping of host to the dcgm_diag module's result")
    records = []
    for host in sorted(results):
        result = results[host] if isinstance(results[host], Mapping) else {}
        record = dict((key, result.get(key)) for key in _RECORD_KEYS)
        diag = result.get("diag") or {}
        record.update(host=str(host), dcgm_version=diag.get("dcgm_version"), driver_version=diag.get("driver_version"))
        if record["status"] not in dcgm_diag.STATUSES:
            record.update(status="not run", failures=[], skipped=[], reason=result.get("msg") or "the task gave no result",
                          findings=[])
        records.append(record)
    return records


def dcgm_diag_summary(records, replayed_from=None, output="markdown"):
    """The dcgm_diag role's records [{host, level, status, failures, skipped, reason, dcgm_version}] -> dcgm.md, or
    (output 'failures') one line per failing GPU or node and per node not run."""
    expect_list_of_mappings("dcgm_diag_summary", records, "the dcgm_diag role's records (dcgm_diag_results)")
    if output == "failures":
        return dcgm_diag.failure_lines([dict(r) for r in records])
    if output != "markdown":
        fail("dcgm_diag_summary", "output must be markdown or failures, got %r" % (output,))
    note = text.check_line("replayed_from", replayed_from) if replayed_from else None
    return dcgm_diag.summary_markdown([dict(r) for r in records], note)


def return_certificate(dcgm=None, nccl=None, pairwise=None, peer=None, measured_at=None, imex=None, nvlink_domain=None,
                       rack=None):
    """One node's active checks since its drain -> the return-to-service certificate the remediate module records:
    ``dcgm`` its dcgm_diag record (dcgm_diag_records' entry), ``nccl`` its judged single-node nccl-tests runs,
    ``pairwise`` the judged runs with a healthy ``peer``, and for a tray of an NVLink rack ``imex`` ({domain_state,
    findings, not_run}: what nvidia-imex-ctl -N said, judged) and ``nvlink_domain`` (the judged runs across its
    ``rack``); a check given none is left out, and then does not certify."""
    if dcgm is not None:
        expect("return_certificate", dcgm, (Mapping,), "the node's dcgm_diag record")
    if imex is not None:
        expect("return_certificate", imex, (Mapping,), "imex: {domain_state, findings, not_run}")
    for name, runs in (("nccl", nccl), ("pairwise", pairwise), ("nvlink_domain", nvlink_domain)):
        if runs is not None:
            expect_list_of_mappings("return_certificate", runs, "%s: the judged nccl-tests runs" % name)
    for name, value in (("peer", peer), ("rack", rack)):
        if value is not None:
            text.check_line(name, value)
    if measured_at is not None and (isinstance(measured_at, bool) or not isinstance(measured_at, (int, float))):
        fail("return_certificate", "measured_at must be epoch seconds, got %r" % (measured_at,))
    return certificate.from_results(dcgm and dict(dcgm), nccl and [dict(r) for r in nccl],
                                    pairwise and [dict(r) for r in pairwise], peer, measured_at,
                                    imex=dict(imex) if imex is not None else None,
                                    nvlink_domain=[dict(r) for r in nvlink_domain] if nvlink_domain is not None else None,
                                    rack=rack)


def hang_report(status, asked=None, health=None, addresses=None, job=None, output="report"):
    """The RAS status of the node that answered (parse_nccl_ras's result; none when no node did), the nodes asked
    [{node, answered, stage, kind, msg}], {host: node_health result} of the suspects' nodes and {address NCCL names a
    node by: inventory host} -> the report (judge/hang.py); output 'markdown' gives hang.md of a report."""
    if output == "markdown":
        expect("hang_report", status, (Mapping,), "a hang report (hang_report's result)")
        return hang.render_markdown(dict(status))
    if output != "report":
        fail("hang_report", "output must be report or markdown, got %r" % (output,))
    if status is not None:
        expect("hang_report", status, (Mapping,), "parse_nccl_ras's result, or none when no node answered")
    expect_list_of_mappings("hang_report", asked or [], "asked: the nodes asked, each {node, answered, ...}")
    for name, value in (("health", health), ("addresses", addresses)):
        if value is not None:
            expect("hang_report", value, (Mapping,), "%s as a mapping" % name)
    if job is not None:
        text.check_line("job", str(job))
    return hang.hang_report(status and dict(status), [dict(a) for a in asked or []],
                            dict(health or {}), dict(addresses or {}), job)


def hang_addresses(hosts):
    """hostvars of the job's nodes -> {address or name: inventory host}: each host's inventory name, ansible_host, host
    name and IPv4/IPv6 addresses (gathered facts), as NCCL may name a node by any; loopback addresses and any address
    two hosts claim (a docker bridge on every node) are left out, never guessed."""
    expect_list_of_mappings("hang_addresses", hosts, "the job's nodes' hostvars (map('extract', hostvars))")
    return hang.address_map([dict(h) for h in hosts])


def nccl_stragglers(parsed, rules=None, placement=None):
    """parse_nccl_inspector's result -> the ranks that come late or run slow (judge/stragglers.py); ``rules`` over its
    defaults; ``placement`` {host: {processes, gpu_nics, hostnames}} names each straggler's GPU and NIC."""
    expect("nccl_stragglers", parsed, (Mapping,), "parse_nccl_inspector's result")
    if "communicators" not in parsed and "buckets" not in parsed:
        fail("nccl_stragglers", "expects parse_nccl_inspector's result (communicators, buckets), got a mapping of %s"
             % ", ".join(sorted(str(k) for k in parsed)[:6]))
    for option, value in (("rules", rules), ("placement", placement)):
        if value is not None:
            expect("nccl_stragglers", value, (Mapping,), "%s as a mapping" % option)
    return stragglers.nccl_stragglers(plain(parsed), plain(rules) if rules else None,
                                      plain(placement) if placement else None)


def slow_report(judged, health=None, addresses=None, job=None, read=None, output="report"):
    """nccl_stragglers' result, {host: node_health result} of the stragglers' nodes, {name the Inspector wrote or
    address: inventory host} and [{node, read, msg, hostnames, files}] of the nodes asked -> the report
    (judge/slow_job.py); output 'markdown' gives slow.md of a report."""
    if output == "markdown":
        expect("slow_report", judged, (Mapping,), "a slow-job report (slow_report's result)")
        return slow_job.render_markdown(plain(judged))
    if output != "report":
        fail("slow_report", "output must be report or markdown, got %r" % (output,))
    expect("slow_report", judged, (Mapping,), "nccl_stragglers' result")
    if "verdict" not in judged or judged.get("verdict") not in stragglers.VERDICTS:
        fail("slow_report", "expects nccl_stragglers' result (verdict stragglers, agree or unknown), got verdict %r"
             % (judged.get("verdict"),))
    for option, value in (("health", health), ("addresses", addresses)):
        if value is not None:
            expect("slow_report", value, (Mapping,), "%s as a mapping" % option)
    expect_list_of_mappings("slow_report", read or [], "read: the nodes asked, each {node, read, msg, ...}")
    if job is not None:
        text.check_line("job", str(job))
    return slow_job.slow_report(plain(judged), plain(health or {}), plain(addresses or {}), job,
                                [plain(r) for r in read or []])


class FilterModule(object):
    def filters(self):
        return filters({"dcgm_diag_summary": dcgm_diag_summary, "dcgm_diag_records": dcgm_diag_records,
                        "return_certificate": return_certificate, "hang_report": hang_report,
                        "hang_addresses": hang_addresses, "nccl_stragglers": nccl_stragglers,
                        "slow_report": slow_report})
