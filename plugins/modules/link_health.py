#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: link_health
short_description: Read the physical layer of each HCA port with mlxlink and judge it
version_added: 0.4.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Runs C(mlxlink -d <device> -p <port> -c) for each NVIDIA HCA (the C(mlx4_)/C(mlx5_) devices in sysfs, or
    the C(devices) of O(link_health)), reads it (P(gpufabric.rdma.parse_mlxlink#filter)) and judges it as the health check's
    C(link_health) option does (the same code) - C(link_state), C(link_recommendation) (a transceiver's own advice
    other than "No issue was observed"), C(link_speed) and C(link_pcie) (trained below what both ends can do),
    C(link_fec), C(link_ber) (effective or raw bit error rate above its limit).
  - A port mlxlink cannot read (not installed, refused, timed out), or whose BER it prints as nan, inf or N/A or not
    at all, is finding C(link_unread) and is listed in RV(unread); it is never taken for a healthy port.
  - A node with no NVIDIA HCA to read (no C(mlx4_)/C(mlx5_) device in sysfs and none named) or without mlxlink is
    "not run" - RV(not_run) says why, and a C(link_unread) finding for the node carries it - never an empty, healthy
    looking result.
  - Discovery runs it when C(discovery_link_health) is set, and readiness shows its findings; the health monitor reads
    the same with its C(link_health) check, with the BER as metrics.
  - Read only; every command has a time limit and is killed with its children.
options:
  link_health:
    description:
      - V(true), or a mapping - C(tool) (mlxlink or a path to it), C(devices) (mlx5_N names, /dev/mst paths or PCI
        addresses; default every NVIDIA HCA in sysfs), C(port) (1, the default and the only port mlxlink reads on an
        HCA - a dual-port card is two devices, C(mlx5_0) and C(mlx5_1), each read on its port 1; any other value is
        refused), C(max_effective_ber) (default 1e-12), C(max_raw_ber) (default 1e-5).
    type: raw
    default: true
  sysfs_root:
    description: Where sysfs is (a captured tree in tests).
    type: path
    default: /sys
  node_name:
    description: The name findings give this node; the host name by default.
    type: str
extends_documentation_fragment:
  - gpufabric.rdma.command_timeout
notes:
  - Supports check mode (it only reads).
seealso:
  - module: gpufabric.rdma.node_health
"""

EXAMPLES = r"""
- name: Read each HCA port's BER, FEC and recommendation
  gpufabric.rdma.link_health:
    link_health:
      max_effective_ber: 1.0e-12
  register: links

- name: Show what mlxlink recommends
  ansible.builtin.debug:
    msg: "{{ links.findings | map(attribute='message') | list }}"
"""

RETURN = r"""
findings:
  description: One per port that is not healthy or not read (C(check), C(severity), C(target) host/device/port, C(message), C(fix)).
  returned: always
  type: list
  elements: dict
links:
  description: What mlxlink read per port (C(device) as C(mlx5_0/1), state, speed, width, FEC, recommendation, BERs, counters).
  returned: always
  type: list
  elements: dict
unread:
  description: The ports that could not be read, each with why.
  returned: always
  type: list
  elements: str
not_run:
  description: Why no link was read at all (no NVIDIA HCA on the node, mlxlink not installed); null when it ran.
  returned: always
  type: str
  sample: "no NVIDIA HCA (an mlx4_ or mlx5_ RDMA device) on this node: no link was read"
refused:
  description: True when O(link_health) was refused (the message names the value); discovery stops on it.
  returned: failed
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, node_checks, sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import link_health


def main():
    module = AnsibleModule(
        argument_spec=dict(
            link_health=dict(type="raw", default=True),
            sysfs_root=dict(type="path", default="/sys"),
            node_name=dict(type="str"),
            **commands.ARGUMENT_SPEC
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        link_health.check_options(params["link_health"])
        runner = commands.Runner(commands.check_timeout(params["command_timeout"]))
    except (link_health.LinkHealthError, ValueError) as exc:
        module.fail_json(msg=str(exc), refused=True)
    host = params["node_name"] or os.uname()[1]
    unread = []
    result = node_checks.read_links(host, params["link_health"], runner, sysfs.read_rdma_devices(params["sysfs_root"]),
                                    unread)
    module.exit_json(changed=False, findings=result["findings"], links=result["links"], unread=unread,
                     not_run=result["not_run"])


if __name__ == "__main__":
    main()
