# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The figures of a validation run as node_exporter textfile metrics (a thin wrapper over
module_utils/render/figures.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.render import figures
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    expect_list_of_mappings, fail, filters, kind_of, number_or_none)

NAME = "figures_metrics"


def figures_metrics(records, kind, cluster="gpufabric", run_time=None, nodes=None):
    """records of one kind (nccl_tests, perftest, burnin, tune, ddp) -> the exposition text; ``run_time`` (epoch
    seconds) defaults to now; ``nodes`` names the hosts of the kinds whose records do not (tune, ddp)."""
    if kind not in figures.KINDS:
        fail(NAME, "kind must be one of %s, got %s" % (", ".join(figures.KINDS),
                                                       repr(kind) if isinstance(kind, str) else kind_of(kind)))
    expect_list_of_mappings(NAME, records, "a list of %s records%s" % (
        kind, " (wrap one report in a list: [%s])" % _REPORT[kind] if kind in _REPORT else ""))
    when = number_or_none(NAME, "run_time", run_time)
    return figures.text(kind, records, cluster, time.time() if when is None else when, nodes or None)


_REPORT = {"hang": "hang_report", "slow": "slow_report", "burnin": "burnin_result", "tune": "nccl_tune_result", "ddp": "ddp_benchmark_result"}


class FilterModule(object):
    def filters(self):
        return filters({NAME: figures_metrics})
