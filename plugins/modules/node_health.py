#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_health
short_description: Health findings of a GPU/RDMA node - lost GPUs, Xid and ECC errors, ports down, counters, drift
version_added: 0.1.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Reads the node and returns one list of RV(findings), each with C(check), C(severity)
    (C(critical), C(warning), C(info)), C(target), C(detail) and C(fix_hint), worst first.
  - B(GPUs) - C(nvidia-smi) hung, failing or missing; fewer GPUs than O(expected_gpu_count) (a GPU lost or fallen off
    the bus); Xid events in the
    kernel log since boot (C(journalctl -k -b), else C(dmesg)), repeats folded, rated from NVIDIA's Xid
    catalog (application Xids are C(info), Xid 48/79/95/119 and others C(critical)), a GPU that fell off
    the bus without an Xid line counted as Xid 79; uncorrectable ECC errors, row remapping pending or
    failed, page retirement pending or more than O(max_retired_pages) retired pages (C(nvidia-smi -q -x)); clocks
    held down by HW slowdown, HW thermal slowdown, HW power brake or SW thermal slowdown (C(gpu_clock_throttle)).
  - B(PCIe) - a GPU or RDMA NIC whose link in sysfs is narrower than its maximum, or a NIC's slower (C(pcie_link)).
  - B(RDMA) - fewer devices than O(expected_rdma_devices), ports not ACTIVE, ports below
    O(min_port_rate_gbps), InfiniBand error counters (C(link_downed), C(symbol_error), ...) rising
    between two readings O(counter_interval) seconds apart. (The health monitor reads them as rates over its own
    history instead - C(rdma_error_rate), C(link_flap), C(roce_congestion), C(pfc_pause_storm); see the
    health_monitor role.)
  - B(Configuration) - RDMA netdevs whose MTU is not O(expected_mtu), C(nvidia_peermem) not loaded
    when O(require_peermem), O(nccl_conf) differing from O(expected_nccl_env) (the deployed profile).
  - Read-only - never changes the node; supports check mode.
options:
  checks:
    description:
      - "Every check's options in one mapping, as role P(gpufabric.rdma.health_monitor#role)'s C(health_monitor_checks)
        holds them, for example C({expected_gpu_count: 8, link_health: true}). Each key is one of this module's options
        (O(expected_gpu_count), O(link_health), ...), and its value is checked and converted as if it were given by name
        (C(\"8\") is 8). An unknown key is refused, naming it and the known ones; so is an option given both by name
        (other than its default) and here. A null value is unset."
    type: dict
    default: {}
    version_added: 0.9.0
  node_name:
    description:
      - The node's name in the findings' targets (C(<node_name>/GPU ...), C(<node_name>/mlx5_0/1)), which the
        remediation decider compares with the findings recorded at a drain. Give the scheduler's node name (Slurm
        NodeName, Kubernetes node name), as the health monitor does, so both paths name the node alike.
      - Default is this host's name as the kernel has it (C(uname -n)).
    type: str
extends_documentation_fragment:
  # The checks' options, from the registry: each check's file declares and describes its own (module_utils/node/checks/).
  - gpufabric.rdma.node_checks
  - gpufabric.rdma.command_timeout
notes:
  - Supports check mode.
  - When C(nvidia-smi) does not answer (hung, failing, printing no XML) or is missing where O(expected_gpu_count) expects
    GPUs, the finding is C(nvidia_smi) (critical) with the tool's own error as the detail; the GPUs are then not counted.
    C(nvidia-smi) hanging past O(command_timeout) is what a GPU lost from the bus often looks like.
seealso:
  - name: NVIDIA Xid errors
    description: What each Xid code means.
    link: https://docs.nvidia.com/deploy/xid-errors/index.html
"""

EXAMPLES = r"""
- name: Check every node against what it should have
  gpufabric.rdma.node_health:
    expected_gpu_count: 8
    expected_rdma_devices: 2
    expected_mtu: 9000
    require_peermem: true
    counter_interval: 10
    expected_nccl_env: "{{ discovery_node.nccl.env }}"
  register: health

- name: The same with every option in one mapping, as the health monitor's configuration holds them
  gpufabric.rdma.node_health:
    checks: "{{ health_monitor_checks }}"
    node_name: "{{ inventory_hostname_short }}"
  register: health

- name: Fail on critical findings
  ansible.builtin.assert:
    that: health.counts.critical == 0
    fail_msg: "{{ health.findings | selectattr('severity', 'eq', 'critical') | map(attribute='detail') | join('; ') }}"
"""

RETURN = r"""
findings:
  description: What is wrong, worst first.
  returned: always
  type: list
  elements: dict
  sample:
    - check: gpu_xid
      severity: critical
      target: gpu-7/GPU 0000:b3:00
      detail: "Xid 79 (GPU has fallen off the bus) x1: GPU has fallen off the bus (no Xid line)"
      fix_hint: drain the node and reboot; reseat or replace the GPU, check power and PCIe
counts:
  description: Number of findings per severity.
  returned: always
  type: dict
  sample: {critical: 1, warning: 0, info: 2}
healthy:
  description: No critical and no warning finding.
  returned: always
  type: bool
complete:
  description:
    - Every source was read (the kernel log, C(nvidia-smi) where GPUs are expected). An incomplete check is
      not a healthy one - the remediation decider never resumes a node on it.
  returned: always
  type: bool
unreadable:
  description: What could not be read and why, one sentence each ([] when RV(complete)).
  returned: always
  type: list
  elements: str
  sample: ["kernel log: journalctl -k -b did not answer within 30 s; dmesg -T exited 1: dmesg: read kernel buffer failed: Operation not permitted"]
not_run:
  description:
    - The checks asked for that could not run at all, each with why - its tool is not installed, or there is nothing
      for it to read (no NVIDIA HCA for O(link_health), no card for O(nic_firmware), no C(nvidia-smi) where GPUs are
      expected, no kernel log reader). Each is also in RV(unreadable), so the report is incomplete. The checks and
      their names are listed on the troubleshooting page (Node health checks).
  returned: always
  type: dict
  sample: {link_health: "no NVIDIA HCA (an mlx4_ or mlx5_ RDMA device) on this node: no link was read"}
  version_added: 0.9.0
domain:
  description:
    - This node's place in its NVLink rack, read from the same C(nvidia-smi -q -x) the checks read (not run again) -
      C(cluster_uuid) and C(clique) (its NVLink domain; null when the GPUs name none, all-zero or CliqueId 0),
      C(chassis_serial), C(slot) and C(tray) (Platform Info) - as the health monitor's report carries it to the
      remediation decider, which drains a rack's nodes together. Null on a node whose GPUs name neither a domain nor
      a chassis (an HGX board, a PCIe card) or where nvidia-smi could not be read.
  returned: always
  type: dict
  sample: {cluster_uuid: 00000001-0000-0000-0000-000000000001, clique: 2, chassis_serial: "1820000000001", slot: 14, tray: 4}
  version_added: 0.9.0
observed:
  description:
    - What was read - gpu_count, rdma_devices, xid_events, port counters, kernel_log_source, and dcgm (status, level,
      failures, reason) where O(dcgm_level) is set, and nic_firmware (each card's plan) where O(nic_firmware) is set.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import node_checks
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import all as registry


def check_options(params):
    """The checks' options: those given by name and those of the checks mapping, each of these validated and converted
    as if given by name (the registry's argument spec of the names given). CheckOptionError names an unknown name (and
    the known ones), a value that cannot be converted, and an option given both ways."""
    by_name = dict((k, v) for k, v in params.items() if k not in ("node_name", "checks"))
    # None is unset, as it is by name.
    given = dict((k, v) for k, v in (params["checks"] or {}).items() if v is not None)
    try:
        registry.refuse_unknown(given)
    except registry.CheckOptionError as exc:
        raise registry.CheckOptionError("checks: %s" % exc)
    spec = registry.argument_spec()
    validated = ArgumentSpecValidator(dict((name, spec[name]) for name in given)).validate(given)
    if validated.error_messages:
        raise registry.CheckOptionError("checks: %s" % "; ".join(validated.error_messages))
    both = ["%s is given both by name (%r) and in checks (%r)" % (name, by_name[name], given[name])
            for name in sorted(given) if by_name[name] != spec[name].get("default")]
    if both:
        raise registry.CheckOptionError("%s: give it once - by name, or in checks" % "; ".join(both))
    by_name.update(validated.validated_parameters)
    return by_name


def main():
    module = AnsibleModule(
        # Every check's options, from the registry (module_utils/node/checks/all.py), the same in one mapping, and the
        # node's name.
        argument_spec=dict(registry.argument_spec(), checks=dict(type="dict", default={}), node_name=dict(type="str")),
        supports_check_mode=True,
    )
    try:
        result = node_checks.check_node(check_options(module.params), host=module.params["node_name"])
    except node_checks.CheckOptionError as exc:
        module.fail_json(msg=str(exc))
    del result["observed"]["counters_at"]
    del result["observed"]["history"]
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
