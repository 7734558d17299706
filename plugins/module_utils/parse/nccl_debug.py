# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""What an NCCL_DEBUG=INFO log says about the network NCCL used, and NCCL_IB_HCA as NCCL reads it.

``parse_nccl_debug`` reads the log as it is found: alone, mixed with nccl-tests output, behind
mpirun / srun / Ray / vLLM labels (common/text.py), from NCCL 2.4 (``Ring 00 : 3 -> 10 [send] via NET/IB/0/GDRDMA``) to 2.28
(``Channel 00/0 : 1[1] -> 8[0] [receive] via NET/IB/0/GDRDMA``). ``parse_ib_hca`` and ``ib_hca_allows`` read an
NCCL_IB_HCA value with NCCL's own rules. The lines about HCAs (NCCL 2.27's per-port lines, GPU Direct RDMA per HCA)
are read in parse/nccl_debug_devices.py, those about multi-node NVLink (MNNVL) and NVLink SHARP (NVLS) in
parse/nccl_debug_nvlink.py. The verdict against what a node's profile expects is judge/nccl_path.py's.

Pure functions, standard library only, one pass over the lines: no regular expression here has two
repetitions that can match the same characters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug_devices as _devices
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_debug_nvlink as _nvlink
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nccl_debug_devices import net_family

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
# Where a rank runs: 'ncclCommInitRank comm 0x.. rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 70 commId 0x.. - Init START',
# 'comm 0x.. rank 0 nranks 4 cudaDev 0 busId 60 - Destroy COMPLETE' (the line's host:pid is the process)
_RANK_PLACE_RE = re.compile(r"\brank ([0-9]{1,7}) nranks ([0-9]{1,7}) cudaDev [0-9]{1,4}(?: nvmlDev [0-9]{1,4})? "
                            r"busId ([0-9a-fA-Fx]{1,16})")
_ENV_RE = re.compile(r"^(?:[A-Za-z/ ]{1,20}: )?(NCCL_[A-Z0-9_]{1,60}) set (?:by environment )?to (.*)$")
_USING_RE = re.compile(r"^NET/([A-Za-z][A-Za-z0-9_ ]{0,40}?) ?: Using (.*)$")
_DEVICE_RE = re.compile(r"\[([0-9]{1,3})\]([^\s\[\]:<]{1,64}):([0-9]{1,3})((?:/[A-Za-z]{1,8}){0,3})")
_MERGED_RE = re.compile(r"\[([0-9]{1,3})\]=\{([^}]{0,2000})\}")
_MEMBER_RE = re.compile(r"\[([0-9]{1,3})\] ?([^\s\[\]:,]{1,64}):([0-9]{1,3})((?:/[A-Za-z]{1,8}){0,3})")
_SOCKET_DEV_RE = re.compile(r"\[([0-9]{1,3})\]([^\s\[\]:]{1,64}):([^\s<]{0,64})")
_TUNING_RE = re.compile(r"^([A-Za-z]{2,24}): ([0-9]{1,20}) Bytes -> Algo ([A-Za-z_]{1,24}) proto ([A-Za-z0-9_]{1,24})")
_NET_INDEX_RE = re.compile(r"^([0-9]{1,3})(?:\(([0-9]{1,3})\))?$")
_DMABUF_RE = re.compile(r"^DMA-BUF is available on GPU device ([0-9]{1,3})")


class NcclDebugError(ValueError):
    """An NCCL_IB_HCA value, or the expectations given to judge_nccl_debug (judge/nccl_path.py), are not what
    they read; the message says which."""


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


# A WARN NCCL wrapped over lines (its message carries a newline): the lines after it that are no NCCL line, while the
# message so far does not end a sentence; a few at most, each a short one.
MAX_CONTINUATION_LINES = 3
MAX_CONTINUATION_CHARS = 240
_LOG_PREFIX_RE = re.compile(r"[^\s:]{1,253}:[0-9]{1,9}:[0-9]{1,9}\b")   # host:pid:tid, a log line of its own


def _continues_warning(warnings, line, continuing):
    """The last warning with ``line`` joined to it when ``line`` continues it, else None."""
    if continuing < 0 or continuing >= MAX_CONTINUATION_LINES or not warnings or len(line) > MAX_CONTINUATION_CHARS:
        return None
    last = warnings[-1]
    if last.endswith((".", ")", "]", "!")) or "NCCL" in line or line.startswith(("#", "Traceback")) \
            or _LOG_PREFIX_RE.search(line):
        return None
    return last + " " + line


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
        "ib_device_found": None, "ib_devices": [], "ib_physical_devices": [], "socket_devices": [], "gdr_hcas": [], "dmabuf_gpus": [],
        "connections": [], "transport_counts": {}, "net_device_indexes": [], "channels": None,
        "ring_channels": None, "algorithms": [], "protocols": [], "tuning": [], "ib_hca": None, "env": {},
        "nodes": None, "ranks": None, "hosts": [], "warnings": [], "nvls": None, "collnet": None,
        "mnnvl": None, "mnnvl_detail": _nvlink.empty(), "evidence": {}, "nccl_lines": 0,
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
    continuing = -1            # lines a WARN has continued over so far; -1: the last line was no WARN
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
            continued = _continues_warning(result["warnings"], line, continuing)
            if continued:
                result["warnings"][-1] = continued
                continuing += 1
            else:
                continuing = -1
            continue
        host, pid, dummy_device, kind, message = parts
        result["nccl_lines"] += 1
        if host and host not in hosts:
            hosts.append(host)
        continuing = -1
        if kind == "WARN":
            if len(result["warnings"]) < MAX_WARNINGS:
                result["warnings"].append(message)
                continuing = 0
            continue
        _info(result, (host, pid), message, line, device_lists, connections, counts, seen_connections,
              algorithms, protocols)
    result["hosts"] = hosts
    if result["nodes"] is None and len(hosts) > 1:
        result["nodes"] = len(hosts)   # logs older than 2.12 print no nNodes; their hosts tell
    result["algorithms"], result["protocols"] = algorithms, protocols
    _finish(result, device_lists)
    return result


def _info(result, where, message, line, device_lists, connections, counts, seen, algorithms, protocols):
    """One INFO line: the first reading below that knows it takes it; any other is read for the communicator's size
    and its ranks' places."""
    if (_connection_line(result, where, message, line, connections, counts, seen) or _channel_line(result, message)
            or _plugin_line(result, message, line) or _device_line(result, where[0], message, line, device_lists)
            or _setting_line(result, message, line, algorithms, protocols)):
        return
    _communicator_line(result, where, message, line, device_lists)


def _connection_line(result, where, message, line, connections, counts, seen):
    """'Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA': a connection, counted by transport, kept once."""
    match = _CONNECTION_RE.match(message)
    if not match:
        return False
    transport = message[match.end():].split(" comm ", 1)[0].strip()
    if not transport:
        return True
    family = _transport_kind(transport)
    connection = {"host": where[0], "pid": where[1], "channel": int(match.group(1)), "from_rank": int(match.group(3)),
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
    signature = (where[0], connection["channel"], connection["from_rank"], connection["to_rank"],
                 connection["direction"], transport)
    if signature not in seen:
        seen.add(signature)
        connections.append(connection)
    if family == "NVLS":
        result["nvls"] = True
    if family == "CollNet":
        result["collnet"] = True
    return True


def _channel_line(result, message):
    """The ring's channel count ('Channel 00/24 :') and the channels summary line."""
    match = _RING_RE.match(message)
    if match:
        total = int(match.group(2))
        if total and (result["ring_channels"] is None or total > result["ring_channels"]):
            result["ring_channels"] = total
        return True
    match = _CHANNELS_RE.match(message)
    if not match:
        return False
    result["channels"] = {
        "coll": int(match.group(1)),
        "collnet": int(match.group(2)) if match.group(2) is not None else None,
        "nvls": int(match.group(3)) if match.group(3) is not None else None,
        "p2p": int(match.group(4)), "p2p_per_peer": int(match.group(5))}
    if match.group(3) is not None and result["nvls"] is None:
        result["nvls"] = int(match.group(3)) > 0
    return True


def _plugin_line(result, message, line):
    """The network NCCL chose, the net plugin it loaded, failed to load or fell back from."""
    evidence = result["evidence"]
    if message.startswith("Using network "):
        result["network"] = message[len("Using network "):].strip()
        _remember(evidence, "network", line)
    elif message.startswith(("Initialized NET plugin ", "Assigned NET plugin ")):
        result["net_plugin"] = message.split(" plugin ", 1)[1].replace(" to comm", "").strip()
        _remember(evidence, "net_plugin", line)
    elif message.startswith("Failed to initialize NET plugin "):
        name = message[len("Failed to initialize NET plugin "):].strip()
        if name not in result["net_plugins_failed"]:
            result["net_plugins_failed"].append(name)
        _remember(evidence, "net_fallback", line)
    elif message.startswith("NET/Plugin: Loaded net plugin ") or message.startswith("NET/Plugin : Loaded net plugin "):
        result["external_net_plugin"] = message.split("Loaded net plugin ", 1)[1].strip()
    elif message.startswith("P2P plugin "):
        result["external_net_plugin"] = message[len("P2P plugin "):].strip()
    elif message.startswith("NET/IB : No device found"):
        result["ib_device_found"] = False
        _remember(evidence, "net_fallback", line)
    else:
        return False
    return True


def _device_line(result, host, message, line, device_lists):
    """The devices a net plugin offers ('NET/IB : Using [0]mlx5_0:1/IB ...'), their GPU Direct RDMA, NCCL 2.27's
    per-port lines, the GPUs DMA-BUF is available on."""
    evidence = result["evidence"]
    if "GPU Direct RDMA" in message:
        entry = _devices.gdr_entry(host, message, line)
        if entry:
            result["gdr_hcas"].append(entry)
            _remember(evidence, "gdr_hcas", line)
        return True
    if _devices.physical_line(result, host, message, device_lists):
        _remember(evidence, "ib_devices", line)
        return True
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
        return True
    match = _DMABUF_RE.match(message)
    if match:
        gpu = int(match.group(1))
        if gpu not in result["dmabuf_gpus"]:
            result["dmabuf_gpus"].append(gpu)
        return True
    return False


def _setting_line(result, message, line, algorithms, protocols):
    """An NCCL_* variable NCCL says is set, and the tuner's algorithm and protocol per size."""
    match = _ENV_RE.match(message)
    if match:
        name, setting = match.group(1), match.group(2).strip()
        if setting.endswith(".") and len(setting) > 1:
            setting = setting[:-1]   # 'NCCL_NVLS_ENABLE set by environment to 0.'
        result["env"][name] = setting
        if name == "NCCL_IB_HCA":
            result["ib_hca"] = setting
            _remember(result["evidence"], "ib_hca", line)
        return True
    match = _TUNING_RE.match(message)
    if not match:
        return False
    if match.group(3) not in algorithms:
        algorithms.append(match.group(3))
    if match.group(4) not in protocols:
        protocols.append(match.group(4))
    if len(result["tuning"]) < 200:
        result["tuning"].append({"collective": match.group(1), "bytes": int(match.group(2)),
                                 "algorithm": match.group(3), "protocol": match.group(4)})
    return True


def _communicator_line(result, where, message, line, device_lists):
    """MNNVL and NVLS (parse/nccl_debug_nvlink.py), CollNet switched on, the communicator's nodes and ranks, where each
    rank runs."""
    if _nvlink.read(result, where[0], message, line, lambda key, text: _remember(result["evidence"], key, text)):
        return
    if message.startswith("CollNet ") and "enabled" in message.lower():
        result["collnet"] = True
    match = _NNODES_RE.search(message)
    if match:
        nodes = int(match.group(1))
        if result["nodes"] is None or nodes > result["nodes"]:
            result["nodes"] = nodes
            result["evidence"]["nodes"] = [line]
    match = _NRANKS_RE.search(message)
    if match:
        ranks = int(match.group(1))
        if result["ranks"] is None or ranks > result["ranks"]:
            result["ranks"] = ranks
    _place_rank(device_lists, where, message)


def _place_rank(device_lists, where, message):
    """Remember which process (host, pid) and GPU (bus ID) a rank of an nranks-rank communicator runs on."""
    match = _RANK_PLACE_RE.search(message)
    if match and where[1] is not None:
        places = device_lists.setdefault(("rank-places", None), {})
        seen_at = places.setdefault((int(match.group(2)), int(match.group(1))), [])
        place = (where[0], where[1], match.group(3).lower())
        if place not in seen_at and len(seen_at) < 4:
            seen_at.append(place)


def _one_process(places, ranks_of, connection):
    """True when both ranks of a connection are GPUs of the process that printed it (one process driving several GPUs,
    as 'all_reduce_perf -g 2' does: its host:pid and the two bus IDs say so); False when the log places them on two
    hosts; None when it cannot tell (a rank it never placed, or a rank number two communicators share)."""
    local = (connection["host"], connection["pid"])
    verdict = None
    for nranks in sorted(ranks_of.get(connection["from_rank"], set()) & ranks_of.get(connection["to_rank"], set())):
        first, second = places[(nranks, connection["from_rank"])], places[(nranks, connection["to_rank"])]
        if len(first) != 1 or len(second) != 1:
            return None
        if first[0][0] != second[0][0]:
            return False
        if first[0][:2] != local or second[0][:2] != local or first[0][2] == second[0][2]:
            return None
        verdict = True
        connection["bus_ids"] = [first[0][2], second[0][2]]
    return verdict


def _place_connections(connections, device_lists):
    places = device_lists.pop(("rank-places", None), {})
    ranks_of = {}
    for nranks, rank in places:
        ranks_of.setdefault(rank, set()).add(nranks)
    for connection in connections:
        if connection["kind"] == "NET":
            connection["intra_process"] = _one_process(places, ranks_of, connection) if connection["pid"] else None


def _finish(result, device_lists):
    """Decide net, net_devices and gdr from what the lines said."""
    _place_connections(result["connections"], device_lists)
    _nvlink.finish(result)
    _devices.devices_from_ports(device_lists)
    result["ib_physical_devices"] = [p for (family, dummy), ports in device_lists.items() if family == "IB-physical"
                                     for p in ports]
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
        result["gdr"] = _devices.gdr_from_hcas(result["gdr_hcas"], result["network"] or result["net_plugin"])


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
