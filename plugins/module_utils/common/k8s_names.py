# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Kubernetes' rules for names, label values and counts, each refusal naming what was given: one owner for the
manifests plan/k8s*.py render and the objects the decider sends (fleet/k8s_device_taints.py), which must not carry
the renderers' imports into the remediator."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class ManifestError(ValueError):
    """An input no manifest can be made from; the message names it."""


def dns_label(value, what):
    """value when it is a DNS label (a Kubernetes name), else ManifestError naming ``what``."""
    if not isinstance(value, str) or not _DNS_LABEL.match(value):
        raise ManifestError("%s must be a DNS label (lower-case letters, digits, '-', at most 63), got %r" % (what, value))
    return value


def dns_subdomain(value, what):
    """value when it is a DNS subdomain (the name of most Kubernetes objects), else ManifestError naming ``what``."""
    if not isinstance(value, str) or len(value) > 253 or not _SUBDOMAIN.match(value):
        raise ManifestError("%s must be a DNS subdomain (lower-case letters, digits, '-', '.', at most 253), got %r"
                            % (what, value))
    return value


def label_value(value, what):
    """value when it is a Kubernetes label value (at most 63 of [A-Za-z0-9._-], alphanumeric at both ends), else
    ManifestError naming ``what``."""
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ManifestError("%s must be a label value (at most 63 of letters, digits, '-', '_', '.', starting and ending "
                            "with a letter or digit), got %r" % (what, value))
    return value


def count(value, what, minimum=0):
    """value as a whole number >= minimum (its text too), else ManifestError naming ``what``."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ManifestError("%s must be a whole number, got %r" % (what, value))
    if isinstance(value, bool) or number < minimum or str(number) != str(value).strip():
        raise ManifestError("%s must be a whole number >= %d, got %r" % (what, minimum, value))
    return number
