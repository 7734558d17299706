# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The one way the collection runs an external command: with a time limit, its whole process
group killed when the limit passes, its output decoded whatever bytes it printed.

Host access, standard library only; every module and the health monitor run their commands
through ``Runner``. A tool that hangs (nvidia-smi on a node whose GPU fell off the bus) gives a
result with ``timed_out`` set after ``timeout`` seconds, never a hung play or timer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import subprocess
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import (
    DEFAULT_COMMAND_TIMEOUT as DEFAULT_TIMEOUT, check_seconds)

# Where system tools live even when a service's PATH leaves them out (AnsibleModule.get_bin_path does the same).
SBIN_DIRS = ("/sbin", "/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin", "/bin")
# After the kill, how long the pipes may take to close (a child that left the group may hold them).
_DRAIN_SECONDS = 2

# The option every module that runs commands takes (doc fragment gpufabric.rdma.command_timeout).
ARGUMENT_SPEC = dict(command_timeout=dict(type="int", default=DEFAULT_TIMEOUT))


class CommandResult(object):
    """What one command did: rc (None when it did not end by itself), stdout, stderr (text),
    timed_out, error (why it could not start, or that it timed out), seconds."""

    def __init__(self, argv, rc, stdout, stderr, timed_out=False, error=None, seconds=0.0, timeout=None):
        self.argv = list(argv)
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.error = error
        self.seconds = seconds
        self.timeout = timeout

    @property
    def ok(self):
        return self.rc == 0 and not self.timed_out

    def first_line(self):
        """The first line the command printed (stderr first), or why it printed nothing."""
        for text in (self.stderr, self.stdout):
            for line in (text or "").splitlines():
                if line.strip():
                    return line.strip()
        return self.error or "no output"

    def describe(self):
        """One sentence for a message: '<cmd> did not answer within 30 s' or '<cmd> exited 2: <first line>'."""
        name = " ".join(self.argv[:3])
        if self.timed_out:
            return "%s did not answer within %s s" % (name, self.timeout)
        if self.rc is None or self.error:
            return "%s could not run: %s" % (name, self.error)
        return "%s exited %d: %s" % (name, self.rc, self.first_line())


def check_timeout(value, name="command_timeout"):
    """A timeout in whole seconds (1 to 3600), or ValueError naming the option and the value."""
    return check_seconds(value, name)


def _decode(data):
    return data.decode("utf-8", "replace") if data else ""


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:  # the group is gone already
        pass


def run(argv, timeout=DEFAULT_TIMEOUT, env=None, cwd=None, data=None):
    """Run argv (a list, never a shell string) for at most ``timeout`` seconds -> CommandResult.

    The command starts in a new session, so on timeout one signal reaches it and everything it
    started; its output so far is kept. The C locale keeps tools' words the ones the parsers know.
    """
    environ = dict(os.environ if env is None else env)
    environ.update(LC_ALL="C", LANG="C")
    started = time.time()
    try:
        proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                                cwd=cwd, env=environ, close_fds=True, start_new_session=True)
    except OSError as exc:
        return CommandResult(argv, None, "", "", error=exc.strerror or str(exc), seconds=time.time() - started,
                             timeout=timeout)
    try:
        out, err = proc.communicate(data.encode("utf-8") if data is not None else None, timeout=timeout)
        return CommandResult(argv, proc.returncode, _decode(out), _decode(err), seconds=time.time() - started,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        try:
            out, err = proc.communicate(timeout=_DRAIN_SECONDS)
        except subprocess.TimeoutExpired:
            # A grandchild that left the group still holds the pipes: stop reading, reap the child.
            for pipe in (proc.stdout, proc.stderr, proc.stdin):
                if pipe:
                    pipe.close()
            proc.wait()
            out, err = b"", b""
        return CommandResult(argv, None, _decode(out), _decode(err), timed_out=True,
                             error="no answer within %s s; killed" % timeout, seconds=time.time() - started,
                             timeout=timeout)


class Runner(object):
    """Finds and runs commands with one time limit: ``which(name)`` and ``run(argv) -> CommandResult``."""

    def __init__(self, timeout=DEFAULT_TIMEOUT, path=None, env=None):
        self.timeout = check_timeout(timeout)
        self.path = path if path is not None else (os.environ.get("PATH") or "")
        self.env = env
        self.calls = []

    def which(self, name):
        """Full path of an executable (PATH, then the sbin directories), or None."""
        if os.sep in name:
            return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
        seen = set()
        for directory in [d for d in self.path.split(os.pathsep) if d] + list(SBIN_DIRS):
            if directory in seen:
                continue
            seen.add(directory)
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        return None

    def run(self, argv, timeout=None, cwd=None, data=None):
        result = run(argv, timeout or self.timeout, env=self.env, cwd=cwd, data=data)
        self.calls.append(result)
        return result


def module_runner(module):
    """The Runner of a module's command_timeout option; a bad value fails the module naming it."""
    try:
        return Runner(module.params["command_timeout"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
