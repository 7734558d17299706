# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's settings and inputs: a deprecation warning for each setting still set under its old name, and the
inputs checked before anything changes (the playbooks' preflight, the roles' rules)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.utils.display import Display

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import inputs
from ansible_collections.gpufabric.rdma.plugins.plugin_utils import inputs as preflight
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import Mapping, Sequence, expect, filters


def renamed_messages(renamed, in_use):
    """One message per old name in use, in the table's order (pure: the filter warns with them)."""
    used = set(in_use)
    return ["%s is renamed %s: set the new name (the old one is still read)" % (old, new)
            for old, new in renamed.items() if old in used]


def renamed_settings(renamed, in_use):
    expect("renamed_settings", renamed, (Mapping,), "the table of renamed settings (old name: new name)")
    expect("renamed_settings", in_use, (Sequence,), "the names set in this run (a list)")
    messages = renamed_messages(renamed, in_use)
    for message in messages:
        Display().deprecated(message, version="1.0.0", collection_name="gpufabric.rdma")
    return messages


def input_errors(values, role):
    """{variable: value} of one role -> the sentences naming each of its rules the values break ([] when none)."""
    return inputs.errors(role, expect("input_errors", values, (Mapping,), "a mapping of variable name to value"))


def preflight_problems(hostvars, hosts, specs):
    """hostvars, the run's hosts, {role or 'playbook': {option: spec}} -> one sentence per bad input."""
    expect("preflight_problems", hosts, (Sequence,), "the run's hosts (a list)")
    expect("preflight_problems", specs, (Mapping,), "the argument specs by role ({role: {option: spec}})")
    return preflight.preflight(hostvars, [str(host) for host in hosts], dict((str(k), dict(v or {})) for k, v in specs.items()))


class FilterModule(object):
    def filters(self):
        return filters({"renamed_settings": renamed_settings, "input_errors": input_errors,
                        "preflight_problems": preflight_problems})
