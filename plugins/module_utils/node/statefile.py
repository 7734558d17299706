# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""State on disk that survives crashes, full disks and damage, in directories gpufabric owns.

Host access, standard library only; the health monitor, the remediation decider and the
owned_directory module use it.

- ``read_json``: a state file read without following a link, never blocking and bounded (files.read_bytes):
  None when there is none, Damaged (with why) for one that is not ours - a link, a FIFO, a device or a
  directory where the file should be, one larger than the bound, not JSON or of another shape.
- ``load_json``: the same, and a file that is not ours is set aside under a new name with one warning,
  never used and never deleted.
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

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.ownership import MARKER
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import files

MAX_STATE = 64 << 20   # the largest state file read back (the decider's, the health monitor's are far below)


class StateError(Exception):
    """State that cannot be read back or saved; the message says which file and why."""


class Damaged(StateError):
    """A state file that is there but is not ours to use; the message is why ('it is a FIFO, not a regular file')."""


def owner_of(path):
    """The owner named in the directory's marker file, '' when unmarked (or the marker is not a small regular
    file of its own), None when there is no directory."""
    if not os.path.isdir(path):
        return None
    try:
        return files.read_bytes(os.path.join(path, MARKER), limit=4096, follow=False).decode("utf-8", "replace").strip() or "?"
    except (IOError, OSError, files.Refused):
        return ""


def mark_owned(path, owner):
    with open(os.path.join(path, MARKER), "w") as handle:
        handle.write(owner + "\n")


KEEP_DAMAGED = 5


def _set_aside(path, why, set_aside):
    if not set_aside:  # check mode: say it, change nothing
        return "%s could not be used (%s); it would be set aside and the run would start afresh" % (path, why)
    aside = "%s.damaged-%s" % (path, time.strftime("%Y%m%dT%H%M%S") + ("%.6f" % (time.time() % 1))[1:])
    try:
        os.rename(path, aside)
    except OSError as exc:
        raise StateError("%s cannot be used (%s) and cannot be set aside: %s" % (path, why, exc.strerror or exc))
    # Bounded: only the newest few copies are kept (ours by their name; nothing else is touched).
    directory, base = os.path.split(path)
    copies = sorted(name for name in os.listdir(directory or ".") if name.startswith(base + ".damaged-"))
    for name in copies[:-KEEP_DAMAGED]:
        try:
            if os.path.isdir(os.path.join(directory, name)):
                continue
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass
    return "%s could not be used (%s); set aside as %s, starting afresh" % (path, why, aside)


def read_json(path, check=None, limit=MAX_STATE):
    """The data of the state file at ``path``: None when there is none; Damaged (why) when it is a link, not a regular
    file, larger than ``limit``, not JSON, or refused by ``check(data)`` (which raises ValueError or TypeError for a
    shape that is not ours); StateError when it cannot be read."""
    try:
        raw = files.read_bytes(path, limit=limit, follow=False)
    except files.Refused as exc:
        raise Damaged(str(exc))
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise StateError("%s cannot be read: %s" % (path, exc.strerror or exc))
    try:
        data = json.loads(raw.decode("utf-8"))
        return check(data) if check is not None else data
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise Damaged("not a state file of ours: %s" % str(exc)[:200])


def load_json(path, check=None, set_aside=True):
    """(data, warning): (None, None) when there is no file; a damaged file is set aside: (None, warning).

    ``check(data)`` raises ValueError (or TypeError) for a shape that is not ours. ``set_aside=False``
    (check mode) leaves a damaged file where it is and only says so.
    """
    try:
        return read_json(path, check), None
    except Damaged as exc:
        return None, _set_aside(path, str(exc), set_aside)


def save_json(path, data):
    """Write ``data`` to ``path`` atomically; StateError (with the reason, e.g. no space left) if it cannot."""
    save_bytes(path, json.dumps(data, sort_keys=True, indent=1).encode("utf-8"), suffix=".json")


def save_bytes(path, payload, suffix=".tmp", mode=None):
    """Write ``payload`` to ``path`` atomically (temp file in the same directory, fsync, rename); StateError
    with the reason if it cannot. The temp file's name starts with a dot and ends in ``suffix``, so a reader
    that takes ``*.prom`` (node_exporter's textfile collector) never sees it half written."""
    directory = os.path.dirname(path) or "."
    tmp = None
    try:
        handle, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp.", suffix=suffix)
        if mode is not None:
            os.fchmod(handle, mode)
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


def _owned_dir(directory, owner, create):
    found = owner_of(directory)
    if found is None and create:
        try:
            os.makedirs(directory, 0o700)
            mark_owned(directory, owner)
        except OSError as exc:
            raise StateError("could not create %s: %s" % (directory, exc.strerror or exc))
        found = owner
    if found is not None and found != owner:
        raise StateError("%s exists and is not %s's (its marker names %s): choose another" % (directory, owner, found or "nobody"))
    return found is not None


def owned_files(directory, pattern, owner="remediator"):
    """[(relative 'sub/name', bytes, mtime)] of the files matching ``pattern`` one directory below ``directory`` (one
    gpufabric made, by its marker); nothing else is listed, so nothing else is ever dropped."""
    if not _owned_dir(directory, owner, False):
        return []
    out = []
    for sub in sorted(os.listdir(directory)):
        where = os.path.join(directory, sub)
        if sub.startswith(".") or not os.path.isdir(where) or os.path.islink(where):
            continue
        for name in sorted(os.listdir(where)):
            path = os.path.join(where, name)
            if pattern.match(name) and os.path.isfile(path) and not os.path.islink(path):
                info = os.stat(path)
                out.append(("%s/%s" % (sub, name), info.st_size, info.st_mtime))
    return out


def remove_owned(directory, relative):
    try:
        os.unlink(os.path.join(directory, relative))
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise StateError("could not remove %s: %s" % (os.path.join(directory, relative), exc.strerror or exc))


def write_owned(directory, relative, payload, owner="remediator"):
    """Write ``payload`` atomically as ``directory/relative`` (one level deep), creating and marking ``directory``
    when it is missing; the file and its directory are readable by root only. Returns the path."""
    _owned_dir(directory, owner, True)
    sub = os.path.join(directory, os.path.dirname(relative))
    if not os.path.isdir(sub):
        try:
            os.mkdir(sub, 0o700)
        except OSError as exc:
            raise StateError("could not create %s: %s" % (sub, exc.strerror or exc))
    path = os.path.join(directory, relative)
    save_bytes(path, payload, suffix=".part", mode=0o600)
    return path


class Lock(object):
    """An exclusive lock on ``path`` (flock); waits at most ``wait`` seconds, then raises StateError.

    ``create=False`` (check mode) creates no lock file: without one there is nobody to wait for.
    ``wait=0`` tries once; ``held`` then says whether it got the lock.
    """

    def __init__(self, path, wait=60, create=True):
        self.path, self.wait, self.create, self.handle, self.held = path, wait, create, None, False

    def __enter__(self):
        if not self.create and not os.path.exists(self.path):
            return self
        try:
            self.handle = open(self.path, "a" if self.create else "r")
        except (IOError, OSError) as exc:
            raise StateError("cannot open the lock %s: %s" % (self.path, exc.strerror or exc))
        deadline = time.time() + self.wait
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.held = True
                return self
            except (IOError, OSError):
                if self.wait == 0:
                    return self
                if time.time() > deadline:
                    self.handle.close()
                    raise StateError("another run holds %s for more than %d s" % (self.path, self.wait))
                time.sleep(0.05)

    def __exit__(self, *exc):
        if self.handle is not None:
            self.handle.close()
