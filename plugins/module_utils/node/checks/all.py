# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Every node health check, one line each, in the order they run (node_checks.check_node); gpud registers its
components the same way (components/all/all.go). A new check is one file in this folder (check.py says what it
declares) and one line here. From this table come node_health's argument spec, the options the health monitor
accepts and their defaults; tests hold the health_monitor role's lists, node_health's documentation, the
troubleshooting page and the metric families equal to it (tests/integration/plugins/module_utils/node/checks/test_check_registry.py).

The imports are the registry: each module imported below is a check, taken in the order of its line. They stay
plain imports so that Ansible ships them with node_health and program_closure with the health monitor.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The check modules are used through CHECKS below, which pylint cannot see.
# pylint: disable=unused-import

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import DEFAULT_COMMAND_TIMEOUT
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import check
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import nvidia_smi  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import gpu_memory  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import gpu_clocks  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import nvlink  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import nvlink_fabric  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import imex  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import xid  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import fabric_events  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import rdma_ports  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import mtu  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import peermem  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import pcie  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import nic_firmware  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import link_health  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import counters  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import nccl_env  # noqa: F401
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import dcgm  # noqa: F401

# The checks, in the order of the lines above (every module here that declares a CHECK).
CHECKS = tuple(value.CHECK for value in list(globals().values()) if isinstance(getattr(value, "CHECK", None), check.Check))

CheckOptionError = check.CheckOptionError

# Options of the node, not of one check: where sysfs and procfs are, and how long each command may take (the runner's
# command_timeout, node/commands.ARGUMENT_SPEC: a test holds the two equal).
# command_timeout is documented by the command_timeout fragment, as for every module that runs commands.
NODE_OPTIONS = (check.Option("sysfs_root", "path", "/sys", description="Root of the sysfs tree (a captured tree in tests)."),
                check.Option("procfs_root", "path", "/proc", description="Root of procfs (for C(modules))."),
                check.Option("command_timeout", "int", DEFAULT_COMMAND_TIMEOUT, rules=(check.whole, check.seconds)))


def options_table():
    """[(Option, the check's name or None for the node's)] in order; two checks declaring one option is an error."""
    table, seen = [(option, None) for option in NODE_OPTIONS], set()
    for item in CHECKS:
        table += [(option, item.name) for option in item.options]
    for option, owner in table:
        if option.name in seen:
            raise ValueError("option %s is declared twice (check %s)" % (option.name, owner))
        seen.add(option.name)
    return table


OPTIONS = dict((option.name, option) for option, owner in options_table())
# Every option with its default: what node_health, the health monitor and the role's check take.
DEFAULTS = dict((name, option.default) for name, option in OPTIONS.items())


def argument_spec():
    """node_health's argument spec of the checks' options (the module adds its own, node_name)."""
    return dict((name, option.spec()) for name, option in OPTIONS.items())


def refuse_unknown(given):
    """CheckOptionError naming each name of ``given`` that is no option of the table, and the known ones."""
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise CheckOptionError("unknown check option(s): %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))


def check_options(given):
    """The given options over DEFAULTS; unknown names and bad values raise CheckOptionError naming them.

    None stands for the default. The result adds what the checks derive from their options (rate_rules); checking a
    result again is allowed.
    """
    given = dict((k, v) for k, v in (given or {}).items() if k != "rate_rules")
    refuse_unknown(given)
    merged = dict(DEFAULTS)
    merged.update(dict((k, v) for k, v in given.items() if v is not None))
    for option, owner in options_table():
        option.check(merged[option.name])
    for item in CHECKS:
        if item.settle:
            item.settle(merged)
    return merged
