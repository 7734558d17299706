#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nccl_env
short_description: Compute, explain and optionally write the NCCL environment of a node
version_added: 0.1.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Chooses NCCL environment variables for a node from its RDMA devices and a profile, and
    says why each variable is there.
  - With O(dest) writes them as C(KEY=VALUE) lines (the format of C(/etc/nccl.conf), which NCCL
    reads at initialization); with O(profile_script) writes an C(/etc/profile.d) script that
    exports them. Files are only rewritten when their content changes.
  - Warns (Ansible warnings) about names NCCL does not know (typos such as C(NCCL_IB_GID_IDX),
    with the closest known name) and about contradictions such as C(NCCL_IB_DISABLE=1) with a
    non-empty C(NCCL_IB_HCA).
options:
  profile:
    description:
      - V(auto) picks V(erdma) when eRDMA devices exist, else V(roce) when a RoCE port is ACTIVE,
        else V(infiniband) when an InfiniBand port is ACTIVE, else V(socket).
      - V(acs_rdma_type1) and V(acs_rdma_type2) are the two Alibaba Cloud ACS RDMA NIC types
        (GU8TF/GU8TEF/GX8SF and P16EN); V(erdma) is the E-HPC eRDMA setting. These three
        reproduce the vendor documents exactly.
      - V(roce) sets C(NCCL_IB_HCA) to the ACTIVE RoCE ports and C(NCCL_IB_GID_INDEX) to the
        detected RoCE v2 GID; V(infiniband) the same without GID index; V(socket) disables IB.
    type: str
    default: auto
    choices: [auto, infiniband, roce, erdma, acs_rdma_type1, acs_rdma_type2, socket]
  socket_ifname:
    description:
      - C(NCCL_SOCKET_IFNAME) for the V(roce), V(infiniband) and V(socket) profiles.
      - Default is the interface of the IPv4 default route.
    type: str
  overrides:
    description: Variables to set last, whatever the profile says.
    type: dict
    default: {}
  unset:
    description: Variables to leave out.
    type: list
    elements: str
    default: []
  inspector:
    description:
      - Switch on NCCL's Inspector profiler plugin (NCCL 2.28 and later) for every NCCL process of the node, which
        writes each collective's time and bandwidth per communicator and rank (read by the playbook
        C(gpufabric.rdma.slow)). Off when not given.
      - C(plugin) - the plugin's C(libnccl-profiler-inspector.so) (the P(gpufabric.rdma.nccl#role) role builds it);
        C(dump_dir) - where a job that names no folder of its own writes (the collection's Slurm jobs and Kubernetes
        workloads write into C(<dump_dir>/<job>)), or with C(prom) node_exporter's textfile directory; C(prom) -
        Prometheus textfiles (NCCL 2.30 and later) instead of JSON lines; C(interval) - seconds between dumps while
        the job runs (1 for JSON lines, at least 30 for textfiles).
      - Sets C(NCCL_PROFILER_PLUGIN), C(NCCL_INSPECTOR_ENABLE), C(NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS),
        C(NCCL_INSPECTOR_DUMP_DIR) and with C(prom) C(NCCL_INSPECTOR_PROM_DUMP), each with its reason. The Inspector's
        variables are known to RV(reasons)' check of names (no typo warning).
    type: dict
  rdma_devices:
    description:
      - RDMA devices as returned by M(gpufabric.rdma.rdma_devices). Default is to discover them
        on the node from O(sysfs_root).
    type: list
    elements: dict
  gpu:
    description:
      - The node's GPUs as M(gpufabric.rdma.gpu_facts) returns them (C(ansible_facts.gpu), or the C(gpu) of the
        discovery record); what its NVLink calls for is added, each variable with its reason.
      - Where C(fabric) names a multi-node NVLink domain (a GB200/GB300 tray) - C(NCCL_MNNVL_ENABLE=1) (NCCL crosses
        between the domain's nodes over the NVLink fabric, and NCCL 2.21 to 2.25 stop rather than fall back to the
        network without it) and C(NCCL_CUMEM_ENABLE=1) (multi-node NVLink needs CUDA's cuMem allocations).
      - Where the GPUs are Grace superchips (GH200, GB200, GB300) whose C(topology) shows C(SYS) for every GPU-NIC
        pair (the NICs sit behind the Grace CPU, reached over NVLink-C2C) and the profile is an RDMA one -
        C(NCCL_NET_GDR_C2C=1) (NCCL 2.26 keeps GPUDirect RDMA off on that path without it; 2.27 and later default
        to 1).
      - O(overrides) and O(unset) still have the last word. Omitted or empty, nothing is added.
    type: dict
  sysfs_root:
    description:
      - Root of the sysfs tree read when O(rdma_devices) is not given.
      - It must be a directory with a C(class) directory in it (C(/sys), or a copy of one); anything else - a
        mistyped capture path - fails naming it, before anything is written, instead of choosing the V(socket)
        profile for want of devices. A sysfs tree without C(class/infiniband) (no RDMA driver loaded) is a node
        without RDMA devices.
    type: path
    default: /sys
  procfs_root:
    description:
      - Root of the proc tree (C(net/route) gives the default-route interface) read when O(socket_ifname) is not
        given; like O(sysfs_root), it must be a directory.
    type: path
    default: /proc
  dest:
    description:
      - Write C(KEY=VALUE) lines to this file (usually C(/etc/nccl.conf)). Its directory must exist; a directory
        or a missing directory fails before anything is written, in check mode too.
    type: path
  profile_script:
    description: Write an C(export) script to this file (usually C(/etc/profile.d/nccl.sh)); same rules as O(dest).
    type: path
  mode:
    description:
      - Permissions of the written files, octal (V("0644")) or symbolic (V(u=rw,go=r)).
      - Checked with every other option, before anything is written.
    type: raw
    default: "0644"
attributes:
  check_mode:
    support: full
    description: Nothing on the node changes in check mode; files are compared, not written.
  diff_mode:
    support: full
    description: Shows the old and new content of O(dest) and O(profile_script).
notes:
  - A variable name that is not an environment variable name, a value with a newline or a control character (it
    would add a line to C(/etc/nccl.conf)), or an O(rdma_devices) entry that is not a device fails naming it; the
    profile script quotes every value for the shell.
seealso:
  - module: gpufabric.rdma.rdma_devices
"""

EXAMPLES = r"""
- name: Show the NCCL environment this node should use, with reasons
  gpufabric.rdma.nccl_env:
  register: nccl

- name: Write /etc/nccl.conf for ACS type 1 nodes
  gpufabric.rdma.nccl_env:
    profile: acs_rdma_type1
    dest: /etc/nccl.conf

- name: RoCE with a fixed bootstrap interface, less logging, written for shells too
  gpufabric.rdma.nccl_env:
    profile: roce
    socket_ifname: bond0
    overrides:
      NCCL_DEBUG: WARN
    dest: /etc/nccl.conf
    profile_script: /etc/profile.d/nccl.sh
"""

RETURN = r"""
env:
  description: The variables, as strings.
  returned: always
  type: dict
  sample: {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_GID_INDEX": "3", "NCCL_SOCKET_IFNAME": "bond0"}
profile:
  description: The profile used (never V(auto)).
  returned: always
  type: str
  sample: roce
profile_reason:
  description: Why that profile.
  returned: always
  type: str
  sample: "RoCE devices with an ACTIVE port: mlx5_0"
reasons:
  description: "One line per variable: C(NAME=value), a colon, and why."
  returned: always
  type: list
  elements: str
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nccl
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.files import read_text, write_atomic


def _check_destination(module, name, path):
    """Fail before writing anything when path cannot be the file written (check mode too)."""
    if path is None:
        return
    if os.path.isdir(path):
        module.fail_json(msg="%s %s is a directory: give the path of the file to write" % (name, path))
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg="%s %s: directory %s does not exist" % (name, path, directory))


def _check_sysfs_root(module, root):
    """Fail when sysfs_root is no sysfs tree: a mistyped capture path would read as a node without RDMA devices,
    and the socket profile would be written for it."""
    if not os.path.exists(root):
        module.fail_json(msg="sysfs_root %s does not exist: expected the root of a sysfs tree (/sys, or a copy of "
                             "one), or give rdma_devices" % root)
    if not os.path.isdir(root):
        module.fail_json(msg="sysfs_root %s is not a directory: expected the root of a sysfs tree (/sys, or a copy "
                             "of one), or give rdma_devices" % root)
    if not os.path.isdir(os.path.join(root, "class")):
        module.fail_json(msg="sysfs_root %s has no class directory: expected the root of a sysfs tree (/sys, or a "
                             "copy of one), or give rdma_devices" % root)


def _check_procfs_root(module, root):
    """Fail when procfs_root is not a directory: NCCL_SOCKET_IFNAME would be left out without a word."""
    if not os.path.isdir(root):
        module.fail_json(msg="procfs_root %s %s: expected the root of a proc tree (/proc, or a copy of one), or give "
                             "socket_ifname" % (root, "is not a directory" if os.path.exists(root) else "does not exist"))


def _check_mode(module, mode):
    """Fail when mode is not a permission Ansible can set: checked before anything is written, as
    set_fs_attributes_if_different would only check it after the file is there. None leaves the mode alone."""
    if mode is None:
        return
    if isinstance(mode, bool) or not isinstance(mode, (int, str)):
        module.fail_json(msg="mode must be octal (such as 0644) or symbolic (such as u=rw,go=r), got %r" % (mode,))
    value = mode
    if not isinstance(mode, int):
        try:
            value = int(mode, 8)
        except ValueError:
            # Ansible's own parser of symbolic modes, on a stand-in regular file: only validity is asked.
            regular_file = os.stat_result((stat.S_IFREG | 0o644, 0, 0, 1, 0, 0, 0, 0, 0, 0))
            try:
                value = module._symbolic_mode_to_octal(regular_file, mode)
            except Exception:
                module.fail_json(msg="mode must be octal (such as 0644) or symbolic (such as u=rw,go=r), got %r"
                                 % (mode,))
    if value < 0 or value != stat.S_IMODE(value):
        module.fail_json(msg="mode %r is not a permission: give 0000 to 7777 (octal), such as 0644" % (mode,))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            profile=dict(type="str", default="auto", choices=list(nccl.PROFILES)),
            socket_ifname=dict(type="str"),
            overrides=dict(type="dict", default={}),
            unset=dict(type="list", elements="str", default=[]),
            inspector=dict(type="dict"),
            rdma_devices=dict(type="list", elements="dict"),
            gpu=dict(type="dict"),
            sysfs_root=dict(type="path", default="/sys"),
            procfs_root=dict(type="path", default="/proc"),
            dest=dict(type="path"),
            profile_script=dict(type="path"),
            mode=dict(type="raw", default="0644"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    # Every input is checked before anything is written, in check mode too.
    _check_mode(module, params["mode"])
    _check_destination(module, "dest", params["dest"])
    _check_destination(module, "profile_script", params["profile_script"])
    devices = params["rdma_devices"]
    if devices is None:
        _check_sysfs_root(module, params["sysfs_root"])
        devices = sysfs.read_rdma_devices(params["sysfs_root"])
    ifname = params["socket_ifname"]
    if not ifname:
        _check_procfs_root(module, params["procfs_root"])
        ifname = nccl.default_route_interface(read_text(os.path.join(params["procfs_root"], "net", "route")))
    try:
        result = nccl.compute_env(params["profile"], devices, ifname, params["overrides"], params["unset"],
                                  gpu=params["gpu"], inspector=params["inspector"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    for warning in result["warnings"]:
        module.warn(warning)

    files = []
    if params["dest"]:
        files.append((params["dest"], nccl.render_conf(result)))
    if params["profile_script"]:
        files.append((params["profile_script"], nccl.render_profile_script(result)))
    changed = False
    diffs = []
    for path, content in files:
        before = read_text(path)
        if before != content:
            changed = True
            diffs.append(dict(before=before or "", after=content, before_header=path, after_header=path))
            if not module.check_mode:
                write_atomic(module, path, content)
        if not module.check_mode and os.path.exists(path):
            file_args = module.load_file_common_arguments(dict(path=path, mode=params["mode"]))
            changed = module.set_fs_attributes_if_different(file_args, changed)

    # result["warnings"] already went out through module.warn(); the key is Ansible's own.
    output = dict(changed=changed, env=result["env"], profile=result["profile"],
                  profile_reason=result["profile_reason"], reasons=result["reasons"])
    if module._diff:
        output["diff"] = diffs
    module.exit_json(**output)


if __name__ == "__main__":
    main()
