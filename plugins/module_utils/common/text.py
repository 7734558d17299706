# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Text as real tools print it, made plain for the parsers; values checked before they are written.

Pure functions, standard library only. Every regular expression here is linear: no two
repetitions can match the same characters, so a 100,000-character line costs what it is long.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# CSI sequences (colours, cursor moves), OSC sequences (titles, links; ended by BEL or ST) and the
# two-character escapes. A bare ESC is dropped by _CONTROL_RE below.
_ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# C0 controls other than tab and newline, DEL, and C1 controls: never part of what a tool means.
_CONTROL_RE = re.compile(u"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BOM = u"\ufeff"

# What launchers put before each line of a rank's output:
#   srun -l / --label          " 0: ", "12: "
#   Open MPI --tag-output      "[1,0]<stdout>:", PRRTE "[prterun-host-123@1,0]<stdout>: "
#   Open MPI --timestamp-output "Thu May  7 10:39:20 2020<stdout>:" (with --tag-output before <stdout>)
#   Ray / SkyPilot / vLLM      "(head, rank=0, pid=3808) ", "(RayTrainWorker pid=83500) ",
#                              "(RayWorkerWrapper pid=627, ip=10.244.1.107) ", "(pid=627, ip=10.244.1.107) ",
#                              "(EngineCore_DP0 pid=2301) ", "(VllmWorkerProcess pid=2157) ", "(VllmWorker rank=0 pid=1) "
#   torchrun --tee / --redirects "[default0]:" (the worker's role and local rank), PyTorch's own "[rank0]:", and the two
#                              together, "[default0]:[rank0]: "
_TIMESTAMP = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}"
_OMPI_TAG = r"\[(?:[\w.-]+@)?\d+,\d+\]"
_LAUNCHER_RE = re.compile(
    r"^[ \t]*(?:"
    r"\((?:[\w.-]{1,64}(?:,? [\w.-]{1,64}(?:=[\w.-]{1,64})?){0,3},? )?pid=\d{1,9}(?:, ip=[\w.:]{1,45})?\) "  # Ray, vLLM
    r"|(?:" + _TIMESTAMP + r")?(?:" + _OMPI_TAG + r")?<std(?:out|err|diag)>: ?"  # Open MPI / PRRTE
    r"|\d{1,6}: ?"                                                       # srun -l
    r"|\[[A-Za-z][A-Za-z_-]{0,31}\d{1,6}\]: ?"                             # torchrun, PyTorch
    r")")
# What Ray's log deduplication puts after a line it stands for several of: " [repeated 14x across cluster]", the first
# time followed by "(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 ...)".
_RAY_DEDUP = " [repeated "
_RAY_DEDUP_RE = re.compile(r" \[repeated [0-9]{1,9}x across cluster\](?: \(Ray deduplicates logs by default\.[^()]{0,400}\))?[ \t]*\Z")
# A tag in the middle of a line: Open MPI glues two writes of a rank into one line at times.
_MIDLINE_TAG_RE = re.compile(r"(?<=\S)(?=(?:" + _TIMESTAMP + r")?" + _OMPI_TAG + r"<std(?:out|err|diag)>:)")

# Characters that end or split a line, or that a terminal acts on, in a value written to a file
# or a command line.
_UNSAFE_RE = re.compile(u"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_NAMES = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "a NUL byte"}


class TextError(ValueError):
    """The value is not text a tool prints, or not safe to write; the message says which and why."""


def clean(value, what="text"):
    """Tool output (str or bytes) -> str with Unix newlines, no BOM, no ANSI escapes, no control bytes.

    Bytes that are not UTF-8 become U+FFFD, so one bad byte costs one character, never the parse.
    """
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value is None:
        return u""
    if not isinstance(value, str):
        raise TextError("%s must be text, got %s" % (what, type(value).__name__))
    if value.startswith(_BOM):
        value = value[1:]
    if "\r" in value:
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in value:
        value = _ANSI_RE.sub("", value)
    return _CONTROL_RE.sub("", value)


def clean_lines(value, what="text"):
    """clean(value) split into lines."""
    return clean(value, what).split("\n")


def strip_launcher(line):
    """One line without the labels srun, mpirun, Ray or torchrun put before it (nested ones too)."""
    for dummy in range(4):
        match = _LAUNCHER_RE.match(line)
        if not match or not match.end():
            break
        line = line[match.end():]
    return line


def strip_ray_dedup(line):
    """One line without the note Ray's log deduplication puts at its end (the line itself is kept as printed)."""
    at = line.rfind(_RAY_DEDUP)
    if at >= 0 and _RAY_DEDUP_RE.match(line, at):
        return line[:at]
    return line


def launcher_lines(value, what="text"):
    """Cleaned lines with launcher labels (and Ray's deduplication note) removed, a line Open MPI glued to another
    split off."""
    lines = []
    for line in clean_lines(value, what):
        if "<std" in line:
            for part in _MIDLINE_TAG_RE.split(line):
                lines.append(strip_ray_dedup(strip_launcher(part)))
        else:
            lines.append(strip_ray_dedup(strip_launcher(line)))
    return lines


def describe_unsafe(value):
    """None when value may stand on one line of a file or a command line, else what is wrong with it."""
    match = _UNSAFE_RE.search(value)
    if not match:
        return None
    char = match.group(0)
    return "contains %s (character %d)" % (_CONTROL_NAMES.get(char, "the control character %r" % char),
                                           match.start() + 1)


def check_line(name, value, allow_empty=True):
    """value as a one-line string; TextError naming ``name`` when it holds a newline or a control character."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict, tuple, set)):
        raise TextError("%s must be a string, got %s" % (name, "null" if value is None else type(value).__name__))
    text = value if isinstance(value, str) else str(value)
    problem = describe_unsafe(text)
    if problem:
        raise TextError("%s %s: a value written to a file or a command line must be one line" % (name, problem))
    if not allow_empty and not text:
        raise TextError("%s must not be empty" % name)
    return text


# Linux interface names: at most 15 bytes, no slash, colon or white space, not "." or "..".
_IFNAME_RE = re.compile(r"^[^/:\s]{1,15}$")


def check_ifname(name, value):
    """A Linux network interface name, or TextError naming the option."""
    text = check_line(name, value, allow_empty=False)
    if not _IFNAME_RE.match(text) or text in (".", ".."):
        raise TextError("%s %r is not a network interface name (1-15 characters, no '/', ':' or white space)"
                        % (name, text))
    return text


def one_line(value, limit=200):
    """Text safe for one line of a record (a Slurm reason, a taint, a report's field): control characters become
    spaces, bounded to ``limit`` (cut with '...')."""
    value = re.sub(r"[\x00-\x1f\x7f]+", " ", str(value)).strip()
    return value if len(value) <= limit else value[:limit - 3] + "..."
