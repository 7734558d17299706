# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What a node health check is, as gpud's component interface is: one declaration per check, in its own file of this
folder, listed once in all.py.

A check declares its name, its options (type and default, as node_health's argument spec takes them, and the rules a
value must follow), what it reads (each command bounded by command_timeout, or a file), the findings it reports (each
has its entry in docs/site/troubleshooting.yml) and the metric families its readings become. ``read(node)`` reads
through ``node`` (node/node_checks.py's Node: the command runner, bounded file reads, sysfs, the readings several
checks share), so this folder imports no host module and the table can be read anywhere - the monitor's configuration
check on the controller reads it. ``judge(node, readings)`` turns the readings into findings with judge/'s functions.

Readings are a dict. Two keys mean the same for every check, and the loop (node_checks.check_node) reports them the
same way: ``unread`` - [(source, why)] of what could not be read (the report is then incomplete and never resumes a
node) - and ``not_run`` - why the check could not run at all (its tool missing, nothing to read). The keys a check
names in ``observed`` go to the result's ``observed`` as they are (None when the check was not asked for).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import check_seconds

TYPES = ("int", "float", "bool", "str", "path", "list", "dict", "raw")


class CheckOptionError(ValueError):
    """An option that cannot be checked with; the message names it and its value."""


class Option(object):
    """One option of a check: its name, node_health's type (and list elements), its default, the rules a given value
    must follow (each ``rule(name, value)`` raises CheckOptionError naming the value; None is never checked) and its
    description - a sentence or a list of paragraphs, in ansible-doc's markup (C(), O(), M(), ...) - which becomes
    node_health's documentation of it (plugins/doc_fragments/node_checks.py)."""

    def __init__(self, name, type, default=None, elements=None, rules=(), description=None):
        if type not in TYPES:
            raise ValueError("option %s: type must be one of %s, got %r" % (name, ", ".join(TYPES), type))
        self.name, self.type, self.default, self.elements, self.rules = name, type, default, elements, tuple(rules)
        self.description = description

    def spec(self):
        """The option as AnsibleModule's argument_spec takes it."""
        spec = {"type": self.type}
        if self.elements:
            spec["elements"] = self.elements
        if self.default is not None:
            spec["default"] = copy.deepcopy(self.default)
        return spec

    def doc(self):
        """The option as a module's DOCUMENTATION has it: its description and its argument spec."""
        if not self.description:
            raise ValueError("option %s has no description: node_health's documentation is made of it" % self.name)
        return dict(self.spec(), description=self.description)

    def check(self, value):
        if value is not None:
            for rule in self.rules:
                rule(self.name, value)


class Check(object):
    """One health check of a node (see the module's docstring)."""

    def __init__(self, name, summary, reads, read, judge, options=(), findings=(), observed=(), metrics=None,
                 asked=None, settle=None):
        self.name = name
        self.summary = summary
        self.reads = tuple(reads)
        self.read = read
        self.judge = judge
        self.options = tuple(options)
        self.findings = tuple(findings)
        self.observed = tuple(observed)
        # {metric family: its labels besides cluster and Hostname}, as render/metrics.py writes them from the readings
        self.metrics = dict(metrics or {})
        self._asked = asked
        # settle(opts): what the options mean together, added to them once they are checked (counters: rate_rules)
        self.settle = settle

    def asked(self, node):
        """Whether this check runs with these options; one that was not asked for is neither run nor "not run"."""
        return self._asked(node) if self._asked else True


def on_host(host, found):
    """The findings of a judge whose targets name a part of the node (GPU 0, an IMEX peer), each target prefixed with
    the node's name, as the report names them."""
    for item in found:
        item["target"] = "%s/%s" % (host, item["target"])
    return found


# --- the rules an option's value follows ----------------------------------------------------------------------------

def whole(name, value):
    """A whole number, not negative."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise CheckOptionError("%s must be a whole number, got %r" % (name, value))
    if value < 0:
        raise CheckOptionError("%s must not be negative, got %d" % (name, value))


def seconds(name, value):
    """Whole seconds within a command's time limits (common/numbers.check_seconds)."""
    try:
        check_seconds(value, name)
    except ValueError as exc:
        raise CheckOptionError(str(exc))


def number(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CheckOptionError("%s must be a number, got %r" % (name, value))


def boolean(name, value):
    if not isinstance(value, bool):
        raise CheckOptionError("%s must be true or false, got %r" % (name, value))


def mapping(what):
    """A rule: the value is a mapping; ``what`` says of what, in the message."""
    def rule(name, value):
        if not isinstance(value, dict):
            raise CheckOptionError("%s must be a mapping of %s, got %r" % (name, what, value))
    return rule


def at_most(limit, unit):
    def rule(name, value):
        if value > limit:
            raise CheckOptionError("%s is at most %d %s, got %d" % (name, limit, unit, value))
    return rule


def at_least(low, unit):
    def rule(name, value):
        if value < low:
            raise CheckOptionError("%s must be at least %d %s, got %d" % (name, low, unit, value))
    return rule


def refused_by(check_options, error):
    """A rule from another subject's own check (judge/link_health.check_options, ...): its error, as ours."""
    def rule(name, value):
        try:
            check_options(value)
        except error as exc:
            raise CheckOptionError(str(exc))
    return rule
