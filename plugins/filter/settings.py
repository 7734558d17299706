# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's renamed settings: a deprecation warning for each one still set under its old name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.utils.display import Display

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


class FilterModule(object):
    def filters(self):
        return filters({"renamed_settings": renamed_settings})
