# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The node-to-decider protocol, written once: what a node sends the decider and how the decider checks it.

Two requests: the node asks for a nonce (``challenge_body``, signed), then sends its report with that nonce
(``report_body``, signed): HMAC-SHA256 with the cluster's shared report secret, so a report cannot be forged or
replayed. The body carries ``version``; a decider refuses a version it does not know, naming it (a body without
one is version 1, what monitors before the field sent). ``check_report`` is the report's one shape. Version 2 adds
the node's optional ``domain`` (where it sits in an NVLink rack: report_domain); a node sends version 2 only when it
has one to tell, so a report without it still reaches a decider that reads version 1 alone.
Pure: the health monitor, the remediate playbook's module and the decider import it, and nothing of either.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import hmac
import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import SEVERITIES
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.messages import SOURCE
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import one_line
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import topology_names

VERSION = 2
VERSIONS = (1, 2)
# What a report's ``domain`` holds (version 2) and report_domain, which makes it from topology/nvlink.node_domain's
# result, are common/topology_names' (the node side makes it, below this module); named here for the callers.
DOMAIN_KEYS = topology_names.DOMAIN_KEYS
report_domain = topology_names.report_domain
_SERIAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CLUSTER_UUID = re.compile(r"^[0-9a-fA-F-]{1,64}$")
USER_AGENT = SOURCE   # the health monitor, as its messages name it
# Where a report comes from: the monitor's timer, Slurm's HealthCheckProgram, Prolog and Epilog, an AWX run, an alert.
SOURCES = ("timer", "healthcheck", "gate", "epilog", "awx", "alert")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")


def plain_name(name):
    """Whether ``name`` is a plain node name (what Slurm and Kubernetes accept, nothing to smuggle)."""
    return isinstance(name, str) and bool(_NAME.match(name))


def report_signature(secret, body_bytes):
    """A node's report to the decider: hex HMAC-SHA256 of the body (which carries the decider's nonce)."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body_bytes, hashlib.sha256).hexdigest()


REPORT_PATH = "/v1/report"
CHALLENGE_PATH = "/v1/challenge"
MAX_REPORT_BYTES = 4 * 1024 * 1024


def report_body(node, result, source, nonce):
    """What a node sends the decider: its findings, whether every source was read, and the decider's nonce."""
    findings = [dict((k, f.get(k)) for k in ("check", "severity", "target", "detail", "fix_hint")) for f in result["findings"]]
    report = {"node": node, "findings": findings, "complete": bool(result.get("complete")),
              "unreadable": list(result.get("unreadable") or []), "source": source}
    if result.get("domain"):   # version 2: a decider that reads version 1 alone refuses it, naming the upgrade
        report["domain"] = result["domain"]
    return json.dumps({"version": VERSION if report.get("domain") else 1, "report": report, "nonce": nonce},
                      sort_keys=True).encode("utf-8")


def report_headers(secret, body):
    return {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Gpufabric-Signature": report_signature(secret, body)}


def evidence_headers(secret, node, ident, body):
    """A node's evidence bundle (the tar.gz itself as the body): signed over its name, the bundle's and the bytes."""
    signed = ("%s\n%s\n" % (node, ident)).encode("utf-8") + body
    return {"Content-Type": "application/gzip", "User-Agent": USER_AGENT, "X-Gpufabric-Node": node,
            "X-Gpufabric-Evidence": ident, "X-Gpufabric-Signature": report_signature(secret, signed)}


def verify_evidence(secret, body, headers):
    """The decider's side of an upload: (node, bundle id) from signed headers, or ValueError. No nonce: the decider
    takes each bundle it asked for once, so a replayed upload changes nothing."""
    node, ident, signature = (headers.get(k) for k in ("X-Gpufabric-Node", "X-Gpufabric-Evidence", "X-Gpufabric-Signature"))
    if not plain_name(node) or not plain_name(ident):
        raise ValueError("an evidence upload names its node and bundle (X-Gpufabric-Node, X-Gpufabric-Evidence)")
    signed = ("%s\n%s\n" % (node, ident)).encode("utf-8") + body
    if not isinstance(signature, str) or not hmac.compare_digest(report_signature(secret, signed), signature):
        raise ValueError("the upload's signature does not match (wrong secret, or the bundle was changed)")
    return node, ident


def challenge_body(node):
    return json.dumps({"node": node}, sort_keys=True).encode("utf-8")


def verify_challenge(secret, body, signature):
    """The decider's side of a nonce request: the node's name from a signed body, or ValueError."""
    if not isinstance(signature, str) or not hmac.compare_digest(report_signature(secret, body), signature):
        raise ValueError("the challenge's signature does not match (wrong secret)")
    try:
        node = json.loads(body.decode("utf-8")).get("node")
    except (ValueError, AttributeError):
        raise ValueError("the challenge is not a JSON object with the node's name")
    if not plain_name(node):
        raise ValueError("the challenge names no plain node name")
    return node


def verify_report(secret, body, signature):
    """The decider's side: (report, nonce) from a signed body, or ValueError saying why it is refused."""
    if not isinstance(signature, str) or not hmac.compare_digest(report_signature(secret, body), signature):
        raise ValueError("the report's signature does not match (wrong secret, or the body was changed)")
    try:
        data = json.loads(body.decode("utf-8"))
    except ValueError:
        raise ValueError("the report is not JSON")
    if not isinstance(data, dict) or not isinstance(data.get("nonce"), str):
        raise ValueError("the report has no nonce")
    version = data.get("version", 1)
    if version not in VERSIONS:
        raise ValueError("the report is of protocol version %r; this decider reads version %s: upgrade the decider "
                         "(roles/remediator) before the nodes' monitors" % (version, ", ".join(str(v) for v in VERSIONS)))
    return check_report(data.get("report"), version), data["nonce"]


def _whole_or_none(value, where, high):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high):
        raise ValueError("report domain %s must be a whole number from 0 to %d or null, got %r" % (where, high, value))
    return value


def check_domain(domain):
    """A report's ``domain`` checked: {cluster_uuid, clique, chassis_serial, slot, tray} with None for what the node
    does not know (an all-zero cluster UUID is no domain: None), or None when it names neither chassis nor domain."""
    if domain is None:
        return None
    if not isinstance(domain, dict):
        raise ValueError("report domain must be an object (%s), got %s" % (", ".join(DOMAIN_KEYS), type(domain).__name__))
    unknown = sorted(set(domain) - set(DOMAIN_KEYS))
    if unknown:
        raise ValueError("report domain has unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(DOMAIN_KEYS)))
    uuid, serial = domain.get("cluster_uuid"), domain.get("chassis_serial")
    if uuid is not None and (not isinstance(uuid, str) or not _CLUSTER_UUID.match(uuid)):
        raise ValueError("report domain cluster_uuid must be the ClusterUUID nvidia-smi prints, got %r" % (uuid,))
    if serial is not None and (not isinstance(serial, str) or not _SERIAL.match(serial)):
        raise ValueError("report domain chassis_serial must be the chassis serial number nvidia-smi prints (1 to 64 of "
                         "[A-Za-z0-9._-]), got %r" % (serial,))
    checked = {"cluster_uuid": uuid.lower() if uuid and uuid.strip("0-") else None,
               "clique": _whole_or_none(domain.get("clique"), "clique", 2 ** 32),
               "chassis_serial": serial if serial and serial.strip("0") else None,
               "slot": _whole_or_none(domain.get("slot"), "slot", 4096), "tray": _whole_or_none(domain.get("tray"), "tray", 4096)}
    if checked["clique"] == 0 or checked["cluster_uuid"] is None:   # CliqueId 0 or a zero UUID: in no domain
        checked["cluster_uuid"] = checked["clique"] = None
    return checked if checked["chassis_serial"] or checked["cluster_uuid"] else None


def check_report(report, version=VERSION):
    """A node's report as the decider accepts it, or ValueError naming what is wrong.

    {node, findings: [{check, severity, target, ...}], complete: bool, unreadable: [text], source, domain}; ``domain``
    (check_domain) is read from a version 2 report, and None otherwise.
    """
    if not isinstance(report, dict):
        raise ValueError("a report must be a JSON object, got %s" % type(report).__name__)
    node = report.get("node")
    if not isinstance(node, str) or not plain_name(node):
        raise ValueError("report node must be a plain node name, got %r" % (node,))
    findings = report.get("findings")
    if not isinstance(findings, list) or len(findings) > 10000:
        raise ValueError("report findings must be a list (at most 10,000), got %r" % (type(findings).__name__,))
    clean_findings = []
    for index, found in enumerate(findings):
        if not isinstance(found, dict) or not all(isinstance(found.get(k), str) for k in ("check", "severity", "target")):
            raise ValueError("report findings[%d] needs check, severity and target strings" % index)
        if found["severity"] not in SEVERITIES:
            raise ValueError("report findings[%d] severity must be one of %s, got %r" % (index, ", ".join(SEVERITIES), found["severity"]))
        clean_findings.append(dict((k, one_line(found.get(k) or "", 500)) for k in ("check", "severity", "target", "detail", "fix_hint")))
    unreadable = report.get("unreadable") or []
    if not isinstance(unreadable, list) or not all(isinstance(u, str) for u in unreadable):
        raise ValueError("report unreadable must be a list of texts")
    complete = report.get("complete")
    if not isinstance(complete, bool):
        raise ValueError("report complete must be true or false, got %r" % (complete,))
    source = report.get("source", "timer")
    if source not in SOURCES:
        raise ValueError("report source must be one of %s, got %r" % (", ".join(SOURCES), source))
    return {"node": node, "findings": clean_findings, "complete": complete and not unreadable,
            "unreadable": [one_line(u, 300) for u in unreadable[:20]], "source": source,
            "domain": check_domain(report.get("domain")) if version >= 2 else None}
