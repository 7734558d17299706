#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_devices
short_description: Discover RDMA devices, ports and GIDs
version_added: 0.1.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Reads C(/sys/class/infiniband) and returns every RDMA device with its ports, link state,
    rate and non-zero GIDs, and the GID index NCCL should use on RoCE ports.
  - When C(ibv_devinfo) is on C(PATH), adds what only verbs knows (the port's C(active_mtu)).
  - Never fails on a host without RDMA hardware or tools; it returns an empty list. A O(sysfs_root) that does not
    exist (a mistyped capture path) gives the empty list and a warning naming it.
  - Read-only; supports check mode.
options:
  use_verbs:
    description:
      - Run C(ibv_devinfo) (when found) to add C(active_mtu) to each port.
      - Run C(show_gids) (MLNX OFED's script, when found) and cross-check its GID table against sysfs, the check
        seed 003 does by hand (device, netdev, RoCE v2 GID index). Mismatches are returned in
        C(rdma_gid_check) and become readiness findings.
      - Set to V(false) when O(sysfs_root) points at a capture from another host.
    type: bool
    default: true
extends_documentation_fragment:
  - gpufabric.rdma.sysfs_root
  - gpufabric.rdma.facts_module
  - gpufabric.rdma.command_timeout
notes:
  - The transport is decided from the kernel driver (C(erdma), C(efa), C(rdma_rxe), C(siw)),
    then the PCI vendor, then the ports' link layer (Ethernet means RoCE).
seealso:
  - module: gpufabric.rdma.gpu_facts
  - module: gpufabric.rdma.nccl_env
"""

EXAMPLES = r"""
- name: Discover RDMA devices
  gpufabric.rdma.rdma_devices:

- name: Fail when no RDMA port is ACTIVE
  ansible.builtin.assert:
    that: ansible_facts.rdma_summary.active_ports > 0
    fail_msg: "no ACTIVE RDMA port on {{ inventory_hostname }}"

- name: Inspect a sysfs tree captured from another host
  gpufabric.rdma.rdma_devices:
    sysfs_root: /srv/captures/node17/sys
    use_verbs: false
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: complex
  contains:
    rdma_devices:
      description:
        - One entry per RDMA device, sorted by name, with keys C(name), C(driver), C(transport)
          (C(InfiniBand), C(RoCE), C(iWARP), C(eRDMA), C(EFA) or C(unknown)), C(node_type), C(fw_ver),
          C(hca_type), C(board_id), C(node_guid), C(sys_image_guid), C(pci_address), C(numa_node) and C(ports).
        - Each port has C(port), C(state) (C(ACTIVE), C(DOWN), C(INIT), C(ARMED)), C(phys_state)
          (C(LinkUp), C(Disabled), C(Polling), ...), C(link_layer), C(rate_gbps), C(lid), C(sm_lid),
          C(active_mtu) (bytes or null), C(netdev), C(gids) (C(index), C(gid), C(type), C(netdev), C(ipv4))
          and C(roce_v2_gid_index).
      returned: always
      type: list
      elements: dict
      sample:
        - name: mlx5_0
          driver: mlx5_core
          transport: RoCE
          node_type: CA
          fw_ver: "22.36.1010"
          hca_type: MT4125
          board_id: MT_0000000359
          node_guid: "0ac0:eb03:003d:ca54"
          sys_image_guid: "0ac0:eb03:003d:ca54"
          pci_address: "0000:0c:00.0"
          numa_node: 0
          ports:
            - port: 1
              state: ACTIVE
              phys_state: LinkUp
              link_layer: Ethernet
              rate_gbps: 100
              lid: 0
              sm_lid: 0
              active_mtu: 4096
              netdev: eth05
              gids:
                - index: 3
                  gid: "0000:0000:0000:0000:0000:ffff:0a6e:0021"
                  type: RoCE v2
                  netdev: eth05
                  ipv4: 10.110.0.33
              roce_v2_gid_index: 3
    rdma_summary:
      description: C(count), C(active_ports), C(transports), C(link_layers), C(active_hcas) and C(ports_not_active) (C(device/port STATE) strings).
      returned: always
      type: dict
      sample:
        count: 2
        active_ports: 1
        transports: [RoCE]
        link_layers: [Ethernet]
        active_hcas: [mlx5_0]
        ports_not_active: [mlx5_1/1 DOWN]
    rdma_gid_check:
      description:
        - C(tool) (C(show_gids) when it ran, else null), C(error) (why it could not be read, else null) and
          C(findings) (C(gid_table_mismatch), C(gid_index_mismatch)) where C(show_gids) and sysfs disagree.
      returned: always
      type: dict
      sample: {tool: show_gids, error: null, findings: []}
    rdma_stack:
      description:
        - The NVIDIA RDMA stack from C(ofed_info -s) - C(stack) (C(MLNX_OFED), C(DOCA-OFED), C(MLNX_EN)), C(version),
          C(text) - or null where there is no ofed_info (the distribution's inbox rdma-core) or it could not run.
      returned: always
      type: dict
      sample: {stack: MLNX_OFED, version: 23.07-0.5.1.2, text: MLNX_OFED_LINUX-23.07-0.5.1.2}
verbs:
  description: Whether C(ibv_devinfo) ran and its output was used.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge.gid_table import cross_check_gids
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ofed, rdma
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.show_gids import parse_show_gids


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type="path", default="/sys"),
            use_verbs=dict(type="bool", default=True),
            **commands.ARGUMENT_SPEC
        ),
        supports_check_mode=True,
    )
    runner = commands.module_runner(module)
    sysfs_root = sysfs.checked_root(module)
    devices = sysfs.read_rdma_devices(sysfs_root)
    verbs_used = False
    if module.params["use_verbs"] and devices:
        ibv_devinfo = runner.which("ibv_devinfo")
        if ibv_devinfo:
            result = runner.run([ibv_devinfo])
            if result.ok:
                rdma.merge_verbs(devices, rdma.parse_ibv_devinfo(result.stdout))
                verbs_used = True
            else:
                module.warn("%s; active_mtu stays unknown" % result.describe())
    gid_check = {"tool": None, "error": None, "findings": []}
    show_gids = runner.which("show_gids") if module.params["use_verbs"] and devices else None
    if show_gids:
        result = runner.run([show_gids])
        try:
            if not result.ok:
                raise ValueError(result.describe())
            gid_check.update(tool="show_gids", findings=cross_check_gids(parse_show_gids(result.stdout), devices))
        except ValueError as exc:   # the command failed, or its text is not show_gids'
            gid_check["error"] = "show_gids: %s" % exc
            module.warn("%s; the GID table is not cross-checked" % gid_check["error"])
    stack = None
    ofed_info = runner.which("ofed_info") if devices else None
    if ofed_info:   # MLNX_OFED or DOCA-OFED: its version belongs in the record (known-good state); inbox has none
        result = runner.run([ofed_info, "-s"])
        stack = ofed.parse_ofed_info(result.stdout) if result.ok else None
        if stack is None:
            module.warn("ofed_info -s: %s; the RDMA stack's version stays unknown" % (
                result.describe() if not result.ok else "no MLNX_OFED or DOCA-OFED version in its output"))
    module.exit_json(
        changed=False,
        verbs=verbs_used,
        ansible_facts=dict(rdma_devices=devices, rdma_summary=rdma.summarize(devices), rdma_gid_check=gid_check,
                           rdma_stack=stack),
    )


if __name__ == "__main__":
    main()
