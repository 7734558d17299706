# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What the readers of the RDMA and NVLink tools share (ibstat, ibdev2netdev, show_gids, ``rdma link``,
``eadm stat``, ``nvidia-smi nvlink``): the one error they raise, and how they read a port state, a physical
state, an integer, a leading number and a value the tool may have redacted.

States use the vocabulary of rdma_devices whatever the tool printed: port state ACTIVE, DOWN, INIT,
ARMED; physical state LinkUp, Disabled, Polling, ... (sysfs spelling). Pure functions, standard library
only; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


class ToolTextError(ValueError):
    """The text is not what the tool prints, or an argument is not what a helper reads; the message says which."""


_STATES = {"ACTIVE": "ACTIVE", "DOWN": "DOWN", "INIT": "INIT", "INITIALIZING": "INIT", "ARMED": "ARMED",
           "ACTIVE_DEFER": "ACTIVE_DEFER", "NOP": "NOP"}
_PHYS_STATES = {"LINKUP": "LinkUp", "LINK_UP": "LinkUp", "DISABLED": "Disabled", "POLLING": "Polling",
                "SLEEP": "Sleep", "PORTCONFIGURATIONTRAINING": "PortConfigurationTraining",
                "PORT_CONFIGURATION_TRAINING": "PortConfigurationTraining", "LINKERRORRECOVERY": "LinkErrorRecovery",
                "LINK_ERROR_RECOVERY": "LinkErrorRecovery", "PHYTEST": "PhyTest", "PHY_TEST": "PhyTest", "NOP": "Nop"}
_INT_RE = re.compile(r"^(?:[0-9]{1,20}|0[xX][0-9A-Fa-f]{1,16})$")
_NUMBER_RE = re.compile(r"^([0-9]{1,7}(?:\.[0-9]{1,6})?)")
_REDACTED = ("...", "", "N/A", "unknown")


def port_state(value):
    """'Active', '4: ACTIVE', 'ACTIVE' -> 'ACTIVE'; 'Initializing' -> 'INIT'; None for nothing."""
    if value is None:
        return None
    word = value.split(":", 1)[-1].strip() if ":" in value else value.strip()
    if not word or word in _REDACTED:
        return None
    return _STATES.get(word.upper(), word.upper())


def physical_state(value):
    """'LinkUp', '5: LinkUp', 'LINK_UP', 'DISABLED' -> 'LinkUp' / 'Disabled' (sysfs spelling)."""
    if value is None:
        return None
    word = value.split(":", 1)[-1].strip() if ":" in value else value.strip()
    if not word or word in _REDACTED:
        return None
    return _PHYS_STATES.get(word.upper(), word)


def integer(value):
    """'287', '0x30' -> int; None for '...', '' or anything else."""
    if value is None:
        return None
    value = value.strip()
    if not _INT_RE.match(value):
        return None
    return int(value, 16) if value[:2] in ("0x", "0X") else int(value)


def leading_number(value):
    """'400' -> 400, '2.5' -> 2.5, '100 Gb/sec (4X EDR)' -> 100; None otherwise."""
    match = _NUMBER_RE.match((value or "").strip())
    if not match:
        return None
    number = float(match.group(1))
    return int(number) if number.is_integer() else number


def printed_value(value):
    value = (value or "").strip()
    return None if value in _REDACTED else value
