"""A real HTTP receiver for the health monitor's webhooks (tests only; standard library).

It answers like the services it stands for and checks their signatures the way they do:
  /lark/..., /feishu/...  {"code": 0, ...}; with a secret, body "timestamp" + "sign" must match
                          (else code 19021, as Lark answers)
  /dingtalk/...           {"errcode": 0, ...}; with a secret, query "timestamp" (ms) + "sign" must
                          match (else errcode 310000, as DingTalk answers)
  /slack/...              "ok"
  /generic/...            {"ok": true}; with a secret, X-Gpufabric-Signature must match
  /flaky/...              {"ok": true} unsigned, but HTTP 500 for the first FAIL_FIRST requests
and it misbehaves the ways real receivers and middle boxes do, to test the sender's limits:
  /status/CODE/...        HTTP CODE (200-599) with a small JSON body; 429 adds "Retry-After: 1"
  /redirect/CODE/...      301, 302, 303, 307 or 308 to http://127.0.0.1:PORT/generic/after-redirect,
                          or to the absolute URL in the query's "to"
  /hang/...               reads the request, then never answers (until the client leaves or the server stops)
  /drip/...               status line and headers, then one body byte a second for ever
  /drip-headers/...       the status line, then header lines one byte a second for ever
  /huge/...               200 with a 300 MB body, streamed in 64 KiB chunks until the client leaves
Every request is appended to the log file as one JSON line: path, query, headers, body, json,
kind, verified (None without a secret), status (None: no answer), method and target (the request
line's target: an absolute URL when it came through a proxy). Methods other than POST are logged
and answered 501, as before.

usage: python3 receiver.py CONFIG.json   (port, log, secrets {lark, dingtalk, generic}, fail_first)
"""

import base64
import hashlib
import hmac
import json
import select
import socket
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

    def answer(self, path, query, headers, raw, target=None):
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
        self.log(path, query, headers, raw, status, verified=verified, body=body, target=target)
        return status, reply

    def log(self, path, query, headers, raw, status, verified=None, body=None, method="POST", target=None):
        if body is None:
            try:
                body = json.loads(raw.decode("utf-8"))
            except ValueError:
                pass
        record = {"at": time.time(), "path": path, "query": query, "headers": dict(headers),
                  "body": raw.decode("utf-8", "replace"), "json": body, "kind": path.strip("/").split("/")[0],
                  "verified": verified, "status": status, "method": method, "target": target or path}
        with self.lock:
            with open(self.config["log"], "a") as log:
                log.write(json.dumps(record, sort_keys=True) + "\n")


HUGE_BYTES = 300 * 1024 * 1024
MISBEHAVING = ("status", "redirect", "hang", "drip", "drip-headers", "huge")


def serve(config):
    receiver = Receiver(config)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            parts = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            kind = parts.path.strip("/").split("/")[0]
            if kind in MISBEHAVING:
                return self.misbehave(kind, parts, parse_qs(parts.query), raw)
            status, reply = receiver.answer(parts.path, parse_qs(parts.query), self.headers, raw, target=self.path)
            data = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if isinstance(reply, str) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_other(self):
            # logged, so that a test sees a redirect followed as a GET; answered as BaseHTTPRequestHandler did
            parts = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver.log(parts.path, parse_qs(parts.query), self.headers, raw, 501, method=self.command,
                         target=self.path)
            self.send_error(501, "Unsupported method (%r)" % self.command)

        do_GET = do_PUT = do_PATCH = do_DELETE = do_CONNECT = do_other

        def misbehave(self, kind, parts, query, raw):
            code = parts.path.strip("/").split("/")[1:2]
            code = int(code[0]) if code and code[0].isdigit() else 0
            if (kind == "status" and not 200 <= code <= 599) or (kind == "redirect" and code not in (301, 302, 303, 307, 308)):
                status, headers, reply = 404, {}, {"ok": False, "error": "unknown status code"}
            elif kind == "status":
                status, headers, reply = code, {"Retry-After": "1"} if code == 429 else {}, {"ok": code < 300, "status": code}
            elif kind == "redirect":
                to = query.get("to", ["http://127.0.0.1:%d/generic/after-redirect" % self.server.server_address[1]])[0]
                status, headers, reply = code, {"Location": to}, {"ok": False, "error": "moved"}
            else:
                status, headers, reply = (None if kind == "hang" else 200), {}, None
            receiver.log(parts.path, query, self.headers, raw, status, target=self.path)
            if kind == "hang":
                self.wait(float("inf"))
            elif kind == "drip-headers":
                self.drip(b"HTTP/1.0 200 OK\r\n", (b"X-Drip-%d: x\r\n" % n for n in range(1 << 62)))
            elif kind == "drip":
                self.drip(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n", (b"x" for n in range(1 << 62)))
            elif kind == "huge":
                self.stream_huge()
            else:
                data = json.dumps(reply).encode()
                self.send_response(status)
                for name, value in sorted(headers.items()):
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def wait(self, seconds):
            """Sleep; False as soon as the server stops or the client has closed the connection."""
            end = time.time() + seconds
            while not self.server.stopping.is_set():
                left = end - time.time()
                if left <= 0:
                    return True
                if select.select([self.connection], [], [], min(left, 0.1))[0]:
                    try:
                        # the plain socket's recv: a TLS socket refuses flags, and EOF is the same underneath
                        if not socket.socket.recv(self.connection, 1, socket.MSG_PEEK):
                            return False
                    except OSError:
                        return False
                    time.sleep(min(left, 0.1))
            return False

        def drip(self, head, pieces):
            try:
                self.wfile.write(head)
                for piece in pieces:
                    for byte in range(len(piece)):
                        if not self.wait(1):
                            return
                        self.wfile.write(piece[byte:byte + 1])
            except OSError:  # the client went away
                pass

        def stream_huge(self):
            chunk, sent = b"x" * 65536, 0
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(HUGE_BYTES))
                self.end_headers()
                while sent < HUGE_BYTES and not self.server.stopping.is_set():
                    if select.select([], [self.connection], [], 0.1)[1]:
                        self.wfile.write(chunk)
                        sent += len(chunk)
            except OSError:  # the client went away
                pass
            self.close_connection = True

        def log_message(self, *args):
            pass

    class Server(ThreadingMixIn, HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def shutdown(self):
            self.stopping.set()  # ends the requests that hang or drip, so no handler outlives the server
            HTTPServer.shutdown(self)

        def server_close(self):
            self.stopping.set()
            super(Server, self).server_close()

    server = Server((config.get("bind", "0.0.0.0"), int(config.get("port", 8080))), Handler)
    server.stopping = threading.Event()
    return server


if __name__ == "__main__":
    with open(sys.argv[1]) as handle:
        serve(json.load(handle)).serve_forever()
