# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: code_fingerprint
author: gpufabric.rdma maintainers (@gpufabric)
short_description: A fingerprint of the collection's own code, for the records of applied phases
version_added: 0.9.0
description:
  - The sha256 of the installed collection's C(MANIFEST.json), which carries the checksum of every file; in a
    checkout without one, of the content of its roles, plugins and playbooks.
  - configure.yml computes it once per run (C(run_once)) and folds it into every phase's fingerprint, so a new
    collection version runs every phase once again.
"""

EXAMPLES = r"""
- name: The collection's code, once
  ansible.builtin.set_fact:
    gpufabric_code_fingerprint: "{{ lookup('gpufabric.rdma.code_fingerprint') }}"
  run_once: true
"""

RETURN = r"""
_raw:
  description: 64 hex digits.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.gpufabric.rdma.plugins.plugin_utils import phases


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleLookupError("code_fingerprint takes no terms, got %r" % (terms,))
        try:
            return [phases.code_fingerprint()]
        except (IOError, OSError) as exc:
            raise AnsibleLookupError("code_fingerprint: cannot read the collection's files: %s" % exc)
