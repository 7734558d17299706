"""The node health check's options are declared once, in the registry (module_utils/node/checks/all.py, issue 54);
the health_monitor role's lists are held equal to it here (issue 52 item 2: `health_monitor_checks: {dcgm_level: 1}`,
as the README shows it, was refused - "unknown: dcgm_level" - because the role's list lacked dcgm_level and
dcgmi_path). The role's list (vars/main.yml), the options its task passes to node_health (tasks/checks.yml), the
options its argument spec documents and the module's argument_spec must name the registry's options."""

import os
import re
from unittest import mock

import yaml

from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import all as registry
from ansible_collections.gpufabric.rdma.plugins.modules import node_health
from moduletest import argument_spec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "health_monitor")
# Options of the module call only, not checks: the node's name in the report, and the checks' options in one mapping.
NOT_CHECKS = {"node_name", "checks"}


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _module_options():
    return set(argument_spec(node_health)) - NOT_CHECKS


def _task_options():
    (task,) = [t for t in _load("tasks", "checks.yml") if "gpufabric.rdma.node_health" in t]
    return set(task["gpufabric.rdma.node_health"]) - NOT_CHECKS


def _documented_options():
    text = _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]["health_monitor_checks"]["description"]
    return set(re.findall(r"C\(([a-z_]+)", text))


def test_every_list_of_the_check_options_is_the_same():
    known = set(registry.DEFAULTS)
    assert "dcgm_level" in known and "dcgmi_path" in known
    lists = {"roles/health_monitor/vars/main.yml": set(_load("vars", "main.yml")["__health_monitor_check_options"]),
             "roles/health_monitor/tasks/checks.yml": _task_options(),
             "node_health's argument_spec": _module_options()}
    differing = dict((name, {"missing": sorted(known - found), "unknown": sorted(found - known)})
                     for name, found in lists.items() if found != known)
    assert differing == {}
    assert sorted(known - _documented_options()) == []


def test_the_comparison_can_fail():
    with mock.patch.dict(registry.DEFAULTS, {"new_check": None}):
        assert set(registry.DEFAULTS) != _task_options()
