# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The return-to-service certificate: what an active check proved about a drained node, and whether the one decider
may resume the node on it.

A certificate is made after the drain by a check the decider asked for (``remediate.yml``: the nodes its plan
names ``certify``), never by the node on itself, and handed to the decider, which stamps it with the scheduler's
clock (``at``, when it was handed in) and keeps it in the node's ledger record. It holds one entry per check -
``dcgm`` (``dcgmi diag`` at a level), ``nccl`` (nccl-tests on the node's own GPUs, judged against its baseline or
what its links carry), ``pairwise`` (a short run with a healthy peer), and for a tray of an NVLink rack ``imex`` (the
IMEX domain as the node's ``nvidia-imex-ctl -N`` sees it: UP, every expected node READY and connected) and
``nvlink_domain`` (one nccl-tests run across the rack's nodes over NVLink, judged against its expectation) - each ``pass``, ``fail``, ``warn`` or
``not run`` with its figures, the versions the check ran with, and ``measured_at``: when the check was made, by the
scheduler's clock (remediate.yml gives the time the decider read from the scheduler when it asked for the check,
which is before the check began).

A resume needs, besides the passive check's fresh and complete report, a certificate that answers this drain, once:

- measured at or after the drain in effect (its time in the ledger, else the scheduler's), and after the node's
  last resume (a certificate counts once: one that resumed a node never resumes it again);
- not measured in the future (CLOCK_SKEW seconds of another clock allowed), nor handed in before the drain;
- younger than ``max_age`` by its ``measured_at``;
- in which every check the policy names passed - every entry of that check, so a failing entry beside a passing one
  fails it (a warning, a check not run or missing is not a pass) - and DCGM ran at the policy's level or above.

Unknown is not healthy: a node that cannot be checked stays drained, and the decision says which check is missing
or what is wrong with its certificate.

Pure, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import one_line
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import settings as fields
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.messages import iso

CHECKS = ("dcgm", "nccl", "pairwise", "imex", "nvlink_domain")
STATUSES = ("pass", "fail", "warn", "not run")
DEFAULTS = {"required": True, "dcgm_level": 2, "checks": ["dcgm", "nccl"], "max_age": 21600}
MAX_DETAIL = 300
MAX_CHECK_ENTRIES = 8
# How far a certificate's measured_at may run ahead of the scheduler's clock (another host's clock, a few seconds
# apart): beyond it the certificate is dated in the future and does not count.
CLOCK_SKEW = 60
_FIGURES = ("busbw", "expected", "size")
_TEXTS = ("detail", "peer")
_VERSIONS = ("dcgm", "driver", "nccl", "cuda")


class CertificateError(ValueError):
    """A certificate or a certification setting that cannot be used; the message names the value."""


def check_settings(given):
    """The policy's ``certification`` section over DEFAULTS: {required, dcgm_level, checks, max_age}."""
    merged = fields.section(given, DEFAULTS, "remediation certification", CertificateError)
    if not isinstance(merged["required"], bool):
        raise CertificateError("remediation certification required must be true or false, got %r" % (merged["required"],))
    level = merged["dcgm_level"]
    if isinstance(level, bool) or str(level).strip() not in ("1", "2", "3", "4"):
        raise CertificateError("remediation certification dcgm_level must be 1, 2, 3 or 4, got %r" % (level,))
    merged["dcgm_level"] = int(str(level).strip())
    checks = merged["checks"]
    if not isinstance(checks, list) or not checks or not all(c in CHECKS for c in checks) or len(set(checks)) != len(checks):
        raise CertificateError("remediation certification checks must be a list of distinct names from %s, got %r"
                               % (", ".join(CHECKS), checks))
    age = merged["max_age"]
    if isinstance(age, bool) or not isinstance(age, int) or not 60 <= age <= 30 * 86400:
        raise CertificateError("remediation certification max_age must be whole seconds from 60 to 2592000, got %r" % (age,))
    merged["checks"] = list(checks)
    return merged


def _is_finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value) and not math.isinf(value)


def _finite(value, where):
    if value is None:
        return None
    if not _is_finite(value):
        raise CertificateError("%s must be a finite number, got %r" % (where, value))
    return value


def check_certificate(cert, node):
    """A certificate as remediate.yml hands it over, checked and cut to size: {checks: [...], versions: {...},
    measured_at}. CertificateError names the node and the bad value."""
    where = "certificate of %s" % node
    if not isinstance(cert, dict):
        raise CertificateError("%s must be a mapping, got %r" % (where, type(cert).__name__))
    checks = cert.get("checks")
    if not isinstance(checks, list) or not 0 < len(checks) <= MAX_CHECK_ENTRIES:
        raise CertificateError("%s: checks must be a list of 1 to %d entries, got %r" % (where, MAX_CHECK_ENTRIES, checks))
    out = []
    for entry in checks:
        if not isinstance(entry, dict) or entry.get("name") not in CHECKS:
            raise CertificateError("%s: each check needs a name from %s, got %r" % (where, ", ".join(CHECKS), entry))
        if entry.get("status") not in STATUSES:
            raise CertificateError("%s: check %s status must be one of %s, got %r"
                                   % (where, entry["name"], ", ".join(STATUSES), entry.get("status")))
        kept = {"name": entry["name"], "status": entry["status"]}
        level = entry.get("level")
        if level is not None:
            if isinstance(level, bool) or str(level).strip() not in ("1", "2", "3", "4"):
                raise CertificateError("%s: check %s level must be 1 to 4, got %r" % (where, entry["name"], level))
            kept["level"] = int(str(level).strip())
        for key in _FIGURES:
            value = _finite(entry.get(key), "%s: check %s %s" % (where, entry["name"], key))
            if value is not None:
                kept[key] = value
        for key in _TEXTS:
            if entry.get(key) not in (None, ""):
                kept[key] = one_line(str(entry[key]), MAX_DETAIL)
        out.append(kept)
    versions = cert.get("versions") or {}
    if not isinstance(versions, dict):
        raise CertificateError("%s: versions must be a mapping, got %r" % (where, versions))
    measured = _finite(cert.get("measured_at"), "%s: measured_at" % where)
    if measured is not None and not 0 <= measured < 1e11:
        raise CertificateError("%s: measured_at must be epoch seconds (the scheduler's clock), got %r" % (where, measured))
    return {"checks": out, "versions": dict((k, one_line(str(versions[k]), 80)) for k in _VERSIONS
                                            if versions.get(k) not in (None, "")),
            "measured_at": measured}


def _check_text(entry):
    text = "%s %s" % (entry["name"] + (" level %d" % entry["level"] if entry.get("level") else ""), entry["status"])
    if entry.get("busbw") is not None:
        text += " %.1f GB/s" % entry["busbw"]
        if entry.get("expected"):
            text += " of %.0f expected" % entry["expected"]
    if entry.get("peer"):
        text += " with %s" % entry["peer"]
    return text


def problems(cert, settings):
    """What keeps a (checked) certificate from certifying under these settings: [] when nothing does. Every entry of
    a check counts: one that did not pass fails the check whatever another entry of it says."""
    found = []
    for name in settings["checks"]:
        entries = [e for e in cert.get("checks") or [] if e["name"] == name]
        if not entries:
            found.append("%s was not run" % name)
            continue
        said = []
        for entry in entries:
            if entry["status"] != "pass":
                said.append("%s %s%s" % (name, entry["status"], ": %s" % entry["detail"] if entry.get("detail") else ""))
        found += sorted(set(said), key=said.index)
        if not said and name == "dcgm" and max(e.get("level") or 0 for e in entries) < settings["dcgm_level"]:
            found.append("dcgm ran level %s, the policy asks for level %d" % (
                max(e.get("level") or 0 for e in entries) or None, settings["dcgm_level"]))
    return found


def record(cert, settings, now):
    """The ledger's copy of a checked certificate: stamped with the scheduler's clock, judged once."""
    said = problems(cert, settings)
    return dict(cert, at=now, passed=not said, problems=said)


def _last_use(resumes):
    """The latest time a certificate of this node was spent: its last resume, or the check behind it if later."""
    times = [e.get("at") for e in resumes or []] + [(e.get("certificate") or {}).get("measured_at") for e in resumes or []]
    times = [t for t in times if _is_finite(t)]
    return max(times) if times else None


def refusal(cert, drain_at, now, settings, resumes=None):
    """Why this node may not be resumed on its certificate (None: it may).

    ``drain_at``: when the drain in effect was made (None: unknown, then the age and the last resume count);
    ``resumes``: the node's resume entries in the ledger (a certificate measured before the last one is spent)."""
    if not cert:
        return "no return-to-service certificate: an active check (%s) must pass after the drain" % describe_checks(settings)
    at, measured = cert.get("at"), cert.get("measured_at")
    new = ": a new check must pass"
    if not _is_finite(measured):
        return "the certificate handed in at %s does not say when its check was measured%s" % (iso(at), new)
    if measured > now + CLOCK_SKEW:
        return "the certificate says its check was measured at %s, after now (%s) by the scheduler's clock%s" % (
            iso(measured), iso(now), new)
    if drain_at is not None and (measured < drain_at or at < drain_at):
        return "the certificate measured at %s is older than the drain (%s)%s" % (iso(measured), iso(drain_at), new)
    spent = _last_use(resumes)
    if spent is not None and measured <= spent:
        return ("the certificate measured at %s is not newer than the node's last resume (%s): a certificate counts "
                "once%s" % (iso(measured), iso(spent), new))
    if now - measured > settings["max_age"]:
        return "the certificate measured at %s is %d s old, older than max_age %d s%s" % (
            iso(measured), now - measured, settings["max_age"], new)
    said = problems(cert, settings)
    if said:
        return "the certificate measured at %s does not certify: %s" % (iso(measured), "; ".join(said))
    return None


def describe_checks(settings):
    return ", ".join("dcgm level %d" % settings["dcgm_level"] if c == "dcgm" else c for c in settings["checks"])


def brief(cert):
    """What the ledger's resume entry, the decision and the message keep of the certificate that resumed a node
    (``measured_at`` too: a certificate counts once)."""
    return {"at": cert.get("at"), "measured_at": cert.get("measured_at"),
            "checks": [_check_text(e) for e in cert.get("checks") or []], "versions": dict(cert.get("versions") or {})}


def text(cert):
    """'certified 2026-11-27T08:00:00Z: dcgm level 2 pass, nccl pass 380.1 GB/s of 450 expected; DCGM 4.2.3' - the time
    its check was measured."""
    versions = ", ".join("%s %s" % (k.upper() if k in ("dcgm", "nccl", "cuda") else k, v)
                         for k, v in sorted((cert.get("versions") or {}).items()))
    return "certified %s: %s%s" % (iso(cert.get("measured_at")), ", ".join(_check_text(e) for e in cert.get("checks") or []),
                                   "; %s" % versions if versions else "")


def check_stored(cert, name):
    """A certificate read back from the ledger, its shape (ValueError otherwise); its time 'at' is checked as every
    time of the ledger is (ledger.check_record)."""
    if not isinstance(cert, dict) or not isinstance(cert.get("checks"), list) or not isinstance(cert.get("passed"), bool):
        raise ValueError("%s: the certificate must be {at, checks, passed, ...}" % name)
    if not all(isinstance(e, dict) and e.get("name") in CHECKS and e.get("status") in STATUSES for e in cert["checks"]):
        raise ValueError("%s: each certificate check needs a name and a status" % name)
    if cert.get("measured_at") is not None and not (_is_finite(cert["measured_at"]) and abs(cert["measured_at"]) < 1e12):
        raise ValueError("%s: the certificate's measured_at must be a time" % name)
    return cert


def _run_check(name, runs, peer=None):
    """Judged nccl-tests runs (validation.judge's, of one node or one pair) -> one check entry."""
    entry = {"name": name, "status": "not run", "detail": "no %s run" % name}
    if peer:
        entry["peer"] = peer
    if not runs:
        return entry, None
    failed = [r for r in runs if not r.get("passed")]
    missed = [r for r in failed if r.get("not_run") or not (r.get("figure") or {}).get("busbw")]
    worst = min(runs, key=lambda r: (r.get("figure") or {}).get("busbw") or 0)
    figure = worst.get("figure") or {}
    if missed:
        run = missed[0]
        entry["detail"] = "%s: %s" % (run.get("label"), run.get("not_run") or "; ".join(run.get("failures") or []) or "no figure")
    elif failed:
        run = failed[0]
        entry.update(status="fail", detail="%s: %s" % (run.get("label"), "; ".join(run.get("failures") or []) or "failed"))
    else:
        entry.update(status="pass", detail=worst.get("label"))
    for key, value in (("busbw", figure.get("busbw")), ("size", figure.get("size")), ("expected", worst.get("expected_busbw"))):
        if _is_finite(value):
            entry[key] = value
    version = ((worst.get("result") or {}).get("nccl_version"))
    return entry, version


def _imex_check(imex):
    """The IMEX domain as one node saw it - {domain_state, findings (judge/imex.imex_findings against the rack's nodes),
    not_run} - as a check entry: a pass only when the domain is UP and no expected node is missing, not READY or cut
    off; the state unread or the tool not run is 'not run'."""
    state = imex.get("domain_state")
    serious = [f for f in imex.get("findings") or [] if f.get("severity") in ("critical", "warning")]
    if imex.get("not_run") or state is None:
        return {"name": "imex", "status": "not run",
                "detail": one_line(str(imex.get("not_run") or "nvidia-imex-ctl gave no domain state"), MAX_DETAIL)}
    if state != "UP" or serious:
        detail = "; ".join(f.get("detail") or f.get("check") or "" for f in serious[:3]) or "domain %s" % state
        return {"name": "imex", "status": "fail", "detail": one_line("domain %s: %s" % (state, detail), MAX_DETAIL)}
    return {"name": "imex", "status": "pass", "detail": "domain UP"}


def from_results(dcgm=None, nccl=None, pairwise=None, peer=None, measured_at=None, imex=None, nvlink_domain=None, rack=None):
    """What the active checks of one node found -> a certificate to hand the decider (check_certificate's shape).

    dcgm: the node's dcgm_diag record (dcgm_diag_records' entry: status, level, failures, reason, dcgm_version,
    driver_version); nccl: its judged single-node runs; pairwise: the judged runs with ``peer``; imex: {domain_state,
    findings, not_run} (_imex_check); nvlink_domain: the judged runs across its rack (named ``rack``). A check given
    None is left out (a certificate that lacks a check the policy names does not certify)."""
    checks, versions = [], {}
    if dcgm is not None:
        status = dcgm.get("status") if dcgm.get("status") in STATUSES else "not run"
        by_test = {}
        for found in dcgm.get("failures") or []:   # one line per test: its GPUs and DCGM's first words
            entry = by_test.setdefault(found.get("test"), {"gpus": [], "message": found.get("message")})
            if found.get("gpu") is not None:
                entry["gpus"].append(str(found["gpu"]))
        failures = ["%s%s: %s" % (test, " GPU %s" % ", ".join(e["gpus"]) if e["gpus"] else "", e["message"])
                    for test, e in by_test.items()]
        detail = one_line("; ".join(failures) or dcgm.get("reason") or "", MAX_DETAIL)
        entry = {"name": "dcgm", "status": status, "detail": detail}
        if dcgm.get("level") is not None:
            entry["level"] = dcgm["level"]
        checks.append(entry)
        for key, source in (("dcgm", "dcgm_version"), ("driver", "driver_version")):
            if dcgm.get(source):
                versions[key] = dcgm[source]
    for name, runs, with_peer in (("nccl", nccl, None), ("pairwise", pairwise, peer),
                                  ("nvlink_domain", nvlink_domain, "rack %s" % rack if rack else None)):
        if runs is None:
            continue
        entry, version = _run_check(name, list(runs), with_peer)
        checks.append(entry)
        if version and "nccl" not in versions:
            versions["nccl"] = version
    if imex is not None:
        checks.append(_imex_check(imex))
    return {"checks": checks, "versions": versions, "measured_at": measured_at}


def mttr_samples(ledger):
    """[(node, seconds)]: each node's last resume with a known drain time - the time from drain to (certified)
    resume, the decider's MTTR per node - from the ledger (real resumes only, not shadow)."""
    out = []
    for node, record in sorted(((ledger or {}).get("nodes") or {}).items()):
        resumes = [e for e in record.get("resumes") or [] if not e.get("shadow") and isinstance(e.get("mttr"), (int, float))]
        if resumes:
            out.append((node, resumes[-1]["mttr"], bool(resumes[-1].get("certificate"))))
    return out
