#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nccl_ras
short_description: Ask a running NCCL job, through NCCL's RAS port, what is wrong with it
version_added: 0.9.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Every process of an NCCL 2.24 (or later) job runs a RAS thread, and one per node listens on C(NCCL_RAS_ADDR)
    (C(localhost:28028) unless set). This module speaks NCCL's protocol to it (C(CLIENT PROTOCOL 2), optionally
    C(TIMEOUT), then C(VERBOSE STATUS) or C(STATUS)), as C(ncclras) does, with the standard library - nodes rarely
    have C(ncclras).
  - The reply is read (P(gpufabric.rdma.parse_nccl_ras#filter)) into RV(status) and RV(suspects) - the ranks NCCL
    singled out, behind the others, aborted, in error, missing or dead, each with its node, GPU and process.
  - A node where no job answers is not an error of the module - RV(answered) is false, with RV(stage) and RV(kind)
    (C(refused) - nothing listens, no NCCL job with RAS on this node; C(timeout) - the job stopped answering) - so
    a play can ask the next node of the job. It is never taken for a healthy job.
  - Only a loopback address unless O(allow_remote) - the port answers anyone who connects. Read only; every step
    has a deadline and the reply a size limit.
options:
  host:
    description: The address of the RAS port; a loopback address or C(localhost) unless O(allow_remote).
    type: str
    default: localhost
  port:
    description: The RAS client port (C(NCCL_RAS_ADDR)'s port).
    type: int
    default: 28028
  timeout:
    description: Seconds the whole exchange may take (1 to 600).
    type: int
    default: 60
  collective_timeout:
    description:
      - Seconds NCCL waits for the other nodes' answers before it reports them missing (C(TIMEOUT)); NCCL's own
        default (5 s per step) when unset. Must leave 5 s within O(timeout).
    type: int
  verbose:
    description: Ask C(VERBOSE STATUS) (every outlier rank listed) rather than C(STATUS).
    type: bool
    default: true
  reply_format:
    description: C(text) (NCCL 2.24 and later) or C(json) (newer NCCL only).
    type: str
    choices: [text, json]
    default: text
  allow_remote:
    description: Allow a O(host) that is not a loopback address.
    type: bool
    default: false
notes:
  - Supports check mode (it only reads).
seealso:
  - name: NCCL RAS
    description: NCCL's documentation of its RAS subsystem and the ncclras client.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/ras.html
"""

EXAMPLES = r"""
- name: Ask the job running on this node which rank it waits for
  gpufabric.rdma.nccl_ras:
    collective_timeout: 10
  register: ras

- name: Name the suspects
  ansible.builtin.debug:
    msg: "{{ ras.suspects | map(attribute='why') | list if ras.answered else 'no NCCL job answered: ' ~ ras.msg }}"
"""

RETURN = r"""
answered:
  description: Whether a job answered with a status that could be read.
  returned: always
  type: bool
msg:
  description: Why there is no status (which step, what happened), or a summary of the status.
  returned: always
  type: str
stage:
  description: The step that failed (connect, handshake, timeout, format, status, read) when RV(answered) is false.
  returned: when not answered
  type: str
kind:
  description: What happened at that step - refused, timeout, closed, protocol, error or unreadable.
  returned: when not answered
  type: str
text:
  description: The reply as NCCL sent it.
  returned: when a reply came
  type: str
status:
  description: The reply read (P(gpufabric.rdma.parse_nccl_ras#filter)).
  returned: when answered
  type: dict
suspects:
  description: The ranks NCCL singled out (rank, node, gpu, nvml_gpu, pid, kind, why).
  returned: always
  type: list
  elements: dict
seconds:
  description: How long the exchange took.
  returned: when a reply came
  type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import nccl_ras as client
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_ras


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", default="localhost"),
            port=dict(type="int", default=client.RAS_PORT),
            timeout=dict(type="int", default=60),
            collective_timeout=dict(type="int"),
            verbose=dict(type="bool", default=True),
            reply_format=dict(type="str", choices=["text", "json"], default="text"),
            allow_remote=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not 1 <= p["timeout"] <= 600:
        module.fail_json(msg="timeout must be 1 to 600 seconds, got %d" % p["timeout"])
    if p["collective_timeout"] is not None and p["collective_timeout"] < 0:
        module.fail_json(msg="collective_timeout must not be negative, got %d" % p["collective_timeout"])
    try:
        reply = client.query(p["host"], p["port"], timeout=p["timeout"], verbose=p["verbose"],
                             collective_timeout=p["collective_timeout"], allow_remote=p["allow_remote"],
                             reply_format=p["reply_format"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except client.RasError as exc:
        module.exit_json(changed=False, answered=False, stage=exc.stage, kind=exc.kind, msg=str(exc), suspects=[])
    try:
        status = nccl_ras.parse_nccl_ras(reply["text"])
    except nccl_ras.NcclRasError as exc:
        module.exit_json(changed=False, answered=False, stage="read", kind="unreadable", msg=str(exc), suspects=[],
                         text=reply["text"], seconds=reply["seconds"])
    if reply["truncated"]:
        status["complete"] = False
    trouble = [c for c in status["communicators"] if c.get("problem")]
    summary = ("%d suspect(s): %s" % (len(status["suspects"]), "; ".join(
        "rank %s on %s GPU %s: %s" % (s["rank"], s["node"], s["nvml_gpu"], s["why"]) for s in status["suspects"][:5]))
        if status["suspects"] else "%d communicator(s) in trouble, no rank singled out" % len(trouble) if trouble
        else "no communicator in trouble")
    module.exit_json(changed=False, answered=True, msg=summary, text=reply["text"], status=status,
                     suspects=status["suspects"], seconds=reply["seconds"])


if __name__ == "__main__":
    main()
