# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import netdev_host
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.files import read_text

PHASE_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
FACT_RE = re.compile(r"^(?!ansible_)[a-z][a-z0-9_]{0,63}$")
KINDS = ("files", "links", "packages", "modules", "netdev")
DPKG_STATUS = "/var/lib/dpkg/status"
UNKNOWN = "unknown"
ABSENT = "absent"


def check_phase(phase):
    """A phase entry {name, fingerprint, evidence?, facts?} -> the same, checked; ValueError naming the value."""
    if not isinstance(phase, dict):
        raise ValueError("each phase must be a dict with name and fingerprint, got %r" % (phase,))
    name = phase.get("name")
    if not isinstance(name, str) or not PHASE_RE.match(name):
        raise ValueError("phase name %r must be lowercase letters, digits and _ (at most 40)" % (name,))
    fingerprint = phase.get("fingerprint")
    if not isinstance(fingerprint, str) or not re.match(r"^[0-9a-f]{64}$", fingerprint):
        raise ValueError("phase %s: fingerprint %r must be 64 hex digits (the gpufabric.rdma.phase_fingerprint filter)"
                         % (name, fingerprint))
    evidence = phase.get("evidence") or {}
    if not isinstance(evidence, dict) or set(evidence) - set(KINDS):
        raise ValueError("phase %s: evidence must be a dict of %s, got %r" % (name, ", ".join(KINDS), evidence))
    for kind in ("files", "links", "modules", "packages"):
        for item in evidence.get(kind) or []:
            if not isinstance(item, str) or not item or "\n" in item or (kind in ("files", "links") and not item.startswith("/")):
                raise ValueError("phase %s: %s entry %r must be %s" % (
                    name, kind, item, "an absolute path" if kind in ("files", "links") else "a name"))
    for item in evidence.get("netdev") or []:
        if not isinstance(item, dict) or not (item.get("name") or item.get("rdma_device")):
            raise ValueError("phase %s: netdev entry %r must be rdma_netdev's arguments (name or rdma_device)" % (name, item))
    facts = phase.get("facts") or {}
    if not isinstance(facts, dict) or not all(isinstance(k, str) and FACT_RE.match(k) for k in facts):
        raise ValueError("phase %s: facts must map variable names (lowercase, not ansible_*) to values, got %r" % (name, facts))
    return {"name": name, "fingerprint": fingerprint, "evidence": evidence, "facts": facts}


def published(record):
    """The facts a record gives back to the play: only variable names a phase may publish (a record edited by hand
    cannot set ansible_* or another shape of name)."""
    facts = record.get("facts") if isinstance(record, dict) else None
    if not isinstance(facts, dict):
        return {}
    return dict((k, v) for k, v in facts.items() if isinstance(k, str) and FACT_RE.match(k))


def _file(path):
    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
        return "sha256:%s mode:%o" % (digest, os.stat(path).st_mode & 0o7777)
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
        label = params.get("name") or params.get("rdma_device")
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
            what = "interface" if kind == "netdev" else kind[:-1]
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
        return False, "its settings or the collection changed since it was applied"
    changes = drift(record.get("observed") or {}, now)
    if changes:
        return False, "drift since it was applied: " + "; ".join(changes[:5]) + ("; ..." if len(changes) > 5 else "")
    return True, "as applied on %s" % record.get("recorded_at", "?")
