# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Attributes shared by the read-only discovery modules (rdma_devices, gpu_facts).
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: Nothing on the node changes in check mode; the facts are read as usual.
  diff_mode:
    support: none
    description: The module writes nothing, so there is nothing to diff.
  facts:
    support: full
    description: Results are returned as C(ansible_facts).
"""
