#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: dcgm_diag
short_description: Run a DCGM diagnostic level on the node and judge it
version_added: 0.3.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Runs C(dcgmi diag -r <level>) (DCGM 3.x or 4.x, through the node's host engine or the one O(hostengine) names)
    with a time limit per level, kills it and its children when the limit passes, reads its table
    (P(gpufabric.rdma.parse_dcgmi_diag#filter)) and judges it.
  - C(status) is C(pass), C(fail) (each failing GPU a critical finding in DCGM's words), C(warn), or C(not run)
    (dcgmi missing, no host engine, timed out, an error instead of a table, a cut table, every test skipped). A run
    that could not run never passes a node and never condemns one.
  - Level 1 takes seconds, level 2 about two minutes, level 3 about half an hour, level 4 one to two hours, and levels
    2 and up load the GPUs - run them on a node that is out of service (drained) or before it enters service.
  - A run is a pass only when it covered the node - a result for every GPU it has (O(expected_gpus)) or that
    O(gpu_ids) asked for, every result readable - and dcgmi exited 0; otherwise it is C(not run), naming the gap
    (an exit status that is not 0 after a table with a failing test is that failure).
  - In check mode nothing runs (C(status) C(not run), C(planned) true, saying so), as the diagnostic stresses the GPUs.
options:
  level:
    description: The diagnostic level, 1 to 4.
    type: int
    required: true
  gpu_ids:
    description: The GPUs to test (C(-i)); all when empty.
    type: list
    elements: int
    default: []
  timeout:
    description:
      - Seconds the run, and the reading of what it printed, may take before it is killed (1 to 21600); default by
        level (300, 1200, 5400, 14400).
    type: int
  expected_gpus:
    description:
      - How many GPUs the node has (its record, for example C(health_monitor_checks.expected_gpu_count), or
        C(gpufabric_expected_gpu_count)). A run that gave results for fewer is not a pass (C(not run), naming the GPUs
        it tested). Unset, the run is judged on the GPUs DCGM saw.
    type: int
  dcgmi_path:
    description: Path of C(dcgmi); default the one on C(PATH).
    type: path
  hostengine:
    description: C(host[:port]) of the DCGM host engine (C(--host)); default the node's own.
    type: str
  parameters:
    description:
      - Test parameters (C(-p)), as C(test.parameter) to value, for example C(pcie.gpu_nvlinks_expected_up) 18.
    type: dict
    default: {}
seealso:
  - module: gpufabric.rdma.node_health
"""

EXAMPLES = r"""
- name: Level 2 on a drained node
  gpufabric.rdma.dcgm_diag:
    level: 2
  register: diag

- name: Name what failed
  ansible.builtin.debug:
    msg: "{{ diag.failures }}"
  when: diag.status == 'fail'
"""

RETURN = r"""
status:
  description: pass, fail, warn or not run.
  returned: always
  type: str
  sample: fail
level:
  description: The level that ran.
  returned: always
  type: int
reason:
  description: Why the run gave no verdict (C(not run)), in the tool's words.
  returned: always
  type: str
failures:
  description: Each failure, C(test) (category/name), C(gpu) (null for the node as a whole) and C(message) (DCGM's words).
  returned: always
  type: list
  elements: dict
  sample: [{"test": "Stress/Targeted Power", "gpu": 1, "message": "GPU 1 Max power of 224.1 did not reach ..."}]
skipped:
  description: The tests DCGM skipped.
  returned: always
  type: list
  elements: str
findings:
  description: The findings (check C(dcgm_diag) or C(dcgm_diag_not_run)), as every report of the collection shows them.
  returned: always
  type: list
  elements: dict
diag:
  description: The parsed output (P(gpufabric.rdma.parse_dcgmi_diag#filter)'s result), null when nothing was read.
  returned: always
  type: dict
command:
  description: The command line that ran.
  returned: always
  type: list
  elements: str
exit_status:
  description: dcgmi's exit status (null when it did not run or was killed); a failing test exits non-zero too.
  returned: always
  type: int
timeout:
  description: The time limit the run had (seconds), the level's unless O(timeout) set one.
  returned: always
  type: int
gpus:
  description: The GPUs the run gave a result for.
  returned: always
  type: list
  elements: int
expected_gpus:
  description: O(expected_gpus), as the run was judged against it.
  returned: always
  type: int
planned:
  description: True in check mode, where nothing ran by design (a plan, neither a pass nor a failure).
  returned: always
  type: bool
seconds:
  description: How long it ran.
  returned: always
  type: float
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import check_seconds
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import dcgm_diag
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import dcgmi as dcgmi_run

_HOST_RE = re.compile(r"^[A-Za-z0-9._:\[\]-]{1,255}$")
_PARAM_RE = re.compile(r"^[A-Za-z0-9_]{1,64}\.[A-Za-z0-9_]{1,64}$")
_VALUE_RE = re.compile(r"^[A-Za-z0-9_.,:/+-]{1,200}$")


def command(module, dcgmi, level):
    """The argv, every value checked: a host, a GPU id or a parameter that is not one fails naming it."""
    argv = [dcgmi, "diag", "-r", str(level)]
    if module.params["gpu_ids"]:
        if any(g < 0 or g > 1023 for g in module.params["gpu_ids"]):
            module.fail_json(msg="gpu_ids must be GPU indices from 0 to 1023, got %r" % (module.params["gpu_ids"],))
        argv += ["-i", ",".join(str(g) for g in module.params["gpu_ids"])]
    host = module.params["hostengine"]
    if host:
        if not _HOST_RE.match(host):
            module.fail_json(msg="hostengine must be host[:port], got %r" % (host[:80],))
        argv += ["--host", host]
    params = []
    for name, value in sorted((module.params["parameters"] or {}).items()):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if not _PARAM_RE.match(str(name)) or not _VALUE_RE.match(text):
            module.fail_json(msg="parameters must map test.parameter to a plain value, got %r: %r" % (name, value))
        params.append("%s=%s" % (name, text))
    if params:
        argv += ["-p", ";".join(params)]
    return argv


def main():
    module = AnsibleModule(
        argument_spec=dict(level=dict(type="int", required=True), gpu_ids=dict(type="list", elements="int", default=[]),
                           timeout=dict(type="int"), dcgmi_path=dict(type="path"), hostengine=dict(type="str"),
                           parameters=dict(type="dict", default={}), expected_gpus=dict(type="int")),
        supports_check_mode=True,
    )
    try:
        level = dcgm_diag.check_level(module.params["level"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    timeout = dcgm_diag.TIMEOUTS[level] if module.params["timeout"] is None else module.params["timeout"]
    try:
        check_seconds(timeout, "timeout", 1, dcgm_diag.MAX_TIMEOUT)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    expected = module.params["expected_gpus"]
    if expected is not None and not 1 <= expected <= 1024:
        module.fail_json(msg="expected_gpus must be the number of GPUs the node has, 1 to 1024, got %r" % (expected,))
    dcgmi = commands.Runner().which(module.params["dcgmi_path"] or "dcgmi")
    argv = command(module, dcgmi or module.params["dcgmi_path"] or "dcgmi", level)
    # exit_status, not rc: Ansible fails a task whose rc is not 0, and a run that did not end has none
    out = {"changed": False, "level": level, "command": argv, "timeout": timeout, "exit_status": None, "seconds": 0.0,
           "diag": None, "planned": module.check_mode}
    parsed, not_run = None, None
    if module.check_mode:
        not_run = "check mode: the diagnostic stresses the GPUs, so it runs only for real"
    else:
        parsed, not_run, result = dcgmi_run.diagnose(dcgmi, argv[1:], timeout, module.params["dcgmi_path"] or "dcgmi")
        if result is not None:
            out.update(exit_status=result.rc, seconds=round(result.seconds, 1))
    out["diag"] = parsed
    out.update(dcgm_diag.verdict(parsed, level, not_run, expected_gpus=expected, gpu_ids=module.params["gpu_ids"]))
    module.exit_json(**out)


if __name__ == "__main__":
    main()
