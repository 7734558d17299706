# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-alert-relay: Alertmanager's webhook receiver for chat services it cannot sign for.

    python3 relay.py --config /etc/gpufabric/alert-relay.json

Alertmanager posts each alert group's notification to http://127.0.0.1:9095/v1/alerts/<webhook name>
(or /v1/alerts for every webhook). The relay turns it into the health monitor's message (alerts.py: one
message per group, every node named), saves it in its outbox and only then answers 200 - a notification
it could not save is answered 500 and Alertmanager sends it again - and a delivery thread sends the
outbox with the monitor's formatting and signing, at most max_per_minute messages per webhook (a
DingTalk robot takes 20 a minute), what is left waiting in order. Listens on loopback by default.
"""

from __future__ import absolute_import, division, print_function

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import alerts, delivery, service  # noqa: E402

if sys.version_info < (3,):  # pragma: no cover - Python 2
    raise SystemExit("gpufabric-alert-relay needs Python 3")

PREFIX = "/v1/alerts"
# A thread per connection, at most this many at once (Alertmanager and a few clients); each request must arrive
# within READ_SECONDS in all, so a client dripping its body holds neither a thread for long nor the others.
MAX_CONNECTIONS = 64
READ_SECONDS = 15


def _say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def paths(config):
    return os.path.join(config["state_dir"], "state.json"), os.path.join(config["state_dir"], "lock")


class Pacer(object):
    """How many messages each webhook may still get in the last 60 s (its max_per_minute)."""

    def __init__(self, per_minute, clock):
        self.per_minute, self.clock, self.sent = per_minute, clock, {}

    def allowance(self, name):
        now = self.clock()
        recent = [t for t in self.sent.get(name, []) if now - t < 60]
        self.sent[name] = recent
        return self.per_minute - len(recent)

    def note(self, name, count):
        self.sent.setdefault(name, []).extend([self.clock()] * count)


def deliver_once(config, pacer, log, clock=time.time):
    """One delivery round: each webhook in turn, within its allowance. Returns the totals."""
    state_path, lock_path = paths(config)
    totals = {"sent": 0, "failed": 0}
    for hook in config["webhooks"]:
        allowed = pacer.allowance(hook["name"])
        if allowed < 1:
            continue
        result = delivery.deliver_state(state_path, lock_path, alerts.check_state, [hook], log,
                                        deadline=config["deliver_deadline"], timeout=config["timeout"],
                                        max_per_run=allowed, clock=clock)
        pacer.note(hook["name"], result["sent"] + result["failed"])
        totals["sent"] += result["sent"]
        totals["failed"] += result["failed"]
    return totals


def make_handler(config, wake, log, clock):
    names = [w["name"] for w in config["webhooks"]]
    state_path, lock_path = paths(config)

    class Handler(service.BoundedHandler):
        server_version = "gpufabric-alert-relay"
        refused = {}
        say = staticmethod(log)
        read_seconds = READ_SECONDS

        def do_GET(self):
            self.watchdog.cancel()
            if self.path.rstrip("/") != "/v1/health":
                return self._send(404, {"error": "no such path"})
            try:
                with statefile.Lock(lock_path, 10):
                    state, warning = statefile.load_json(state_path, alerts.check_state, set_aside=False)
            except statefile.StateError as exc:
                return self._send(503, {"ok": False, "error": str(exc)})
            box = (state or alerts.empty_state())["outbox"]
            return self._send(200, {"ok": True, "waiting": dict((n, len(box.get(n) or [])) for n in names),
                                    "refused": dict(self.refused)})

        def do_POST(self):
            path = self.path.split("?", 1)[0].rstrip("/")
            if path != PREFIX and not path.startswith(PREFIX + "/"):
                return self.refuse(404, "no such path", "path")
            target = path[len(PREFIX) + 1:] if path != PREFIX else None
            if target is not None and target not in names:
                return self.refuse(404, "no webhook named %r is configured" % target[:100], "path")
            body = self.read_body(alerts.MAX_NOTIFICATION_BYTES)
            self.watchdog.cancel()  # the request is in
            if body is None:
                return self.refuse(413, "a body with a Content-Length of at most %d bytes is needed"
                                   % alerts.MAX_NOTIFICATION_BYTES, "size")
            try:
                payload = alerts.check_payload(service.parse_json_body(body))
            except ValueError as exc:  # AlertError, JSON errors, nesting, UnicodeDecodeError: resending will not help
                return self.refuse(400, str(exc)[:300], "notification")
            try:
                with statefile.Lock(lock_path, 30):
                    state, warning = statefile.load_json(state_path, alerts.check_state)
                    if warning:
                        log(warning)
                    state = state or alerts.empty_state()
                    queued = alerts.accept(state, payload, [target] if target else names, config["cluster"], clock(),
                                           config["max_text_bytes"])
                    statefile.save_json(state_path, state)
            except statefile.StateError as exc:
                log("%s: the notification is refused, so Alertmanager sends it again" % exc)
                return self._send(500, {"error": str(exc)})
            log("notification %s (%d alert(s), %s): %d message(s) queued" % (
                payload["status"], len(payload["alerts"]), payload["groupKey"][:120], queued))
            wake.set()
            return self._send(200, {"queued": queued})

    return Handler


def serve(config, log=_say, clock=time.time, stop=None):
    """Start the relay; returns (server, stop event, threads)."""
    stop = stop or threading.Event()
    wake = threading.Event()
    pacer = Pacer(config["max_per_minute"], clock)
    server = service.Server((config["listen"], config["port"]), make_handler(config, wake, log, clock), MAX_CONNECTIONS)

    def deliver_loop():
        while not stop.is_set():
            wake.wait(config["deliver_interval"])
            wake.clear()
            if stop.is_set():
                return
            try:
                deliver_once(config, pacer, log, clock)
            except Exception as exc:  # the loop outlives any one failure; it is said and retried
                log("delivery: %s" % exc)

    threads = [threading.Thread(target=deliver_loop, name="delivery"),
               threading.Thread(target=server.serve_forever, name="http")]
    for thread in threads:
        thread.daemon = True
        thread.start()
    return server, stop, threads


USAGE = "usage: gpufabric-alert-relay --config FILE"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "--config":
        sys.stderr.write(USAGE + "\n")
        return 2
    config, failed = service.read_config(argv[1], alerts.check_relay_config)
    if failed:
        return failed
    if not os.path.isdir(config["state_dir"]):
        sys.stderr.write("state_dir %s does not exist (the fleet_monitoring role creates it)\n" % config["state_dir"])
        return 2
    server, stop, threads = serve(config)
    _say("gpufabric-alert-relay: listening on %s:%d for %s" % (config["listen"], server.server_address[1],
                                                               ", ".join(w["name"] for w in config["webhooks"])))
    return service.run_until_signalled(server, stop)


if __name__ == "__main__":
    sys.exit(main())
