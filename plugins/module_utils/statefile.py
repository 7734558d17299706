# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State on disk that survives crashes, full disks and damage, in directories gpufabric owns.

Host access, standard library only; the health monitor, the remediation decider and the
owned_directory module use it.

- ``load_json``: a missing file is a fresh start; a file that is not ours (not JSON, another shape,
  a directory where the file should be) is set aside under a new name with one warning, never
  used and never deleted.
- ``save_json``: temp file in the same directory, fsync, rename, fsync of the directory - the file
  is the old one or the new one, never half; a full disk raises StateError with the reason and leaves
  the old file in place.
- ``Lock``: one writer at a time (flock), with a bounded wait.
- Directories: ``mark_owned`` / ``owner_of`` put and read a marker file, so a role creates, chmods and
  deletes only a directory it made (the path rules are ownership.py's).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import json
import os
import tempfile
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.ownership import MARKER


class StateError(Exception):
    """State that cannot be read back or saved; the message says which file and why."""


def owner_of(path):
    """The owner named in the directory's marker file, '' when unmarked, None when there is no directory."""
    if not os.path.isdir(path):
        return None
    try:
        with open(os.path.join(path, MARKER)) as handle:
            return handle.read().strip() or "?"
    except (IOError, OSError):
        return ""


def mark_owned(path, owner):
    with open(os.path.join(path, MARKER), "w") as handle:
        handle.write(owner + "\n")


def _set_aside(path, why):
    aside = "%s.damaged-%d" % (path, int(time.time()))
    try:
        os.rename(path, aside)
    except OSError as exc:
        raise StateError("%s cannot be used (%s) and cannot be set aside: %s" % (path, why, exc.strerror or exc))
    return "%s could not be used (%s); set aside as %s, starting afresh" % (path, why, aside)


def load_json(path, check=None):
    """(data, warning): (None, None) when there is no file; a damaged file is set aside: (None, warning).

    ``check(data)`` raises ValueError (or TypeError) for a shape that is not ours.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None, None
        if exc.errno == errno.EISDIR:
            return None, _set_aside(path, "it is a directory")
        raise StateError("%s cannot be read: %s" % (path, exc.strerror or exc))
    try:
        data = json.loads(raw.decode("utf-8"))
        if check is not None:
            data = check(data)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        return None, _set_aside(path, "not a state file of ours: %s" % str(exc)[:200])
    return data, None


def save_json(path, data):
    """Write ``data`` to ``path`` atomically; StateError (with the reason, e.g. no space left) if it cannot."""
    directory = os.path.dirname(path) or "."
    payload = json.dumps(data, sort_keys=True, indent=1).encode("utf-8")
    tmp = None
    try:
        handle, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp.", suffix=".json")
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.rename(tmp, path)
        tmp = None
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except (IOError, OSError) as exc:
        raise StateError("could not save %s: %s" % (path, exc.strerror or exc))
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


class Lock(object):
    """An exclusive lock on ``path`` (flock); waits at most ``wait`` seconds, then raises StateError."""

    def __init__(self, path, wait=60):
        self.path, self.wait, self.handle = path, wait, None

    def __enter__(self):
        try:
            self.handle = open(self.path, "a")
        except (IOError, OSError) as exc:
            raise StateError("cannot open the lock %s: %s" % (self.path, exc.strerror or exc))
        deadline = time.time() + self.wait
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except (IOError, OSError):
                if time.time() > deadline:
                    self.handle.close()
                    raise StateError("another run holds %s for more than %d s" % (self.path, self.wait))
                time.sleep(0.05)

    def __exit__(self, *exc):
        self.handle.close()
