# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The option of every module that reads /sys/class/infiniband (module_utils/node/sysfs.py checked_root).
    DOCUMENTATION = r"""
options:
  sysfs_root:
    description:
      - Root of the sysfs tree to read, so that a captured copy of C(/sys) can be inspected. One that does not exist
        (a mistyped capture path) gives a warning naming it and nothing read.
    type: path
    default: /sys
"""
