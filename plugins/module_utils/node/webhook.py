# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""One webhook POST, bounded in time and size, never redirected (host access: sockets). urllib's opener
turns a 302 into a bodiless GET that looks delivered (taking the signature header to the new host), times
out per recv only, so a receiver that drips a byte a second holds the run for ever, and reads answers whole."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import os
import socket
import ssl
import threading
import time
from http import client as http_client
from urllib.parse import unquote, urlsplit
from urllib.request import proxy_bypass_environment

MAX_ANSWER_BYTES = 64 * 1024
REDIRECT = "answered HTTP %d (a redirect), which is not followed for a POST: point the webhook at the final address"
# RemoteDisconnected is a ConnectionResetError: it comes first
_SENTENCES = (((http_client.RemoteDisconnected, http_client.IncompleteRead), "the receiver closed the connection before the answer was complete"),
              (ConnectionRefusedError, "connection refused"), (ConnectionResetError, "connection reset by the receiver"))


class Answer(object):
    """What came back. error is None when the status and the body (up to max_bytes) arrived in time."""

    def __init__(self, status=None, text="", truncated=False, error=None, seconds=0.0, redirect=False):
        self.status, self.text, self.truncated, self.error = status, text, truncated, error
        self.seconds, self.redirect = seconds, redirect


class _Deadline(object):
    """Shuts the socket down at the deadline: timeouts count per recv, a shutdown wakes a blocked read at once."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds
        self.lock, self.twin, self.expired = threading.Lock(), None, False
        self.timer = threading.Timer(seconds, self.expire)

    def left(self):
        left = self.end - time.monotonic()
        if self.expired or left <= 0:
            raise socket.timeout("deadline")
        return left

    def connect(self, address, timeout=None, source_address=None):
        """http.client's socket factory: each address gets what is left of the deadline after DNS."""
        error = socket.gaierror(socket.EAI_NONAME, "no address")
        for family, kind, proto, ignored, where in socket.getaddrinfo(address[0], address[1], 0, socket.SOCK_STREAM):
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(self.left())
                sock.connect(where)
                with self.lock:
                    if self.expired:
                        raise socket.timeout("deadline")
                    self.twin = sock.dup()  # survives the TLS wrap, which detaches sock; a shutdown ends both
                return sock
            except OSError as exc:
                sock.close()
                error = exc
        raise error

    def expire(self):
        with self.lock:
            self.expired = True
            try:
                self.twin.shutdown(socket.SHUT_RDWR)
            except (AttributeError, OSError):  # not connected yet: connect() sees expired
                pass

    def stop(self):
        self.timer.cancel()
        self.timer.join()
        if self.twin is not None:
            self.twin.close()


def _proxies(environ):
    """urllib.request.getproxies_environment() over any mapping: lower case wins, HTTP_PROXY is ignored under CGI."""
    proxies = dict((name.lower()[:-6], value) for name, value in environ.items() if name.lower().endswith("_proxy"))
    if "REQUEST_METHOD" in environ:
        proxies.pop("http", None)
    for name, value in environ.items():
        if name.endswith("_proxy"):
            proxies[name.lower()[:-6]] = value  # an empty one unsets the upper case one: dropped below
    return dict((scheme, value) for scheme, value in proxies.items() if value)


def _connection(parts, deadline, environ):
    """The connection (to the URL's host, or to the proxy the environment names for it) and the request target."""
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    proxies = _proxies(os.environ if environ is None else environ)
    proxy = proxies.get(parts.scheme)
    if proxy and proxy_bypass_environment("%s:%d" % (parts.hostname, port), proxies):
        proxy = None
    target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    extra = {}
    if proxy:
        proxy = urlsplit(proxy if "://" in proxy else "http://" + proxy)
        if proxy.scheme != "http" or not proxy.hostname:
            raise OSError("the %s proxy in the environment is not an http://host:port address" % parts.scheme)
        if proxy.username:
            pair = "%s:%s" % (unquote(proxy.username), unquote(proxy.password or ""))
            extra["Proxy-Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    host, connect_port = (proxy.hostname, proxy.port or 80) if proxy else (parts.hostname, port)
    if https:
        conn = http_client.HTTPSConnection(host, connect_port, context=ssl.create_default_context())
        if proxy:
            conn.set_tunnel(parts.hostname, port, headers=extra)  # CONNECT: the proxy sees neither path nor headers
            extra = {}
    else:
        conn = http_client.HTTPConnection(host, connect_port)
        if proxy:
            target = "http://%s%s" % (parts.netloc.rpartition("@")[2], target)  # absolute form, as a proxy wants it
    conn._create_connection = deadline.connect  # the socket factory http.client calls in connect()
    return conn, target, extra


def _why(exc, connected, seconds):
    """One sentence for what went wrong: no traceback, no URL, no header value."""
    if isinstance(exc, socket.timeout):
        return ("no complete answer within %g s" if connected else "no connection within %g s") % seconds
    if isinstance(exc, (ssl.SSLError, ssl.CertificateError)):  # Python 3.6: a wrong host name is a CertificateError only
        reason = (getattr(exc, "reason", None) or "certificate verify failed").replace("_", " ").lower()
        detail = getattr(exc, "verify_message", None) or (None if isinstance(exc, ssl.SSLError) else str(exc))
        return "TLS: " + reason + (": " + detail if detail else "")
    if isinstance(exc, socket.gaierror):
        return "DNS: the host name did not resolve (%s)" % exc.strerror
    for kinds, sentence in _SENTENCES:
        if isinstance(exc, kinds):
            return sentence
    if isinstance(exc, http_client.HTTPException):
        return "the answer is not valid HTTP (%s)" % type(exc).__name__
    if isinstance(exc, OSError):  # "no route to host", "tunnel connection failed: 407 Proxy Authentication Required"
        text = (exc.strerror or str(exc) or type(exc).__name__).rstrip(".")
        return text[:1].lower() + text[1:]
    return "the request could not be sent (%s)" % type(exc).__name__  # ValueError/UnicodeError: a bad header, never echoed


def send(url, data, headers, deadline=10.0, max_bytes=MAX_ANSWER_BYTES, environ=None):
    """POST data (bytes) with headers (dict) to url; an Answer, never an exception for a network failure."""
    started = time.monotonic()
    try:
        parts = urlsplit(url)
        parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return Answer(error="the webhook URL must be http://host/... or https://host/...", seconds=time.monotonic() - started)
    answer, limit, conn, response = Answer(), _Deadline(deadline), None, None
    limit.timer.start()
    try:
        conn, target, extra = _connection(parts, limit, environ)
        headers = dict((k, v) for k, v in headers.items() if k.lower() != "content-length")
        headers.update(extra, **{"Content-Length": str(len(data))})
        conn.connect()  # DNS, TCP, the proxy's CONNECT, TLS
        sock = conn.sock  # held: http.client lets go of it once an answer says the connection will close
        sock.settimeout(limit.left())
        conn.request("POST", target, body=data, headers=headers)
        sock.settimeout(limit.left())
        response = conn.getresponse()
        limit.left()  # headers that the deadline's shutdown cut short are no answer
        answer.status, answer.redirect = response.status, 300 <= response.status < 400
        if answer.redirect:
            answer.error = REDIRECT % response.status
        else:
            body = b""
            while len(body) <= max_bytes and not response.isclosed():  # it closes itself at the end of the body
                sock.settimeout(limit.left())
                chunk = response.read(min(65536, max_bytes + 1 - len(body)))  # one byte past max_bytes tells "more"
                if not chunk:
                    limit.left()  # an end of the body made by the deadline's shutdown is no end
                    break
                body += chunk
            answer.truncated = len(body) > max_bytes
            answer.text = body[:max_bytes].decode("utf-8", "replace")
    except Exception as exc:  # every failure becomes a sentence; the caller reports it
        if limit.expired or time.monotonic() >= limit.end:
            exc = socket.timeout("deadline")
        answer.error = _why(exc, limit.twin is not None, deadline)
    finally:
        limit.stop()
        for part in (response, conn):
            if part is not None:
                part.close()
        answer.seconds = time.monotonic() - started
    return answer
