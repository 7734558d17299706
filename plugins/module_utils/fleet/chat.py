# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Chat and webhook delivery as data: the webhook types (Lark/Feishu, DingTalk, Slack, generic JSON), their
signatures, the request for one message, what a service's answer means, what must never be printed (redaction),
and the webhooks list's one check. Pure; sending is webhook.py's, queueing outbox.py's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import hmac
import json

try:
    from urllib.parse import quote_plus
except ImportError:  # pragma: no cover - Python 2
    from urllib import quote_plus

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.messages import SOURCE, text_message
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.settings import ConfigError

WEBHOOK_TYPES = ("lark", "feishu", "dingtalk", "slack", "generic")


def lark_sign(secret, timestamp):
    """Lark/Feishu custom bot: base64(HMAC-SHA256 keyed with "timestamp\\nsecret", empty message)."""
    key = ("%s\n%s" % (timestamp, secret)).encode("utf-8")
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode("ascii")


def dingtalk_sign(secret, timestamp_ms):
    """DingTalk custom robot: base64(HMAC-SHA256 keyed with the secret over "timestamp\\nsecret")."""
    text = ("%s\n%s" % (timestamp_ms, secret)).encode("utf-8")
    return base64.b64encode(hmac.new(secret.encode("utf-8"), text, hashlib.sha256).digest()).decode("ascii")


def generic_sign(secret, timestamp, body_bytes):
    """Generic endpoint: hex HMAC-SHA256 keyed with the secret over "timestamp." + body."""
    return hmac.new(secret.encode("utf-8"), ("%s." % timestamp).encode("ascii") + body_bytes,
                    hashlib.sha256).hexdigest()


def build_request(webhook, body, now):
    """(url, body bytes, headers) for one webhook and one event payload."""
    kind = webhook["type"]
    url = webhook["url"]
    secret = webhook.get("secret") or ""
    headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": SOURCE}
    if kind in ("lark", "feishu"):
        message = {"msg_type": "text", "content": {"text": text_message(body)}}
        if secret:
            stamp = str(int(now))
            message.update(timestamp=stamp, sign=lark_sign(secret, stamp))
    elif kind == "dingtalk":
        message = {"msgtype": "text", "text": {"content": text_message(body)}}
        if secret:
            stamp = str(int(now * 1000))
            url += "%stimestamp=%s&sign=%s" % ("&" if "?" in url else "?", stamp, quote_plus(dingtalk_sign(secret, stamp)))
    elif kind == "slack":
        message = {"text": text_message(body)}
    else:
        message = body
    data = json.dumps(message, sort_keys=True).encode("utf-8")
    if kind == "generic":
        headers["X-Gpufabric-Event"] = body["status"]
        if secret:
            stamp = str(int(now))
            headers["X-Gpufabric-Timestamp"] = stamp
            headers["X-Gpufabric-Signature"] = "sha256=" + generic_sign(secret, stamp, data)
    return url, data, headers


def response_error(kind, status, text):
    """None when the webhook accepted the message, else why not (from the service's own answer, not cut:
    ``redact`` cuts it after the secrets are out)."""
    text = (text or "").strip()
    if status < 200 or status >= 300:
        return "HTTP %d %s" % (status, text)
    if kind in ("lark", "feishu", "dingtalk"):
        try:
            answer = json.loads(text or "{}")
        except ValueError:
            return "HTTP %d with a body that is not JSON: %s" % (status, text)
        if not isinstance(answer, dict):
            return "HTTP %d with a JSON answer that is not an object: %s" % (status, text)
        code = answer.get("errcode") if kind == "dingtalk" else answer.get("code", answer.get("StatusCode", 0))
        if code not in (0, None):
            return "%s answered code %s: %s" % (kind, code, answer.get("errmsg") or answer.get("msg") or "")
    if kind == "slack" and text != "ok":
        return "slack answered %r" % text
    return None


def _url_secrets(url):
    """Every part of a webhook URL that may be a token, whatever its characters: the userinfo, each query
    value, the last path segment (Lark and Slack put the token there), and any other segment that is long
    (16 characters) or holds a digit - not the words of a path such as 'services' or 'hook'."""
    rest = url.split("://", 1)[-1]
    authority, _sep, tail = rest.partition("/")
    path, _sep, query = tail.partition("?")
    tokens = [pair.partition("=")[2] for pair in query.split("&")]
    if "@" in authority:
        tokens.append(authority.rsplit("@", 1)[0])
    segments = [segment for segment in path.split("/") if segment]
    tokens += segments[-1:]
    tokens += [segment for segment in segments if len(segment) >= 16 or (len(segment) >= 6 and any(c.isdigit() for c in segment))]
    return [url, url.split("?", 1)[0], tail], tokens


def redact(text, webhook, limit=300):
    """The text with everything secret about the webhook replaced by ***, then cut to ``limit``.

    Secrets: its signing secret and every token-like part of its URL (``_url_secrets``), also when the
    text holds only the start of one (a service that echoed it cut). Cut after replacing, so a cut
    never leaves half a token behind.
    """
    text = str(text)
    whole, tokens = _url_secrets(webhook.get("url") or "")
    tokens = sorted(set(s for s in tokens + [webhook.get("secret") or ""] if len(s) >= 4), key=len, reverse=True)
    for secret in sorted(set(s for s in whole if len(s) >= 4), key=len, reverse=True) + tokens:
        text = text.replace(secret, "***")
    for secret in tokens:  # the start of a token that someone cut (a proxy, the service), wherever it stands
        if len(secret) < 12:
            continue
        for size in range(len(secret) - 1, 7, -1):
            if secret[:size] in text:
                text = text.replace(secret[:size], "***")
                break
    return text if len(text) <= limit else text[:limit - 3] + "..."


def carried_secret(webhook):
    """What secret a request to the webhook reveals on the wire, or None: its signing secret, a token in the
    query string, or a chat service's URL path (Lark, DingTalk and Slack put the token there)."""
    if webhook.get("secret"):
        return "its signing secret"
    if "?" in webhook["url"]:
        return "the token in its URL's query string"
    if webhook["type"] != "generic":
        return "its URL path (a %s webhook's path is its token)" % webhook["type"]
    return None


def check_webhooks(webhooks):
    """The webhooks list, checked (the monitor and the decider post with the same rules)."""
    if not isinstance(webhooks, list):
        raise ConfigError("webhooks must be a list, got %s" % type(webhooks).__name__)
    names = set()
    for index, webhook in enumerate(webhooks):
        label = webhook.get("name") if isinstance(webhook, dict) else None
        where = "webhooks[%d]%s" % (index, " (%s)" % label if isinstance(label, str) and label else "")
        if not isinstance(webhook, dict) or not isinstance(label, str) or not label or text.describe_unsafe(label):
            raise ConfigError("%s needs a name" % where)
        if label in names:
            raise ConfigError("%s: the name is used twice" % where)
        names.add(label)
        if webhook.get("type") not in WEBHOOK_TYPES:
            raise ConfigError("%s: type must be one of %s, got %r" % (where, ", ".join(WEBHOOK_TYPES), webhook.get("type")))
        url = webhook.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError("%s: url must start with http:// or https://" % where)
        if text.describe_unsafe(url) or (webhook.get("secret") is not None and (
                not isinstance(webhook["secret"], str) or text.describe_unsafe(webhook["secret"]))):
            raise ConfigError("%s: the url and the secret must be one-line strings" % where)
        extra = sorted(set(webhook) - set(("name", "type", "url", "secret", "insecure_http")))
        if extra:
            raise ConfigError("%s: unknown key(s) %s" % (where, ", ".join(extra)))
        if not isinstance(webhook.get("insecure_http", False), bool):
            raise ConfigError("%s: insecure_http must be true or false" % where)
        secret = carried_secret(webhook) if url.startswith("http://") else None
        if secret and not webhook.get("insecure_http"):
            raise ConfigError("%s: the url is http://, so %s would cross the network in clear text: use https://, "
                              "or set insecure_http: true to send it anyway" % (where, secret))
    return webhooks
