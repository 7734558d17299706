#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_port_counters
short_description: Read every RDMA port's data counters, for a before/after reading around a run
version_added: 0.1.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Reads sysfs C(counters/port_xmit_data) and C(port_rcv_data) of every port under C(/sys/class/infiniband)
    (32-bit words, so bytes are the value x 4, per the kernel's Documentation/ABI/stable/sysfs-class-infiniband) and the byte
    counters a driver keeps in C(hw_counters) (C(tx_bytes), C(rx_bytes), C(send_bytes), C(recv_bytes), ...).
  - For an eRDMA device with no such counter, runs C(eadm stat -d <device>) (Alibaba Cloud, seed 002) when
    C(eadm) is installed; its totals are rounded to the digits it prints (C(11.06 GiB)).
  - Returns readings only and sets no fact; P(gpufabric.rdma.port_counter_deltas#filter) turns two readings into
    bytes per port, and role P(gpufabric.rdma.nccl_tests#role) reads them before and after each mpirun run.
  - Read-only; supports check mode. A device whose counters cannot be read is left out with a warning.
extends_documentation_fragment:
  - gpufabric.rdma.sysfs_root
  - gpufabric.rdma.command_timeout
seealso:
  - module: gpufabric.rdma.rdma_devices
"""

EXAMPLES = r"""
- name: Read the ports' data counters before the run
  gpufabric.rdma.rdma_port_counters:
  register: before

- name: Read them after
  gpufabric.rdma.rdma_port_counters:
  register: after

- name: Bytes per port, and the ports that carried nothing
  ansible.builtin.debug:
    msg: "{{ before.counters | gpufabric.rdma.port_counter_deltas(after.counters) }}"
"""

RETURN = r"""
counters:
  description:
    - Each port's data counters by C(device/port); sysfs words as read, C(eadm) readings in bytes
      (C(tx_bytes), C(rx_bytes)).
  returned: always
  type: dict
  sample:
    mlx5_0/1: {port_xmit_data: 230442669431839, port_rcv_data: 230539874932483}
    erdma_0/1: {tx_bytes: 12004433592, rx_bytes: 11875584573}
"""


from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.eadm import parse_eadm_stat


def read_counters(module, runner, sysfs_root):
    """sysfs data counters; eadm stat for an eRDMA device whose ports show none (a warning when it cannot be read)."""
    readings = sysfs.read_data_counters(sysfs_root)
    erdma = [d["name"] for d in sysfs.read_rdma_devices(sysfs_root) if d.get("transport") == "eRDMA"
             and not any(key.startswith(d["name"] + "/") for key in readings)]
    eadm = runner.which("eadm") if erdma else None
    for name in erdma:
        if not eadm:
            module.warn("%s: no data counter in sysfs and eadm is not installed: its bytes stay unknown" % name)
            continue
        result = runner.run([eadm, "stat", "-d", name])
        if not result.ok:
            module.warn("%s; the bytes of %s stay unknown" % (result.describe(), name))
            continue
        try:
            stat = parse_eadm_stat(result.stdout)
        except ValueError as exc:   # ToolTextError, TextError: the text is not eadm's
            module.warn("eadm stat -d %s: %s; its bytes stay unknown" % (name, exc))
            continue
        values = dict((k, stat[k]) for k in ("tx_bytes", "rx_bytes") if isinstance(stat.get(k), int))
        if values:
            readings["%s/1" % name] = values
        else:
            module.warn("eadm stat -d %s printed no byte totals; its bytes stay unknown" % name)
    return readings


def main():
    module = AnsibleModule(
        argument_spec=dict(sysfs_root=dict(type="path", default="/sys"), **commands.ARGUMENT_SPEC),
        supports_check_mode=True,
    )
    runner = commands.module_runner(module)
    sysfs_root = sysfs.checked_root(module)
    module.exit_json(changed=False, counters=read_counters(module, runner, sysfs_root))


if __name__ == "__main__":
    main()
