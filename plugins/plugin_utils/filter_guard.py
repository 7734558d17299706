# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every filter of the collection does with bad input: an AnsibleFilterError that names the
filter and says what was wrong, never a Python exception from deep inside a parser.

Controller-side only (ansible.errors): module_utils stay importable on managed nodes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import math

from ansible.errors import AnsibleError, AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping, Sequence

TEXT = (str, bytes)


def kind_of(value):
    """'null', 'a string', 'a list of 3', 'a mapping', 'an integer', ... for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, str):
        return "a string" if len(value) < 60 else "a string of %d characters" % len(value)
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, Sequence):
        return "a list of %d" % len(value)
    return "a %s" % type(value).__name__


def fail(name, message):
    raise AnsibleFilterError("gpufabric.rdma.%s: %s" % (name, message))


def expect(name, value, kinds, what):
    """value when it is one of kinds, else the filter's error: '<name> expects <what>, got <kind>'."""
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        fail(name, "expects %s, got %s" % (what, kind_of(value)))
    return value


def expect_list_of_mappings(name, value, what):
    """A list whose every item is a mapping; the error names the first item that is not."""
    expect(name, value, (list, tuple), what)
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            fail(name, "expects %s; item %d is %s" % (what, index, kind_of(item)))
    return value


def number_or_none(name, option, value):
    """None for '' or None, else a float; the error names the option."""
    if value in (None, ""):
        return None
    if isinstance(value, bool):
        fail(name, "%s must be a number, got %s" % (option, kind_of(value)))
    try:
        number = float(value)
    except (TypeError, ValueError):
        fail(name, "%s must be a number, got %r" % (option, value if not isinstance(value, str) else value[:40]))
    if not math.isfinite(number):  # nan and inf are no thresholds
        fail(name, "%s must be a finite number, got %r" % (option, value if not isinstance(value, str) else value[:40]))
    return number


def guarded(name, func):
    """func as a filter: its ValueError (the parsers' own errors) and any other failure become the filter's error."""
    @functools.wraps(func)
    def filter_func(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except AnsibleError:
            raise
        except ValueError as exc:  # the parsers' and checkers' own messages
            fail(name, str(exc) or "the input is not what this filter reads")
        except Exception as exc:  # anything else still reaches the user as this filter's error, with its cause
            fail(name, "cannot use this input (%s: %s)" % (type(exc).__name__, str(exc)[:300]))
    filter_func.__name__ = name
    return filter_func


def filters(table):
    """{name: function} -> the FilterModule.filters() dict, every function guarded."""
    return dict((name, guarded(name, func)) for name, func in table.items())


def tool_text(name, value, what="the tool's text (or a registered result)"):
    """A tool's output given to a filter: its text, or a registered command result (its stdout is taken)."""
    if isinstance(value, Mapping) and "stdout" in value:
        value = value["stdout"]   # a registered command result works as it is
    return expect(name, value, TEXT, what)


def is_tool_text(value):
    """The value is a tool's output still to be read (its text or a registered result), not a reader's result."""
    return isinstance(value, TEXT) or (isinstance(value, Mapping) and "stdout" in value)


def loaded_or_text(name, value, key):
    """A JSON document already loaded (a mapping with ``key``, not a registered result) as a dict, else the tool's
    text."""
    if isinstance(value, Mapping) and key in value and "stdout" not in value:
        return dict(value)
    return tool_text(name, value)


def plain(value):
    """Ansible's lazy and tagged containers as plain dicts and lists, so the pure code sees one kind."""
    if isinstance(value, Mapping):
        return dict((key, plain(item)) for key, item in value.items())
    if isinstance(value, Sequence) and not isinstance(value, TEXT):
        return [plain(item) for item in value]
    return value
