# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: program_archive
author: gpufabric.rdma maintainers (@gpufabric)
short_description: One tar archive of a program's files, written on the controller for one transfer to a node
version_added: 0.9.0
description:
  - Packs the files that the C(gpufabric.rdma.program_closure) lookup lists (given its
    O(gpufabric.rdma.program_closure#lookup:install_as) and O(gpufabric.rdma.program_closure#lookup:directory) options)
    into one uncompressed tar in the controller's temporary directory and returns its path, so the program_install
    role sends a program and the module_utils it imports in one transfer (C(ansible.builtin.unarchive)), not one
    copy per file.
  - Each file is stored under its C(dest), owned by root, mode 0644; the folders above it (never the program's
    directory itself, which its role owns) mode 0755. The caller removes the archive when it is unpacked.
options:
  _terms:
    description: The entries of C(gpufabric.rdma.program_closure) to pack (C(src) relative to the collection, C(dest)).
    required: true
"""

EXAMPLES = r"""
- name: Pack what the node lacks (the program_install role does this)
  ansible.builtin.set_fact:
    archive: "{{ lookup('gpufabric.rdma.program_archive', files_to_install) }}"
"""

RETURN = r"""
_raw:
  description: The archive's path on the controller.
  type: list
  elements: str
"""

import io
import os
import tarfile
import tempfile

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _member(name, directory, size=0, mtime=0):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = 0o755 if directory else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.size, info.mtime = size, mtime
    return info


def write_archive(entries, path):
    """Write ``entries`` ({src, dest}) into the tar at ``path``: each dest with its folders, in order."""
    folders = set()
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as archive:
        for entry in sorted(entries, key=lambda e: e["dest"]):
            dest, src = entry["dest"], os.path.join(ROOT, entry["src"])
            if dest.startswith("/") or ".." in dest.split("/") or entry["src"].startswith("/") or ".." in entry["src"].split("/"):
                raise AnsibleLookupError("program_archive: %r is not a file of the collection for a path inside the program's "
                                         "directory" % (entry,))
            parts = dest.split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                folder = "/".join(parts[:depth])
                if folder not in folders:
                    folders.add(folder)
                    archive.addfile(_member(folder, True, mtime=int(os.path.getmtime(src))))
            with open(src, "rb") as handle:
                data = handle.read()
            archive.addfile(_member(dest, False, len(data), int(os.path.getmtime(src))), io.BytesIO(data))


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        entries = terms[0] if len(terms) == 1 and isinstance(terms[0], list) else terms
        if not entries or not all(isinstance(e, dict) and {"src", "dest"} <= set(e) for e in entries):
            raise AnsibleLookupError("program_archive: give the entries of gpufabric.rdma.program_closure (src, dest), got %r"
                                     % (terms,))
        handle, path = tempfile.mkstemp(prefix="gpufabric-program-", suffix=".tar")
        os.close(handle)
        try:
            write_archive(entries, path)
        except (IOError, OSError) as exc:
            os.unlink(path)
            raise AnsibleLookupError("program_archive: cannot pack %s: %s" % (path, exc))
        except AnsibleLookupError:
            os.unlink(path)
            raise
        return [path]
