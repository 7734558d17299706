# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What the collection's long-running services (the remediation decider, the alert relay) do the same way:
read their JSON configuration through their own check, serve HTTP a thread per connection (bounded, each request
bounded in time), refuse JSON nested too deep before parsing it, answer with JSON, and run until systemd stops them.
Host access, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import signal
import socket
import sys
import threading

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from socketserver import ThreadingMixIn
except ImportError:  # pragma: no cover - the services run on Python 3
    BaseHTTPRequestHandler = HTTPServer = ThreadingMixIn = object

# JSON nested deeper than this is refused before it is parsed: json.loads recurses, and a body nested 100,000 deep
# ended the request's thread with a RecursionError and no answer. Reports and notifications nest about 6 deep.
MAX_JSON_DEPTH = 64
_JSON_SPECIAL_RE = re.compile(b'["\\\\\\[\\]{}]')


def read_config(path, check, err=None):
    """(configuration, None) or (None, 2) after saying on stderr why the file cannot be used; ``check`` is the
    service's own rules (its ValueError names the entry, never a URL or a secret)."""
    err = err or sys.stderr
    try:
        with open(path) as handle:
            return check(json.load(handle)), None
    except (IOError, OSError) as exc:
        err.write("cannot read the configuration %s: %s\n" % (path, exc.strerror))
    except ValueError as exc:
        err.write("configuration %s: %s\n" % (path, exc))
    return None, 2


def send_json(handler, status, obj):
    """Answer an http.server request with ``obj`` as JSON (sorted keys, its length given)."""
    data = json.dumps(obj, sort_keys=True).encode("utf-8")
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def run_until_signalled(server, stop):
    """Serve until SIGTERM or SIGINT, then set ``stop`` for the service's threads and shut the server down."""
    finished = threading.Event()

    def terminate(signum, frame):
        stop.set()
        finished.set()
    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)
    while not finished.wait(1.0):
        pass
    server.shutdown()
    return 0


def check_json_depth(data, limit=MAX_JSON_DEPTH):
    """ValueError when the JSON text ``data`` (bytes) nests arrays and objects deeper than ``limit``. Linear: one pass
    over the quotes, backslashes and brackets, skipping what is inside strings."""
    depth, in_string, skip = 0, False, -1
    for match in _JSON_SPECIAL_RE.finditer(data):
        at = match.start()
        if at == skip:
            continue
        char = data[at:at + 1]
        if in_string:
            if char == b"\\":
                skip = at + 1
            elif char == b'"':
                in_string = False
        elif char == b'"':
            in_string = True
        elif char in (b"[", b"{"):
            depth += 1
            if depth > limit:
                raise ValueError("the JSON nests deeper than %d levels" % limit)
        elif char in (b"]", b"}"):
            depth -= 1


def parse_json_body(data, limit=MAX_JSON_DEPTH):
    """A request body (bytes) as JSON, its nesting bounded first; ValueError (UnicodeDecodeError is one) otherwise."""
    check_json_depth(data, limit)
    return json.loads(data.decode("utf-8"))


class BoundedHandler(BaseHTTPRequestHandler):
    """A request handler whose whole request (not only each read) must arrive within ``read_seconds``: a client that
    drips its request a byte at a time has its connection cut then, so it cannot hold a thread or the others."""

    read_seconds = 15
    refused = None  # {reason: count} shared by a server's handlers (each service's make_handler gives a dict)
    say = None  # the service's log (each service's make_handler gives staticmethod(log))

    def _send(self, status, obj):
        return send_json(self, status, obj)

    def refuse(self, status, why, reason):
        """Answer a refusal; every one is said in the log and counted (the services' GET /v1/health shows the
        counts): none is silent."""
        self.refused[reason] = self.refused.get(reason, 0) + 1
        self.say("refused %s from %s: %s" % (self.path.split("?", 1)[0][:100], self.client_address[0], why))
        return self._send(status, {"error": why})

    def setup(self):
        self.timeout = self.read_seconds
        BaseHTTPRequestHandler.setup(self)
        self.watchdog = threading.Timer(self.read_seconds, self._cut)
        self.watchdog.daemon = True
        self.watchdog.start()

    def _cut(self):
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def finish(self):
        self.watchdog.cancel()
        BaseHTTPRequestHandler.finish(self)

    def log_message(self, *args):
        pass

    def read_body(self, limit):
        """The body, or None when its Content-Length is missing, bad or above ``limit`` bytes."""
        try:
            length = int(self.headers.get("Content-Length") or "-1")
        except ValueError:
            length = -1
        if length < 0 or length > limit:
            return None
        return self.rfile.read(length)


class Server(ThreadingMixIn, HTTPServer):
    """A thread per connection, up to ``max_connections`` at once; beyond that a connection is closed at once (the
    client retries) instead of a thread piling up. The listen backlog holds a fleet reporting at the same second."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 4096

    def __init__(self, address, handler, max_connections):
        HTTPServer.__init__(self, address, handler)
        self.slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request, client_address):
        if not self.slots.acquire(False):
            self.shutdown_request(request)
            return
        ThreadingMixIn.process_request(self, request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            ThreadingMixIn.process_request_thread(self, request, client_address)
        finally:
            self.slots.release()
