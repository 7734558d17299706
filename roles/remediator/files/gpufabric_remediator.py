# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-remediator: the one remediation decider of a cluster (the remediator role runs it as a
systemd service on the Slurm controller host, or on one host with a kubeconfig).

    python3 remediator.py --config /etc/gpufabric-remediator/config.json [--deliver-once]

Nodes report here (POST /v1/challenge for a nonce, then POST /v1/report signed with the shared
secret, and POST /v1/evidence for a bundle the decider asked for at a drain); the reports that arrive together are
decided together, in one place, against the whole
fleet as the scheduler records it (decider.decide; the decisions are remediation.plan's). Each node
gets the decision about itself as the answer. Decisions and their messages are saved before anything
is done or sent (the messages in an outbox file of their own, decider.OUTBOX_FILE, which a damaged ledger leaves
whole); a thread sends the outbox to the webhooks, each in its own thread and deadline.
GET /v1/health answers how the decider is doing (the last batch, what waits to be sent); GET /metrics gives Prometheus
each node's time from drain to resume (MTTR) and the evidence store's size.
This file is the HTTP and threading glue; the knowledge is in module_utils, copied beside it.
"""

from __future__ import absolute_import, division, print_function

import hmac
import os
import sys
import threading
import time

# The role puts module_utils under <this directory>/ansible_collections/gpufabric/rdma/plugins/module_utils.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import (  # noqa: E402
    alerts, decider, decider_settings, evidence, messages, protocol, remediation, service)

try:
    import secrets
except ImportError:  # pragma: no cover - Python 2
    raise SystemExit("gpufabric-remediator needs Python 3")

NONCE_SECONDS = 120
NONCES_PER_NODE = 8
MAX_NONCES = 200000
# A thread per connection, at most this many at once; a client gets this long to send its request
# (headers and body), however slowly it drips; at most this many reports wait for a decision.
MAX_CONNECTIONS = 512
READ_SECONDS = 15
MAX_WAITING = 20000


def _say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Nonces(object):
    """One-use nonces that expire: a report recorded on the wire cannot be replayed, and no node clock
    is trusted for it (the decider's own clock times them). Only a signed challenge gets one, and a node
    holds at most NONCES_PER_NODE (its oldest go first), so the table is bounded by the fleet."""

    def __init__(self, clock):
        self.clock, self.lock, self.issued, self.by_node = clock, threading.Lock(), {}, {}

    def issue(self, node):
        with self.lock:
            now = self.clock()
            if len(self.issued) >= MAX_NONCES:
                self.issued = dict((n, v) for n, v in self.issued.items() if v[0] > now)
                if len(self.issued) >= MAX_NONCES:
                    return None
            mine = [n for n in self.by_node.get(node, []) if n in self.issued]
            while len(mine) >= NONCES_PER_NODE:
                self.issued.pop(mine.pop(0), None)
            nonce = secrets.token_hex(16)
            self.issued[nonce] = (now + NONCE_SECONDS, node)
            self.by_node[node] = mine + [nonce]
            return nonce

    def take(self, nonce, node):
        with self.lock:
            expires, owner = self.issued.pop(nonce, (None, None))
            return expires is not None and expires > self.clock() and owner == node


class Batcher(object):
    """Reports that arrive together are decided together: one scheduler read and one plan per batch."""

    def __init__(self, config, clock, log, wake_delivery):
        self.config, self.clock, self.log, self.wake_delivery = config, clock, log, wake_delivery
        self.cond = threading.Condition()
        self.waiting = []  # [(report, slot)]
        self.last = None

    def submit(self, report):
        """A slot the decision will be put in, or None when too many reports wait already."""
        slot = {"done": threading.Event(), "answer": None}
        with self.cond:
            if len(self.waiting) >= MAX_WAITING:
                return None
            self.waiting.append((report, slot))
            self.cond.notify()
        return slot

    def run(self, stop):
        """Decide batch after batch; one batch that fails (whatever the reason) is answered 'could not
        act' and the loop goes on - the decider never dies quietly behind a healthy-looking service."""
        while not stop.is_set():
            with self.cond:
                while not self.waiting and not stop.is_set():
                    self.cond.wait(1.0)
                if stop.is_set():
                    return
            time.sleep(self.config["batch_window"])  # let the reports sent at the same moment arrive
            with self.cond:
                batch, self.waiting = self.waiting, []
            try:
                self.decide(batch)
            except Exception as exc:  # answered and said, never a dead thread
                why = "the decider failed on this batch (%s: %s); nothing was done" % (type(exc).__name__, str(exc)[:300])
                self.log(why)
                self.last = {"at": messages.iso(self.clock()), "reports": len(batch), "error": why}
                for report, slot in batch:
                    if not slot["done"].is_set():
                        slot["answer"] = {"decision": {"node": report["node"], "action": "none", "held": False,
                                                       "why": "could not act: " + why, "error": why},
                                          "text": "could not act: " + why, "out_of_service": False}
                        slot["done"].set()

    def decide(self, batch):
        reports = {}
        for report, slot in batch:  # the latest report of a node wins
            reports[report["node"]] = report
        started = time.time()
        result = decider.decide(reports, self.config, self.clock, self.log)
        by_node = dict((d["node"], d) for d in result["decisions"])
        scheduler = "slurm" if self.config["remediation"]["slurm"]["enabled"] else "kubernetes"
        counts = remediation.summary(result) if result.get("decisions") else {}
        self.last = {"at": messages.iso(self.clock()), "reports": len(reports), "seconds": round(time.time() - started, 3),
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


class DeciderHandler(service.BoundedHandler):
    """The decider's HTTP surface, one request per instance: GET /v1/health and /metrics; POST a challenge, a report,
    an evidence bundle, Alertmanager's notification. make_handler binds it to one decider (config, nonces, batcher,
    threads, log)."""

    server_version = "gpufabric-remediator"
    config = nonces = batcher = threads = None

    def do_GET(self):
        self.watchdog.cancel()
        if self.path.rstrip("/") == "/v1/health":
            return self._health()
        if self.path.rstrip("/") == "/metrics":
            return self._metrics()
        return self._send(404, {"error": "no such path"})

    def _health(self):
        dead = sorted(t.name for t in self.threads if not t.is_alive())
        return self._send(503 if dead else 200, {"ok": not dead, "dead_threads": dead,
                                                 "last_batch": self.batcher.last, "refused": dict(self.refused)})

    def _metrics(self):
        try:
            data = decider.metrics_text(self.config).encode("utf-8")
        except Exception as exc:  # an unreadable state is said, never a dead handler
            return self._send(503, {"error": "the decider's state cannot be read: %s" % str(exc)[:300]})
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return self.wfile.write(data)

    def _body_limit(self, path):
        """How large a body may be on ``path``: Alertmanager sends a whole group at once (10,000 nodes' alerts are
        about 6.3 MB), an evidence bundle up to the store's max_bytes, anything else a report's size."""
        return {alerts.ALERTMANAGER_PATH: alerts.MAX_NOTIFICATION_BYTES,
                evidence.EVIDENCE_PATH: self.config["remediation"]["evidence"]["max_bytes"]}.get(path, protocol.MAX_REPORT_BYTES)

    def do_POST(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        limit = self._body_limit(path)
        body = self.read_body(limit)
        self.watchdog.cancel()  # the request is in; waiting for the decision is bounded by answer_within
        if body is None:
            return self.refuse(413, "a body with a Content-Length of at most %d bytes is needed" % limit, "size")
        if path == evidence.EVIDENCE_PATH:
            return self._evidence(body)
        try:
            service.check_json_depth(body)
        except ValueError as exc:
            return self.refuse(400, str(exc), "nesting")
        if path == protocol.CHALLENGE_PATH:
            return self._challenge(body)
        if path == alerts.ALERTMANAGER_PATH:
            return self._alertmanager(body)
        if path != protocol.REPORT_PATH:
            return self._send(404, {"error": "no such path"})
        return self._report(body)

    def _challenge(self, body):
        """A nonce for a node whose challenge is signed with the shared secret."""
        try:
            node = protocol.verify_challenge(self.config["secret"], body, self.headers.get("X-Gpufabric-Signature"))
        except ValueError as exc:
            return self._send(401, {"error": str(exc)})
        nonce = self.nonces.issue(node)
        if nonce is None:
            return self._send(503, {"error": "too many reports in flight"})
        return self._send(200, {"nonce": nonce, "expires_in": NONCE_SECONDS})

    def _report(self, body):
        """A signed report on a nonce of its node's: decided with its batch, the decision answered."""
        config = self.config
        try:
            report, nonce = protocol.verify_report(config["secret"], body, self.headers.get("X-Gpufabric-Signature"))
        except ValueError as exc:
            return self._send(401 if "signature" in str(exc) else 400, {"error": str(exc)})
        if not self.nonces.take(nonce, report["node"]):
            return self._send(401, {"error": "the nonce is unknown, used, expired or another node's: ask %s again"
                                    % protocol.CHALLENGE_PATH})
        slot = self.batcher.submit(report)
        if slot is None:
            return self._send(503, {"error": "too many reports wait for a decision: nothing is assumed, report again"})
        if not slot["done"].wait(config["answer_within"]):
            return self._send(503, {"error": "no decision within %s s (the scheduler is slow): the report is "
                                    "decided when its turn comes; nothing is assumed" % config["answer_within"]})
        return self._send(200, slot["answer"])

    def _evidence(self, body):
        """A node's evidence bundle, kept when the decider asked that node for it (decider.receive_evidence)."""
        try:
            node, ident = protocol.verify_evidence(self.config["secret"], body, self.headers)
        except ValueError as exc:
            return self._send(401, {"error": str(exc)})
        status, answer = decider.receive_evidence(self.config, node, ident, body, time.time, self.say)
        return self._send(status, answer)

    def _alertmanager(self, body):
        """Alertmanager's notification of critical findings: reports that can drain (within the same
        limits and mode), never resume (alerts.decider_reports). Answered when decided, so Alertmanager
        retries what was not."""
        config = self.config
        token = config.get("alertmanager_token")
        given = self.headers.get("Authorization") or ""
        if not token or not hmac.compare_digest(given.encode("utf-8"), ("Bearer " + token).encode("utf-8")):
            return self._send(401, {"error": "a bearer token is needed (alertmanager_token in the decider's configuration)"})
        try:
            reports = alerts.decider_reports(alerts.check_payload(service.parse_json_body(body)))
        except ValueError as exc:  # UnicodeDecodeError is one
            return self.refuse(400, str(exc)[:300], "notification")
        slots = []
        for report in reports.values():
            slot = self.batcher.submit(report)
            if slot is None:
                return self._send(503, {"error": "too many reports wait for a decision: send again"})
            slots.append(slot)
        waited = time.time()
        for slot in slots:
            if not slot["done"].wait(max(0.1, config["answer_within"] - (time.time() - waited))):
                return self._send(503, {"error": "no decision within %s s: send again" % config["answer_within"]})
        return self._send(200, {"reports": len(slots), "decisions": [s["answer"]["text"] for s in slots]})


def make_handler(config, nonces, batcher, threads, log):
    """DeciderHandler bound to one decider; its refusals counted apart from any other server's. read_seconds: the
    whole request, not each read, must come within READ_SECONDS (read now): a dripping client is cut then."""
    return type("Handler", (DeciderHandler,), {"config": config, "nonces": nonces, "batcher": batcher, "threads": threads,
                                               "refused": {}, "say": staticmethod(log), "read_seconds": READ_SECONDS})


def serve(config, clock=time.time, log=_say, stop=None):
    """Start the decider; returns (server, stop event, threads). ``stop.set()`` and server.shutdown() end it."""
    stop = stop or threading.Event()
    wake = threading.Event()
    nonces = Nonces(clock)
    batcher = Batcher(config, clock, log, wake)
    threads = []
    server = service.Server((config["listen"], config["port"]), make_handler(config, nonces, batcher, threads, log),
                            MAX_CONNECTIONS)

    def deliver_loop():
        while not stop.is_set():
            wake.wait(config["deliver_interval"])
            wake.clear()
            if stop.is_set() or not config["webhooks"]:
                continue
            try:
                decider.deliver(config, log, clock=clock)
            except Exception as exc:  # the loop must outlive any one failure; it is said, and retried
                log("delivery: %s" % exc)

    threads += [threading.Thread(target=batcher.run, args=(stop,), name="decider"),
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
    config, failed = service.read_config(argv[1], decider_settings.check_config)
    if failed:
        return failed
    if not config["secret"]:
        sys.stderr.write("configuration %s: secret is needed (the shared report secret; the role generates one)\n" % argv[1])
        return 2
    if not os.path.isdir(config["state_dir"]):
        sys.stderr.write("state_dir %s does not exist (the remediator role creates it)\n" % config["state_dir"])
        return 2
    if len(argv) == 3:
        totals = decider.deliver(config, _say)
        return 1 if totals["failed"] or totals.get("save_error") else 0
    server, stop, threads = serve(config)
    _say("gpufabric-remediator: listening on %s:%d, %s mode, policy %s" % (
        config["listen"], server.server_address[1], config["remediation"]["mode"], config["remediation"]["policy_name"]))
    return service.run_until_signalled(server, stop)


if __name__ == "__main__":
    sys.exit(main())
