#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: validation_record
short_description: Read, write or set aside a node's record of its last validation
version_added: 0.9.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - site.yml validates what changed. Each node it measured keeps the record of that validation in O(dir)
    (C(validation.json)) - its node name, the date, the verdict, its figures, the failures, and the fingerprints of the
    hardware (discovery's record) and the configuration it was measured on. The next site.yml run reads it and measures the node again only
    when the record no longer proves it passes (filter P(gpufabric.rdma.validation_plan#filter)).
  - O(state=read) changes nothing (it runs the same in check mode) and returns the record, or why it cannot be used. The
    record is read without following links, never blocking and bounded (1 MiB); one that is a link, a FIFO, a device, a
    directory, larger, not JSON or not the shape a record has is never used - RV(problem) names its path and what is
    wrong - and is left where it is for a person; the next record replaces it (a link is replaced, never written
    through).
  - O(state=record) writes O(record) (checked first, the same shape a read accepts); O(state=absent) sets the record
    aside (removes it) before a node is measured again, so a run that fails or stops part way leaves no record that
    says the node passed. In check mode both write nothing and say what they would do; with diff, the record's diff.
  - The directory is created with an ownership marker, mode C(0700), and only its C(validation.json) is written.
options:
  state:
    description: V(read) the record, V(record) write O(record), V(absent) remove the record.
    type: str
    choices: [read, record, absent]
    default: read
  record:
    description:
      - The record to write (O(state=record)), as filter P(gpufabric.rdma.node_validation#filter) makes it - C(schema),
        C(node), C(validated_at) (C(YYYY-MM-DDTHH:MM:SSZ), UTC), C(passed), C(hardware) and C(configuration)
        (fingerprints, 64 hex digits), C(figures) (C(nccl_tests) and C(perftest), each a list of C(label), C(value),
        C(unit), C(passed)) and C(failures).
    type: dict
  dir:
    description: Where the record is kept.
    type: path
    default: /var/lib/gpufabric-validated
seealso:
  - module: gpufabric.rdma.applied
"""

EXAMPLES = r"""
- name: Read the node's last validation
  gpufabric.rdma.validation_record:
  register: validation_read

- name: Set the record aside before the node is measured again
  gpufabric.rdma.validation_record:
    state: absent
"""

RETURN = r"""
record:
  description: The record (O(state=read)), null when there is none or it cannot be used.
  returned: always
  type: dict
problem:
  description: Why the record cannot be used (its path and what is wrong), null when it can or there is none.
  returned: always
  type: str
  sample: "/var/lib/gpufabric-validated/validation.json: it is a FIFO, not a regular file"
path:
  description: The record's path.
  returned: always
  type: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import ownership
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation_record as records
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile

OWNER = "validated"
NAME = "validation.json"


def _read(path):
    """(record, problem): (None, None) when there is none."""
    try:
        return statefile.read_json(path, check=records.check_record, limit=records.MAX_RECORD), None
    except statefile.StateError as exc:
        text = str(exc)
        return None, text if text.startswith(path) else "%s: %s" % (path, text)


def _text(data):
    return json.dumps(data, indent=1, sort_keys=True) + "\n" if data is not None else ""


def _change(module, directory, path, record):
    """Write ``record`` (None: remove the record), only on a difference; the result to return."""
    before, _problem = _read(path)
    there = os.path.lexists(path)
    if record is not None and before == record or record is None and not there:
        return dict(changed=False, record=before, problem=None, path=path)
    result = dict(changed=True, record=record, problem=None, path=path)
    if module._diff:
        result["diff"] = {"before_header": path, "after_header": path, "before": _text(before), "after": _text(record)}
    if module.check_mode:
        return result
    try:
        if record is None:
            statefile.remove_owned(directory, NAME)
        else:
            statefile.write_owned(directory, NAME, _text(record).encode("utf-8"), owner=OWNER)
    except statefile.StateError as exc:
        module.fail_json(msg="%s the validation record: %s" % ("writing" if record is not None else "removing", exc), path=path)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["read", "record", "absent"], default="read"),
            record=dict(type="dict"),
            dir=dict(type="path", default="/var/lib/gpufabric-validated"),
        ),
        required_if=[("state", "record", ("record",))],
        supports_check_mode=True,
    )
    directory, state = module.params["dir"], module.params["state"]
    refused = ownership.refused_directory(directory)
    if refused:
        module.fail_json(msg="dir: %s" % refused)
    owner = statefile.owner_of(directory)
    if owner not in (None, OWNER):
        module.fail_json(msg="%s exists and is not gpufabric's record of validations (%s): choose another dir"
                         % (directory, "its marker names %s" % owner if owner else "it has no marker"))
    path = os.path.join(directory, NAME)
    if state == "read":
        record, problem = _read(path)
        module.exit_json(changed=False, record=record, problem=problem, path=path)
    record = None
    if state == "record":
        try:
            record = records.check_record(module.params["record"])
        except ValueError as exc:
            module.fail_json(msg="record: %s" % exc, path=path)
    module.exit_json(**_change(module, directory, path, record))


if __name__ == "__main__":
    main()
