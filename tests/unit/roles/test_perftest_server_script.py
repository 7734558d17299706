"""roles/perftest/files/perftest-server: the perftest role starts each server through it and stops the
server by the pid it recorded, never by matching a command line."""
import os
import subprocess
import sys
import time

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "perftest", "files", "perftest-server")


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(path):
    for _attempt in range(100):
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read())
        time.sleep(0.05)
    raise AssertionError("%s was never written" % path)


def test_start_records_the_pid_and_stop_ends_that_server(tmp_path):
    pidfile = str(tmp_path / "server.pid")
    server = subprocess.Popen(["sh", SCRIPT, "start", pidfile, "60", "sleep", "30"])
    try:
        pid = _wait_for(pidfile)
        assert pid == server.pid  # the script execs timeout: the recorded pid is the server's
        # A process with the same command line that is not ours survives the stop.
        bystander = subprocess.Popen(["sleep", "30"])
        stop = subprocess.run(["sh", SCRIPT, "stop", pidfile], capture_output=True, text=True, check=False)
        assert stop.returncode == 0, stop.stderr
        assert server.wait(timeout=10) != 0
        assert _alive(bystander.pid)
        bystander.kill()
        bystander.wait()
        assert not os.path.exists(pidfile)
        # Nothing left to stop: exit 3 (the role reports "not changed").
        assert subprocess.run(["sh", SCRIPT, "stop", pidfile], check=False).returncode == 3
    finally:
        if server.poll() is None:
            server.kill()


def test_a_reused_pid_is_not_killed(tmp_path):
    pidfile = tmp_path / "server.pid"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        pidfile.write_text("%d\n" % other.pid)  # a stale file whose pid now belongs to someone else
        assert subprocess.run(["sh", SCRIPT, "stop", str(pidfile)], check=False).returncode == 3
        assert _alive(other.pid)
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("argv, message", [
    (["start", "relative.pid", "5", "true"], "must be an absolute path"),
    (["start", "/tmp/x.pid", "5"], "start PIDFILE SECONDS COMMAND"),
    (["restart", "/tmp/x.pid"], "start|stop|wait PIDFILE"),
])
def test_bad_calls_say_what_is_wrong(argv, message):
    proc = subprocess.run(["sh", SCRIPT] + argv, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_a_pidfile_with_garbage_is_refused(tmp_path):
    pidfile = tmp_path / "server.pid"
    pidfile.write_text("12; rm -rf /\n")
    proc = subprocess.run(["sh", SCRIPT, "stop", str(pidfile)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "does not hold a pid" in proc.stderr


def test_wait_returns_when_the_server_ends_and_gives_up_after_its_limit(tmp_path):
    pidfile = str(tmp_path / "server.pid")
    server = subprocess.Popen(["sh", SCRIPT, "start", pidfile, "60", "sleep", "1"])
    try:
        _wait_for(pidfile)
        started = time.time()
        assert subprocess.run(["sh", SCRIPT, "wait", pidfile, "30"], check=False, timeout=60).returncode == 0
        assert time.time() - started < 10 and not _alive(server.pid)   # ended (a zombie until reaped)
    finally:
        server.kill()
        server.wait()
    pidfile = str(tmp_path / "slow.pid")   # a new file: the first server's would be read before this one writes its own
    slow = subprocess.Popen(["sh", SCRIPT, "start", pidfile, "60", "sleep", "30"])
    try:
        _wait_for(pidfile)
        started = time.time()
        assert subprocess.run(["sh", SCRIPT, "wait", pidfile, "1"], check=False, timeout=60).returncode == 0
        assert 0.8 < time.time() - started < 10 and slow.poll() is None   # waited its limit, stopped nothing
    finally:
        slow.kill()
        slow.wait()
