# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The option of every module that runs external commands (module_utils/node/commands.py).
    DOCUMENTATION = r"""
options:
  command_timeout:
    description:
      - Seconds each external command the module runs may take (1 to 3600). One that takes longer is killed with
        every process it started, and the module reports that it did not answer instead of waiting for ever (a
        C(nvidia-smi) on a node whose GPU fell off the bus can hang).
      - Set it once for every module of the collection that runs commands with a C(module_defaults) entry for
        C(group/gpufabric.rdma.commands) on a play or a block (see the collection's README); a task's own value
        wins.
    type: int
    default: 30
"""
