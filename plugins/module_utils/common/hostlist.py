# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Host names to a Slurm hostlist expression (``node[01-04,07],login``), the short way to name many
hosts in a message, a metric label or topology.conf; slurm_jobs.expand_hostlist is the way back. And the
natural order people read host lists in. Standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


def natural_key(name):
    """'node9' < 'node10': digit runs compare as numbers (for the order people read lists in)."""
    parts = re.split(r"(\d+)", name)
    return [(0, int(part), part) if part.isdigit() and len(part) < 19 else (1, 0, part) for part in parts]


def _split_number(name):
    """'node017' -> ('node', '017'); 'login' -> ('login', '')."""
    head = name.rstrip("0123456789")
    return head, name[len(head):]


def compress_hostlist(names):
    """Host or switch names -> a Slurm hostlist ('node[01-16],login1'), the way `scontrol show hostlist`
    folds them: the trailing number of each name is ranged, zero padding kept. Deterministic: groups in
    natural order of their prefix, ranges ascending. slurm_jobs.expand_hostlist(result) gives the names back."""
    seen = set()
    groups = {}      # (prefix, width) -> set of ints; width 0 = no padding
    atoms = []
    padded = set()
    unpadded = []
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        prefix, digits = _split_number(name)
        if not digits or len(digits) > 9:   # a GUID's digits ('ib-0008f10500200b50') are a name, not a number to range
            atoms.append(name)
        elif digits[0] == "0" and len(digits) > 1:
            padded.add((prefix, len(digits)))
            groups.setdefault((prefix, len(digits)), set()).add(int(digits))
        else:
            unpadded.append((prefix, digits))
    for prefix, digits in unpadded:
        # "10" joins node[01-09]: expanding "01-10" pads to two digits and gives node10 back.
        key = (prefix, len(digits)) if (prefix, len(digits)) in padded else (prefix, 0)
        groups.setdefault(key, set()).add(int(digits))
    parts = []
    for (prefix, width), numbers in sorted(groups.items(), key=lambda item: (natural_key(item[0][0]), item[0][1])):
        ordered = sorted(numbers)
        ranges = []
        start = previous = ordered[0]
        for number in ordered[1:]:
            if number == previous + 1:
                previous = number
                continue
            ranges.append((start, previous))
            start = previous = number
        ranges.append((start, previous))
        written = ["%0*d" % (width, low) if low == high else "%0*d-%0*d" % (width, low, width, high)
                   for low, high in ranges]
        if len(ordered) == 1:
            parts.append(prefix + written[0])
        else:
            parts.append("%s[%s]" % (prefix, ",".join(written)))
    parts.extend(sorted(atoms, key=natural_key))
    return ",".join(parts)
