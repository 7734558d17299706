# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for Slurm: hostlists, the slurm_jobs role's jobs checked, turned into nccl-tests runs and
reported (thin wrappers over module_utils/parse/slurm_jobs.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import TEXT, expect, expect_list_of_mappings, filters


def slurm_hostlist(expression):
    return slurm_jobs.expand_hostlist(expect("slurm_hostlist", expression if expression is not None else "", TEXT,
                                             "a Slurm hostlist such as gpu-[01-08]"))


def slurm_job_errors(jobs):
    """Every field of every job that cannot go into an sbatch script, as sentences naming job and field."""
    return slurm_jobs.job_errors(expect_list_of_mappings("slurm_job_errors", jobs, "a list of jobs (slurm_jobs_list with defaults)"))


def slurm_job_runs(jobs):
    return slurm_jobs.job_runs(expect_list_of_mappings("slurm_job_runs", jobs, "a list of finished jobs"))


def slurm_jobs_report(finished):
    return slurm_jobs.jobs_report(expect_list_of_mappings("slurm_jobs_report", finished, "a list of finished jobs"))


class FilterModule(object):
    def filters(self):
        return filters({"slurm_hostlist": slurm_hostlist, "slurm_job_errors": slurm_job_errors,
                        "slurm_job_runs": slurm_job_runs, "slurm_jobs_report": slurm_jobs_report})
