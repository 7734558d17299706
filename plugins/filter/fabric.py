# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn gathered facts into node records and summaries (thin wrappers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.rdma.plugins.module_utils import gpu, readiness, report


def _wrap(func, name=None):
    name = name or func.__name__

    def filter_func(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (TypeError, ValueError, KeyError) as exc:
            raise AnsibleFilterError("gpufabric.rdma.%s: %s" % (name, exc))
    filter_func.__name__ = name
    return filter_func


class FilterModule(object):
    def filters(self):
        return {
            "node_record": _wrap(report.node_record),
            "node_summary": _wrap(report.node_summary),
            "readiness_report": _wrap(readiness.build_report, "readiness_report"),
            "readiness_markdown": _wrap(readiness.render_markdown, "readiness_markdown"),
            "readiness_text": _wrap(readiness.render_text, "readiness_text"),
            "peermem_plan": _wrap(gpu.peermem_plan, "peermem_plan"),
        }
