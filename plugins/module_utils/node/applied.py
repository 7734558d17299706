# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What a configuration phase applied on this node, kept so a later run can skip the phase while it still holds.

Host access, standard library only; the applied module uses it. A phase (configure.yml's drivers, network,
peermem, mpi, nccl_env) leaves one record, ``<dir>/<phase>.json``: the fingerprint of its inputs (settings and
collection code, computed on the controller), the evidence it names (the files it wrote, the packages it
installed, the links that enable its units, the kernel modules it loaded, the interfaces rdma_netdev
configured) as observed right after it ran, and the facts it published for later plays.

A later run re-observes the same evidence and the phase is skipped only when the fingerprint is the same and
every observation is too: a file edited by hand, a package removed, a module unloaded or an interface whose
MTU or QoS moved (rdma_netdev's own reading, netdev_host.plan_for, finds nothing to do) is drift, and the
phase runs. Anything that cannot be observed counts as drift too: unknown never skips a phase.

A record is judged by its phase, never by itself: the phase declares the kinds of evidence it must observe
(``observes``) and the facts it publishes with their types (``publishes``). A record that observes less, names
an item it did not observe, or holds another fact or a fact of another type is not the phase's, and neither is
a record that is a link, a FIFO, a device, a directory or larger than MAX_RECORD (read without following links,
never blocking, bounded): the phase runs, and the reason names the record's path.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import netdev_host, statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.files import Refused, read_bytes, read_text

PHASE_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
FACT_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
FINGERPRINT_RE = re.compile(r"^[0-9a-f]{64}$")
KINDS = ("files", "links", "packages", "modules", "netdev")
NAME_RES = {"packages": re.compile(r"^[A-Za-z0-9][A-Za-z0-9+._-]{0,127}$"), "modules": re.compile(r"^[A-Za-z0-9_-]{1,64}$")}
# Ansible's special variables (and ansible_*): a phase never publishes one, so no record can set one for the play.
ANSIBLE_OWNS = frozenset(("environment", "group_names", "groups", "hostvars", "inventory_dir", "inventory_file",
                          "inventory_hostname", "inventory_hostname_short", "item", "omit", "play_hosts",
                          "playbook_dir", "role_name", "role_names", "role_path", "vars"))
FACT_TYPES = ("bool", "dict", "int", "list", "path", "str")
MAX_RECORD = 1 << 20   # a record is a few kilobytes; anything larger is not one
DPKG_STATUS = "/var/lib/dpkg/status"
UNKNOWN = "unknown"
ABSENT = "absent"
# Why a phase runs when its fingerprint differs; site.yml's validation judges that by its own fingerprint instead.
SETTINGS_CHANGED = "its settings or the collection changed since it was applied"


def _what(kind):
    return "interface" if kind == "netdev" else kind[:-1]


def _label(kind, item):
    return (item.get("name") or item.get("rdma_device")) if kind == "netdev" else item


def _check_evidence(evidence):
    """ValueError (without the phase's name) for evidence that is not {kind: [items]} of known kinds and names."""
    if not isinstance(evidence, dict) or set(evidence) - set(KINDS):
        raise ValueError("evidence must be a dict of %s, got %r" % (", ".join(KINDS), evidence))
    for kind in KINDS:
        items = evidence.get(kind) or []
        if not isinstance(items, list):
            raise ValueError("evidence %s must be a list, got %r" % (kind, items))
        for item in items:
            if kind == "netdev":
                if not isinstance(item, dict) or not isinstance(item.get("name") or item.get("rdma_device"), str):
                    raise ValueError("netdev entry %r must be rdma_netdev's arguments (name or rdma_device)" % (item,))
            elif kind in ("files", "links"):
                if not isinstance(item, str) or not item.startswith("/") or "\n" in item or "\0" in item:
                    raise ValueError("%s entry %r must be an absolute path" % (kind, item))
            elif not isinstance(item, str) or not NAME_RES[kind].match(item):
                raise ValueError("%s entry %r must be a name (letters, digits, %s)" % (
                    kind, item, "+ . _ -" if kind == "packages" else "_ -"))


def fact_problem(value, kind):
    """None when ``value`` is of the declared ``kind`` (one of FACT_TYPES), else 'must be a path, got ...'."""
    checks = {"str": lambda v: isinstance(v, str),
              "path": lambda v: isinstance(v, str) and v.startswith("/") and "\n" not in v and "\0" not in v,
              "int": lambda v: isinstance(v, int) and not isinstance(v, bool), "bool": lambda v: isinstance(v, bool),
              "list": lambda v: isinstance(v, list), "dict": lambda v: isinstance(v, dict)}
    return None if checks[kind](value) else "must be a%s %s, got %r" % ("n" if kind == "int" else "", kind, value)


def _check_declaration(name, observes, publishes):
    if observes is not None and (not isinstance(observes, list) or not all(k in KINDS for k in observes)):
        bad = [k for k in observes if k not in KINDS] if isinstance(observes, list) else [observes]
        raise ValueError("phase %s: observes %r must be kinds of evidence (%s)" % (name, bad[0], ", ".join(KINDS)))
    if not isinstance(publishes, dict):
        raise ValueError("phase %s: publishes must map variable names to their types, got %r" % (name, publishes))
    for fact, kind in publishes.items():
        if isinstance(fact, str) and (fact.startswith("ansible_") or fact in ANSIBLE_OWNS):
            raise ValueError("phase %s: publishes %s: %s is a name Ansible owns, not one a phase may set" % (name, fact, fact))
        if not isinstance(fact, str) or not FACT_RE.match(fact):
            raise ValueError("phase %s: publishes %r: a variable name is lowercase letters, digits and _" % (name, fact))
        if kind not in FACT_TYPES:
            raise ValueError("phase %s: publishes %s: type %r must be one of %s" % (name, fact, kind, ", ".join(FACT_TYPES)))


def _facts_problem(facts, phase):
    """None when ``facts`` are only what the phase publishes, each of its type; else what is wrong."""
    if not isinstance(facts, dict):
        return "facts must be a dict, got %r" % (facts,)
    publishes = phase["publishes"]
    for fact in sorted(facts, key=str):
        if fact not in publishes:
            return "fact %s is not one phase %s publishes (%s)" % (fact, phase["name"], ", ".join(sorted(publishes)) or "none")
        problem = fact_problem(facts[fact], publishes[fact])
        if problem:
            return "fact %s %s" % (fact, problem)
    return None


def check_phase(phase):
    """A phase entry {name, fingerprint, observes?, publishes?, evidence?, facts?} -> the same, checked; ValueError
    naming the value. ``observes`` (kinds of evidence, each of which a record must observe at least once) and
    ``publishes`` (fact name -> type) are the phase's own: a record is judged by them, never by itself."""
    if not isinstance(phase, dict):
        raise ValueError("each phase must be a dict with name and fingerprint, got %r" % (phase,))
    name = phase.get("name")
    if not isinstance(name, str) or not PHASE_RE.match(name):
        raise ValueError("phase name %r must be lowercase letters, digits and _ (at most 40)" % (name,))
    fingerprint = phase.get("fingerprint")
    if not isinstance(fingerprint, str) or not FINGERPRINT_RE.match(fingerprint):
        raise ValueError("phase %s: fingerprint %r must be 64 hex digits (the gpufabric.rdma.phase_fingerprint filter)"
                         % (name, fingerprint))
    observes, publishes = phase.get("observes"), phase.get("publishes") or {}
    _check_declaration(name, observes, publishes)
    evidence = phase.get("evidence") or {}
    try:
        _check_evidence(evidence)
    except ValueError as exc:
        raise ValueError("phase %s: %s" % (name, exc))
    checked = {"name": name, "fingerprint": fingerprint, "observes": observes, "publishes": publishes,
               "evidence": evidence, "facts": phase.get("facts") or {}}
    problem = _facts_problem(checked["facts"], checked)
    if problem:
        raise ValueError(problem)
    return checked


def declaration(phase):
    """What the phase is compared by and declares, without what it applied: the check's answer for the record step."""
    entry = {"name": phase["name"], "fingerprint": phase["fingerprint"], "publishes": phase["publishes"]}
    if phase["observes"] is not None:
        entry["observes"] = phase["observes"]
    return entry


def missing_observation(phase, evidence):
    """None when ``evidence`` names what the phase must observe (each kind it declares, at least one item; with no
    declaration, at least one item of any kind); else why a record of it cannot hold."""
    observes = phase["observes"]
    if observes is None:
        if not any(evidence.get(kind) for kind in KINDS):
            return "it observes nothing, and phase %s does not declare that it may" % phase["name"]
        return None
    for kind in observes:
        if not evidence.get(kind):
            return "it observes no %s, which phase %s must observe" % (kind, phase["name"])
    return None


def _observed_problem(evidence, observed):
    if not isinstance(observed, dict) or set(observed) - set(KINDS):
        return "observed must be a dict of %s, got %r" % (", ".join(KINDS), observed)
    for kind in KINDS:
        seen = observed.get(kind) or {}
        if not isinstance(seen, dict):
            return "observed %s must be a dict, got %r" % (kind, seen)
        named = set(_label(kind, item) for item in evidence.get(kind) or [])
        for item in sorted(named - set(seen)):
            return "%s %s is named in its evidence but was not observed" % (_what(kind), item)
        for item in sorted(set(seen) - named, key=str):
            return "%s %s was observed but is not named in its evidence" % (_what(kind), item)
        for item in sorted(seen):
            if not isinstance(seen[item], str):
                return "observation of %s %s must be text, got %r" % (_what(kind), item, seen[item])
    return None


def check_record(record, phase):
    """The record read back for ``phase`` (checked by check_phase) -> the same when it is the shape the phase
    writes; ValueError saying what is not: the phase's declaration decides what must be observed and what may be
    given back, the record only what it saw."""
    if not isinstance(record, dict):
        raise ValueError("it is a %s, not a dict" % type(record).__name__)
    if not isinstance(record.get("fingerprint"), str) or not FINGERPRINT_RE.match(record["fingerprint"]):
        raise ValueError("fingerprint must be 64 hex digits, got %r" % (record.get("fingerprint"),))
    evidence = record.get("evidence")
    _check_evidence(evidence)
    problem = (_observed_problem(evidence, record.get("observed"))
               or missing_observation(phase, evidence) or _facts_problem(record.get("facts") or {}, phase))
    if problem:
        raise ValueError(problem)
    if not isinstance(record.get("recorded_at", ""), str):
        raise ValueError("recorded_at must be text, got %r" % (record["recorded_at"],))
    return record


def published(record, phase):
    """The facts a record gives back to the play: only those its phase publishes, each of its declared type."""
    facts = record.get("facts") if isinstance(record, dict) else None
    if not isinstance(facts, dict):
        return {}
    return dict((k, v) for k, v in facts.items()
                if k in phase["publishes"] and fact_problem(v, phase["publishes"][k]) is None)


def _file(path):
    try:
        digest = hashlib.sha256(read_bytes(path)).hexdigest()
        return "sha256:%s mode:%o" % (digest, os.stat(path).st_mode & 0o7777)
    except Refused as exc:
        return "%s (%s)" % (UNKNOWN, exc)
    except (IOError, OSError) as exc:
        return ABSENT if not os.path.lexists(path) else "%s (%s)" % (UNKNOWN, exc.strerror or exc)


def _link(path):
    if not os.path.lexists(path):
        return ABSENT
    return os.readlink(path) if os.path.islink(path) else "not a link"


def dpkg_versions(status_text, names):
    """{name: version or 'absent'} of the installed packages in dpkg's status file text (linear, one pass)."""
    wanted, found = set(names), {}
    package = version = status = None
    for line in (status_text + "\n").splitlines() + [""]:
        if not line.strip():
            if package in wanted and status and status.split()[-1] == "installed" and package not in found:
                found[package] = version or "?"
            package = version = status = None
        elif line.startswith("Package:"):
            package = line.split(":", 1)[1].strip()
        elif line.startswith("Version:"):
            version = line.split(":", 1)[1].strip()
        elif line.startswith("Status:"):
            status = line.split(":", 1)[1].strip()
    return dict((name, found.get(name, ABSENT)) for name in names)


def _packages(names, runner, dpkg_status, cache):
    if not names:
        return {}
    if dpkg_status not in cache:   # one read of dpkg's status file per module run, whatever the phases
        cache[dpkg_status] = read_text(dpkg_status)
    status = cache[dpkg_status]
    if status is not None:
        return dpkg_versions(status, names)
    rpm = runner.which("rpm")
    if not rpm:
        return dict((name, "%s (no dpkg status, no rpm)" % UNKNOWN) for name in names)
    versions = {}
    for name in names:
        result = runner.run([rpm, "-q", "--qf", "%{VERSION}-%{RELEASE}\\n", name])
        versions[name] = result.stdout.strip() if result.ok else (
            ABSENT if result.rc == 1 else "%s (%s)" % (UNKNOWN, result.describe()))
    return versions


def _netdev(entries, runner):
    found = {}
    for args in entries:
        params = dict(args)
        label = _label("netdev", params)
        try:
            _ifname, plan = netdev_host.plan_for(params, runner, netdev_host.roots_of(params))
            changes = netdev_host.pending(plan)
            found[label] = "as applied" if not changes else "would change: " + "; ".join(changes)
        except (ValueError, netdev_host.HostError) as exc:
            found[label] = "%s (%s)" % (UNKNOWN, exc)
    return found


def observe(evidence, runner, dpkg_status=None, sys_module="/sys/module", cache=None):
    """The evidence as it is now: {kind: {item: observation}}. ``cache`` (a dict the caller keeps for one run) holds
    what several phases read alike - dpkg's status file - so it is read once."""
    cache = {} if cache is None else cache
    return {
        "files": dict((path, _file(path)) for path in evidence.get("files") or []),
        "links": dict((path, _link(path)) for path in evidence.get("links") or []),
        "packages": _packages(evidence.get("packages") or [], runner, dpkg_status or DPKG_STATUS, cache),
        "modules": dict((name, "loaded" if os.path.isdir(os.path.join(sys_module, name)) else ABSENT)
                        for name in evidence.get("modules") or []),
        "netdev": _netdev(evidence.get("netdev") or [], runner),
    }


def drift(recorded, now):
    """What differs between the observations kept at the record and those of now, one phrase each."""
    changes = []
    for kind in KINDS:
        before, after = recorded.get(kind) or {}, now.get(kind) or {}
        for item in sorted(set(before) | set(after)):
            was, is_ = before.get(item, ABSENT), after.get(item, ABSENT)
            what = _what(kind)
            if is_.startswith(UNKNOWN) or (kind == "netdev" and is_ != "as applied"):
                changes.append("%s %s: %s" % (what, item, is_))
            elif was != is_:
                changes.append("%s %s: %s -> %s" % (what, item, _short(was), _short(is_)))
    return changes


def _short(value):
    return value[:19] if value.startswith("sha256:") else value


def judge(phase, record, now):
    """Whether the phase may be skipped: (True, 'as applied at <when>') or (False, why it runs)."""
    if record is None:
        return False, "no record of it on this node"
    if record.get("fingerprint") != phase["fingerprint"]:
        return False, SETTINGS_CHANGED
    changes = drift(record.get("observed") or {}, now)
    if changes:
        return False, "drift since it was applied: " + "; ".join(changes[:5]) + ("; ..." if len(changes) > 5 else "")
    return True, "as applied on %s" % record.get("recorded_at", "?")


def assess(phase, path, runner, cache):
    """One phase against its record at ``path``: (held, why, facts to give back). A record that cannot be read, is
    not a regular file of its own, is larger than MAX_RECORD or is not the shape its phase writes is never trusted:
    the phase runs and ``why`` names the path and what is wrong."""
    try:
        record = statefile.read_json(path, limit=MAX_RECORD)
        if record is not None:
            record = check_record(record, phase)
    except (statefile.Damaged, ValueError) as exc:
        return False, "its record cannot be used: %s: %s" % (path, exc), {}
    except statefile.StateError as exc:
        return False, "its record cannot be used: %s" % exc, {}
    now = observe(record["evidence"], runner, cache=cache) if record else {}
    held, why = judge(phase, record, now)
    return held, why, published(record, phase) if held else {}
