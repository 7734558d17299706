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
  - A record is judged by its phase, never by itself. The phase declares the kinds of evidence it must observe
    (C(observes)) and the facts it publishes with their types (C(publishes)); a record that observes less, names an
    item it did not observe, or holds any other fact (C(inventory_hostname), C(hostvars), another role's setting) or a
    fact of another type is not trusted. So is a record that is a symbolic link, a FIFO, a device or a directory, or
    larger than 1 MiB; it is read without following links, never blocking and bounded. Such a record is drift - the
    phase runs, and the reason names the record's path and what is wrong - and it is left where it is for a person.
  - Evidence files are read the same way (links followed, as C(mpirun) is one); one that is not a regular file, or
    larger than 64 MiB, is observed as unknown, which is drift.
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
      - The phase's declaration (P(gpufabric.rdma.phase_entry#filter) adds it). C(observes) lists the kinds of
        evidence of which a record must observe at least one item each; C([]) says the phase may observe nothing;
        left out, a record must observe at least one item of some kind. C(publishes) maps each fact the phase
        publishes to its type (C(str), C(path) - an absolute path -, C(int), C(bool), C(list), C(dict)); no name of
        Ansible's (C(ansible_*), C(inventory_hostname), C(hostvars), C(omit), ...). Left out, it publishes nothing.
      - O(state=record) refuses C(facts) the phase does not publish, and does not write a record whose evidence
        lacks what it must observe (see RV(not_recorded)).
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
  - configure.yml declares, for each of its phases, what it must observe and publishes, and gives every phase it
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
        observes: [files]
  register: applied

- name: Record what the phase applied
  gpufabric.rdma.applied:
    state: record
    phases:
      - name: nccl_env
        fingerprint: "{{ {'nccl_env_profile': 'auto'} | gpufabric.rdma.phase_fingerprint('nccl_env') }}"
        observes: [files]
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
  sample:
    network: "drift since it was applied: interface rdma0: would change: mtu 1500 -> 9000"
    mpi: "its record cannot be used: /var/lib/gpufabric-applied/mpi.json: fact inventory_hostname is not one phase mpi publishes (openmpi_home, openmpi_mpirun)"
facts:
  description: What the unchanged phases published when they ran (e.g. openmpi_mpirun), to set again; only the facts
    each phase publishes, of their declared types.
  returned: state=check
  type: dict
phases:
  description: The phases compared (name, fingerprint, observes, publishes), for O(state=record) at the end of the
    play, where the settings in scope may include the roles' defaults.
  returned: state=check
  type: list
  elements: dict
recorded:
  description: The phases whose record was written (or would be, in check mode).
  returned: state=record
  type: list
  elements: str
not_recorded:
  description: The phases whose evidence lacks what they must observe, each with why; no record is written and an
    older one is removed (in check mode, only said), so the phase runs again next time. Each is also a warning.
  returned: state=record
  type: dict
  sample: {"peermem": "it observes no files, which phase peermem must observe: it runs again next time"}
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import ownership
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import applied, commands, statefile

OWNER = "applied"


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
            held, why, given = applied.assess(phase, os.path.join(directory, phase["name"] + ".json"), runner, cache)
            if held:
                unchanged.append(phase["name"])
                facts.update(given)
            else:
                run[phase["name"]] = why
        module.exit_json(changed=False, unchanged=unchanged, run=run, run_phases=sorted(run), facts=facts,
                         phases=[applied.declaration(p) for p in phases])

    recorded, not_recorded, diffs, changed = [], {}, [], False
    for phase in phases:
        path = os.path.join(directory, phase["name"] + ".json")
        missing = applied.missing_observation(phase, phase["evidence"])
        if missing:   # and an older record goes: what the phase applied now is not what it observed
            not_recorded[phase["name"]] = missing + ": it runs again next time"
            if os.path.lexists(path):
                changed = True
                diffs.append({"before_header": path, "after_header": path + " (removed)", "before": "", "after": ""})
                if not module.check_mode:
                    try:
                        statefile.remove_owned(directory, phase["name"] + ".json")
                    except statefile.StateError as exc:
                        module.fail_json(msg="removing the record of phase %s: %s" % (phase["name"], exc), recorded=recorded)
            continue
        observed = applied.observe(phase["evidence"], runner, cache=cache)
        record = {"fingerprint": phase["fingerprint"], "evidence": phase["evidence"], "facts": phase["facts"],
                  "observed": observed}
        try:
            before = statefile.read_json(path, limit=applied.MAX_RECORD)
        except statefile.StateError:   # damaged, a link, not a file: replaced below (the rename replaces the entry)
            before = None
        if isinstance(before, dict) and dict((k, v) for k, v in before.items() if k != "recorded_at") == record:
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
    for name in sorted(not_recorded):
        module.warn("phase %s is not recorded: %s" % (name, not_recorded[name]))
    result = dict(changed=changed, recorded=recorded, not_recorded=not_recorded)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
