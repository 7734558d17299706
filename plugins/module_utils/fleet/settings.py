# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The field checks every program's configuration shares (the health monitor, the decider, the alert relay):
seconds, the state directory, a secret, one-line names. Pure, and it imports no check of any subject, so the
decider and the relay do not ship the node's checks to read their own settings.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import ownership, text


class ConfigError(ValueError):
    """A configuration the program cannot run with; the message names the entry and the value."""


def section(given, defaults, where, error=ConfigError):
    """A settings section (a mapping, or None for all defaults) over ``defaults``: its None values take the default;
    ``error`` (a ValueError class) names a section that is no mapping or a key it does not know."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise error("%s must be a mapping, got %r" % (where, given))
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise error("unknown %s key(s) %s (known: %s)" % (where, ", ".join(unknown), ", ".join(sorted(defaults))))
    merged = dict(defaults)
    merged.update(dict((k, v) for k, v in given.items() if v is not None))
    return merged


def seconds(merged, names, maximum=None):
    for name in names:
        value = merged[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf") \
                or (maximum and value > maximum):
            raise ConfigError("%s must be a positive number of seconds%s, got %r"
                              % (name, " (at most %d)" % maximum if maximum else "", value))


def state_dir(value):
    why = ownership.refused_directory(value)
    if why:
        raise ConfigError("state_dir: %s" % why)
    return value


def secret(value, where):
    if not isinstance(value, str) or len(value) < 16 or text.describe_unsafe(value):
        raise ConfigError("%s must be a one-line string of at least 16 characters (the role generates one)" % where)
    return value


def one_line_names(merged, names, allow_empty=True):
    """Each named entry is None or a one-line string (and not empty unless allowed)."""
    for name in names:
        value = merged[name]
        if value is not None and (not isinstance(value, str) or text.describe_unsafe(value) or (not value and not allow_empty)):
            raise ConfigError("%s must be a one-line string, got %r" % (name, value))
