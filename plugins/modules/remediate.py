#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: remediate
short_description: Drain and resume nodes from their findings, as the cluster's one decider (Slurm, Kubernetes)
version_added: 0.2.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Runs on the decider's host (the Slurm controller, or the host with the kubeconfig) and makes the remediation
    decisions for every reported node at once, with the same code, lock and ledger as the remediator service (role
    P(gpufabric.rdma.remediator#role)), so an AWX run and the service are one decider - their drains count against
    one limit.
  - Reads the whole fleet - Slurm with slurmctld's clock (C(sinfo) with C(SLURM_TIME_FORMAT=%s), C(sdiag)), Kubernetes
    with C(kubectl get nodes) (the history in each Node's C(gpufabric.io/remediation) annotation) - decides with the
    policy, shadow mode, circuit breaker, rate limits (drains and resumes) and escalation of O(remediation), records
    the decisions and their messages in the ledger under O(state_dir), then drains and resumes (each node read again
    first; on Kubernetes a JSON patch under a test of the Node's resourceVersion), and sends the messages to
    O(webhooks).
  - A node missing from O(reports) (unreachable, or its check failed) is not decided at all - it is never resumed.
    A report with C(complete=false) never resumes a node either.
  - Check mode reads the scheduler and the ledger and returns every decision; it changes nothing anywhere.
  - Fails with the reason when the scheduler cannot be read or prints something it cannot parse (could not act),
    or when the ledger cannot be saved (then nothing is done).
options:
  reports:
    description:
      - The node's name in the scheduler to what M(gpufabric.rdma.node_health) returned for it (C(findings),
        C(complete), C(unreadable)), and optionally C(domain) - where the node sits in an NVLink rack (C(cluster_uuid),
        C(clique), C(chassis_serial), C(slot), C(tray), as C(nvidia-smi -q) prints them) - by which the decider knows
        its rack (see C(rack) in O(remediation)).
    type: dict
    required: true
  remediation:
    description:
      - The decider's settings - C(mode) (V(shadow) or V(enforce)), C(policy), C(policy_name), C(rate_limit),
        C(circuit_breaker), C(escalation), C(certification), C(evidence), C(rack), and C(slurm) or C(kubernetes)
        (C(kubectl), C(kubeconfig), C(device_taints)) - as the remediator role's C(remediator_settings) gives them.
      - C(kubernetes.device_taints) (V(auto), or the API serving DeviceTaintRule - V(resource.k8s.io/v1alpha3),
        V(resource.k8s.io/v1beta2), V(resource.k8s.io/v1); unset keeps the cordon) - a drain whose findings each name one
        device (an RDMA port, a GPU) taints that device only (a DeviceTaintRule, NoSchedule, the device as its driver's
        ResourceSlice names it) instead of cordoning the node; the resume deletes the rules.
      - C(rack) (C(enabled) true, C(min_nodes) 2, C(window) 300, C(checks) the NVLink fabric and IMEX checks,
        C(certify) [imex, nvlink_domain], C(racks) {}) - when C(min_nodes) trays of one NVLink rack (the chassis its
        nodes report, or a rack C(racks) names with its nodes) report a fabric finding the policy drains for within
        C(window) seconds, the rack's nodes drain together or none does, as one action against the rate limit and the
        circuit breaker; they resume together, each certified with C(certify) as well.
    type: dict
    required: true
  cluster:
    description: Cluster name in every message.
    type: str
    default: gpufabric
  webhooks:
    description: Where the decisions are posted (the health monitor's webhook format).
    type: list
    elements: dict
    default: []
  certificates:
    description:
      - Return-to-service certificates, the node's name in the scheduler to what the active check it ran after the
        drain found - C(checks) (each C(name) V(dcgm), V(nccl), V(pairwise), V(imex) or V(nvlink_domain), C(status) V(pass), V(fail), V(warn) or
        V(not run), and C(level), C(busbw), C(expected), C(size), C(peer), C(detail)), C(versions) and C(measured_at).
        The C(gpufabric.rdma.remediate) playbook makes them with the filter
        P(gpufabric.rdma.return_certificate#filter).
      - The decider stamps each with the scheduler's clock and keeps it in the node's ledger record; a node gpufabric
        did not drain ignores it. With C(certification.required) (the default) a node is resumed only on a
        certificate whose C(measured_at) (the scheduler's clock, as RV(now) of the plan that asked for the check) is at
        or after the drain and after the node's last resume, not in the future, younger than
        C(certification.max_age), in which every entry of every check of C(certification.checks) passed; it resumes
        the node once.
    type: dict
    default: {}
  state_dir:
    description:
      - The decider's directory (ledger C(decider.json), outbox C(decider.outbox.json), lock); created, and owned,
        when missing. The outbox - the messages not yet delivered - lives apart from the ledger, so a damaged ledger
        does not lose them; a damaged outbox is set aside and its loss told (C(outbox-lost)).
      - C(decider.history.json) beside the ledger is the second copy of its drains and resumes; a ledger deleted,
        damaged or not ours is rebuilt from it. When the copy is lost too, every drain and resume is held for one
        C(rate_limit.interval) and the decisions say why ("drain budget unknown", "resume budget unknown").
    type: path
    default: /var/lib/gpufabric-remediator
  name:
    description: Who decided, in every record and message (default C(gpufabric-remediator@<host>)).
    type: str
extends_documentation_fragment:
  - gpufabric.rdma.command_timeout
"""

EXAMPLES = r"""
- name: Decide and act on Slurm (on the controller)
  gpufabric.rdma.remediate:
    reports: "{{ dict(groups['gpu'] | zip(groups['gpu'] | map('extract', hostvars, '__health') | list)) }}"
    remediation:
      mode: enforce
      policy:
        - {severity: critical, action: drain}
      rate_limit: {max_nodes: 1, max_percent: 10, interval: 3600}
      slurm: {enabled: true}
"""

RETURN = r"""
decisions:
  description:
    - One per reported node - C(node), C(action) (C(drain), C(resume), C(none)), C(held) (a limit or the circuit
      breaker stopped it), C(why), C(reason) (the drain reason), C(findings), C(escalated), C(shadow), C(policy),
      C(done) (carried out), C(error) (why it could not be), C(out_of_service), C(text) (one line for a person),
      C(certify) (it stays drained only for want of a certificate - the node the active check must run on),
      C(maintain) (the findings to carry out on it, see RV(maintain)), and for a
      resume C(certificate) (what certified it) and C(mttr) (seconds from its drain to this resume).
    - On Kubernetes with C(kubernetes.device_taints), C(device_taints) - the DeviceTaintRules a drain creates (in
      shadow and check mode rendered, not created) or a resume deletes; None and C(device_taints_why) where the drain
      cordons the node instead.
  returned: always
  type: list
  elements: dict
certify:
  description: The nodes whose decision says C(certify), sorted - what remediate.yml runs the active check on.
  returned: always
  type: list
  elements: str
maintain:
  description:
    - The nodes drained for a change that needs them out of service and now idle (no job left), each with the
      findings to carry out (C(nic_firmware_settings|node/device)) - what remediate.yml changes (the nic_firmware
      module, then a fresh check and the certificate) before the node may return.
  returned: always
  type: dict
healthy:
  description: The nodes in service with a complete report and nothing that asks for a drain, sorted - the peers a
    pairwise check may use.
  returned: always
  type: list
  elements: str
certify_rack:
  description:
    - The rack of each reported node its rack's decision keeps drained, for every rack one of whose nodes waits for a
      certificate - what remediate.yml reads IMEX on and runs one NVLink-domain nccl-tests run across, rack by rack
      (the C(rack.certify) checks), besides each node's own checks.
  returned: always
  type: dict
  sample: {gpu-b01: "1820000000001", gpu-b02: "1820000000001"}
certify_checks:
  description: The active check a certificate needs under this policy, for a person (C(dcgm level 2, nccl)).
  returned: always
  type: str
now:
  description:
    - The scheduler's clock as the decider read it for this plan (epoch seconds; C(sdiag) on Slurm, the decider
      host's on Kubernetes), null when it could not be read. remediate.yml gives it to the certificates of the checks
      this plan asks for as their C(measured_at) - a time before each check began, by the clock the drain was made
      by.
  returned: always
  type: float
certificates:
  description: What became of each given certificate - C(recorded), or why it was ignored.
  returned: when the scheduler could be read
  type: dict
breaker:
  description: The circuit breaker - C(open) (partitions where nothing is done), C(opened), C(closed), C(shares).
  returned: always
  type: dict
delivery:
  description: Messages C(sent), C(failed) and C(pending) (still queued for the next run or the service).
  returned: when not in check mode
  type: dict
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import ownership
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import (
    certificate, decider, decider_settings, protocol, remediation)


def _checked_settings(module):
    """The decider's configuration from the module's options, checked (decider_settings), with a scheduler to act on."""
    params = module.params
    try:
        config = decider_settings.check_config({
            "cluster": params["cluster"], "name": params["name"], "state_dir": params["state_dir"],
            "remediation": params["remediation"], "webhooks": params["webhooks"],
            "command_timeout": params["command_timeout"]})
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if not (config["remediation"]["slurm"]["enabled"] or config["remediation"]["kubernetes"]["enabled"]):
        module.fail_json(msg="remediation needs slurm.enabled or kubernetes.enabled: the scheduler the decider acts on")
    return config


def _checked_inputs(module):
    """(reports, certificates): each node's node_health result as a report (protocol.check_report, source awx) and
    each certificate checked (certificate.check_certificate) under a plain node name."""
    reports = {}
    for node, result in sorted(module.params["reports"].items()):
        if not isinstance(result, dict):
            module.fail_json(msg="reports[%s] must be what node_health returned, got %r" % (node, type(result).__name__))
        try:
            reports[node] = protocol.check_report({
                "node": node, "findings": list(result.get("findings") or []), "complete": result.get("complete") is True,
                "unreadable": list(result.get("unreadable") or []), "source": "awx", "domain": result.get("domain")})
        except ValueError as exc:
            module.fail_json(msg=str(exc))
    certificates = {}
    for node, cert in sorted((module.params["certificates"] or {}).items()):
        try:
            if not protocol.plain_name(node):
                raise ValueError("certificates: %r is not a node name" % (node,))
            certificates[node] = certificate.check_certificate(cert, node)
        except ValueError as exc:
            module.fail_json(msg=str(exc))
    return reports, certificates


def _own_state_dir(module, state_dir):
    """The decider's state directory, created and marked as the remediator's when missing (not in check mode: it
    plans against an empty ledger and creates nothing); one another program made is refused."""
    owner = statefile.owner_of(state_dir)
    if owner is None:
        if not module.check_mode:
            try:
                os.mkdir(state_dir, 0o700)
                statefile.mark_owned(state_dir, "remediator")
            except OSError as exc:
                module.fail_json(msg="cannot create the decider's state_dir %s: %s" % (state_dir, exc))
    elif owner != "remediator":
        module.fail_json(msg="state_dir %s exists and was not created by gpufabric's remediator (%s): choose another"
                         % (state_dir, "its marker names %s" % owner if owner else "no %s marker" % ownership.MARKER))


def _certify_rack(decisions):
    """{node: rack}: every node a rack's decision keeps drained, of each rack one of whose nodes waits for a
    certificate - the NVLink-domain run goes across all of them."""
    drained, waiting = {}, set()
    for decision in decisions:
        if decision.get("rack") and decision["action"] == "none":
            drained[decision["node"]] = decision["rack"]
            if decision.get("certify"):
                waiting.add(decision["rack"])
    return dict((node, rack) for node, rack in drained.items() if rack in waiting)


def _returned(module, config, result, lines, acted):
    """What the module returns for the decider's result: the decisions, the nodes to certify, to pair with and to
    maintain, the diff of what was done (or would be, in check mode)."""
    decisions = result["decisions"]
    out = dict(changed=bool([d for d in acted if d.get("done") or module.check_mode]), decisions=decisions,
               breaker=result["breaker"], log=lines, certificates=result.get("certificates") or {},
               certify=sorted(d["node"] for d in decisions if d.get("certify")),
               certify_rack=_certify_rack(decisions),
               certify_checks=certificate.describe_checks(config["remediation"]["certification"]), now=result.get("now"),
               healthy=sorted(d["node"] for d in decisions if d.get("healthy")),
               maintain=dict((d["node"], d["maintain"]) for d in decisions if d.get("maintain")))
    if module._diff:
        out["diff"] = {"before": "", "after": "".join("%s\n" % d["text"] for d in acted)}
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            reports=dict(type="dict", required=True),
            remediation=dict(type="dict", required=True),
            cluster=dict(type="str", default="gpufabric"),
            webhooks=dict(type="list", elements="dict", default=[], no_log=True),
            state_dir=dict(type="path", default="/var/lib/gpufabric-remediator"),
            certificates=dict(type="dict", default={}),
            name=dict(type="str"),
            command_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    config = _checked_settings(module)
    reports, certificates = _checked_inputs(module)
    _own_state_dir(module, config["state_dir"])

    lines = []
    result = decider.decide(reports, config, time.time, lines.append, act=not module.check_mode,
                            certificates=certificates)
    scheduler = "slurm" if config["remediation"]["slurm"]["enabled"] else "kubernetes"
    for decision in result["decisions"]:
        decision["text"] = remediation.decision_text(scheduler, decision)
    if result.get("warning"):
        module.warn(result["warning"])
    if result.get("error"):
        module.fail_json(msg="could not act: %s" % result["error"], decisions=result["decisions"], log=lines)
    acted = [d for d in result["decisions"] if d["action"] in ("drain", "resume") and not d["shadow"]]
    out = _returned(module, config, result, lines, acted)
    if not module.check_mode and config["webhooks"]:
        out["delivery"] = decider.deliver(config, lines.append)
    failed = [d for d in acted if d.get("error")]
    if failed:
        module.fail_json(msg="could not act on %s" % "; ".join("%s: %s" % (d["node"], d["error"]) for d in failed), **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
