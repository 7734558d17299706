#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: slurm_job
short_description: Submit a Slurm batch job and wait for it to end
version_added: 0.1.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Submits a batch script with C(sbatch --parsable) (or takes the id of a job already submitted),
    then polls C(scontrol show job -o) until the job reaches a final state, and returns where it
    ran (RV(nodes), RV(batch_host)), how it ended (RV(state), RV(exit_code)) and where its output
    is (RV(std_out)).
  - A job that can never start - more nodes than the partition has (C(PartitionNodeLimit)), a time
    limit above the partition's, features or GRES no node has - is cancelled at once and fails
    naming the reason, instead of waiting until O(timeout).
  - A job still running after O(timeout) seconds is cancelled (O(cancel_on_timeout)) and fails.
  - Once slurmctld has forgotten a finished job (older than C(MinJobAge)), its state is read from
    C(sacct) when accounting is enabled.
  - Run it on a host where C(sbatch) and C(scontrol) reach the cluster (a login or controller node).
    Submitting is always a change; in check mode nothing is submitted and nothing is cancelled.
  - Every Slurm command (C(sbatch), C(scontrol), C(sacct), C(scancel)) runs with O(command_timeout); a controller
    that does not answer makes the task fail saying so, instead of hanging the play.
options:
  script:
    description: Path of the batch script on the host. Exactly one of O(script) and O(job_id).
    type: path
  job_id:
    description:
      - Id of a job already submitted, to wait for instead of submitting.
      - A whole number from 1 to 4294967293 in ASCII digits (job arrays' C(123_4) and heterogeneous jobs' C(123+0)
        are not taken); anything else fails naming it before any Slurm command runs.
    type: str
  sbatch_args:
    description: Extra C(sbatch) arguments, one per element (e.g. C(--partition=gpu)).
    type: list
    elements: str
    default: []
  chdir:
    description: Directory to submit from (the job's default working directory).
    type: path
  wait:
    description: Wait for the job to end; V(false) returns right after submission.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the job to end, counted from submission (1 to 31536000, a year).
    type: int
    default: 3600
  poll_interval:
    description: Seconds between two C(scontrol show job) calls (1 to 86400, a day).
    type: int
    default: 5
  cancel_on_timeout:
    description: C(scancel) the job when O(timeout) passes.
    type: bool
    default: true
  fail_on_job_error:
    description:
      - Fail when the job ends in any state but C(COMPLETED) with exit code 0.
      - V(false) returns normally with RV(succeeded=false), so the caller can still read the output.
    type: bool
    default: true
extends_documentation_fragment:
  - gpufabric.rdma.command_timeout
attributes:
  check_mode:
    support: full
    description: With O(script) nothing is submitted (RV(msg) says what would be); with O(job_id) the job is read and
      waited for, but never cancelled (RV(would_cancel) says when it would have been).
  diff_mode:
    support: none
    description: The module writes no file.
notes:
  - Job names, paths and C(sbatch) arguments are refused when they hold a newline or a control character.
seealso:
  - name: sbatch
    description: Slurm's batch submission command.
    link: https://slurm.schedmd.com/sbatch.html
"""

EXAMPLES = r"""
- name: Run the nccl-tests job and wait up to 30 minutes
  gpufabric.rdma.slurm_job:
    script: /var/tmp/gpufabric-slurm/nccl-allreduce.sbatch
    sbatch_args: [--partition=gpu]
    timeout: 1800
  register: nccl_job

- name: Show where it ran and where its output is
  ansible.builtin.debug:
    msg: "job {{ nccl_job.job_id }} {{ nccl_job.state }} on {{ nccl_job.nodes | join(',') }}, output in {{ nccl_job.std_out }}"

- name: Wait for a job submitted elsewhere, keeping a failed job's facts
  gpufabric.rdma.slurm_job:
    job_id: "4711"
    fail_on_job_error: false
  register: other_job
"""

RETURN = r"""
job_id:
  description: The job's id.
  returned: when submitted or given
  type: str
  sample: "1"
submitted:
  description: Whether this call submitted the job.
  returned: always
  type: bool
state:
  description: Last state seen (C(COMPLETED), C(FAILED), C(CANCELLED), C(TIMEOUT), C(PENDING) when not waiting, ...).
  returned: when submitted or given
  type: str
  sample: COMPLETED
succeeded:
  description: The job ended C(COMPLETED) with exit code 0.
  returned: when submitted or given
  type: bool
reason:
  description: Slurm's reason for the state (C(NonZeroExitCode), C(Resources), ...), null when none.
  returned: when submitted or given
  type: str
  sample: NonZeroExitCode
exit_code:
  description: Exit code of the batch script.
  returned: when submitted or given
  type: int
  sample: 0
signal:
  description: Signal that ended the batch script (15 after C(scancel)), 0 when none.
  returned: when submitted or given
  type: int
nodes:
  description: Host names of the job's nodes, its NodeList expanded.
  returned: when submitted or given
  type: list
  elements: str
  sample: [gpu-a08, gpu-a09]
node_list:
  description: The NodeList as Slurm prints it.
  returned: when submitted or given
  type: str
  sample: gpu-a[08-09]
batch_host:
  description: Node that ran the batch script, where its output file is unless on shared storage.
  returned: when submitted or given
  type: str
std_out:
  description: Path of the job's standard output file, as the job sees it.
  returned: when submitted or given
  type: str
  sample: /tmp/nccl-allreduce-1.out
std_err:
  description: Path of the job's standard error file.
  returned: when submitted or given
  type: str
run_time_s:
  description: Seconds the job ran, as Slurm counts.
  returned: when submitted or given
  type: int
waited_s:
  description: Seconds this call waited.
  returned: always
  type: float
timed_out:
  description: The job had not ended after O(timeout).
  returned: always
  type: bool
msg:
  description: In check mode with O(script), what would have been submitted.
  returned: in check mode with O(script)
  type: str
  sample: "would submit /var/tmp/gpufabric-slurm/nccl.sbatch (check mode: nothing was submitted)"
would_cancel:
  description: In check mode, why the job would have been cancelled (can never start, or O(timeout) passed).
  returned: in check mode, when a run would have cancelled the job
  type: str
record:
  description: Every field of the last C(scontrol show job) (or C(sacct)) reading.
  returned: when submitted or given
  type: dict
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs

# time.sleep() and the clock arithmetic stay far inside what the platform's time_t holds.
MAX_TIMEOUT = 365 * 24 * 3600
MAX_POLL_INTERVAL = 24 * 3600


class SlurmJob(object):
    def __init__(self, module, runner, result):
        self.module = module
        self.runner = runner
        self.result = result
        self.scontrol = runner.which("scontrol")
        if not self.scontrol:
            module.fail_json(msg="scontrol is not on this host's PATH: run the task on a Slurm login or controller "
                                 "node (slurm-client installed)")

    def _answer(self, result):
        """A Slurm command that did not answer in time is the end of the task: say so."""
        if result.timed_out:
            self.module.fail_json(msg="%s: is slurmctld reachable from this host?" % result.describe(), **self.result)
        return result

    def read(self, job_id):
        """The job's summary, from slurmctld or else from accounting; None when neither knows it."""
        result = self._answer(self.runner.run([self.scontrol, "show", "job", "-o", job_id]))
        record = None
        if result.ok and result.stdout.strip():
            try:
                record = slurm_jobs.parse_job_record(result.stdout)
            except slurm_jobs.SlurmParseError as exc:
                return None, str(exc)
            source = "scontrol show job"
        else:
            sacct = self.runner.which("sacct")
            if not sacct:
                return None, result.first_line()
            accounting = self._answer(self.runner.run(
                [sacct, "-j", job_id, "-X", "-n", "-P", "-o", ",".join(slurm_jobs.SACCT_FIELDS)]))
            record = slurm_jobs.parse_sacct(accounting.stdout, job_id) if accounting.ok else None
            if record is None:
                return None, "%s; sacct: %s" % (result.first_line(), accounting.first_line())
            source = "sacct"
        try:
            summary = slurm_jobs.job_summary(record)
        except slurm_jobs.SlurmParseError as exc:
            # The job is there but its record cannot be read: say so, and leave the job alone.
            self.module.fail_json(msg="%s printed a record this module cannot read (%s); the job was left as it is"
                                  % (source, exc), **dict(self.result, record=record))
        summary["record"] = record
        return summary, None

    def cancel(self, job_id, why, result):
        """scancel the job, or in check mode only say that it would be; returns the words for the message."""
        if self.module.check_mode:
            result["would_cancel"] = why
            return "; would cancel it (check mode: not cancelled)"
        scancel = self.runner.which("scancel")
        if not scancel:
            return "; scancel is not installed, so it was not cancelled"
        cancelled = self.runner.run([scancel, job_id])
        return "; cancelled it" if cancelled.ok else "; scancel failed: %s" % cancelled.describe()


def _checked_inputs(module):
    """Every input checked before any Slurm command runs -> the command runner and the job id given (or None)."""
    params = module.params
    if params["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second, got %d" % params["timeout"])
    if params["timeout"] > MAX_TIMEOUT:
        module.fail_json(msg="timeout must be at most %d seconds (a year), got %d" % (MAX_TIMEOUT, params["timeout"]))
    if params["poll_interval"] < 1:
        module.fail_json(msg="poll_interval must be at least 1 second, got %d" % params["poll_interval"])
    if params["poll_interval"] > MAX_POLL_INTERVAL:
        module.fail_json(msg="poll_interval must be at most %d seconds (a day), got %d"
                             % (MAX_POLL_INTERVAL, params["poll_interval"]))
    try:
        runner = commands.Runner(params["command_timeout"])
        for name in ("script", "chdir", "job_id"):
            if params[name] is not None:
                text.check_line(name, params[name])
        for index, arg in enumerate(params["sbatch_args"]):
            text.check_line("sbatch_args[%d]" % index, arg)
        job_id = params["job_id"]
        if job_id is not None:
            slurm_jobs.check_job_id(job_id)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    return runner, job_id


def _submit(module, runner, result):
    """sbatch the script (in check mode: say so and submit nothing) -> the job id."""
    params = module.params
    script = params["script"]
    if not os.path.isfile(script):
        module.fail_json(msg="batch script %s does not exist on this host" % script, **result)
    if module.check_mode:
        module.exit_json(changed=True, submitted=False, timed_out=False, waited_s=0.0,
                         msg="would submit %s (check mode: nothing was submitted)" % script)
    sbatch = runner.which("sbatch")
    if not sbatch:
        module.fail_json(msg="sbatch is not on this host's PATH: run the task on a Slurm login or "
                             "controller node (slurm-client installed)", **result)
    submitted = runner.run([sbatch, "--parsable"] + params["sbatch_args"] + [script], cwd=params["chdir"])
    if not submitted.ok:
        module.fail_json(msg="sbatch refused %s: %s" % (script, submitted.describe()), rc=submitted.rc,
                         stdout=submitted.stdout, stderr=submitted.stderr, **result)
    try:
        job_id, cluster = slurm_jobs.parse_submit(submitted.stdout)
    except slurm_jobs.SlurmParseError as exc:
        module.fail_json(msg=str(exc), stdout=submitted.stdout, stderr=submitted.stderr, **result)
    result.update(changed=True, submitted=True, job_id=job_id, cluster=cluster)
    return job_id


def _follow(module, runner, result, job_id, started):
    """Read the job until it ends (or once, without wait); a job that can never start or outlives the timeout fails,
    cancelled where ours -> its last summary."""
    params = module.params
    jobs = SlurmJob(module, runner, result)
    while True:
        summary, why = jobs.read(job_id)
        result["waited_s"] = round(time.time() - started, 1)
        if summary is None:
            module.fail_json(msg="job %s is unknown to Slurm: %s" % (job_id, why), **result)
        result.update(summary)
        if summary["never_starts"]:
            cancelled = jobs.cancel(job_id, "can never start: %s" % summary["reason"], result) \
                if result["submitted"] else ""
            module.fail_json(msg="job %s can never start: PENDING (%s): %s%s" % (
                job_id, summary["reason"], summary["never_starts"], cancelled), **result)
        if summary["terminal"] or not params["wait"]:
            return summary
        if time.time() - started >= params["timeout"]:
            result["timed_out"] = True
            cancelled = jobs.cancel(job_id, "still %s after %d s" % (summary["state"], params["timeout"]), result) \
                if params["cancel_on_timeout"] else ""
            module.fail_json(msg="job %s still %s after %d s%s" % (
                job_id, summary["state"], params["timeout"], cancelled), **result)
        time.sleep(min(params["poll_interval"], max(1, params["timeout"] - (time.time() - started))))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            script=dict(type="path"),
            job_id=dict(type="str"),
            sbatch_args=dict(type="list", elements="str", default=[]),
            chdir=dict(type="path"),
            wait=dict(type="bool", default=True),
            timeout=dict(type="int", default=3600),
            poll_interval=dict(type="int", default=5),
            cancel_on_timeout=dict(type="bool", default=True),
            fail_on_job_error=dict(type="bool", default=True),
            **commands.ARGUMENT_SPEC
        ),
        required_one_of=[("script", "job_id")],
        mutually_exclusive=[("script", "job_id")],
        supports_check_mode=True,
    )
    runner, job_id = _checked_inputs(module)
    started = time.time()
    result = dict(changed=False, submitted=False, timed_out=False, waited_s=0.0)
    if module.params["script"]:
        job_id = _submit(module, runner, result)
    else:
        result["job_id"] = job_id
    summary = _follow(module, runner, result, job_id, started)
    if summary["terminal"] and not summary["succeeded"] and module.params["fail_on_job_error"]:
        module.fail_json(msg="job %s ended %s (exit code %s, signal %s, reason %s); its output: %s on %s" % (
            job_id, summary["state"], summary["exit_code"], summary["signal"], summary["reason"],
            summary["std_out"], summary["batch_host"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
