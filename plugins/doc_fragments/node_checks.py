# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import all as registry

# Documented by its own fragment, gpufabric.rdma.command_timeout, as for every module that runs commands.
SHARED = ("command_timeout",)


def documentation():
    """The node health checks' options as node_health documents them, from the registry (module_utils/node/checks/):
    each option's description, type, elements and default as its check's file declares them, in the checks' order.
    JSON is YAML, so the text is what ansible-doc reads."""
    options = dict((name, option.doc()) for name, option in registry.OPTIONS.items() if name not in SHARED)
    return json.dumps({"options": options}, indent=2)


class ModuleDocFragment(object):
    """node_health's options of the checks; DOCUMENTATION is set below."""


# Computed when Ansible loads the fragment (it imports it): a check's options come from its file only. Set after the
# class, not in its body: ansible-test's yamllint sanity test reads the assignments of a fragment's class body as
# string literals, and stops with an AttributeError on a call there (ansible-test 2.19).
ModuleDocFragment.DOCUMENTATION = documentation()
