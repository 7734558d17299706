# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fingerprints of configure.yml's phases (controller side): what a phase's record on a node is compared with.

A phase's fingerprint changes when its inputs change (the settings with its roles' prefixes, and what the phase
reads of the node's record) or when the collection's code does: an installed collection by its MANIFEST.json
(which carries the checksum of every file), a checkout by the content of its roles and plugins.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CODE_DIRS = ("roles", "plugins", "playbooks")


def code_fingerprint(root=ROOT):
    """sha256 of the collection's code: its MANIFEST.json when installed from a tarball, else its files."""
    digest = hashlib.sha256()
    manifest = os.path.join(root, "MANIFEST.json")
    if os.path.isfile(manifest):
        with open(manifest, "rb") as handle:
            digest.update(handle.read())
        return digest.hexdigest()
    for top in CODE_DIRS:
        for directory, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(directory, name)
                digest.update(os.path.relpath(path, root).encode("utf-8") + b"\0")
                with open(path, "rb") as handle:
                    digest.update(handle.read())
    return digest.hexdigest()


def phase_fingerprint(inputs, phase, code):
    """sha256 of one phase's inputs (any JSON-able data; keys sorted) with its name and the code fingerprint."""
    text = json.dumps({"phase": phase, "code": code, "inputs": inputs}, sort_keys=True, default=str,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
