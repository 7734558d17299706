# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fingerprint of a configuration phase (plugin_utils.phases), for the applied module's records."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.plugin_utils import phases
from ansible_collections.gpufabric.rdma.plugins.plugin_utils.filter_guard import (
    Mapping, expect, expect_list_of_mappings, fail, filters)


def phase_fingerprint(inputs, phase, code=""):
    if not isinstance(phase, str) or not re.match(r"^[a-z][a-z0-9_]{0,39}$", phase):
        fail("phase_fingerprint", "the phase name must be lowercase letters, digits and _, got %r" % (phase,))
    if not isinstance(code, str):
        fail("phase_fingerprint", "code must be the code_fingerprint lookup's text, got %r" % (code,))
    return phases.phase_fingerprint(inputs, phase, code)


def _declared(name, declared):
    """The phase's own declaration {observes?, publishes?} out of ``declared`` (phase -> declaration), checked."""
    if declared is None:
        return {}
    expect("phase_entry", declared, (Mapping,), "declared: a dict of phase -> {observes, publishes}")
    if name not in declared:
        fail("phase_entry", "phase %s has no declaration of what it observes and publishes (declared: %s)"
             % (name, ", ".join(sorted(declared)) or "none"))
    own = declared[name] or {}
    if not isinstance(own, Mapping) or set(own) - {"observes", "publishes"}:
        fail("phase_entry", "phase %s: its declaration must be {observes: [kinds], publishes: {fact: type}}, got %r"
             % (name, own))
    out = {}
    if own.get("observes") is not None:
        out["observes"] = list(expect("phase_entry", own["observes"], (list, tuple), "observes: a list of kinds of evidence"))
    out["publishes"] = dict(expect("phase_entry", own.get("publishes") or {}, (Mapping,), "publishes: fact -> type"))
    return out


def phase_entry(item, code="", declared=None):
    """{key: phase, value: inputs} (one item of dict2items) -> {name, fingerprint}: an entry of the applied module;
    with ``declared`` (phase -> {observes, publishes}), also what the phase must observe and the facts it publishes,
    which the applied module judges its record by."""
    if not isinstance(item, Mapping) or "key" not in item:
        fail("phase_entry", "expects an item of dict2items ({key: phase, value: inputs}), got %r" % (item,))
    entry = {"name": item["key"], "fingerprint": phase_fingerprint(item.get("value"), item["key"], code)}
    entry.update(_declared(item["key"], declared))
    return entry


def phases_applied(entries, evidence):
    """The entries of the phases that named what they applied ({phase: <role>_applied or None}), each with its
    evidence and the facts it published (and the phase's declaration, as the check returned it): the applied
    module's state=record input."""
    expect_list_of_mappings("phases_applied", entries, "a list of {name, fingerprint}")
    expect("phases_applied", evidence, (Mapping,), "a dict of phase -> what it applied")
    out = []
    for entry in entries:
        named = evidence.get(entry.get("name"))
        if named is None:
            continue
        if not isinstance(named, Mapping):
            fail("phases_applied", "phase %s: what it applied must be a dict, got %r" % (entry.get("name"), named))
        out.append(dict(entry, evidence=dict((k, v) for k, v in named.items() if k != "facts" and v),
                        facts=dict(named.get("facts") or {})))
    return out


def phases_text(run):
    """The applied module's run ({phase: why}) as lines, 'network runs: drift since ...'."""
    expect("phases_text", run, (Mapping,), "the applied module's run (phase -> why)")
    return ["%s runs: %s" % (name, run[name]) for name in sorted(run)]


class FilterModule(object):
    def filters(self):
        return filters({"phase_fingerprint": phase_fingerprint, "phase_entry": phase_entry,
                        "phases_applied": phases_applied, "phases_text": phases_text})
