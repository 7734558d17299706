#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: facts_file
short_description: Write a node's JSON record and link it as an Ansible local fact, in one task
version_added: 0.9.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Writes O(content) as JSON (keys sorted, indented, one trailing newline) to O(path), only when the text differs,
    through a temporary file and a rename, mode C(0644), owned by root. Missing parent directories are created with
    mode C(0755).
  - With O(link), makes O(link) a symbolic link to O(path) (its directory created likewise), so later plays read
    the record as C(ansible_local); one file, so the two never differ. A regular file at O(link) is refused,
    naming it; the module replaces only a link.
  - What the discovery role did in four tasks (two directories, the file, the link); supports check mode and diff
    mode (the record's diff, and the link's).
options:
  path:
    description: The record, an absolute path.
    type: path
    required: true
  content:
    description: The record.
    type: dict
    required: true
  link:
    description: The local fact link (C(/etc/ansible/facts.d/gpufabric.fact)); empty for none.
    type: path
    default: ""
"""

EXAMPLES = r"""
- name: Write the node record and its local fact
  gpufabric.rdma.facts_file:
    path: /etc/gpufabric/facts.json
    content: "{{ discovery_node }}"
    link: /etc/ansible/facts.d/gpufabric.fact
"""

RETURN = r"""
path:
  description: The record.
  returned: always
  type: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.files import read_text, write_atomic


def _absolute(module, name, value):
    if not value.startswith("/") or any(c in value for c in "\n\r\x00") or os.path.normpath(value) != value:
        module.fail_json(msg="%s must be an absolute normalised path, got %r" % (name, value))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            content=dict(type="dict", required=True),
            link=dict(type="path", default=""),
        ),
        supports_check_mode=True,
    )
    path, link = module.params["path"], module.params["link"]
    _absolute(module, "path", path)
    if link:
        _absolute(module, "link", link)
        if link == path:
            module.fail_json(msg="link %s is the record itself: give the local fact's path" % link)
    text = json.dumps(module.params["content"], indent=4, sort_keys=True) + "\n"
    before = read_text(path) if os.path.isfile(path) else None
    if os.path.lexists(path) and before is None:
        module.fail_json(msg="%s exists and is not a readable file: the record is written only as a file" % path)
    diffs, changed = [], False
    if before != text:
        changed = True
        diffs.append(dict(before=before or "", after=text, before_header=path, after_header=path))
        if not module.check_mode:
            write_atomic(module, path, text, make_dirs=True)
            os.chmod(path, 0o644)
    if link:
        current = os.readlink(link) if os.path.islink(link) else None
        if os.path.lexists(link) and current is None:
            module.fail_json(msg="%s exists and is not a link: the local fact is a link to %s; move that file away"
                                 % (link, path))
        if current != path:
            changed = True
            diffs.append(dict(before="%s -> %s\n" % (link, current) if current else "", after="%s -> %s\n" % (link, path),
                              before_header=link, after_header=link))
            if not module.check_mode:
                directory = os.path.dirname(link)
                if not os.path.isdir(directory):
                    os.makedirs(directory, 0o755)
                tmp = link + ".gpufabric.tmp"
                if os.path.lexists(tmp):
                    os.unlink(tmp)
                os.symlink(path, tmp)
                os.rename(tmp, link)
    result = dict(changed=changed, path=path)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
