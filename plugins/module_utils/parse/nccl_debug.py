# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an NCCL_DEBUG=INFO log says about the network NCCL used, and a verdict against a node's profile.

``parse_nccl_debug`` reads the log as it is found: alone, mixed with nccl-tests output, behind
mpirun / srun / Ray labels, from NCCL 2.4 (``Ring 00 : 3 -> 10 [send] via NET/IB/0/GDRDMA``) to 2.28
(``Channel 00/0 : 1[1] -> 8[0] [receive] via NET/IB/0/GDRDMA``). ``judge_nccl_debug`` compares it with
what the profile expects (RDMA, NCCL_IB_HCA, GPUDirect RDMA) and quotes the NCCL lines it read.

Pure functions, standard library only, one pass over the lines: no regular expression here has two
repetitions that can match the same characters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

# At most this many WARN lines and connections of one kind are kept with their text (a log of
# thousands of ranks stays a report, not a copy of the log).
MAX_WARNINGS = 50
MAX_EVIDENCE = 3

_VERSION_RE = re.compile(r"NCCL version ([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,4})(?:\+cuda([0-9]{1,3}(?:\.[0-9]{1,3})?))?")
# 'Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA', 'Channel 00 : 0[1a000] -> 1[1a000] ...',
# 'Ring 00 : 3 -> 10 [send] via ...' (2.4), 'Channel 01/1 : 0[0] -> 1[1] [send] via NET/Socket/0/Shared'.
_CONNECTION_RE = re.compile(
    r"^(?:Channel|Ring) ([0-9]{1,4})(?:/([0-9]{1,4}))? : ([0-9]{1,7})(?:\[[0-9a-fA-Fx]{1,16}\])? -> "
    r"([0-9]{1,7})(?:\[[0-9a-fA-Fx]{1,16}\])? (?:\[(send|receive)\] )?via ")
# 'Channel 00/24 : 0 1' (the ring order of one channel of 24)
_RING_RE = re.compile(r"^Channel ([0-9]{1,4})/([0-9]{1,4}) :")
# '64 coll channels, 64 collnet channels, 0 nvls channels, 64 p2p channels, 64 p2p channels per peer'
_CHANNELS_RE = re.compile(r"^([0-9]{1,5}) coll channels, (?:([0-9]{1,5}) collnet channels, )?(?:([0-9]{1,5}) nvls channels, )?"
                          r"([0-9]{1,5}) p2p channels, ([0-9]{1,5}) p2p channels per peer")
_NNODES_RE = re.compile(r"\bnNodes ([0-9]{1,6})")
_NRANKS_RE = re.compile(r"\bn[Rr]anks ([0-9]{1,7})")
_ENV_RE = re.compile(r"^(?:[A-Za-z/ ]{1,20}: )?(NCCL_[A-Z0-9_]{1,60}) set (?:by environment )?to (.*)$")
_GDR_HCA_RE = re.compile(r"^NET/([^:]{1,60}?) ?: GPU Direct RDMA (?:\((DMABUF)\) )?(Enabled|Disabled|enabled|disabled) for ")
_GDR_TARGET_RE = re.compile(r"(?:GPU ([0-9a-fA-Fx\[\]]{1,24}) / )?HCA ([0-9]{1,3})(?: '([^']{1,64})')?(?: \(([^)]{0,80})\))?")
_USING_RE = re.compile(r"^NET/([A-Za-z][A-Za-z0-9_ ]{0,40}?) ?: Using (.*)$")
_DEVICE_RE = re.compile(r"\[([0-9]{1,3})\]([^\s\[\]:<]{1,64}):([0-9]{1,3})((?:/[A-Za-z]{1,8}){0,3})")
_MERGED_RE = re.compile(r"\[([0-9]{1,3})\]=\{([^}]{0,2000})\}")
_MEMBER_RE = re.compile(r"\[([0-9]{1,3})\] ?([^\s\[\]:,]{1,64}):([0-9]{1,3})((?:/[A-Za-z]{1,8}){0,3})")
_SOCKET_DEV_RE = re.compile(r"\[([0-9]{1,3})\]([^\s\[\]:]{1,64}):([^\s<]{0,64})")
_TUNING_RE = re.compile(r"^([A-Za-z]{2,24}): ([0-9]{1,20}) Bytes -> Algo ([A-Za-z_]{1,24}) proto ([A-Za-z0-9_]{1,24})")
_NET_INDEX_RE = re.compile(r"^([0-9]{1,3})(?:\(([0-9]{1,3})\))?$")
_DMABUF_RE = re.compile(r"^DMA-BUF is available on GPU device ([0-9]{1,3})")


class NcclDebugError(ValueError):
    """The expectations given to judge_nccl_debug are not what it reads; the message says which."""


def _split_line(line):
    """(host, pid, device, kind, message) of an NCCL line; kind is 'INFO' or 'WARN'; None for other lines."""
    for marker, kind in (("NCCL INFO ", "INFO"), ("NCCL WARN ", "WARN")):
        at = line.find(marker)
        if at >= 0:
            break
    else:
        return None
    prefix = line[:at].rstrip()
    message = line[at + len(marker):].strip()
    host = pid = device = None
    # 'host:pid:tid [dev] ' ends the prefix; WARN lines put 'file.cc:123' between them.
    tokens = prefix.rsplit(None, 3)
    for index, token in enumerate(tokens):
        if token.startswith("[") and token.endswith("]") and token[1:-1].isdigit() and index > 0:
            parts = tokens[index - 1].split(":")
            if len(parts) >= 3 and parts[-1].isdigit() and parts[-2].isdigit():
                # a timestamp or launcher label may stand before the host: take the last word
                host = ":".join(parts[:-2]).rsplit(None, 1)[-1] if ":".join(parts[:-2]).strip() else None
                pid, device = parts[-2], int(token[1:-1])
    return host, pid, device, kind, message


def _net_transport(transport):
    """'NET/IB/0/GDRDMA' -> ('IB', 0, 0, True, ['GDRDMA']); 'NET/IB/2(3)/GDRDMA' -> ('IB', 2, 3, True, ...);
    'NET/NCCL RDMA Plugin v10/0' -> ('NCCL RDMA Plugin v10', 0, None, False, [])."""
    parts = transport[4:].split("/")
    for position in range(1, len(parts)):
        match = _NET_INDEX_RE.match(parts[position])
        if match:
            name = "/".join(parts[:position])
            flags = parts[position + 1:]
            proxy = int(match.group(2)) if match.group(2) else None
            return name, int(match.group(1)), proxy, "GDRDMA" in flags, flags
    return transport[4:], None, None, False, []


def _transport_kind(transport):
    """The family a connection's transport belongs to: NET, P2P, SHM, NVLS, CollNet, ..."""
    if transport.startswith("NET/"):
        return "NET"
    if transport.startswith("direct shared memory"):
        return "SHM"
    head = transport.split("/", 1)[0].split(" ", 1)[0]
    return head or None


def net_family(name):
    """A net plugin or transport name -> 'IB', 'Socket' or the name itself ('IBext_v8' is IB, 'FastSocket' a socket)."""
    if not name:
        return None
    lowered = name.lower()
    # 'IBext', 'IBext_v8' (SHARP plugin) and 'NCCL RDMA Plugin v10' drive the same verbs devices as NET/IB
    if lowered.startswith("ib") or "rdma" in lowered:
        return "IB"
    if lowered in ("socket", "fastsocket"):
        return "Socket"
    return name


def _parse_devices(rest, plugin):
    """The device list after 'NET/IB : Using ' or 'NET/Socket : Using '."""
    devices = []
    rest = rest.split("; OOB", 1)[0]
    if plugin == "Socket" or "<" in rest:
        for match in _SOCKET_DEV_RE.finditer(rest):
            devices.append({"index": int(match.group(1)), "device": match.group(2), "port": None,
                            "name": match.group(2), "address": match.group(3) or None, "link_type": None,
                            "sharp": False, "members": []})
        return devices
    merged_spans = []
    for match in _MERGED_RE.finditer(rest):
        merged_spans.append(match.span())
        members = []
        for member in _MEMBER_RE.finditer(match.group(2)):
            flags = [f for f in member.group(4).split("/") if f]
            members.append({"device": member.group(2), "port": int(member.group(3)),
                            "name": "%s:%s" % (member.group(2), member.group(3)),
                            "link_type": flags[0] if flags else None})
        first = members[0] if members else {"device": None, "port": None, "link_type": None}
        devices.append({"index": int(match.group(1)), "device": first["device"], "port": first["port"],
                        "name": "+".join(m["name"] for m in members) or None, "address": None,
                        "link_type": first["link_type"], "sharp": False, "members": members})
    for match in _DEVICE_RE.finditer(rest):
        if any(start <= match.start() < end for start, end in merged_spans):
            continue
        flags = [f for f in match.group(4).split("/") if f]
        devices.append({"index": int(match.group(1)), "device": match.group(2), "port": int(match.group(3)),
                        "name": "%s:%s" % (match.group(2), match.group(3)), "address": None,
                        "link_type": flags[0] if flags else None, "sharp": "SHARP" in flags, "members": []})
    devices.sort(key=lambda d: d["index"])
    return devices


def empty_result():
    return {
        "nccl_version": None, "cuda_version": None, "net": None, "net_devices": [], "gdr": None,
        "network": None, "net_plugin": None, "external_net_plugin": None, "net_plugins_failed": [],
        "ib_device_found": None, "ib_devices": [], "socket_devices": [], "gdr_hcas": [], "dmabuf_gpus": [],
        "connections": [], "transport_counts": {}, "net_device_indexes": [], "channels": None,
        "ring_channels": None, "algorithms": [], "protocols": [], "tuning": [], "ib_hca": None, "env": {},
        "nodes": None, "ranks": None, "hosts": [], "warnings": [], "nvls": None, "collnet": None,
        "evidence": {}, "nccl_lines": 0,
    }


def _remember(evidence, key, line):
    lines = evidence.setdefault(key, [])
    if len(lines) < MAX_EVIDENCE and line not in lines:
        lines.append(line)


def parse_nccl_debug(value):
    """An NCCL_DEBUG=INFO log (str or bytes) -> what NCCL used; see the module docstring.

    ``net`` is the family of the net transport NCCL connected ranks with ('IB', 'Socket', or another
    plugin's name), None when no inter-node connection is in the log; ``net_devices`` the
    'device:port' (or socket interface) behind the NET connections; ``gdr`` True when a NET
    connection went GPUDirect RDMA (``/GDRDMA``), False when none did or NCCL said GDR is disabled
    for the HCAs, None when the log does not show it.
    """
    result = empty_result()
    evidence = result["evidence"]
    hosts = []
    device_lists = {}          # (plugin family, host) -> devices, the last list each host printed
    connections = result["connections"]
    counts = result["transport_counts"]
    seen_connections = set()
    algorithms, protocols = [], []
    for raw in _text.launcher_lines(value, "NCCL_DEBUG output"):
        line = raw.strip()
        if not line:
            continue
        if result["nccl_version"] is None and "NCCL version " in line:
            match = _VERSION_RE.search(line)
            if match:
                result["nccl_version"], result["cuda_version"] = match.group(1), match.group(2)
                _remember(evidence, "nccl_version", line)
        parts = _split_line(line)
        if parts is None:
            continue
        host, dummy_pid, dummy_device, kind, message = parts
        result["nccl_lines"] += 1
        if host and host not in hosts:
            hosts.append(host)
        if kind == "WARN":
            if len(result["warnings"]) < MAX_WARNINGS:
                result["warnings"].append(message)
            continue
        _info(result, host, message, line, device_lists, connections, counts, seen_connections,
              algorithms, protocols)
    result["hosts"] = hosts
    if result["nodes"] is None and len(hosts) > 1:
        result["nodes"] = len(hosts)   # logs older than 2.12 print no nNodes; their hosts tell
    result["algorithms"], result["protocols"] = algorithms, protocols
    _finish(result, device_lists)
    return result


def _info(result, host, message, line, device_lists, connections, counts, seen, algorithms, protocols):
    evidence = result["evidence"]
    match = _CONNECTION_RE.match(message)
    if match:
        transport = message[match.end():].split(" comm ", 1)[0].strip()
        if not transport:
            return
        family = _transport_kind(transport)
        connection = {"host": host, "channel": int(match.group(1)), "from_rank": int(match.group(3)),
                      "to_rank": int(match.group(4)), "direction": match.group(5), "transport": transport,
                      "kind": family, "net": None, "net_index": None, "gdr": None, "line": line}
        if family == "NET":
            name, index, dummy_proxy, gdr, dummy_flags = _net_transport(transport)
            connection.update(net=net_family(name), net_plugin=name, net_index=index, gdr=gdr)
            key = "NET/%s" % name
            _remember(result["evidence"], "net_connections", line)
        elif transport.startswith("direct shared memory"):
            key = "SHM/direct"
        else:
            key = "/".join(transport.split(" ", 1)[0].split("/")[:2])
        counts[key] = counts.get(key, 0) + 1
        signature = (host, connection["channel"], connection["from_rank"], connection["to_rank"],
                     connection["direction"], transport)
        if signature not in seen:
            seen.add(signature)
            connections.append(connection)
        if family == "NVLS":
            result["nvls"] = True
        if family == "CollNet":
            result["collnet"] = True
        return
    match = _RING_RE.match(message)
    if match:
        total = int(match.group(2))
        if total and (result["ring_channels"] is None or total > result["ring_channels"]):
            result["ring_channels"] = total
        return
    match = _CHANNELS_RE.match(message)
    if match:
        result["channels"] = {
            "coll": int(match.group(1)),
            "collnet": int(match.group(2)) if match.group(2) is not None else None,
            "nvls": int(match.group(3)) if match.group(3) is not None else None,
            "p2p": int(match.group(4)), "p2p_per_peer": int(match.group(5))}
        if match.group(3) is not None and result["nvls"] is None:
            result["nvls"] = int(match.group(3)) > 0
        return
    if message.startswith("Using network "):
        name = message[len("Using network "):].strip()
        result["network"] = name
        _remember(evidence, "network", line)
        return
    if message.startswith(("Initialized NET plugin ", "Assigned NET plugin ")):
        name = message.split(" plugin ", 1)[1].replace(" to comm", "").strip()
        result["net_plugin"] = name
        _remember(evidence, "net_plugin", line)
        return
    if message.startswith("Failed to initialize NET plugin "):
        name = message[len("Failed to initialize NET plugin "):].strip()
        if name not in result["net_plugins_failed"]:
            result["net_plugins_failed"].append(name)
        _remember(evidence, "net_fallback", line)
        return
    if message.startswith("NET/Plugin: Loaded net plugin ") or message.startswith("NET/Plugin : Loaded net plugin "):
        result["external_net_plugin"] = message.split("Loaded net plugin ", 1)[1].strip()
        return
    if message.startswith("P2P plugin "):
        result["external_net_plugin"] = message[len("P2P plugin "):].strip()
        return
    if message.startswith("NET/IB : No device found"):
        result["ib_device_found"] = False
        _remember(evidence, "net_fallback", line)
        return
    if "GPU Direct RDMA" in message:
        _gdr_line(result, host, message, line)
        return
    match = _USING_RE.match(message)
    if match:
        plugin = net_family(match.group(1).strip()) or match.group(1).strip()
        devices = _parse_devices(match.group(2), plugin)
        for device in devices:
            device["host"] = host
        device_lists[(plugin, host)] = devices
        if plugin == "IB":
            if devices:
                result["ib_device_found"] = True
            _remember(evidence, "ib_devices", line)
        elif plugin == "Socket":
            _remember(evidence, "socket_devices", line)
        return
    match = _DMABUF_RE.match(message)
    if match:
        gpu = int(match.group(1))
        if gpu not in result["dmabuf_gpus"]:
            result["dmabuf_gpus"].append(gpu)
        return
    match = _ENV_RE.match(message)
    if match:
        name, setting = match.group(1), match.group(2).strip()
        if setting.endswith(".") and len(setting) > 1:
            setting = setting[:-1]   # 'NCCL_NVLS_ENABLE set by environment to 0.'
        result["env"][name] = setting
        if name == "NCCL_IB_HCA":
            result["ib_hca"] = setting
            _remember(evidence, "ib_hca", line)
        return
    match = _TUNING_RE.match(message)
    if match:
        if match.group(3) not in algorithms:
            algorithms.append(match.group(3))
        if match.group(4) not in protocols:
            protocols.append(match.group(4))
        if len(result["tuning"]) < 200:
            result["tuning"].append({"collective": match.group(1), "bytes": int(match.group(2)),
                                     "algorithm": match.group(3), "protocol": match.group(4)})
        return
    if "NVLS multicast support is available" in message or message.startswith("NVLS comm"):
        result["nvls"] = True
    if message.startswith("CollNet ") and "enabled" in message.lower():
        result["collnet"] = True
    match = _NNODES_RE.search(message)
    if match:
        nodes = int(match.group(1))
        if result["nodes"] is None or nodes > result["nodes"]:
            result["nodes"] = nodes
            evidence["nodes"] = [line]
    match = _NRANKS_RE.search(message)
    if match:
        ranks = int(match.group(1))
        if result["ranks"] is None or ranks > result["ranks"]:
            result["ranks"] = ranks


def _gdr_line(result, host, message, line):
    """'NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)', 'NET/IB : GPU Direct RDMA Enabled
    for GPU 1a000 / HCA 0 (distance 2 <= 2), read 1', 'NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'x''."""
    match = _GDR_HCA_RE.match(message)
    if not match:
        return
    target = _GDR_TARGET_RE.search(message, match.end())
    entry = {"host": host, "plugin": match.group(1).strip(), "enabled": match.group(3).lower() == "enabled",
             "dmabuf": bool(match.group(2)), "hca_index": None, "hca": None, "gpu": None, "reason": None,
             "line": line}
    if target:
        entry.update(gpu=target.group(1), hca_index=int(target.group(2)), hca=target.group(3),
                     reason=target.group(4))
    result["gdr_hcas"].append(entry)
    _remember(result["evidence"], "gdr_hcas", line)


def _finish(result, device_lists):
    """Decide net, net_devices and gdr from what the lines said."""
    ib_devices, socket_devices = [], []
    for (plugin, dummy_host), devices in device_lists.items():
        target = ib_devices if plugin == "IB" else socket_devices if plugin == "Socket" else None
        if target is None:
            continue
        for device in devices:
            if not any(d["index"] == device["index"] and d["name"] == device["name"] for d in target):
                target.append(device)
    result["ib_devices"] = sorted(ib_devices, key=lambda d: (d["index"], d["name"] or ""))
    result["socket_devices"] = sorted(socket_devices, key=lambda d: (d["index"], d["name"] or ""))
    # HCAs named only by index in old 'Disabled for HCA 1' lines get their name from the device list.
    for entry in result["gdr_hcas"]:
        if entry["hca"] is None and entry["hca_index"] is not None and entry["plugin"] in ("IB",):
            named = _device_at(device_lists, "IB", entry["host"], entry["hca_index"])
            if named:
                entry["hca"] = named["device"]
    net_connections = [c for c in result["connections"] if c["kind"] == "NET"]
    families = []
    for connection in net_connections:
        if connection["net"] not in families:
            families.append(connection["net"])
    # A log that used IB and sockets (a mixed fleet) names IB: the sockets are judged from the connections.
    if families:
        result["net"] = "IB" if "IB" in families else families[0]
    used, indexes = [], []
    for connection in sorted(net_connections, key=lambda c: (c["net_index"] is None, c["net_index"] or 0)):
        if connection["net_index"] is None:
            continue
        if connection["net_index"] not in indexes:
            indexes.append(connection["net_index"])
        named = _device_at(device_lists, connection["net"], connection["host"], connection["net_index"])
        connection["device"] = None
        if named:
            names = [m["name"] for m in named["members"]] or [named["name"]]
            connection["device"] = "+".join(names)
            for name in names:
                if name not in used:
                    used.append(name)
    result["net_devices"] = used
    result["net_device_indexes"] = sorted(indexes)
    if net_connections:
        result["gdr"] = any(c["gdr"] for c in net_connections)
    else:
        states = [e["enabled"] for e in result["gdr_hcas"] if net_family(e["plugin"]) == "IB"]
        result["gdr"] = (True if all(states) else False) if states else None


def _device_at(device_lists, family, host, index):
    """The device at ``index`` of the list this host printed (any host's list when this one printed none)."""
    devices = device_lists.get((family, host))
    if devices is None:
        lists = [d for (f, dummy_host), d in device_lists.items() if f == family]
        devices = lists[0] if lists else []
    for device in devices:
        if device["index"] == index:
            return device
    return None


# ----------------------------------------------------------------------------- NCCL_IB_HCA


def parse_ib_hca(value):
    """An NCCL_IB_HCA value -> {'exclude', 'exact', 'entries': [(name, port or None)]}, as NCCL reads it.

    A leading '^' makes the list an exclude list, then a '=' makes names exact (NCCL's parseStringList
    and matchIfList); without '=' each name is a prefix, so 'mlx5_1' also names mlx5_10 ... mlx5_19.
    ``name:port`` limits an entry to one port. None or '' (unset or empty) selects every device.
    """
    if value is None:
        return {"exclude": False, "exact": False, "entries": []}
    if not isinstance(value, str):
        raise NcclDebugError("NCCL_IB_HCA must be a string, got %s" % type(value).__name__)
    spec = value.strip()
    exclude = spec.startswith("^")
    if exclude:
        spec = spec[1:]
    exact = spec.startswith("=")
    if exact:
        spec = spec[1:]
    entries = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, port = item.partition(":")
        entries.append((name, int(port) if sep and port.isdigit() else None))
    return {"exclude": exclude, "exact": exact, "entries": entries}


def ib_hca_allows(ib_hca, device, port=None):
    """True when NCCL, given NCCL_IB_HCA=ib_hca, would use port ``port`` of ``device``."""
    spec = parse_ib_hca(ib_hca) if not isinstance(ib_hca, dict) else ib_hca
    if not spec["entries"]:
        matched = True   # an empty list matches every device (matchIfList with listSize 0)
    else:
        matched = False
        for name, entry_port in spec["entries"]:
            same = device == name if spec["exact"] else device.startswith(name)
            if same and (entry_port is None or port is None or entry_port == port):
                matched = True
                break
    return matched != spec["exclude"]


def _split_device(name):
    device, sep, port = (name or "").partition(":")
    return device, (int(port) if sep and port.isdigit() else None)


# ----------------------------------------------------------------------------- the verdict

_EXPECTED_KEYS = ("rdma", "ib_hca", "gdr")


def _check_expected(expected):
    if expected is None:
        return {}
    if not isinstance(expected, dict):
        raise NcclDebugError("expected must be a mapping with rdma, ib_hca and gdr, got %s" % type(expected).__name__)
    unknown = sorted(set(expected) - set(_EXPECTED_KEYS))
    if unknown:
        raise NcclDebugError("expected has unknown keys %s; it reads %s" % (
            ", ".join(map(str, unknown)), ", ".join(_EXPECTED_KEYS)))
    for key in ("rdma", "gdr"):
        if expected.get(key) is not None and not isinstance(expected[key], bool):
            raise NcclDebugError("expected %s must be true, false or null, got %r" % (key, expected[key]))
    if expected.get("ib_hca") is not None and not isinstance(expected["ib_hca"], str):
        raise NcclDebugError("expected ib_hca must be the NCCL_IB_HCA string or null, got %r" % (expected["ib_hca"],))
    return expected


def _reason(reasons, check, ok, message, evidence):
    reasons.append({"check": check, "ok": ok, "reason": message, "evidence": [e for e in evidence if e][:MAX_EVIDENCE]})


def _ev(parsed, *keys):
    lines = []
    for key in keys:
        for line in (parsed.get("evidence") or {}).get(key) or []:
            if line not in lines:
                lines.append(line)
    return lines


def judge_nccl_debug(parsed, expected=None):
    """A verdict on a parsed NCCL_DEBUG=INFO log against what the node's profile expects.

    ``expected``: ``rdma`` (bool: inter-node traffic must go over RDMA), ``ib_hca`` (the NCCL_IB_HCA the
    profile sets, '^'/'=' prefixes and 'dev:port' entries as NCCL reads them), ``gdr`` (bool: peermem or
    DMA-BUF is set up, so GPUDirect RDMA is expected). Returns ``{'passed', 'reasons'}``; each reason
    has ``check``, ``ok`` (True, False, or None for a note that fails nothing), a one-line ``reason``
    and the NCCL lines read as ``evidence``.
    """
    if not isinstance(parsed, dict) or "connections" not in parsed:
        raise NcclDebugError("judge_nccl_debug needs parse_nccl_debug's result, got %s" % type(parsed).__name__)
    expected = _check_expected(expected)
    reasons = []
    net = parsed.get("net")
    nodes = parsed.get("nodes")
    network = parsed.get("network")
    wants_rdma = expected.get("rdma")
    if net is None:
        where = ("%d node(s)" % nodes) if nodes else "node count not shown"
        if wants_rdma and net_family(network) == "Socket" and nodes and nodes > 1:
            _reason(reasons, "transport", False,
                    "NCCL chose the Socket network for %d nodes although the profile expects RDMA" % nodes,
                    _ev(parsed, "network", "net_fallback", "nodes"))
        else:
            _reason(reasons, "transport", None,
                    "no inter-node connection in this log (%s): the transport, the HCAs and GDR cannot be judged "
                    "from it; network %s" % (where, network or "not shown"),
                    _ev(parsed, "nodes", "network"))
    elif net == "Socket":
        if wants_rdma:
            _reason(reasons, "transport", False,
                    "inter-node traffic fell back to sockets (NET/Socket) although the profile expects RDMA",
                    _ev(parsed, "net_connections")[:1] + _ev(parsed, "network", "net_fallback"))
        elif wants_rdma is False:
            _reason(reasons, "transport", True, "inter-node traffic over sockets (NET/Socket), as the profile expects",
                    _ev(parsed, "net_connections"))
        else:
            _reason(reasons, "transport", None, "inter-node traffic over sockets (NET/Socket); nothing in the run's "
                    "environment or profile promised RDMA", _ev(parsed, "net_connections"))
    else:
        if wants_rdma is False:
            # nccl-tests issue 373: an IBext (SHARP) plugin used RDMA although NCCL_IB_DISABLE=1
            _reason(reasons, "transport", False,
                    "inter-node traffic went over NET/%s although the profile turns RDMA off "
                    "(a net plugin that ignores NCCL_IB_DISABLE?)" % net,
                    _ev(parsed, "net_connections")[:1] + _ev(parsed, "network"))
        else:
            kinds = sorted(set(d.get("link_type") for d in parsed.get("ib_devices") or [] if d.get("link_type")))
            _reason(reasons, "transport", True, "inter-node traffic over NET/%s%s" % (
                net, (" (%s)" % "/".join(kinds)) if kinds else ""), _ev(parsed, "net_connections", "ib_devices"))
    _judge_hca(parsed, expected, reasons)
    _judge_gdr(parsed, expected, reasons)
    return {"passed": not any(r["ok"] is False for r in reasons), "reasons": reasons}


def _judge_hca(parsed, expected, reasons):
    if "ib_hca" not in expected or parsed.get("net") == "Socket":
        return
    wanted = expected.get("ib_hca")
    echoed = parsed.get("ib_hca")
    if (wanted or "") != (echoed or "") and (echoed is not None or wanted):
        _reason(reasons, "ib_hca", None, "NCCL_IB_HCA in the log is %s, the profile sets %s" % (
            "'%s'" % echoed if echoed is not None else "not echoed (unset, or a plugin that does not print it)",
            "'%s'" % wanted if wanted else "none"), _ev(parsed, "ib_hca"))
    if not wanted:
        return
    used = list(parsed.get("net_devices") or [])
    source = "used"
    if not used and parsed.get("net") is None:
        used = [d["name"] for d in parsed.get("ib_devices") or [] if d.get("name")]
        source = "set up"
    outside = []
    for name in used:
        for member in name.split("+"):
            device, port = _split_device(member)
            if device and not ib_hca_allows(wanted, device, port):
                outside.append(member)
    if outside:
        lines = []
        for member in outside:   # one connection line per HCA outside the list
            for connection in parsed.get("connections") or []:
                if connection.get("device") and member in connection["device"].split("+"):
                    lines.append(connection["line"])
                    break
        _reason(reasons, "ib_hca", False, "NCCL %s %s, outside NCCL_IB_HCA=%s" % (
            source, ", ".join(outside), wanted), lines[:MAX_EVIDENCE] + _ev(parsed, "ib_devices", "ib_hca"))
    elif used:
        _reason(reasons, "ib_hca", True, "every HCA NCCL %s (%s) is within NCCL_IB_HCA=%s" % (
            source, ", ".join(used), wanted), _ev(parsed, "ib_devices", "ib_hca"))


def _judge_gdr(parsed, expected, reasons):
    wanted = expected.get("gdr")
    if wanted is None or parsed.get("net") == "Socket":
        return
    gdr = parsed.get("gdr")
    disabled = [e["line"] for e in parsed.get("gdr_hcas") or [] if not e["enabled"]]
    if gdr is None:
        _reason(reasons, "gdr", None, "the log does not show whether GPUDirect RDMA was used", [])
    elif gdr is False and wanted:
        plain = [c["line"] for c in parsed.get("connections") or [] if c["kind"] == "NET" and not c["gdr"]]
        reasons_shown = sorted(set(e["reason"] for e in parsed.get("gdr_hcas") or [] if e.get("reason") and not e["enabled"]))
        _reason(reasons, "gdr", False, "NCCL ran without GPUDirect RDMA%s although peermem/DMA-BUF is expected" % (
            " (%s)" % ", ".join(reasons_shown) if reasons_shown else ""), disabled[:2] + plain[:1])
    elif gdr:
        _reason(reasons, "gdr", True, "NET connections use GPUDirect RDMA (GDRDMA)", _ev(parsed, "net_connections"))
    else:
        _reason(reasons, "gdr", True, "no GPUDirect RDMA, as the profile expects", disabled[:2])


# ---------------------------------------------------------------------------------------------
# What a run's environment promises, and the verdict kept in a validation report
# ---------------------------------------------------------------------------------------------

_TRUE_WORDS = ("1", "true", "yes", "on")
RDMA_PROFILES = ("infiniband", "roce", "erdma")
# NCCL_NET_GDR_LEVEL values that keep GPUDirect RDMA off (LOC: only when GPU and NIC are the same device).
_GDR_OFF_LEVELS = ("LOC", "0")


def expected_from_env(env=None, profile=None, gdr_ready=None):
    """The ``expected`` of judge_nccl_debug from a run's NCCL environment and the node's profile.

    ``rdma``: False when the environment turns RDMA off (NCCL_IB_DISABLE=1, NCCL_NET=Socket); True when it names
    HCAs (NCCL_IB_HCA) or NCCL_NET=IB; else what the profile says (socket: False; infiniband, roce, erdma: True);
    else None (nothing promises either). ``ib_hca``: NCCL_IB_HCA when RDMA is not off.
    ``gdr``: False when NCCL_NET_GDR_LEVEL keeps it off (LOC, 0); True when ``gdr_ready`` (nvidia_peermem
    loaded on every node of the run); else None (DMA-BUF may still give it: not judged).
    """
    if env is None:
        env = {}
    if not isinstance(env, dict):
        raise NcclDebugError("env must map NCCL variable names to values, got %s" % type(env).__name__)
    if profile is not None and not isinstance(profile, str):
        raise NcclDebugError("profile must be the NCCL profile's name or null, got %r" % (profile,))
    if gdr_ready is not None and not isinstance(gdr_ready, bool):
        raise NcclDebugError("gdr_ready must be true, false or null, got %r" % (gdr_ready,))
    values = dict((str(k), "" if v is None else str(v).strip()) for k, v in env.items())
    net = values.get("NCCL_NET", "").lower()
    if values.get("NCCL_IB_DISABLE", "").lower() in _TRUE_WORDS or net == "socket":
        return {"rdma": False, "ib_hca": None, "gdr": None}
    if values.get("NCCL_IB_HCA") or net == "ib":
        rdma = True     # what the run was started with says more than the node's profile
    elif profile == "socket":
        return {"rdma": False, "ib_hca": None, "gdr": None}
    else:
        rdma = True if profile in RDMA_PROFILES else None
    gdr = None
    if values.get("NCCL_NET_GDR_LEVEL", "").upper() in _GDR_OFF_LEVELS:
        gdr = False
    elif gdr_ready:
        gdr = True
    return {"rdma": rdma, "ib_hca": values.get("NCCL_IB_HCA") or None, "gdr": gdr}


def describe_expected(expected):
    """'RDMA, NCCL_IB_HCA=..., GDR' in words, for a report's line."""
    parts = [{True: "RDMA", False: "sockets (RDMA off)", None: "transport not promised"}[expected.get("rdma")]]
    if expected.get("ib_hca"):
        parts.append("NCCL_IB_HCA=%s" % expected["ib_hca"])
    if expected.get("gdr") is not None:
        parts.append("GPUDirect RDMA %s" % ("on" if expected["gdr"] else "off"))
    return ", ".join(parts)


def report_entry(parsed, expected):
    """What a validation report keeps of one run's NCCL log: what NCCL used and the verdict, without the log."""
    verdict = judge_nccl_debug(parsed, expected)
    return {
        "nccl_version": parsed.get("nccl_version"), "net": parsed.get("net"), "network": parsed.get("network"),
        "net_plugin": parsed.get("net_plugin"), "net_devices": list(parsed.get("net_devices") or []),
        "link_types": sorted(set(d.get("link_type") for d in parsed.get("ib_devices") or [] if d.get("link_type"))),
        "gdr": parsed.get("gdr"), "transports": dict(parsed.get("transport_counts") or {}),
        "channels": parsed.get("channels"), "algorithms": list(parsed.get("algorithms") or []),
        "protocols": list(parsed.get("protocols") or []), "nodes": parsed.get("nodes"), "ranks": parsed.get("ranks"),
        "ib_hca": parsed.get("ib_hca"), "warnings": list(parsed.get("warnings") or [])[:5],
        "expected": dict(expected), "expected_text": describe_expected(expected),
        "passed": verdict["passed"], "reasons": verdict["reasons"],
    }


def used_text(entry):
    """One line: 'NCCL 2.18.3, NET/IB (RoCE) over mlx5_0:1, mlx5_3:1, GPUDirect RDMA on, 16 coll channels'."""
    parts = ["NCCL %s" % (entry.get("nccl_version") or "version not shown")]
    if entry.get("net"):
        parts.append("NET/%s%s over %s" % (entry["net"], (" (%s)" % "/".join(entry["link_types"])) if entry.get("link_types") else "",
                                           ", ".join(entry.get("net_devices") or []) or "devices not shown"))
    else:
        parts.append("no inter-node connection shown (network %s)" % (entry.get("network") or "not shown"))
    if entry.get("net") != "Socket":     # over sockets GPUDirect RDMA is not the question
        parts.append({True: "GPUDirect RDMA on", False: "GPUDirect RDMA off", None: "GPUDirect RDMA not shown"}[entry.get("gdr")])
    if entry.get("channels"):
        parts.append("%d coll channels" % entry["channels"]["coll"])
    return ", ".join(parts)
