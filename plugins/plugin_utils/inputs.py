# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' preflight: every input the user set, as each host of the run sees it (inventory, group_vars, extra
variables), checked on the controller before anything changes - against the roles' argument specs
(meta/argument_specs.yml, with ansible-core's own validator, so it refuses what the role would) and against the rules
between them (module_utils/judge/inputs.py, which the roles' own asserts call too).

A message names the variable, the value as the user typed it, and what the role takes; never ansible-core's internal
class names, nor the role's internal variable where a playbook passes one on (the playbook names its own inputs).
Controller-side only (ansible.module_utils.common.arg_spec and jinja2).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections.abc import Mapping

from jinja2 import Undefined

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import inputs as rules

KINDS = {"str": "text", "path": "a path", "int": "a whole number", "float": "a number", "bool": "true or false",
         "list": "a list", "dict": "a mapping", "raw": "a value", "bytes": "a size in bytes", "bits": "a size in bits",
         "jsonarg": "JSON text", "json": "JSON text"}
ELEMENTS = {"str": "text", "path": "paths", "int": "whole numbers", "float": "numbers", "bool": "true or false",
            "dict": "mappings", "list": "lists", "raw": "values"}
PLAYBOOK = "playbook"


class _NotYet(Exception):
    """A value that names what only the play knows (a fact, a registered result): the role checks it when it runs."""


def _plain(value):
    """The value as plain Python (no templating wrappers or tags), so messages and the validator see what was typed."""
    if isinstance(value, Undefined):
        raise _NotYet()
    if isinstance(value, Mapping):
        return dict((str(key), _plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


def host_values(hostvars, hosts, names):
    """{host: {name: value}}: each of ``names`` the host has a value for before the play runs (unset or null: left to
    the role's default; a value that names a fact: left to the role's own check)."""
    found = {}
    for host in hosts:
        try:
            seen = hostvars[host]
        except Exception:  # a host the inventory does not hold has no variables of its own
            continue
        mine = found.setdefault(host, {})
        for name in names:
            try:
                if name in seen:
                    value = _plain(seen[name])
                    if value is not None:
                        mine[name] = value
            except Exception:  # a template of facts or results: not knowable before the play
                continue
    return found


def _shown(value):
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _expected(spec):
    if spec.get("choices"):
        return "one of " + ", ".join(_shown(choice) for choice in spec["choices"])
    kind = KINDS.get(spec.get("type") or "str", spec.get("type"))
    if spec.get("type") == "list" and spec.get("elements"):
        kind += " of " + ELEMENTS.get(spec["elements"], spec["elements"])
    return kind


def spec_problem(name, spec, value, owner):
    """None when ``value`` passes the option's spec, else a sentence naming the variable, the value and what it takes."""
    spec = dict(spec or {})
    if owner == PLAYBOOK and value == "":
        return None
    found = [str(error) for error in ArgumentSpecValidator({name: spec}).validate({name: value}).errors
             if "missing required arguments" not in str(error) or " found in " in str(error)]
    if not found:
        return None
    where = "an input of this playbook" if owner == PLAYBOOK else "role gpufabric.rdma.%s" % owner
    detail = "" if all(("convert to" in e or "must be one of" in e) and " found in " not in e for e in found) \
        else ": %s" % "; ".join(found)
    return "%s is %s, expected %s (%s)%s" % (name, _shown(value), _expected(spec), where, detail)


def _owner_problems(owner, options, values):
    """The problems of one host's values of one owner's options: each option against its spec, then the rules."""
    given = dict((name, values[name]) for name in options if name in values)
    problems = [spec_problem(name, options[name], value, owner) for name, value in sorted(given.items())]
    problems = [problem for problem in problems if problem]
    if not problems and owner != PLAYBOOK:
        problems += rules.errors(owner, given)
    return problems


def problems(values_by_host, specs):
    """Every problem once, with the hosts it holds for when not all: [sentence]. ``specs``: {role or 'playbook':
    {option: spec}}, ``values_by_host``: host_values' result."""
    where = {}
    for host in sorted(values_by_host):
        for owner in sorted(specs):
            for problem in _owner_problems(owner, specs[owner] or {}, values_by_host[host]):
                where.setdefault(problem, []).append(host)
    every = len(values_by_host)
    out = []
    for problem in sorted(where):
        hosts = where[problem]
        if len(hosts) < every:
            problem += " (on %s%s)" % (", ".join(hosts[:5]), " and %d more" % (len(hosts) - 5) if len(hosts) > 5 else "")
        out.append(problem)
    return out


def preflight(hostvars, hosts, specs):
    """The preflight's problems for ``hosts``: their values of every option in ``specs``, checked."""
    names = sorted(set(name for options in specs.values() for name in (options or {})))
    return problems(host_values(hostvars, hosts, names), specs)
