"""slurm_jobs.job_errors (moved down from the slurm_job_errors filter): every field of every job that cannot go into
an sbatch script, named, in order; jobs shaped as the slurm_jobs role hands them over (slurm_jobs_list with
the role's defaults filled in)."""
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs

GOOD = {"name": "nccl-all-reduce", "template": "nccl_tests", "nodes": 2, "gpus_per_node": 8, "ntasks_per_node": "",
        "partition": "", "time_limit": "01:00:00", "nccl_tests_binary": "/opt/nccl-tests/build/all_reduce_perf",
        "nccl_tests_args": "-b 8 -e 4G -f 2", "directives": ["--exclusive"], "srun_args": ["--mpi=pmix"],
        "env": {"NCCL_DEBUG": "WARN"}}


def test_jobs_that_can_be_written_have_no_errors():
    assert slurm_jobs.job_errors([GOOD, dict(GOOD, name="second", env={})]) == []
    assert slurm_jobs.job_errors([]) == []


def test_every_problem_of_every_job_is_named_in_order():
    bad = dict(GOOD, name="evil", directives=["--exclusive", "--x\n#SBATCH --uid=0"],
               env={"A B": "1", "NCCL_IB_HCA": ["mlx5_0"], "NCCL_DEBUG": "WARN\nrm -rf /"})
    also = dict(GOOD, name="second", srun_args="--mpi=pmix", nccl_tests_args="-b 8\x1b[2J")
    assert slurm_jobs.job_errors([GOOD, bad, also]) == [
        "job evil: directives[1] contains a newline (character 4)",
        "job evil: env name 'A B' is not an environment variable name",
        "job evil: env.NCCL_DEBUG contains a newline (character 5)",
        "job evil: env.NCCL_IB_HCA must be a string or a number",
        "job second: nccl_tests_args contains the control character '\\x1b' (character 5)",
        "job second: srun_args must be a list, got str",
    ]
    assert slurm_jobs.job_errors([bad, also]) == slurm_jobs.job_problems(bad) + slurm_jobs.job_problems(also)
