#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nccl_inspector
short_description: Read a running job's NCCL Inspector dumps on a node, and the GPU of each of its processes
version_added: 0.9.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Reads the files NCCL's Inspector profiler plugin (NCCL 2.28 and later, C(NCCL_PROFILER_PLUGIN) with
    C(NCCL_INSPECTOR_ENABLE=1); the P(gpufabric.rdma.nccl#role) role builds it, P(gpufabric.rdma.nccl_env#role)
    switches it on) wrote into O(path) on this node - C(<host>-pid<pid>.log) (JSON lines, one per process) and
    C(nccl_inspector_metrics_<uuid>.prom) (Prometheus textfiles, one per GPU) - and returns them read (the filter
    P(gpufabric.rdma.parse_nccl_inspector#filter)'s result), bounded in memory on a long job - each file's last
    O(max_bytes), at most O(max_files) files, and the reader's O(limits).
  - Asks C(nvidia-smi) which GPU each process computes on, so a straggler is named with its GPU (and, with the
    node's GPU-to-NIC map, the NIC its rail uses).
  - Reads only; check mode runs the same. A missing directory is not a failure - RV(read) is false, saying why (the
    job did not run with the Inspector here) - unknown, never healthy.
  - The playbook C(gpufabric.rdma.slow) runs it on every node of a job, then judges the ranks with the filter
    P(gpufabric.rdma.nccl_stragglers#filter).
options:
  path:
    description:
      - The Inspector's dump directory of the job on this node (C(NCCL_INSPECTOR_DUMP_DIR)); the collection's jobs
        write into C(<gpufabric_nccl_inspector_dump_root>/<job id>).
    type: path
    required: true
  job:
    description: Keep only the Prometheus samples of this Slurm job (their C(slurm_job_id) label).
    type: str
  pids:
    description: Read only the JSON files of these processes (C(<host>-pid<pid>.log)), where jobs share a directory.
    type: list
    elements: int
  max_bytes:
    description: Bytes read from the end of each file (the latest collectives); 4096 to 1073741824.
    type: int
    default: 8388608
  max_files:
    description: Files read at most, the most recently written first; 1 to 65536.
    type: int
    default: 256
  limits:
    description:
      - The reader's bounds (C(max_communicators), C(max_collectives) per communicator, C(max_samples) in all,
        C(max_buckets), C(max_object_bytes), C(max_problems)); what they leave out is counted in C(parsed.dropped).
    type: dict
    default: {}
  placement:
    description: Ask C(nvidia-smi) which GPU each process computes on.
    type: bool
    default: true
  nvidia_smi_path:
    description: The C(nvidia-smi) to ask.
    type: str
    default: nvidia-smi
extends_documentation_fragment:
  - gpufabric.rdma.command_timeout
attributes:
  check_mode:
    support: full
    description: It only reads.
  diff_mode:
    support: none
    description: It changes nothing, so there is no diff.
seealso:
  - module: gpufabric.rdma.nccl_ras
"""

EXAMPLES = r"""
- name: Read job 4242's Inspector dumps on each of its nodes
  gpufabric.rdma.nccl_inspector:
    path: /var/lib/gpufabric/nccl-inspector/4242
  register: dumps
"""

RETURN = r"""
read:
  description: Whether the dumps could be read; false with RV(msg) saying why (no directory, not listable, not the
    Inspector's).
  returned: always
  type: bool
msg:
  description: One line - the files read and the records in them, or why nothing was read.
  returned: always
  type: str
files:
  description: Each file read - C(name), C(size), C(read_bytes), C(cut) (its head left out), C(error).
  returned: always
  type: list
  elements: dict
files_left_out:
  description: Files beyond O(max_files), not read.
  returned: always
  type: int
hostnames:
  description: The host names the Inspector wrote in the files (each process's C(gethostname)).
  returned: always
  type: list
  elements: str
parsed:
  description: The files read (P(gpufabric.rdma.parse_nccl_inspector#filter)'s result); null when not read.
  returned: always
  type: dict
processes:
  description: The GPU each process of the node computes on, C(pid) -> C(index) (nvidia-smi's) and C(bus_id).
  returned: always
  type: dict
placement_problem:
  description: Why the GPUs of the processes are not known (no C(nvidia-smi), it failed, or no pid matches); null
    when known.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import nccl_inspector as dumps
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_inspector


def _checked(module):
    """The options checked before anything is read: the message names the value and what would be right."""
    p = module.params
    if not 4096 <= p["max_bytes"] <= 1 << 30:
        module.fail_json(msg="max_bytes must be 4096 to 1073741824 bytes, got %d" % p["max_bytes"])
    if not 1 <= p["max_files"] <= 65536:
        module.fail_json(msg="max_files must be 1 to 65536, got %d" % p["max_files"])
    if any(pid < 1 for pid in p["pids"] or []):
        module.fail_json(msg="pids must be process ids (1 or more), got %s" % p["pids"])
    try:
        return nccl_inspector.check_limits(p["limits"])
    except ValueError as exc:
        module.fail_json(msg="limits: %s" % exc)


def main():
    argument_spec = dict(
        path=dict(type="path", required=True),
        job=dict(type="str"),
        pids=dict(type="list", elements="int"),
        max_bytes=dict(type="int", default=dumps.MAX_BYTES),
        max_files=dict(type="int", default=dumps.MAX_FILES),
        limits=dict(type="dict", default={}),
        placement=dict(type="bool", default=True),
        nvidia_smi_path=dict(type="str", default="nvidia-smi"),
    )
    argument_spec.update(commands.ARGUMENT_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    limits = _checked(module)
    runner = commands.module_runner(module) if module.params["placement"] else None
    p = module.params
    result = dumps.read_job(p["path"], runner, p["job"], p["pids"], p["max_bytes"], p["max_files"], limits,
                            p["nvidia_smi_path"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
