# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Ask a running NCCL job what is wrong with it: a client of NCCL's RAS port (NCCL 2.24 and later).

Every process of an NCCL job runs a RAS thread; one process per node listens on NCCL_RAS_ADDR
(localhost:28028 unless set). The protocol is lines of text: the client sends ``CLIENT PROTOCOL 2``
and reads ``SERVER PROTOCOL <n>``; optionally ``TIMEOUT <s>`` (how long NCCL waits for the other
nodes' answers), read ``OK``; then ``STATUS`` or ``VERBOSE STATUS``, and the reply is text up to the
end of the connection. NCCL's own ``ncclras`` tool speaks the same protocol; nodes rarely have it,
so the collection carries this client.

Host access, standard library only (no collection imports: tests/device loads this file alone).
Every wait has a deadline; the reply is bounded in size. The result says which step failed, so a
node without a job ("refused") is told apart from a job that stopped answering ("timeout").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import ipaddress
import socket
import time

RAS_PORT = 28028
CLIENT_PROTOCOL = 2
# A verbose status of a 10,000-rank job is some hundreds of kilobytes; anything past this is cut and said so.
MAX_REPLY_BYTES = 8 * 1024 * 1024
# What the answer may take beyond NCCL's own collective timeout (NCCL's client allows a little more too).
_EXTRA_SECONDS = 5


class RasError(Exception):
    """A question the job could not answer: ``stage`` is connect, handshake, timeout, format or status;
    ``kind`` is refused, timeout, closed, protocol or error."""

    def __init__(self, stage, kind, message):
        Exception.__init__(self, message)
        self.stage = stage
        self.kind = kind


def check_address(host, allow_remote=False):
    """The host to ask, or ValueError: only a loopback address or name unless allow_remote.

    The RAS port answers anyone who connects, and a name could resolve to anything; this client
    talks to the node it runs on unless the caller says otherwise."""
    text = str(host or "").strip()
    if not text or any(c.isspace() for c in text) or len(text) > 253:
        raise ValueError("RAS host must be a host name or address, got %r" % (host,))
    if allow_remote:
        return text
    if text == "localhost":
        return text
    try:
        if ipaddress.ip_address(text).is_loopback:
            return text
    except ValueError:
        pass
    raise ValueError("RAS host %r is not a loopback address (127.0.0.1, ::1, localhost); pass "
                     "allow_remote to ask another node" % (text,))


def check_port(port):
    """A TCP port (1 to 65535), or ValueError naming the value."""
    try:
        value = int(port)
    except (TypeError, ValueError):
        value = 0
    if isinstance(port, bool) or not 0 < value < 65536:
        raise ValueError("RAS port must be 1 to 65535, got %r" % (port,))
    return value


class _Conn(object):
    def __init__(self, sock, deadline):
        self.sock = sock
        self.deadline = deadline
        self.buffer = b""

    def _wait(self):
        left = self.deadline - time.time()
        if left <= 0:
            raise socket.timeout()
        self.sock.settimeout(left)

    def send(self, line):
        self._wait()
        self.sock.sendall(line.encode("ascii") + b"\n")

    def line(self, limit=4096):
        """One reply line (without its newline), or None when the job closed the connection first."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > limit:
                raise RasError("handshake", "protocol", "a reply line longer than %d bytes" % limit)
            self._wait()
            chunk = self.sock.recv(4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, dummy, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace").strip()

    def rest(self, limit):
        """Everything up to the end of the connection, at most limit bytes: (bytes, truncated)."""
        data = [self.buffer]
        size = len(self.buffer)
        self.buffer = b""
        while size <= limit:
            self._wait()
            chunk = self.sock.recv(65536)
            if not chunk:
                return b"".join(data), False
            data.append(chunk)
            size += len(chunk)
        return b"".join(data)[:limit], True


def _expect(conn, stage, prefix):
    reply = conn.line()
    if reply is None:
        raise RasError(stage, "closed", "the job closed the connection before answering")
    if not reply.upper().startswith(prefix):
        raise RasError(stage, "protocol", "expected %r, got %r" % (prefix, reply[:120]))
    return reply


def _connect(host, port, timeout):
    """A connected socket to the first address of ``host`` that accepts. 'localhost' is often ::1 first, where a
    container without IPv6 says 'Cannot assign requested address' while NCCL listens on 127.0.0.1: every address is
    tried, and the kind is 'refused' when any refused (nothing listens), 'timeout' when one timed out."""
    try:
        addresses = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except (OSError, socket.error) as exc:
        raise RasError("connect", "error", "cannot resolve %s: %s" % (host, exc))
    problems = []
    for family, kind, proto, dummy, address in addresses:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
            return sock
        except socket.timeout:
            problems.append(("timeout", "%s: no answer within %.0f s" % (address[0], timeout)))
        except (OSError, socket.error) as exc:
            refused = getattr(exc, "errno", None) == errno.ECONNREFUSED
            problems.append(("refused" if refused else "error", "%s: %s" % (address[0], exc)))
        sock.close()
    kinds = [k for k, dummy in problems]
    kind = "refused" if "refused" in kinds else "timeout" if "timeout" in kinds else "error"
    raise RasError("connect", kind, "cannot connect to %s:%d: %s" % (host, port, "; ".join(m for dummy, m in problems)))


def query(host="localhost", port=RAS_PORT, timeout=30, verbose=True, collective_timeout=None,
          allow_remote=False, max_bytes=MAX_REPLY_BYTES, reply_format="text"):
    """Ask the job's RAS port for its status. Returns a dict: ``text`` (the reply), ``server_protocol``,
    ``truncated``, ``seconds``, ``request``. Raises RasError (which step, what kind) or ValueError
    (a bad host or port). ``timeout`` bounds the whole exchange; ``collective_timeout`` is passed to
    NCCL as ``TIMEOUT`` and must leave room within it. ``reply_format`` json asks for NCCL's JSON
    reply (``SET FORMAT json``, newer NCCL only; older ones answer with an error at the format step)."""
    if reply_format not in ("text", "json"):
        raise ValueError("RAS reply_format must be text or json, got %r" % (reply_format,))
    host = check_address(host, allow_remote)
    port = check_port(port)
    started = time.time()
    deadline = started + float(timeout)
    if collective_timeout is not None and int(collective_timeout) + _EXTRA_SECONDS > float(timeout):
        raise ValueError("RAS collective_timeout %r leaves no room within timeout %r (needs %d s more)"
                         % (collective_timeout, timeout, _EXTRA_SECONDS))
    sock = _connect(host, port, max(0.1, min(float(timeout), 10.0)))
    conn = _Conn(sock, deadline)
    try:
        stage = "handshake"
        conn.send("CLIENT PROTOCOL %d" % CLIENT_PROTOCOL)
        reply = _expect(conn, stage, "SERVER PROTOCOL ")
        server_protocol = reply.split()[-1]
        if collective_timeout is not None:
            stage = "timeout"
            conn.send("TIMEOUT %d" % int(collective_timeout))
            _expect(conn, stage, "OK")
        if reply_format != "text":
            stage = "format"
            conn.send("SET FORMAT %s" % reply_format)
            _expect(conn, stage, "OK")
        stage = "status"
        request = "VERBOSE STATUS" if verbose else "STATUS"
        conn.send(request)
        data, truncated = conn.rest(max_bytes)
    except socket.timeout:
        raise RasError(stage, "timeout", "%s:%d stopped answering at the %s step after %.1f s"
                       % (host, port, stage, time.time() - started))
    except (OSError, socket.error) as exc:
        raise RasError(stage, "error", "%s:%d at the %s step: %s" % (host, port, stage, exc))
    finally:
        sock.close()
    return dict(text=data.decode("utf-8", "replace"), server_protocol=server_protocol, truncated=truncated,
                seconds=round(time.time() - started, 3), request=request)
