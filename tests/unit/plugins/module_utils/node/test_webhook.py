"""webhook.send against the real receiver (tests/lab/webhook-receiver/receiver.py), over real sockets.

The receivers run in child processes, so that every thread and descriptor in this process after a
send() is one that send() left behind: each call is checked for that.
"""

import base64
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import quote
from urllib.request import Request, build_opener

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import webhook
from paths import ROOT

RECEIVER = os.path.join(ROOT, "tests", "lab", "webhook-receiver", "receiver.py")
# The receiver's own serve(), in a child process, on a free port it prints; with a certificate, over TLS.
LAUNCH = """
import importlib.util, json, ssl, sys
spec = importlib.util.spec_from_file_location("receiver", sys.argv[1])
receiver = importlib.util.module_from_spec(spec)
spec.loader.exec_module(receiver)
config = json.loads(sys.argv[2])
server = receiver.serve(config)
if config.get("cert"):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(config["cert"], config["key"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"""
BODY = b'{"text": "port erdma_0/1 is DOWN"}'
HEADERS = {"Content-Type": "application/json", "X-Gpufabric-Signature": "sha256=0123456789abcdef"}
DEADLINE = 2.0


class Lab(object):
    def __init__(self, tmp, name, **config):
        self.log = os.path.join(tmp, name + ".jsonl")
        config.update(bind="127.0.0.1", port=0, log=self.log)
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, RECEIVER, json.dumps(config)], stdout=subprocess.PIPE)
        self.port = int(self.proc.stdout.readline())
        self.base = "%s://127.0.0.1:%d" % ("https" if config.get("cert") else "http", self.port)
        self.seen = 0

    def new(self):
        """The requests logged since the last call."""
        records = []
        if os.path.exists(self.log):
            with open(self.log) as handle:
                records = [json.loads(line) for line in handle]
        fresh, self.seen = records[self.seen:], len(records)
        return fresh

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("webhook"))
    started = {"main": Lab(tmp, "main"), "other": Lab(tmp, "other")}
    yield started
    for lab in started.values():
        lab.stop()


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A receiver over TLS with a self-signed certificate for 127.0.0.1 (made by the openssl command)."""
    if not shutil.which("openssl"):
        pytest.skip("the openssl command is not installed: it makes the TLS receiver's certificate")
    tmp = str(tmp_path_factory.mktemp("webhook-tls"))
    key, cert = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    lab = Lab(tmp, "tls", cert=cert, key=key)
    lab.cert = cert
    yield lab
    lab.stop()


@pytest.fixture
def main(labs):
    labs["main"].new()
    labs["other"].new()
    return labs["main"]


def _descriptors():
    return len(os.listdir("/proc/self/fd"))


def post(url, data=BODY, headers=None, **kw):
    """send(), checked to leave no thread and no open socket behind."""
    threads, descriptors = threading.active_count(), _descriptors()
    answer = webhook.send(url, data, dict(HEADERS) if headers is None else headers, **kw)
    assert threading.active_count() == threads, threading.enumerate()
    assert _descriptors() == descriptors
    return answer


def _free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_a_2xx_is_delivered_with_the_body_and_headers(main):
    answer = post(main.base + "/generic/events?channel=ops", deadline=DEADLINE)
    assert (answer.status, answer.error, answer.redirect, answer.truncated) == (200, None, False, False)
    assert json.loads(answer.text) == {"ok": True} and answer.seconds < 1
    [record] = main.new()
    assert (record["method"], record["path"], record["query"]) == ("POST", "/generic/events", {"channel": ["ops"]})
    assert record["body"] == BODY.decode() and record["headers"]["Content-Length"] == str(len(BODY))
    assert record["headers"]["X-Gpufabric-Signature"] == HEADERS["X-Gpufabric-Signature"]
    assert record["target"] == "/generic/events?channel=ops"  # origin form: no proxy
    answer = post(main.base + "/status/201/created", headers={"content-length": "999"})  # the real length wins
    assert (answer.status, answer.error, json.loads(answer.text)) == (201, None, {"ok": True, "status": 201})
    assert main.new()[0]["headers"]["Content-Length"] == str(len(BODY))


@pytest.mark.parametrize("code", [500, 429, 404])
def test_an_error_status_stands_with_its_body(main, code):
    answer = post(main.base + "/status/%d/hook" % code, deadline=DEADLINE)
    assert (answer.status, answer.error, answer.redirect) == (code, None, False)
    assert json.loads(answer.text) == {"ok": False, "status": code}
    assert [(r["method"], r["status"]) for r in main.new()] == [("POST", code)]


@pytest.mark.parametrize("code", [301, 302, 307, 308])
def test_a_redirect_is_reported_not_followed(labs, main, code):
    other = labs["other"]
    for url in (main.base + "/redirect/%d/hook?token=tok-secret-1234" % code,
                main.base + "/redirect/%d/hook?to=%s" % (code, quote(other.base + "/generic/stolen", safe=""))):
        answer = post(url, deadline=DEADLINE)
        assert (answer.status, answer.redirect, answer.text) == (code, True, "")
        assert answer.error == ("answered HTTP %d (a redirect), which is not followed for a POST: "
                                "point the webhook at the final address" % code)
        [record] = main.new()  # one request, the POST with its body; nothing reached /generic/after-redirect
        assert (record["method"], record["kind"], record["body"]) == ("POST", "redirect", BODY.decode())
        assert other.new() == []  # no header, no signature, reached the host in Location


def test_the_redirect_check_can_fail_urllib_follows_to_the_other_host(labs, main):
    """The old way: urllib turns a 302 into a bodiless GET and carries the signature to the new host."""
    other = labs["other"]
    url = main.base + "/redirect/302/hook?to=%s" % quote(other.base + "/generic/stolen", safe="")
    try:
        build_opener().open(Request(url, data=BODY, headers=HEADERS), timeout=DEADLINE).close()
    except Exception:  # the receiver answers a GET with 501: the point is what it received
        pass
    [leaked] = other.new()
    assert (leaked["method"], leaked["path"], leaked["body"]) == ("GET", "/generic/stolen", "")
    assert leaked["headers"]["X-Gpufabric-Signature"] == HEADERS["X-Gpufabric-Signature"]


# A status stands once its headers are complete (/drip), not before (/drip-headers). Half a second cuts
# before the first dripped byte: the end of file the deadline's shutdown makes must not pass for an end.
@pytest.mark.parametrize("deadline", [0.5, DEADLINE])
@pytest.mark.parametrize("path, status", [("/hang/hook", None), ("/drip/hook", 200), ("/drip-headers/hook", None)])
def test_a_receiver_that_hangs_or_drips_is_cut_at_the_deadline(main, path, status, deadline):
    answer = post(main.base + path, deadline=deadline)
    assert deadline - 0.1 <= answer.seconds <= deadline + 1
    assert (answer.status, answer.error) == (status, "no complete answer within %g s" % deadline)
    assert [r["path"] for r in main.new()] == [path]


def test_a_huge_answer_is_read_up_to_max_bytes(main):
    answer = post(main.base + "/huge/hook", deadline=10.0)
    assert (answer.status, answer.error, answer.truncated) == (200, None, True)
    assert len(answer.text) == webhook.MAX_ANSWER_BYTES == 65536 and answer.seconds < 3
    answer = post(main.base + "/huge/hook", max_bytes=1000)
    assert (len(answer.text), answer.truncated) == (1000, True)
    answer = post(main.base + "/generic/x", max_bytes=len('{"ok": true}'))  # exactly max_bytes: not truncated
    assert (answer.text, answer.truncated) == ('{"ok": true}', False)


def test_connection_failures_are_one_sentence_without_the_url():
    port = _free_port()
    answer = post("http://127.0.0.1:%d/generic/tok-secret-1234?sign=abc" % port, deadline=DEADLINE)
    assert (answer.status, answer.error) == (None, "connection refused") and answer.seconds < 1
    answer = post("http://does-not-exist.invalid/generic/tok-secret-1234", deadline=DEADLINE)
    assert answer.error.startswith("DNS: the host name did not resolve") and "invalid" not in answer.error


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "file:///etc/passwd", "127.0.0.1:80/x", "http:///x",
                                 "http://127.0.0.1:port/x"])
def test_only_http_and_https_urls_are_tried(url):
    answer = post(url, deadline=DEADLINE)
    assert answer.error == "the webhook URL must be http://host/... or https://host/..."
    assert answer.status is None and answer.seconds < 0.1


def test_tls_is_verified_and_bounded(labs, tls, monkeypatch):
    answer = post(tls.base + "/generic/x", deadline=DEADLINE)
    assert answer.error.startswith("TLS: certificate verify failed") and answer.status is None
    answer = post(tls.base.replace("127.0.0.1", "localhost") + "/generic/x", deadline=DEADLINE)  # not the name signed
    assert answer.error.startswith("TLS: certificate verify failed") and answer.status is None
    assert tls.new() == []
    answer = post(labs["main"].base.replace("http:", "https:") + "/generic/x", deadline=DEADLINE)  # plain HTTP
    assert answer.error.startswith("TLS: ") and answer.status is None
    monkeypatch.setenv("SSL_CERT_FILE", tls.cert)  # now the receiver's certificate is trusted
    answer = post(tls.base + "/generic/x", deadline=DEADLINE)
    assert (answer.status, answer.error, answer.text) == (200, None, '{"ok": true}')
    for deadline in (0.5, DEADLINE):
        answer = post(tls.base + "/drip/x", deadline=deadline)
        assert (answer.status, answer.error) == (200, "no complete answer within %g s" % deadline)
        assert deadline - 0.1 <= answer.seconds <= deadline + 1


def test_a_peer_that_never_does_the_tls_handshake_is_cut_at_the_deadline():
    with socket.socket() as listener:  # connect() completes in the backlog; nobody ever accepts
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        answer = post("https://127.0.0.1:%d/x" % listener.getsockname()[1], deadline=DEADLINE)
    assert (answer.status, answer.error) == (None, "no complete answer within 2 s")
    assert DEADLINE - 0.1 <= answer.seconds <= DEADLINE + 1


def test_the_proxy_comes_from_the_environment(labs, main, monkeypatch):
    dead = "http://127.0.0.1:%d" % _free_port()
    url = "http://webhook.invalid:8080/generic/proxied?x=1"
    # plain http through the proxy: the absolute URL on the request line; lower case wins over upper case
    for environ in ({"http_proxy": main.base}, {"HTTP_PROXY": main.base}, {"HTTP_PROXY": dead, "http_proxy": main.base}):
        answer = post(url, environ=environ, deadline=DEADLINE)
        assert (answer.status, answer.error) == (200, None)
        [record] = main.new()
        assert (record["target"], record["headers"]["Host"]) == (url, "webhook.invalid:8080")
    # credentials in the proxy URL become Proxy-Authorization, sent to the proxy only
    proxy = main.base.replace("http://", "http://ops:p%40ss@")
    assert post(url, environ={"http_proxy": proxy}, deadline=DEADLINE).status == 200
    assert main.new()[0]["headers"]["Proxy-Authorization"] == "Basic " + base64.b64encode(b"ops:p@ss").decode()
    # no_proxy, an empty environ over os.environ, and os.environ when environ is None
    direct = main.base + "/generic/direct"
    assert post(direct, environ={"http_proxy": dead, "no_proxy": "localhost,127.0.0.1"}, deadline=DEADLINE).status == 200
    monkeypatch.setenv("http_proxy", dead)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert post(direct, environ={}, deadline=DEADLINE).status == 200
    assert [r["target"] for r in main.new()] == ["/generic/direct", "/generic/direct"]
    assert post(direct, deadline=DEADLINE).error == "connection refused"
    monkeypatch.setenv("http_proxy", main.base)
    assert post(url, deadline=DEADLINE).status == 200 and main.new()[0]["target"] == url
    # https through the proxy: CONNECT, with the credentials; the proxy never sees the path or the headers
    answer = post("https://webhook.invalid/generic/tok-secret-1234", environ={"https_proxy": proxy}, deadline=DEADLINE)
    assert answer.status is None and answer.error.startswith("tunnel connection failed: 501")
    [record] = main.new()
    assert (record["method"], record["target"]) == ("CONNECT", "webhook.invalid:443")
    assert "Proxy-Authorization" in record["headers"] and "X-Gpufabric-Signature" not in record["headers"]
    answer = post(url, environ={"http_proxy": "socks5://127.0.0.1:1080"}, deadline=DEADLINE)
    assert answer.error == "the http proxy in the environment is not an http://host:port address"


def test_the_receiver_serves_a_request_while_another_hangs_and_stops_promptly(tmp_path):
    """In this process, as tests/unit/plugins/module_utils/fleet/test_monitor.py runs it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("receiver", RECEIVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = threading.active_count()
    server = module.serve({"bind": "127.0.0.1", "port": 0, "log": str(tmp_path / "log.jsonl")})
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    port = server.server_address[1]
    hung = socket.create_connection(("127.0.0.1", port))
    hung.sendall(b"POST /hang/x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", "/status/429/x", body=b"{}")
    response = conn.getresponse()
    assert (response.status, response.getheader("Retry-After"), json.loads(response.read())) == (
        429, "1", {"ok": False, "status": 429})
    conn.close()
    started = time.monotonic()
    server.shutdown()
    server.server_close()
    thread.join(5)
    while threading.active_count() > threads and time.monotonic() - started < 2:
        time.sleep(0.05)
    assert time.monotonic() - started < 1 and threading.active_count() == threads
    assert hung.recv(100) == b""  # the hanging request ended with the server, unanswered
    hung.close()
