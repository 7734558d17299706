#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: owned_directory
short_description: A directory a role creates, chmods and deletes only if it made it
version_added: 0.2.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Creates O(path) with a marker file (C(.gpufabric-owner), holding O(owner)) and sets its mode; on
    O(state=absent) deletes it with everything in it - but only a directory that carries this owner's marker.
  - An existing directory without the marker is not the role's - a user-chosen state directory of
    C(/var/lib) or C(/tmp) would otherwise be chmodded on install and deleted on removal - so the module
    fails on O(state=present) and leaves it alone (with a warning) on O(state=absent).
  - System directories (C(/), C(/etc), C(/tmp), C(/usr/local), C(/var/lib), ...) are refused whatever the
    marker says.
  - O(shared=true) is for a parent directory several roles may use (C(/etc/gpufabric)) - created and marked
    when missing, an existing one left exactly as it is, removed only when it is ours and empty.
  - Supports check mode and diff mode.
options:
  path:
    description: The directory, an absolute normalised path.
    type: path
    required: true
  owner:
    description: Who owns it (the role's name); written into the marker and compared on every run.
    type: str
    required: true
  mode:
    description: Mode of the directory, as an octal string.
    type: str
    default: "0700"
  state:
    description: V(present) creates it, V(absent) deletes it if it is ours.
    type: str
    choices: [present, absent]
    default: present
  shared:
    description: A parent several roles may use - never refused, never chmodded, removed only when ours and empty.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Create the monitor's state directory
  gpufabric.rdma.owned_directory:
    path: /var/lib/gpufabric-health-monitor
    owner: health_monitor
    mode: "0700"

- name: Remove it again (only if the role created it)
  gpufabric.rdma.owned_directory:
    path: /var/lib/gpufabric-health-monitor
    owner: health_monitor
    state: absent
"""

RETURN = r"""
path:
  description: The directory.
  returned: always
  type: str
owned:
  description: Whether the directory carries this owner's marker after the run.
  returned: always
  type: bool
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import ownership
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile


def _mode(module, text):
    try:
        value = int(text, 8)
    except (TypeError, ValueError):
        value = -1
    if not 0 <= value <= 0o7777:
        module.fail_json(msg="mode must be an octal string such as 0700, got %r" % (text,))
    return value


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            owner=dict(type="str", required=True),
            mode=dict(type="str", default="0700"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            shared=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    path, owner, shared = module.params["path"], module.params["owner"], module.params["shared"]
    mode = _mode(module, module.params["mode"])
    refused = ownership.refused_directory(path)
    if refused:
        module.fail_json(msg="%s for %s: choose a directory of its own, such as /var/lib/gpufabric-%s"
                         % (refused, owner, owner.replace("_", "-")), path=path)
    if not owner or any(c in owner for c in "\n\r/"):
        module.fail_json(msg="owner must be a plain name such as health_monitor, got %r" % (owner,))
    found = statefile.owner_of(path)
    if os.path.lexists(path) and found is None:
        module.fail_json(msg="%s exists and is not a directory: %s leaves it alone; choose another path" % (path, owner),
                         path=path)

    if module.params["state"] == "absent":
        if found is None:
            module.exit_json(changed=False, path=path, owned=False)
        if found != owner:
            module.warn("%s was not created by %s (%s): left as it is" % (
                path, owner, "its marker names %s" % found if found else "it has no %s marker" % ownership.MARKER))
            module.exit_json(changed=False, path=path, owned=False)
        if shared and sorted(os.listdir(path)) != [ownership.MARKER]:
            module.exit_json(changed=False, path=path, owned=True,
                             msg="%s still holds files of other roles: left in place" % path)
        diff = {"before": {"path": path, "state": "directory"}, "after": {"path": path, "state": "absent"}}
        if not module.check_mode:
            shutil.rmtree(path)
        module.exit_json(changed=True, path=path, owned=False, diff=diff)

    if found is None:
        diff = {"before": {"path": path, "state": "absent"},
                "after": {"path": path, "state": "directory", "mode": "%04o" % mode, "owner": owner}}
        if not module.check_mode:
            parent = os.path.dirname(path)
            if not os.path.isdir(parent):
                module.fail_json(msg="the parent of %s does not exist: create %s first" % (path, parent), path=path)
            os.mkdir(path, mode)
            os.chmod(path, mode)
            statefile.mark_owned(path, owner)
        module.exit_json(changed=True, path=path, owned=True, diff=diff)
    if found != owner:
        if shared:
            module.exit_json(changed=False, path=path, owned=False)
        module.fail_json(msg="%s exists and was not created by %s (%s): gpufabric changes and deletes only directories "
                         "it created; choose a new path such as /var/lib/gpufabric-%s, or remove that directory yourself"
                         % (path, owner, "its marker names %s" % found if found else "it has no %s marker" % ownership.MARKER,
                            owner.replace("_", "-")), path=path)
    current = os.stat(path).st_mode & 0o7777
    if current == mode or shared:
        module.exit_json(changed=False, path=path, owned=True)
    diff = {"before": {"path": path, "mode": "%04o" % current}, "after": {"path": path, "mode": "%04o" % mode}}
    if not module.check_mode:
        os.chmod(path, mode)
    module.exit_json(changed=True, path=path, owned=True, diff=diff)


if __name__ == "__main__":
    main()
