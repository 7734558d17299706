# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""iproute2 ``rdma link [show]`` read, in each form it has had (``1/1: mlx5_0/1: ...`` with ``-d`` lines,
``link mlx5_0/1 ...``, ``-j`` JSON): each port's state, physical state, netdev, LIDs and caps.

Pure functions, standard library only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import (
    ToolTextError, integer as _int, physical_state as _phys_state, port_state as _state)


_OLD_LINK_RE = re.compile(r"^([0-9]{1,5})/([0-9]{1,3}): ([^\s/]{1,64})/([0-9]{1,3}):?(?:\s|$)")
_NEW_LINK_RE = re.compile(r"^link ([^\s/]{1,64})/([0-9]{1,3}|-)(?:\s|$)")
_LINK_KEYS = ("subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev", "netdev_index")


def _empty_link(device, port, ifindex=None):
    return {"device": device, "port": port, "state": None, "physical_state": None, "netdev": None,
            "netdev_index": None, "subnet_prefix": None, "lid": None, "sm_lid": None, "lmc": None, "caps": [],
            "ifindex": ifindex}


def _link_words(link, words, in_caps=False):
    """Read 'key value' pairs and a 'caps: <A, B, ...>' list (which may go on over lines) into link;
    True while the caps list is still open."""
    position = 0
    while position < len(words):
        word = words[position]
        if in_caps or word.startswith("caps:") or word.startswith("<"):
            tail = word.split("caps:", 1)[-1] if word.startswith("caps:") else word
            in_caps = True
            for cap in tail.replace("<", " ").replace(">", " ").replace(",", " ").split():
                link["caps"].append(cap)
            if ">" in word:
                in_caps = False
            position += 1
            continue
        if word in _LINK_KEYS and position + 1 < len(words):
            raw = words[position + 1]
            if word == "state":
                link["state"] = _state(raw)
            elif word == "physical_state":
                link["physical_state"] = _phys_state(raw)
            elif word in ("lid", "sm_lid", "lmc", "netdev_index"):
                link[word] = _int(raw)
            else:
                link[word] = raw
            position += 2
            continue
        position += 1
    return in_caps


def parse_rdma_link(value):
    """iproute2 ``rdma link [show]`` output -> list of ports.

    Each: ``device``, ``port``, ``state``, ``physical_state``, ``netdev`` (None on InfiniBand), and where
    printed ``subnet_prefix``, ``lid``, ``sm_lid``, ``lmc``, ``netdev_index``, ``caps``, ``ifindex``.
    Reads the old form (``1/1: mlx5_0/1: state ACTIVE ...``, with ``-d`` continuation lines), the
    current one (``link mlx5_0/1 state ACTIVE ...``) and ``-j`` / ``-p -j`` JSON.
    """
    lines = _text.clean_lines(value, "rdma link output")
    for number, raw in enumerate(lines):
        stripped = raw.strip()
        if stripped.startswith("[") and (stripped == "[" or stripped[1:2] in ("{", "]", " ", "\t", "")):
            return _rdma_link_json("\n".join(lines[number:]))
    links = []
    link = None
    in_caps = False
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        match = _NEW_LINK_RE.match(line) or _OLD_LINK_RE.match(line)
        if match:
            groups = match.groups()
            if len(groups) == 4:
                link = _empty_link(groups[2], _int(groups[3]), ifindex=_int(groups[0]))
            else:
                link = _empty_link(groups[0], _int(groups[1]))
            links.append(link)
            in_caps = _link_words(link, line[match.end():].split())
            continue
        if link is not None and (raw[:1] in (" ", "\t") or line.startswith("caps:") or in_caps):
            in_caps = _link_words(link, line.split(), in_caps)
        else:
            link, in_caps = None, False
    return links


def _rdma_link_json(document):
    # A JSON array may be followed by the next prompt: decode the first value only.
    try:
        data, dummy = json.JSONDecoder().raw_decode(document.strip())
    except ValueError as exc:
        raise ToolTextError("rdma -j link output is not valid JSON: %s" % str(exc)[:120])
    if not isinstance(data, list):
        raise ToolTextError("rdma -j link output must be a JSON list, got %s" % type(data).__name__)
    links = []
    for number, item in enumerate(data):
        if not isinstance(item, dict):
            raise ToolTextError("rdma -j link item %d is not an object" % number)
        name = str(item.get("ifname") or item.get("dev") or "")
        port = item.get("port")
        if "/" in name:   # iproute2 of 2017 printed "ifname": "mlx5_0/1"
            name, dummy, port_text = name.partition("/")
            port = _int(port_text) if port is None else port
        link = _empty_link(name or None, port if isinstance(port, int) and not isinstance(port, bool) else _int(str(port)),
                           ifindex=item.get("ifindex") if isinstance(item.get("ifindex"), int) else None)
        link["state"] = _state(str(item["state"])) if item.get("state") is not None else None
        link["physical_state"] = _phys_state(str(item["physical_state"])) if item.get("physical_state") is not None else None
        for key in ("netdev", "subnet_prefix"):
            link[key] = str(item[key]) if item.get(key) is not None else None
        for key in ("lid", "sm_lid", "lmc", "netdev_index"):
            raw = item.get(key)
            link[key] = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
        caps = item.get("caps")
        link["caps"] = [str(c) for c in caps] if isinstance(caps, list) else []
        links.append(link)
    return links
