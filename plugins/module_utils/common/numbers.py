# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Numbers as tools print them ('700.00 W', '100 Gb/sec (4X EDR)'), standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

LEADING_NUMBER_RE = re.compile(r"^\s*(-?[\d.]+)")


def whole(value):
    """700.0 -> 700, 2.5 -> 2.5: report integers as integers."""
    return int(value) if float(value).is_integer() else value


def leading_number(text, pattern=LEADING_NUMBER_RE):
    """The number the text starts with (group 1 of ``pattern``), or None."""
    if not text:
        return None
    match = pattern.match(text)
    if not match:
        return None
    try:
        return whole(float(match.group(1)))
    except ValueError:
        return None


# Every external command the collection runs has a time limit in this range (commands.Runner).
DEFAULT_COMMAND_TIMEOUT = 30
MAX_COMMAND_TIMEOUT = 3600


def check_seconds(value, name, low=1, high=MAX_COMMAND_TIMEOUT):
    """value as whole seconds from low to high, or ValueError naming the option and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError("%s must be a whole number of seconds from %d to %d, got %r" % (name, low, high, value))
    return value


def median(values):
    """The median of a list of numbers (the mean of the middle two for an even count); None when empty."""
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0
