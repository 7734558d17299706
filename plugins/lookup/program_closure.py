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
  - With O(install_as) and O(directory), returns instead one entry per file to install, the program first (what the
    program_install role compares with what a node has, installs in one archive with the
    C(gpufabric.rdma.program_archive) lookup, and names in check and diff mode).
options:
  _terms:
    description: The program's path, relative to the collection's root.
    required: true
  install_as:
    description: The program's file name in O(directory); with it, the files to install are returned.
    type: str
    version_added: 0.9.0
  directory:
    description: The program's directory on the node; the module_utils go under
      C(ansible_collections/gpufabric/rdma/plugins/module_utils) there.
    type: str
    version_added: 0.9.0
"""

EXAMPLES = r"""
- name: What the decider imports
  ansible.builtin.debug:
    msg: "{{ lookup('gpufabric.rdma.program_closure', 'roles/remediator/files/gpufabric_remediator.py', wantlist=True) }}"

- name: The decider's files, where the remediator role installs them
  ansible.builtin.debug:
    msg: >-
      {{ lookup('gpufabric.rdma.program_closure', 'roles/remediator/files/gpufabric_remediator.py',
                install_as='remediator.py', directory='/opt/gpufabric-remediator', wantlist=True) }}
"""

RETURN = r"""
_raw:
  description:
    - The module_utils, as paths relative to plugins/module_utils without C(.py).
    - "With O(install_as) and O(directory): one dict a file, the program first, then by path: C(src) (relative to the
      collection), C(dest) (relative to O(directory)), C(path) (O(directory)/C(dest)), C(size) (bytes), C(sha256), and
      C(key) (C(path) and the SHA-1 with a space between, as the role matches them with what C(ansible.builtin.find)
      reads on the node)."
  type: list
  elements: raw
"""

import ast
import hashlib
import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PREFIX = "ansible_collections.gpufabric.rdma.plugins.module_utils"
# Where a program's module_utils go, relative to its directory: what `import ansible_collections....` finds there.
TREE = "ansible_collections/gpufabric/rdma/plugins/module_utils"


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


def _entry(src, dest, directory):
    with open(os.path.join(ROOT, src), "rb") as handle:
        data = handle.read()
    path = "%s/%s" % (directory, dest)
    # key: what ansible.builtin.find reads back on the node (SHA-1, its only checksum before ansible-core 2.19)
    return {"src": src, "dest": dest, "path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "key": "%s %s" % (path, hashlib.sha1(data).hexdigest())}


def install_files(program, install_as, directory):
    """The files that install ``program`` as ``directory``/``install_as`` with its closure: the program first."""
    if not install_as or "/" in install_as or install_as in (".", ".."):
        raise AnsibleLookupError("program_closure: install_as is the program's file name in its directory, got %r" % (install_as,))
    if not directory or not directory.startswith("/"):
        raise AnsibleLookupError("program_closure: directory is the program's absolute directory on the node, got %r" % (directory,))
    directory = directory.rstrip("/")   # "/" too: "" + "/" + dest
    return [_entry(program, install_as, directory)] + [
        _entry("plugins/module_utils/%s.py" % name, "%s/%s.py" % (TREE, name), directory) for name in closure(program)]


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        unknown = sorted(set(kwargs) - {"install_as", "directory"})
        if unknown:
            raise AnsibleLookupError("program_closure: unknown option %s (it takes install_as and directory)" % ", ".join(unknown))
        install_as, directory = kwargs.get("install_as"), kwargs.get("directory")
        out = []
        for term in terms:
            if not isinstance(term, str) or term.startswith("/") or ".." in term.split("/"):
                raise AnsibleLookupError("program_closure: give a program's path relative to the collection, got %r" % (term,))
            if install_as is not None or directory is not None:
                out += install_files(term, install_as, directory)
            else:
                out += [name for name in closure(term) if name not in out]
        return out
