"""A real HTTP receiver for the health monitor's webhooks (tests only; standard library).

It answers like the services it stands for and checks their signatures the way they do:
  /lark/..., /feishu/...  {"code": 0, ...}; with a secret, body "timestamp" + "sign" must match
                          (else code 19021, as Lark answers)
  /dingtalk/...           {"errcode": 0, ...}; with a secret, query "timestamp" (ms) + "sign" must
                          match (else errcode 310000, as DingTalk answers)
  /slack/...              "ok"
  /generic/...            {"ok": true}; with a secret, X-Gpufabric-Signature must match
  /flaky/...              {"ok": true} unsigned, but HTTP 500 for the first FAIL_FIRST requests
Every request is appended to the log file as one JSON line: path, query, headers, body, json,
kind, verified (None without a secret), status.

usage: python3 receiver.py CONFIG.json   (port, log, secrets {lark, dingtalk, generic}, fail_first)
"""

import base64
import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs, urlsplit


def _lark_ok(secret, body):
    stamp, sign = str(body.get("timestamp", "")), body.get("sign", "")
    if not stamp.isdigit() or abs(time.time() - int(stamp)) > 3600:
        return False
    key = (stamp + "\n" + secret).encode()
    return hmac.compare_digest(base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode(), sign)


def _dingtalk_ok(secret, query):
    stamp, sign = query.get("timestamp", [""])[0], query.get("sign", [""])[0]  # parse_qs already url-decoded
    if not stamp.isdigit() or abs(time.time() * 1000 - int(stamp)) > 3600 * 1000:
        return False
    digest = hmac.new(secret.encode(), (stamp + "\n" + secret).encode(), hashlib.sha256).digest()
    return hmac.compare_digest(base64.b64encode(digest).decode(), sign)


def _generic_ok(secret, headers, raw):
    stamp = headers.get("X-Gpufabric-Timestamp", "")
    want = "sha256=" + hmac.new(secret.encode(), stamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, headers.get("X-Gpufabric-Signature", ""))


class Receiver(object):
    def __init__(self, config):
        self.config = config
        self.lock = threading.Lock()
        self.count = {}

    def answer(self, path, query, headers, raw):
        kind = path.strip("/").split("/")[0]
        secrets = self.config.get("secrets") or {}
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            body = None
        verified, status, reply = None, 200, {"ok": True}
        with self.lock:
            self.count[kind] = self.count.get(kind, 0) + 1
            seen = self.count[kind]
        if kind in ("lark", "feishu"):
            secret = secrets.get("lark")
            verified = _lark_ok(secret, body or {}) if secret else None
            reply = ({"code": 0, "msg": "success", "data": {}} if verified is not False else
                     {"code": 19021, "msg": "sign match fail or timestamp is not within one hour from current time",
                      "data": {}})
        elif kind == "dingtalk":
            secret = secrets.get("dingtalk")
            verified = _dingtalk_ok(secret, query) if secret else None
            reply = {"errcode": 0, "errmsg": "ok"} if verified is not False else {"errcode": 310000,
                                                                                  "errmsg": "sign not match"}
        elif kind == "slack":
            reply = "ok"
        elif kind in ("generic", "flaky"):
            secret = secrets.get("generic") if kind == "generic" else None
            verified = _generic_ok(secret, headers, raw) if secret else None
            if verified is False:
                status, reply = 401, {"ok": False, "error": "bad signature"}
            if kind == "flaky" and seen <= int(self.config.get("fail_first", 1)):
                status, reply = 500, {"ok": False, "error": "flaky endpoint: failing on purpose"}
        else:
            status, reply = 404, {"ok": False, "error": "unknown path"}
        record = {"at": time.time(), "path": path, "query": query, "headers": dict(headers),
                  "body": raw.decode("utf-8", "replace"), "json": body, "kind": kind, "verified": verified,
                  "status": status}
        with self.lock:
            with open(self.config["log"], "a") as log:
                log.write(json.dumps(record, sort_keys=True) + "\n")
        return status, reply


def serve(config):
    receiver = Receiver(config)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            parts = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, reply = receiver.answer(parts.path, parse_qs(parts.query), self.headers, raw)
            data = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if isinstance(reply, str) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    class Server(ThreadingMixIn, HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    return Server((config.get("bind", "0.0.0.0"), int(config.get("port", 8080))), Handler)


if __name__ == "__main__":
    with open(sys.argv[1]) as handle:
        serve(json.load(handle)).serve_forever()
