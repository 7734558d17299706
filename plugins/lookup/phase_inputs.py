# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: phase_inputs
author: gpufabric.rdma maintainers (@gpufabric)
short_description: The settings a configuration phase reads, by their prefixes
version_added: 0.9.0
description:
  - Every variable in scope whose name starts with one of the prefixes given (C(rdma_network_), C(peermem_)), with
    its value templated, as one dict. These are the settings the inventory, group_vars and extra vars give a
    phase's roles; the roles' own defaults are the collection's code, fingerprinted apart.
  - A value that cannot be templated (it names an undefined variable) is kept as its text, so a setting that
    would fail the role still changes the fingerprint and the phase runs and says why.
options:
  _terms:
    description: Prefixes, each lowercase letters, digits and _ ending in _.
    required: true
"""

EXAMPLES = r"""
- name: The network phase's settings
  ansible.builtin.debug:
    msg: "{{ lookup('gpufabric.rdma.phase_inputs', 'rdma_network_') }}"
"""

RETURN = r"""
_raw:
  description: One dict, variable name -> value.
  type: list
  elements: dict
"""

import re

from ansible.errors import AnsibleError, AnsibleLookupError
from ansible.plugins.lookup import LookupBase

PREFIX_RE = re.compile(r"^[a-z][a-z0-9_]*_$")


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        for term in terms:
            if not isinstance(term, str) or not PREFIX_RE.match(term):
                raise AnsibleLookupError("phase_inputs: a prefix is lowercase letters, digits and _ ending in _ "
                                         "(rdma_network_), got %r" % (term,))
        found = {}
        for name in sorted(variables or {}):
            if not any(name.startswith(term) for term in terms):
                continue
            try:
                found[name] = self._templar.template(variables[name])
            except AnsibleError:
                found[name] = str(variables[name])
        return [found]
