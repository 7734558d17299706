# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's long-running services (the remediation decider, the alert relay) do the same way:
read their JSON configuration through their own check, answer HTTP with JSON, and run until systemd stops them. Host access,
standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import signal
import sys
import threading


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
