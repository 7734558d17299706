# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""File reading and atomic writing shared by the modules that manage configuration files.

Every read is of a regular file only, and bounded: a FIFO would block the reader for ever, a device such as
/dev/zero never ends (and opening some devices acts: /dev/watchdog arms the watchdog), so a path that is not a
regular file is refused before it is opened, and a file longer than the bound is refused rather than read into
memory. ``follow=False`` (state files gpufabric owns) refuses a symbolic link too. /dev/null alone of the devices
reads as empty, as a user means it (kernel_log: /dev/null).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

MAX_READ = 64 << 20   # configuration, procfs and sysfs text, dpkg's status file: far below this
_CHUNK = 1 << 20
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


class Refused(Exception):
    """A path that is not read: not a regular file, a link where none may be, or larger than the bound. The
    message says which ('it is a FIFO, not a regular file')."""


def _kind(mode):
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file (mode %o)" % stat.S_IFMT(mode)


def _is_devnull(info):
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode) and stat.S_ISCHR(null.st_mode) and info.st_rdev == null.st_rdev


def _refuse_unless_regular(info):
    if not stat.S_ISREG(info.st_mode) and not _is_devnull(info):
        raise Refused("it is %s, not a regular file" % _kind(info.st_mode))


def read_bytes(path, limit=MAX_READ, follow=True):
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    Refused (the reason in its message) for what is not a regular file - checked before the file is opened, and
    again on what was opened - for a file longer than ``limit``, and with ``follow=False`` for a symbolic link.
    OSError for a file that cannot be opened or read (ENOENT when there is none)."""
    if not follow and os.path.islink(path):
        raise Refused("it is a symbolic link (to %s)" % os.readlink(path))
    _refuse_unless_regular(os.stat(path) if follow else os.lstat(path))
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        handle = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:   # replaced by a link since the check
            raise Refused("it is a symbolic link")
        raise
    try:
        _refuse_unless_regular(os.fstat(handle))   # what was opened, not what was checked
        chunks, size = [], 0
        while True:
            chunk = os.read(handle, min(_CHUNK, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise Refused("it is larger than %d bytes" % limit)
    finally:
        os.close(handle)


def read_tail(path, limit):
    """(the last ``limit`` bytes of the regular file at ``path``, its size, whether its head was left out): a log
    that grows for a whole job read in bounded memory. Refused and OSError as read_bytes."""
    _refuse_unless_regular(os.stat(path))
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(handle)
        _refuse_unless_regular(info)
        start = max(0, info.st_size - limit)
        if start:
            os.lseek(handle, start, os.SEEK_SET)
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(handle, min(_CHUNK, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), info.st_size, start > 0
    finally:
        os.close(handle)


def _text(raw):
    # As open(path, "r", errors="replace") gave it: universal newlines.
    return raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def read_text(path, limit=MAX_READ):
    """The file's text, or None when it cannot be read (absent, unreadable, not a regular file, too large)."""
    try:
        return _text(read_bytes(path, limit))
    except (IOError, OSError, Refused):
        return None


def read_attr(path):
    """Text of a sysfs/procfs attribute, stripped; None when absent or unreadable (a normal answer)."""
    text = read_text(path)
    return None if text is None else text.strip()


def write_atomic(module, path, content, make_dirs=False):
    """Write content to path through a temporary file and AnsibleModule.atomic_move."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        if not make_dirs:
            module.fail_json(msg="cannot write %s: directory %s does not exist" % (path, directory))
        os.makedirs(directory, 0o755)
    tmp = "%s.gpufabric.tmp" % path
    with open(tmp, "w") as handle:
        handle.write(content)
    module.atomic_move(tmp, path)
