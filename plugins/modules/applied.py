#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: applied
short_description: Record what a configuration phase applied, and say whether it still holds
version_added: 0.9.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - The steady state of configure.yml (and site.yml) in one task per node. Each phase (drivers, network, peermem,
    mpi, nccl_env) that ran leaves a record in O(dir) with the fingerprint of its inputs and the evidence of what
    it applied, as observed right after it ran; the next run observes the same evidence again and skips a phase
    only when nothing differs.
  - Evidence is the phase's own. V(files) (content and mode), V(links) (the symlinks that enable units),
    V(packages) (installed version, from dpkg's status file or rpm), V(modules) (loaded kernel modules), and
    V(netdev) (rdma_netdev's arguments; the interface is read and planned again as rdma_netdev does, and any
    planned change is drift).
  - A file edited by hand, a package removed, a module unloaded, an interface whose MTU or QoS moved, a changed
    setting or a new collection version makes the phase run, and the reason is returned. Anything that cannot be
    observed counts as a difference, never as a match.
  - O(state=check) changes nothing (so it runs the same in check mode). O(state=record) writes the records of the
    phases given; in check mode it writes nothing and says what it would write; with diff, the records' diff.
  - The directory is created with an ownership marker and only its own C(<phase>.json) files are written.
options:
  state:
    description: V(check) compares, V(record) writes what the phases applied.
    type: str
    choices: [check, record]
    default: check
  phases:
    description:
      - One entry per phase. C(name) (lowercase letters, digits, _), C(fingerprint) (64 hex digits, from the
        P(gpufabric.rdma.phase_fingerprint#filter) filter), and for O(state=record) C(evidence) (a dict of
        C(files), C(links), C(packages), C(modules), C(netdev)) and C(facts) (what the phase published, returned
        again while it is skipped).
    type: list
    elements: dict
    required: true
  dir:
    description: Where the records are kept.
    type: path
    default: /var/lib/gpufabric-applied
  command_timeout:
    description: Seconds each command (rpm, ip, mlnx_qos, dcb) may take before it is killed.
    type: int
    default: 30
notes:
  - A phase recorded without evidence is still compared by its fingerprint; configure.yml gives every phase it
    skips evidence of what the phase writes.
seealso:
  - module: gpufabric.rdma.rdma_netdev
"""

EXAMPLES = r"""
- name: Which phases still hold as applied
  gpufabric.rdma.applied:
    phases:
      - name: nccl_env
        fingerprint: "{{ {'nccl_env_profile': 'auto'} | gpufabric.rdma.phase_fingerprint('nccl_env') }}"
  register: applied

- name: Record what the phase applied
  gpufabric.rdma.applied:
    state: record
    phases:
      - name: nccl_env
        fingerprint: "{{ {'nccl_env_profile': 'auto'} | gpufabric.rdma.phase_fingerprint('nccl_env') }}"
        evidence: {files: [/etc/nccl.conf]}
"""

RETURN = r"""
unchanged:
  description: The phases that still hold as applied (may be skipped).
  returned: state=check
  type: list
  elements: str
run:
  description: The phases that must run, each with why.
  returned: state=check
  type: dict
  sample: {"network": "drift since it was applied: interface rdma0: would change: mtu 1500 -> 9000"}
facts:
  description: What the unchanged phases published when they ran (e.g. openmpi_mpirun), to set again.
  returned: state=check
  type: dict
phases:
  description: The phases compared (name, fingerprint), for O(state=record) at the end of the play, where the
    settings in scope may include the roles' defaults.
  returned: state=check
  type: list
  elements: dict
recorded:
  description: The phases whose record was written (or would be, in check mode).
  returned: state=record
  type: list
  elements: str
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import ownership
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import applied, commands, statefile

OWNER = "applied"


def _record_shape(data):
    if not isinstance(data, dict) or not isinstance(data.get("observed"), dict):
        raise ValueError("no observed evidence")
    return data


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["check", "record"], default="check"),
            phases=dict(type="list", elements="dict", required=True),
            dir=dict(type="path", default="/var/lib/gpufabric-applied"),
            **commands.ARGUMENT_SPEC
        ),
        supports_check_mode=True,
    )
    directory = module.params["dir"]
    refused = ownership.refused_directory(directory)
    if refused:
        module.fail_json(msg="dir: %s" % refused)
    try:
        phases = [applied.check_phase(phase) for phase in module.params["phases"]]
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    runner = commands.module_runner(module)
    owner = statefile.owner_of(directory)
    if owner not in (None, OWNER):
        module.fail_json(msg="%s exists and is not gpufabric's record of applied phases (%s): choose another dir"
                         % (directory, "its marker names %s" % owner if owner else "it has no marker"))

    cache = {}   # what several phases read alike (dpkg's status file), read once this run
    if module.params["state"] == "check":
        unchanged, run, facts = [], {}, {}
        for phase in phases:
            try:
                record, warning = statefile.load_json(os.path.join(directory, phase["name"] + ".json"),
                                                      check=_record_shape, set_aside=False)
            except statefile.StateError as exc:
                record, warning = None, str(exc)
            if warning:
                run[phase["name"]] = "its record cannot be used: %s" % warning
                continue
            now = applied.observe((record or {}).get("evidence") or {}, runner, cache=cache) if record else {}
            same, why = applied.judge(phase, record, now)
            if same:
                unchanged.append(phase["name"])
                facts.update(applied.published(record))
            else:
                run[phase["name"]] = why
        module.exit_json(changed=False, unchanged=unchanged, run=run, run_phases=sorted(run), facts=facts,
                         phases=[{"name": p["name"], "fingerprint": p["fingerprint"]} for p in phases])

    recorded, diffs, changed = [], [], False
    for phase in phases:
        path = os.path.join(directory, phase["name"] + ".json")
        observed = applied.observe(phase["evidence"], runner, cache=cache)
        record = {"fingerprint": phase["fingerprint"], "evidence": phase["evidence"], "facts": phase["facts"],
                  "observed": observed}
        try:
            before, _warning = statefile.load_json(path, check=_record_shape, set_aside=False)
        except statefile.StateError:
            before = None
        if before is not None and dict((k, v) for k, v in before.items() if k != "recorded_at") == record:
            continue
        record["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        changed = True
        recorded.append(phase["name"])
        text = json.dumps(record, indent=1, sort_keys=True)
        diffs.append({"before_header": path, "after_header": path,
                      "before": json.dumps(before, indent=1, sort_keys=True) + "\n" if before else "", "after": text + "\n"})
        if not module.check_mode:
            try:
                statefile.write_owned(directory, phase["name"] + ".json", text.encode("utf-8"), owner=OWNER)
            except statefile.StateError as exc:
                module.fail_json(msg="recording phase %s: %s" % (phase["name"], exc), recorded=recorded[:-1])
    result = dict(changed=changed, recorded=recorded)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
