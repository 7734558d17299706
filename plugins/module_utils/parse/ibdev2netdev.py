# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""``ibdev2netdev`` and ``ibdev2netdev -v`` read: the netdev of each RDMA port and its state, and with ``-v``
the PCI address, HCA type, part, description, firmware and the RDMA port's state.

Pure functions, standard library only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import integer as _int, port_state as _state


_PCI_RE = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def parse_ibdev2netdev(value):
    """``ibdev2netdev`` or ``ibdev2netdev -v`` output -> list of ports.

    Each: ``device``, ``port``, ``netdev``, ``state`` ('Up' or 'Down', the netdev's state as the tool
    prints it). With ``-v`` also ``pci_address``, ``hca_type`` ('MT4123'), ``part`` (PSID or serial as
    printed), ``description``, ``firmware`` and ``port_state`` (the RDMA port: ACTIVE, DOWN).
    ``| column -t`` alignment and ``# comments`` after the line are ignored.
    """
    ports = []
    for raw in _text.clean_lines(value, "ibdev2netdev output"):
        line = raw.split("#", 1)[0].strip() if "==>" in raw else ""
        if not line:
            continue
        left, dummy, right = line.partition("==>")
        right_words = right.split()
        netdev = right_words[0] if right_words else None
        state = None
        if len(right_words) > 1 and right_words[1].startswith("(") and right_words[1].endswith(")"):
            state = right_words[1][1:-1] or None
        record = {"device": None, "port": None, "netdev": netdev, "state": state, "pci_address": None,
                  "hca_type": None, "part": None, "description": None, "firmware": None, "port_state": None}
        words = left.split()
        if words and _PCI_RE.match(words[0]):
            _verbose_left(left, record)
        elif len(words) >= 2 and words[1].startswith("("):
            # -v where the script found no PCI device for the HCA (its find_pdev matches a device directory holding
            # exactly that one name): the line starts with a space and the device.
            _verbose_left(left, record, pci=False)
        elif len(words) >= 3 and words[1] == "port":
            record["device"], record["port"] = words[0], _int(words[2])
        else:
            continue
        if record["device"]:
            ports.append(record)
    return ports


def _verbose_left(left, record, pci=True):
    """'0000:02:00.0 mlx5_0 (MT4115 - MT1523X04353) CX456A - ConnectX-4 QSFP fw 12.23.1020 port 1 (ACTIVE) ', or the
    same without its PCI address."""
    words = left.split(None, 2) if pci else [None] + left.split(None, 1)
    record["pci_address"] = words[0]
    record["device"] = words[1] if len(words) > 1 else None
    rest = " " + (words[2] if len(words) > 2 else "")
    at = rest.rfind(" port ")   # the last one: descriptions say 'single port QSFP112'
    if at >= 0:
        tail = rest[at + 6:]
        state_text = tail.split("(", 1)[1].split(")", 1)[0] if "(" in tail else None
        record["port"], record["port_state"] = _int(tail.split("(", 1)[0]), _state(state_text)
        rest = rest[:at]
    rest = rest.strip()
    if rest.startswith("("):
        inside, dummy, rest = rest[1:].partition(")")
        hca, dummy, part = inside.partition(" - ")
        record["hca_type"] = hca.strip() or None
        record["part"] = None if part.strip() in ("", "NA") else part.strip()
    rest = " " + rest
    at = rest.rfind(" fw ")
    if at >= 0:
        record["firmware"] = (rest[at + 4:].split() or [None])[0]
        rest = rest[:at]
    record["description"] = " ".join(rest.split()) or None
