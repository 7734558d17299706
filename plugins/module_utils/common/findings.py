# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The one shape of a problem found, and the one severity scale, for every part of the collection.

A finding is {check, severity, target, detail, fix_hint}: discovery's readiness report, the node health
checks, the monitor's events and the remediator's decisions all use it. Node-side code imports this
module alone (no report renderer comes with it). Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Most severe first. critical: the node must not take work; warning: it may, someone should look; info: a fact.
SEVERITIES = ("critical", "warning", "info")
SEVERITY_RANK = dict((name, rank) for rank, name in enumerate(SEVERITIES))


def finding(check, severity, target, detail, fix_hint):
    """One problem found. ValueError for a severity that is not on the scale (a typo must not pass as info)."""
    if severity not in SEVERITY_RANK:
        raise ValueError("finding %s: severity must be one of %s, got %r" % (check, ", ".join(SEVERITIES), severity))
    return {"check": check, "severity": severity, "target": target, "detail": detail, "fix_hint": fix_hint}


def rank(severity):
    """0 for critical ... len(SEVERITIES) for anything not on the scale (sorted last)."""
    return SEVERITY_RANK.get(severity, len(SEVERITIES))


def counts(found):
    """{'critical': n, 'warning': n, 'info': n} of a list of findings."""
    return dict((s, sum(1 for f in found if f.get("severity") == s)) for s in SEVERITIES)


def ordered(found):
    """Most severe first, then by check and target: the order every report prints."""
    return sorted(found, key=lambda f: (rank(f.get("severity")), str(f.get("check")), str(f.get("target"))))
