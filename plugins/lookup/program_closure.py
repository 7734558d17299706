# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: program_closure
author: gpufabric.rdma maintainers (@gpufabric)
short_description: The collection's module_utils a program imports, computed from its imports
version_added: 0.3.0
description:
  - Reads a program of the collection (the health monitor, the remediation decider, the alert relay) and follows
    its imports of C(ansible_collections.gpufabric.rdma.plugins.module_utils) to the end, so the
    program_install role copies exactly what the program can import - never a hand-kept list.
  - Returns the module_utils as paths without C(.py), relative to C(plugins/module_utils) (C(text), C(fleet/monitor)),
    sorted. A program or module that cannot be read or parsed fails naming it.
options:
  _terms:
    description: The program's path, relative to the collection's root.
    required: true
"""

EXAMPLES = r"""
- name: What the decider imports
  ansible.builtin.debug:
    msg: "{{ lookup('gpufabric.rdma.program_closure', 'roles/remediator/files/gpufabric_remediator.py', wantlist=True) }}"
"""

RETURN = r"""
_raw:
  description: The module_utils, as paths relative to plugins/module_utils without C(.py).
  type: list
  elements: str
"""

import ast
import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PREFIX = "ansible_collections.gpufabric.rdma.plugins.module_utils"


def _imports(path):
    """The module_utils one file imports, as relative paths without .py."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (IOError, OSError, SyntaxError, ValueError) as exc:
        raise AnsibleLookupError("program_closure: cannot read %s: %s" % (os.path.relpath(path, ROOT), exc))
    base = os.path.join(ROOT, "plugins", "module_utils")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
            tail = node.module[len(PREFIX):].strip(".").replace(".", "/")
            if tail and os.path.isfile(os.path.join(base, tail + ".py")):
                found.append(tail)
            else:
                found += ["%s/%s" % (tail, alias.name) if tail else alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PREFIX + "."):
                    found.append(alias.name[len(PREFIX) + 1:].replace(".", "/"))
    return found


def closure(program):
    """Sorted module_utils paths (relative, without .py) that ``program`` (relative to the collection) imports."""
    base = os.path.join(ROOT, "plugins", "module_utils")
    seen, todo = set(), _imports(os.path.join(ROOT, program))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = os.path.join(base, name + ".py")
        if not os.path.isfile(path):
            raise AnsibleLookupError("program_closure: %s imports module_utils %s, which does not exist" % (program, name))
        seen.add(name)
        todo += _imports(path)
    return sorted(seen)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        out = []
        for term in terms:
            if not isinstance(term, str) or term.startswith("/") or ".." in term.split("/"):
                raise AnsibleLookupError("program_closure: give a program's path relative to the collection, got %r" % (term,))
            out += [name for name in closure(term) if name not in out]
        return out
