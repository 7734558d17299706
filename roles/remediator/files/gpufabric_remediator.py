# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-remediator: the one remediation decider of a cluster (the remediator role runs it as a
systemd service on the Slurm controller host, or on one host with a kubeconfig).

    python3 remediator.py --config /etc/gpufabric-remediator/config.json [--deliver-once]

Nodes report here (POST /v1/challenge for a nonce, then POST /v1/report signed with the shared
secret); the reports that arrive together are decided together, in one place, against the whole
fleet as the scheduler records it (decider.decide; the decisions are remediation.plan's). Each node
gets the decision about itself as the answer. Decisions and their messages are saved before anything
is done or sent; a thread sends the outbox to the webhooks, each in its own thread and deadline.
GET /v1/health answers how the decider is doing (the last batch, what waits to be sent).
This file is the HTTP and threading glue; the knowledge is in module_utils, copied beside it.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import signal
import sys
import threading
import time

# The role puts module_utils under <this directory>/ansible_collections/gpufabric/rdma/plugins/module_utils.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufabric.rdma.plugins.module_utils import (  # noqa: E402
    decider, delivery, monitor, remediation)

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from socketserver import ThreadingMixIn
    import secrets
except ImportError:  # pragma: no cover - Python 2
    raise SystemExit("gpufabric-remediator needs Python 3")

NONCE_SECONDS = 120
MAX_NONCES = 200000


def _say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Nonces(object):
    """One-use nonces that expire: a report recorded on the wire cannot be replayed, and no node clock
    is trusted for it (the decider's own clock times them)."""

    def __init__(self, clock):
        self.clock, self.lock, self.issued = clock, threading.Lock(), {}

    def issue(self):
        with self.lock:
            now = self.clock()
            if len(self.issued) >= MAX_NONCES:
                self.issued = dict((n, t) for n, t in self.issued.items() if t > now)
                if len(self.issued) >= MAX_NONCES:
                    return None
            nonce = secrets.token_hex(16)
            self.issued[nonce] = now + NONCE_SECONDS
            return nonce

    def take(self, nonce):
        with self.lock:
            expires = self.issued.pop(nonce, None)
            return expires is not None and expires > self.clock()


class Batcher(object):
    """Reports that arrive together are decided together: one scheduler read and one plan per batch."""

    def __init__(self, config, clock, log, wake_delivery):
        self.config, self.clock, self.log, self.wake_delivery = config, clock, log, wake_delivery
        self.cond = threading.Condition()
        self.waiting = []  # [(report, slot)]
        self.last = None

    def submit(self, report):
        slot = {"done": threading.Event(), "answer": None}
        with self.cond:
            self.waiting.append((report, slot))
            self.cond.notify()
        return slot

    def run(self, stop):
        while not stop.is_set():
            with self.cond:
                while not self.waiting and not stop.is_set():
                    self.cond.wait(1.0)
                if stop.is_set():
                    return
            time.sleep(self.config["batch_window"])  # let the reports sent at the same moment arrive
            with self.cond:
                batch, self.waiting = self.waiting, []
            self.decide(batch)

    def decide(self, batch):
        reports = {}
        for report, slot in batch:  # the latest report of a node wins
            reports[report["node"]] = report
        started = time.time()
        result = decider.decide(reports, self.config, self.clock, self.log)
        by_node = dict((d["node"], d) for d in result["decisions"])
        scheduler = "slurm" if self.config["remediation"]["slurm"]["enabled"] else "kubernetes"
        counts = remediation.summary(result) if result.get("decisions") else {}
        self.last = {"at": monitor.iso(self.clock()), "reports": len(reports), "seconds": round(time.time() - started, 3),
                     "error": result.get("error"), "counts": counts, "breaker_open": result["breaker"]["open"]}
        self.log("batch of %d report(s) in %.2f s: %s%s" % (
            len(reports), time.time() - started, ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())),
            "; could not act: %s" % result["error"] if result.get("error") else ""))
        for decision in result["decisions"]:
            if decision["action"] != "none" or decision["held"]:
                self.log(remediation.decision_text(scheduler, decision))
        for report, slot in batch:
            decision = by_node[report["node"]]
            slot["answer"] = {"decision": decision, "text": remediation.decision_text(scheduler, decision),
                              "out_of_service": bool(decision.get("out_of_service"))}
            slot["done"].set()
        self.wake_delivery.set()


def make_handler(config, nonces, batcher):
    secret = config["secret"]

    class Handler(BaseHTTPRequestHandler):
        server_version = "gpufabric-remediator"
        timeout = 30  # a client that stops sending does not hold a thread for ever

        def log_message(self, *args):
            pass

        def _send(self, status, obj):
            data = json.dumps(obj, sort_keys=True).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self):
            try:
                length = int(self.headers.get("Content-Length") or "-1")
            except ValueError:
                length = -1
            if length < 0 or length > monitor.MAX_REPORT_BYTES:
                return None
            return self.rfile.read(length)

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/health":
                return self._send(200, {"ok": True, "last_batch": batcher.last})
            return self._send(404, {"error": "no such path"})

        def do_POST(self):
            path = self.path.split("?", 1)[0].rstrip("/")
            body = self._body()
            if body is None:
                return self._send(413, {"error": "a body with a Content-Length of at most %d bytes is needed"
                                        % monitor.MAX_REPORT_BYTES})
            if path == monitor.CHALLENGE_PATH:
                nonce = nonces.issue()
                if nonce is None:
                    return self._send(503, {"error": "too many reports in flight"})
                return self._send(200, {"nonce": nonce, "expires_in": NONCE_SECONDS})
            if path != monitor.REPORT_PATH:
                return self._send(404, {"error": "no such path"})
            try:
                report, nonce = monitor.verify_report(secret, body, self.headers.get("X-Gpufabric-Signature"))
            except ValueError as exc:
                return self._send(401 if "signature" in str(exc) else 400, {"error": str(exc)})
            if not nonces.take(nonce):
                return self._send(401, {"error": "the nonce is unknown, used or expired: ask %s again"
                                        % monitor.CHALLENGE_PATH})
            slot = batcher.submit(report)
            if not slot["done"].wait(config["answer_within"]):
                return self._send(503, {"error": "no decision within %s s (the scheduler is slow): the report is "
                                        "decided when its turn comes; nothing is assumed" % config["answer_within"]})
            return self._send(200, slot["answer"])

    return Handler


class Server(ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # A whole fleet reports at the same second (HealthCheckProgram): the listen backlog must hold it.
    request_queue_size = 4096


def serve(config, clock=time.time, log=_say, stop=None):
    """Start the decider; returns (server, stop event, threads). ``stop.set()`` and server.shutdown() end it."""
    stop = stop or threading.Event()
    wake = threading.Event()
    nonces = Nonces(clock)
    batcher = Batcher(config, clock, log, wake)
    server = Server((config["listen"], config["port"]), make_handler(config, nonces, batcher))
    state_path, lock_path = decider.paths(config["state_dir"])

    def deliver_loop():
        while not stop.is_set():
            wake.wait(config["deliver_interval"])
            wake.clear()
            if stop.is_set() or not config["webhooks"]:
                continue
            try:
                delivery.deliver_state(state_path, lock_path, decider.check_state, config["webhooks"], log,
                                       deadline=config["deliver_deadline"], timeout=config["timeout"],
                                       max_per_run=config["max_per_run"], clock=clock)
            except Exception as exc:  # the loop must outlive any one failure; it is said, and retried
                log("delivery: %s" % exc)

    threads = [threading.Thread(target=batcher.run, args=(stop,), name="decider"),
               threading.Thread(target=deliver_loop, name="delivery"),
               threading.Thread(target=server.serve_forever, name="http")]
    for thread in threads:
        thread.daemon = True
        thread.start()
    return server, stop, threads


USAGE = "usage: gpufabric-remediator --config FILE [--deliver-once]"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (2, 3) or argv[0] != "--config" or (len(argv) == 3 and argv[2] != "--deliver-once"):
        sys.stderr.write(USAGE + "\n")
        return 2
    try:
        with open(argv[1]) as handle:
            config = monitor.check_decider_config(json.load(handle))
    except (IOError, OSError) as exc:
        sys.stderr.write("cannot read the configuration %s: %s\n" % (argv[1], exc.strerror))
        return 2
    except ValueError as exc:
        sys.stderr.write("configuration %s: %s\n" % (argv[1], exc))
        return 2
    if not config["secret"]:
        sys.stderr.write("configuration %s: secret is needed (the shared report secret; the role generates one)\n" % argv[1])
        return 2
    if not os.path.isdir(config["state_dir"]):
        sys.stderr.write("state_dir %s does not exist (the remediator role creates it)\n" % config["state_dir"])
        return 2
    if len(argv) == 3:
        state_path, lock_path = decider.paths(config["state_dir"])
        totals = delivery.deliver_state(state_path, lock_path, decider.check_state, config["webhooks"], _say,
                                        deadline=config["deliver_deadline"], timeout=config["timeout"],
                                        max_per_run=config["max_per_run"])
        return 1 if totals["failed"] or totals.get("save_error") else 0
    server, stop, threads = serve(config)
    _say("gpufabric-remediator: listening on %s:%d, %s mode, policy %s" % (
        config["listen"], server.server_address[1], config["remediation"]["mode"], config["remediation"]["policy_name"]))
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


if __name__ == "__main__":
    sys.exit(main())
