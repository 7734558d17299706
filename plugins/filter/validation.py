# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""site.yml validates what changed: who is measured (validation_plan), and the record a measured node keeps
(node_validation). The pure parts are module_utils/plan/validation.py and judge/validation_record.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

import yaml

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation_record as records
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.applied import SETTINGS_CHANGED
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import validation
from ansible_collections.gpufabric.rdma.plugins.plugin_utils import inputs, phases
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    Mapping, Sequence, expect, expect_list_of_mappings, fail, filters)

# The roles validation runs (validate.yml), whose inputs a record's configuration fingerprint holds, and the playbook's own.
VALIDATION_ROLES = ("openmpi", "nccl", "dcgm_diag", "nccl_tests", "perftest")
PLAYBOOK_INPUTS = ("validate_dcgm_level", "validate_nccl", "validate_perftest", "gpufabric_replayed_from")
_NAMES = []


def validation_settings_names(root=phases.ROOT):
    """Every input of the validation roles (their meta/argument_specs.yml) and of validate.yml, sorted."""
    if not _NAMES:
        names = set(PLAYBOOK_INPUTS)
        for role in VALIDATION_ROLES:
            with open(os.path.join(root, "roles", role, "meta", "argument_specs.yml")) as handle:
                specs = yaml.safe_load(handle)["argument_specs"]
            names.update((specs.get("main") or {}).get("options") or {})
        _NAMES.extend(sorted(names))
    return list(_NAMES)


def _seen(hostvars, host, name):
    try:
        return hostvars[host].get(name)
    except Exception:  # a fact that names an undefined one: as if the run had not set it
        return None


def _node(hostvars, host, settings, code):
    """What the plan reads of one host: the record the module read, what discovery and configure found this run."""
    read = _seen(hostvars, host, "__validation_read")
    read = read if isinstance(read, Mapping) else {}
    discovered = _seen(hostvars, host, "discovery_node")
    applied = _seen(hostvars, host, "gpufabric_applied")
    checked = isinstance(applied, Mapping) and isinstance(applied.get("run"), Mapping) and not applied.get("skipped")
    try:
        hardware = records.fingerprint(records.hardware_view(discovered)) if isinstance(discovered, Mapping) else None
    except ValueError:
        hardware = None
    problem = read.get("problem") or (None if read.get("path") else "the record was not read in this run")
    return {"name": host, "record": read.get("record"), "problem": problem,
            "hardware": hardware,
            "configuration": validation.configuration_fingerprint(applied.get("phases") if checked else None,
                                                                  settings.get(host) or {}, code) if checked else None,
            "ran": dict(applied["run"]) if checked else None}


def validation_plan(hostvars, hosts, mode="changed", max_age_days=7, pair_tests=True, pairs=None, code=""):
    """hostvars, the play's hosts -> who site.yml measures and why, and the others' last validation (plan.validation)."""
    expect("validation_plan", hosts, (Sequence,), "the play's hosts (a list)")
    if isinstance(max_age_days, bool) or not isinstance(max_age_days, (int, float)) or not 0 <= max_age_days <= 3650:
        try:
            max_age_days = float(str(max_age_days))
        except ValueError:
            fail("validation_plan", "gpufabric_validate_max_age_days must be a number of days from 0 to 3650, got %r" % (max_age_days,))
        if not 0 <= max_age_days <= 3650:
            fail("validation_plan", "gpufabric_validate_max_age_days must be a number of days from 0 to 3650, got %r" % (max_age_days,))
    if pairs:
        expect_list_of_mappings("validation_plan", pairs, "perftest_pairs (a list of {server, client})")
    if not isinstance(code, str):
        fail("validation_plan", "code must be the code_fingerprint lookup's text, got %r" % (code,))
    hosts = [str(host) for host in hosts]
    settings = inputs.host_values(hostvars, hosts, validation_settings_names())
    nodes = [_node(hostvars, host, settings, code) for host in hosts]
    return validation.plan(nodes, str(mode), time.time(), float(max_age_days) * 86400, bool(pair_tests), list(pairs or []),
                           SETTINGS_CHANGED)


def node_validation(node, nccl_judged, perftest_judged, fingerprints, validated_at=None):
    """One measured node's record: its figures in the runs it took part in, the plan's fingerprints, the date; None
    where a fingerprint is unknown (discovery or configure's check did not run): such a record could never be reused."""
    expect("node_validation", node, (str,), "the node's inventory name")
    expect_list_of_mappings("node_validation", nccl_judged or [], "nccl_tests_judged (a list of judged runs)")
    expect_list_of_mappings("node_validation", perftest_judged or [], "perftest_judged (a list of judged runs)")
    expect("node_validation", fingerprints, (Mapping,), "the plan's fingerprints of the node ({hardware, configuration})")
    if not all(isinstance(fingerprints.get(key), str) for key in ("hardware", "configuration")):
        return None
    when = validated_at or records.date_text(time.time())
    return validation.node_record(node, nccl_judged, perftest_judged, dict(fingerprints), when)


class FilterModule(object):
    def filters(self):
        return filters({"validation_plan": validation_plan, "node_validation": node_validation})
