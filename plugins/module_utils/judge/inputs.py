# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The rules between a role's inputs that its argument spec cannot say, one function per role.

Each takes the role's variables by name - all of them (the role's own check, defaults included) or only those the user
set (the playbooks' preflight, before anything changes) - and returns one sentence per broken rule, naming the
variable and the value; a rule whose variables are not given is not checked. The roles' asserts and the preflight call
the same function (filter gpufabric.rdma.input_errors), so a rule has one home.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import rack_domains, validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import versions

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FRACTION = re.compile(r"^[0-9]*\.?[0-9]+$")
PERFTEST_TESTS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")


def _given(values, *names):
    return dict((name, values[name]) for name in names if name in values)


def _one_line(value):
    return isinstance(value, str) and not _CONTROL.search(value)


def nccl_tests_run_errors(runs):
    """One sentence per nccl_tests_runs entry that is not {name: <collective>_perf, mode, args, label, env}."""
    if not isinstance(runs, list):
        return ["nccl_tests_runs must be a list of runs, got %r" % (runs,)]
    errors = []
    for run in runs:
        good = isinstance(run, Mapping) and isinstance(run.get("name"), str) \
            and re.match(r"^[a-z0-9_]+_perf$", run["name"]) is not None \
            and run.get("mode", "single") in ("single", "mpirun", "slurm") \
            and _one_line(run.get("args", "")) and _one_line(run.get("label", "")) \
            and isinstance(run.get("env", {}), Mapping)
        if not good:
            errors.append("each nccl_tests_runs entry needs name: <collective>_perf, mode single, mpirun or slurm, args "
                          "and label on one line (no newline or control character), and env (if any) a mapping; got %r"
                          % (run,))
    return errors


def nccl_tests(values):
    errors = validation.threshold_errors(_given(values, "nccl_tests_min_busbw", "nccl_tests_min_busbw_by_size",
                                                "nccl_tests_max_wrong"))
    if "nccl_tests_runs" in values:
        errors += nccl_tests_run_errors(values["nccl_tests_runs"])
    return errors


def perftest(values):
    errors = validation.threshold_errors(_given(values, "perftest_min_bw_gbps", "perftest_max_lat_us"))
    for test in values.get("perftest_tests") or []:
        name = test.get("name") if isinstance(test, Mapping) else None
        if name not in PERFTEST_TESTS:
            errors.append("perftest_tests: %s is not one of %s" % (name or "(no name)", ", ".join(PERFTEST_TESTS)))
    return errors


def _whole(value, least):
    text = str(value).strip()
    return not isinstance(value, bool) and text.isdigit() and int(text) >= least


def burnin(values):
    """The burn-in's settings; the hosts (two at least) are the role's to check, in its play."""
    thresholds = _given(values, "burnin_min_busbw", "burnin_expected_busbw")
    errors = validation.threshold_errors(thresholds)
    expected = thresholds.get("burnin_expected_busbw")
    if expected not in (None, "") and not validation.threshold_errors({"expected": expected}) and float(expected) <= 0:
        errors.append("burnin_expected_busbw must be above 0, got %r" % (expected,))
    if "burnin_tolerance" in values:
        tolerance = values["burnin_tolerance"]
        if isinstance(tolerance, bool) or not _FRACTION.match(str(tolerance)) or not 0 < float(tolerance) < 1:
            errors.append("burnin_tolerance must be a fraction between 0 and 1, got %r" % (tolerance,))
    if "burnin_timeout" in values and not _whole(values["burnin_timeout"], 1):
        errors.append("burnin_timeout must be a positive number of seconds, got %r" % (values["burnin_timeout"],))
    if "burnin_strategy" in values and values["burnin_strategy"] not in ("pairwise", "search"):
        errors.append("burnin_strategy must be pairwise or search, got %r" % (values["burnin_strategy"],))
    if "burnin_search_max_rounds" in values and not _whole(values["burnin_search_max_rounds"], 1):
        errors.append("burnin_search_max_rounds must be 1 or more, got %r" % (values["burnin_search_max_rounds"],))
    if "burnin_args" in values and not _one_line(values["burnin_args"]):
        errors.append("burnin_args must be nccl-tests' arguments on one line, got %r" % (values["burnin_args"],))
    return errors


def settings(values):
    """The collection's settings (role _common) whose content a type cannot say: the known-good policy, the trays of
    an NVLink domain."""
    errors = []
    if "gpufabric_nvlink_domain_size" in values:
        try:
            rack_domains.check_size(values["gpufabric_nvlink_domain_size"])
        except ValueError as exc:
            errors.append(str(exc))
    if values.get("gpufabric_known_good") in (None, "", {}):
        return errors
    try:
        versions.check_policy(values["gpufabric_known_good"])
    except versions.KnownGoodError as exc:
        return errors + ["gpufabric_" + str(exc)]
    return errors


RULES = {"nccl_tests": nccl_tests, "perftest": perftest, "burnin": burnin, "_common": settings}


def errors(role, values):
    """The role's rules on ``values`` ({variable: value}); [] for a role without rules of its own."""
    if not isinstance(values, Mapping):
        raise ValueError("the inputs must be a mapping of variable name to value, got %r" % (values,))
    rule = RULES.get(role)
    return rule(dict(values)) if rule else []
