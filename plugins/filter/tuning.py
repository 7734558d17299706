# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_tune role's decisions (module_utils/plan/tuning.py) as filters; the NCCL Inspector's variables of one job
(module_utils/plan/nccl.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ddp
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nccl, tuning
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import chart
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import Mapping, expect, filters, number_or_none, plain


def nccl_tune_candidates(has_rdma, gpus=2, extra=None):
    """The search space (one NCCL setting per candidate), plus the user's own candidates."""
    space = tuning.candidates(bool(has_rdma), int(gpus))
    if extra:
        expect("nccl_tune_candidates", extra, (list,), "a list of {name, env} candidates")
        space = space + [dict(c) for c in extra]
    return tuning.check_candidates(space)


def nccl_tune_report(search, confirm=None, rules=None, expected=None):
    """The runner's results -> decisions, the environment to use, tune.md text and the SVG; ``expected``
    ({collective: busbw_ceiling's result}) sets NCCL's defaults against what the hardware carries."""
    expect("nccl_tune_report", search, (Mapping,), "the search run's result (runs, skipped, elapsed_s)")
    if confirm is not None:
        expect("nccl_tune_report", confirm, (Mapping,), "the confirmation run's result")
    if expected is not None:
        expect("nccl_tune_report", expected, (Mapping,), "expected as {collective: busbw_ceiling's result}")
    result = tuning.report(dict(search), dict(confirm) if confirm is not None else None, dict(rules or {}),
                           expected=dict(expected) if expected else None)
    result["markdown"] = tuning.markdown(result)
    series = tuning.svg_series(result)
    result["svg"] = chart.bandwidth_svg(series, title="NCCL busbw, defaults and tuned (medians)") if series else None
    return result


def ddp_report(runs, min_images_per_s_per_gpu=None, min_efficiency=None, baseline=None):
    """The local DDP benchmark runs -> medians, scaling efficiency, failures and ddp.md text."""
    expect("ddp_report", runs, (list,), "a list of runs {world_size, round, stdout, rc}")
    # The registered results of the role's loop over [round, GPUs] read the same.
    runs = [{"round": r["item"][0], "world_size": r["item"][1], "stdout": r.get("stdout") or "", "rc": r.get("rc"),
             "stderr": r.get("stderr") or r.get("msg") or ""}
            if isinstance(r, Mapping) and isinstance(r.get("item"), (list, tuple)) else r for r in runs]
    return ddp.report(runs, number_or_none("ddp_report", "min_images_per_s_per_gpu", min_images_per_s_per_gpu),
                      number_or_none("ddp_report", "min_efficiency", min_efficiency), baseline)


def nccl_inspector_env(inspector, job_dir=None):
    """{plugin, dump_dir, prom, interval} -> the Inspector's variables {name: value} (plan/nccl.py, one reason each
    there); ``job_dir``: the job's own dump folder (JSON lines), in place of dump_dir."""
    expect("nccl_inspector_env", inspector, (Mapping,), "the Inspector's settings {plugin, dump_dir, prom, interval}")
    if job_dir is not None:
        expect("nccl_inspector_env", job_dir, (str,), "job_dir as a path")
        return nccl.inspector_job_env(plain(inspector), job_dir)
    return dict((name, value) for name, value, reason in nccl.inspector_env(plain(inspector)))


class FilterModule(object):
    def filters(self):
        return filters({"nccl_tune_candidates": nccl_tune_candidates, "nccl_tune_report": nccl_tune_report,
                        "ddp_report": ddp_report, "nccl_inspector_env": nccl_inspector_env})
