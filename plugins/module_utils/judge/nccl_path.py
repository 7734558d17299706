# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The NCCL path a run took, judged: what parse/nccl_debug.py read from its NCCL_DEBUG=INFO log against what the
node's profile expects (RDMA, NCCL_IB_HCA, GPUDirect RDMA, peer-to-peer between the GPUs of one node), quoting the
NCCL lines it read; what a run's NCCL
environment promises; and what a validation report keeps of it.

Pure functions, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nccl_debug import MAX_EVIDENCE, NcclDebugError, ib_hca_allows, net_family

EXPECTED_KEYS = ("rdma", "ib_hca", "gdr", "p2p", "rails", "channels", "mnnvl")
# What turns NCCL's peer-to-peer off from the environment (NCCL_P2P_LEVEL LOC or 0: only a GPU with itself).
_P2P_OFF_LEVELS = ("LOC", "0")


def _check_expected(expected):
    if expected is None:
        return {}
    if not isinstance(expected, dict):
        raise NcclDebugError("expected must be a mapping with rdma, ib_hca and gdr, got %s" % type(expected).__name__)
    unknown = sorted(set(expected) - set(EXPECTED_KEYS))
    if unknown:
        raise NcclDebugError("expected has unknown keys %s; it reads %s" % (
            ", ".join(map(str, unknown)), ", ".join(EXPECTED_KEYS)))
    for key in ("rdma", "gdr", "p2p"):
        if expected.get(key) is not None and not isinstance(expected[key], bool):
            raise NcclDebugError("expected %s must be true, false or null, got %r" % (key, expected[key]))
    if expected.get("ib_hca") is not None and not isinstance(expected["ib_hca"], str):
        raise NcclDebugError("expected ib_hca must be the NCCL_IB_HCA string or null, got %r" % (expected["ib_hca"],))
    rails = expected.get("rails")
    if rails is not None and (not isinstance(rails, (list, tuple)) or not all(isinstance(n, str) and n for n in rails)):
        raise NcclDebugError("expected rails must be the names of the NICs on the pod's GPUs' rails (mlx5_0, ...), got %r"
                             % (rails,))
    channels = expected.get("channels")
    if channels is not None and (isinstance(channels, bool) or not isinstance(channels, int) or channels < 1):
        raise NcclDebugError("expected channels must be the coll channels an aligned run opens (1 or more), got %r"
                             % (channels,))
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
    DMA-BUF is set up, so GPUDirect RDMA is expected), ``p2p`` (bool: the node's GPUs are joined by NVLink, so the
    ranks of one node must talk peer-to-peer), ``rails`` (the NICs on the rails of the pod's GPUs, as its DRA claim
    aligned them: a misplaced pod then fails), ``channels`` (the coll channels an aligned pod opens; fewer is a
    misplaced pod's sign) and ``mnnvl`` (bool: NCCL_MNNVL_ENABLE=1 asks for multi-node NVLink, so a communicator
    over several nodes must say MNNVL 1). Returns ``{'passed', 'reasons'}``; each reason
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
    one_host = _one_host(parsed)
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
    elif nodes == 1:
        # GPUs of one node connected through the network: never called inter-node traffic (the intra-node check
        # below says what it means)
        _reason(reasons, "transport", None, "one node: no inter-node traffic; its GPUs connected through NET/%s "
                "(judged as the intra-node path)" % net, _ev(parsed, "nodes"))
    elif one_host:
        _reason(reasons, "transport", None, "one host: no inter-node traffic; NCCL counted %s nodes, but every rank it "
                "connected through NET/%s is a GPU of one process (%s, GPUs at bus IDs %s): judged as the intra-node "
                "path" % (nodes if nodes else "several", net, one_host, ", ".join(_bus_ids(parsed))),
                _ev(parsed, "nodes") + [_local_net(parsed)[0]["line"]])
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
    if (nodes != 1 and not one_host) or net is None:
        _judge_hca(parsed, expected, reasons)
        _judge_gdr(parsed, expected, reasons)
    if _between_nodes(parsed) and net not in (None, "Socket"):
        _judge_placement(parsed, expected, reasons)
    _judge_intra_node(parsed, expected, reasons)
    _judge_mnnvl(parsed, expected, reasons)
    return {"passed": not any(r["ok"] is False for r in reasons), "reasons": reasons}


def _between_nodes(parsed):
    """The log's NET connections join nodes (not the GPUs of one node, nor of one process)."""
    return parsed.get("nodes") != 1 and not _one_host(parsed)


def _judge_mnnvl(parsed, expected, reasons):
    """Multi-node NVLink where the run's environment asks for it (NCCL_MNNVL_ENABLE=1) across nodes: NCCL's
    communicator line says MNNVL 1 (src/init.cc, 2.20 and later), else it went over the network at a fraction of
    the fabric's bandwidth. One node, or nothing asked: not judged."""
    if expected.get("mnnvl") is not True or parsed.get("nodes") == 1:
        return
    used = parsed.get("mnnvl")
    evidence = _ev(parsed, "mnnvl")
    if used is True:
        _reason(reasons, "mnnvl", True, "multi-node NVLink in use (MNNVL 1), as NCCL_MNNVL_ENABLE=1 asks", evidence)
    elif used is False:
        _reason(reasons, "mnnvl", False, "NCCL_MNNVL_ENABLE=1 but NCCL ran without multi-node NVLink (MNNVL 0 on the "
                "communicator's line): a node outside the others' NVLink domain, its fabric not registered, "
                "NCCL_CUMEM_ENABLE=0, or IMEX not serving the channel", evidence)
    else:
        _reason(reasons, "mnnvl", None, "NCCL_MNNVL_ENABLE=1, but the log does not say whether NCCL used multi-node "
                "NVLink (NCCL before 2.20, or its MNNVL lines cut off)", evidence)


def _one_host(parsed):
    """'host:pid' when every NET connection of the log joins two GPUs of one process (parse_nccl_debug's
    ``intra_process``): NCCL may count each of them as a node (nNodes 2 localRanks 1 with peer-to-peer and shared
    memory off), but a socket between them never leaves the host. None otherwise."""
    net = [c for c in parsed.get("connections") or [] if c.get("kind") == "NET"]
    if not net or not all(c.get("intra_process") is True for c in net):
        return None
    processes = set((c.get("host"), c.get("pid")) for c in net)
    return "%s:%s" % processes.pop() if len(processes) == 1 else None


def _local_net(parsed):
    """The NET connections between GPUs of one node: all of them in a one-node log, else those of one process."""
    net = [c for c in parsed.get("connections") or [] if c.get("kind") == "NET"]
    return net if parsed.get("nodes") == 1 else [c for c in net if c.get("intra_process") is True]


def _bus_ids(parsed):
    ids = []
    for connection in _local_net(parsed):
        for bus_id in connection.get("bus_ids") or []:
            if bus_id not in ids:
                ids.append(bus_id)
    return ids


def _p2p_off_cause(env, through_network=False):
    """Why NCCL did not use peer-to-peer (and, when the GPUs of a node went through the network, not shared memory
    either), in its own environment's words, else the usual causes."""
    env = env or {}
    causes = []
    if str(env.get("NCCL_P2P_DISABLE", "")).strip() not in ("", "0"):
        causes.append("NCCL_P2P_DISABLE set by environment to %s" % env["NCCL_P2P_DISABLE"])
    if str(env.get("NCCL_P2P_LEVEL", "")).strip().upper() in _P2P_OFF_LEVELS:
        causes.append("NCCL_P2P_LEVEL set by environment to %s" % env["NCCL_P2P_LEVEL"])
    if through_network and str(env.get("NCCL_SHM_DISABLE", "")).strip() not in ("", "0"):
        causes.append("NCCL_SHM_DISABLE set by environment to %s" % env["NCCL_SHM_DISABLE"])
    if causes:
        return ", ".join(causes)
    return ("nothing in the environment turned it off: NCCL found no peer access between these GPUs (ACS on a PCIe "
            "switch, the IOMMU, or a VM without peer-to-peer; nvidia-smi topo -p2p r shows it)")


def _judge_intra_node(parsed, expected, reasons):
    """The ranks of one node: peer-to-peer where the GPUs are joined by NVLink (``expected['p2p']``), not shared
    memory through the host and not a socket (a 4x H200 node moved 23 GB/s that way against 346 GB/s peer-to-peer,
    docs/benchmarks/2026-11-27-h200x4-p2p)."""
    wants = expected.get("p2p")
    if wants is None:   # nothing said what the node's GPUs are joined by: no verdict, and no note
        return
    connections = parsed.get("connections") or []
    p2p = [c for c in connections if c.get("kind") == "P2P"]
    shm = [c for c in connections if c.get("kind") == "SHM"]
    local_net = _local_net(parsed)
    around = shm + local_net
    if around:
        how = " and ".join(part for part in (
            ("shared memory (%s: %d channel connection(s))" % (shm[0]["transport"], len(shm))) if shm else "",
            ("the network (%s: %d)" % (local_net[0]["transport"], len(local_net))) if local_net else "") if part)
        evidence = [c["line"] for c in (shm[:1] + local_net[:1])]
        if wants:
            _reason(reasons, "intra_node", False,
                    "GPUs joined by NVLink talk through %s, not peer-to-peer%s: %s" % (
                        how, (" (%d peer-to-peer)" % len(p2p)) if p2p else "",
                        _p2p_off_cause(parsed.get("env"), through_network=bool(local_net))),
                    evidence)
        else:
            _reason(reasons, "intra_node", None, "GPUs of one node talk through %s; they are not joined by NVLink, so "
                    "peer-to-peer is not expected" % how, evidence)
    elif p2p:
        _reason(reasons, "intra_node", True if wants else None, "GPUs of one node talk peer-to-peer (%s: %d channel "
                "connection(s))" % (p2p[0]["transport"], len(p2p)), [p2p[0]["line"]])
    elif wants:
        _reason(reasons, "intra_node", None, "no connection between GPUs of one node in this log: the intra-node path "
                "cannot be judged from it", [])


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


def _network_family(parsed):
    """The family of the network NCCL used: its connections', else its 'Using network' line's, else the one family of
    its GPU Direct RDMA lines."""
    name = parsed.get("net") or parsed.get("network") or parsed.get("net_plugin")
    if name:
        return net_family(name)
    families = set(net_family(e.get("plugin")) for e in parsed.get("gdr_hcas") or [])
    return families.pop() if len(families) == 1 else None


def _offered(parsed):
    """The lines where the net plugin offered a GPUDirect RDMA registration path ('(DMABUF) enabled for HCA 0 ...')."""
    return [e["line"] for e in parsed.get("gdr_hcas") or [] if e.get("checked_by_plugin") and e["enabled"]]


def _offered_but_unused(parsed, plain):
    """A log where the plugin offered DMA-BUF or peermem for the HCAs but NCCL connected without it: NCCL's own check
    (NCCL_NET_GDR_LEVEL, the GPU-NIC distance, a GPU that does not support it) turned it down; the connections decide."""
    offered = [e for e in parsed.get("gdr_hcas") or [] if e.get("checked_by_plugin") and e["enabled"]]
    if not offered or not plain:
        return ""
    hcas = []
    for entry in offered:
        name = entry.get("hca") or "HCA %s" % entry.get("hca_index")
        if name not in hcas:
            hcas.append(name)
    paths = sorted(set("DMA-BUF" if e.get("dmabuf") else "nvidia-peermem" for e in offered))
    return ("; the net plugin offered it through %s for %s, but no NET connection uses it (no /GDRDMA): NCCL's own "
            "check turned it down (NCCL_NET_GDR_LEVEL, the GPU-NIC distance, or a GPU without it)" % (
                " and ".join(paths), ", ".join(hcas)))


def _split_device(name):
    device, sep, port = (name or "").partition(":")
    return device, (int(port) if sep and port.isdigit() else None)


def _judge_gdr(parsed, expected, reasons):
    wanted = expected.get("gdr")
    # over sockets GPUDirect RDMA is not the question (NCCL says 'Disabled' for every interface)
    if wanted is None or _network_family(parsed) == "Socket":
        return
    gdr = parsed.get("gdr")
    disabled = [e["line"] for e in parsed.get("gdr_hcas") or [] if not e["enabled"]]
    if gdr is None:
        _reason(reasons, "gdr", None, "the log does not show whether GPUDirect RDMA was used", [])
    elif gdr is False and wanted:
        plain = [c["line"] for c in parsed.get("connections") or [] if c["kind"] == "NET" and not c["gdr"]]
        reasons_shown = sorted(set(e["reason"] for e in parsed.get("gdr_hcas") or [] if e.get("reason") and not e["enabled"]))
        _reason(reasons, "gdr", False, "NCCL ran without GPUDirect RDMA%s although peermem/DMA-BUF is expected%s" % (
            " (%s)" % ", ".join(reasons_shown) if reasons_shown else "", _offered_but_unused(parsed, plain)),
            disabled[:2] + plain[:1] + _offered(parsed)[:1])
    elif gdr:
        # Which mechanism, in NCCL's own words: '(DMABUF) enabled for HCA' is DMA-BUF; 'Enabled for HCA' is the
        # peer-memory module, unless the same log says 'DMA-BUF is available on GPU device': an NCCL that old does not
        # name the one it registered with.
        enabled = [e for e in parsed.get("gdr_hcas") or [] if e["enabled"]]
        dmabuf = [e["line"] for e in enabled if e.get("dmabuf")]
        how = ("DMA-BUF" if dmabuf else "nvidia-peermem or DMA-BUF (both available; this NCCL does not say which)"
               if enabled and parsed.get("dmabuf_gpus") else "nvidia-peermem" if enabled else None)
        _reason(reasons, "gdr", True, "NET connections use GPUDirect RDMA (GDRDMA)%s" % (", through %s" % how if how else ""),
                ([dmabuf[0]] if dmabuf else [e["line"] for e in enabled[:1]]) + _ev(parsed, "net_connections"))
    else:
        _reason(reasons, "gdr", True, "no GPUDirect RDMA, as the profile expects", disabled[:2])


def _used_nics(parsed):
    """The NICs the NET connections went through: NCCL's device list, else each connection's device index named by
    the GPU Direct RDMA lines ('enabled for HCA 1 'roceP2p1s0f1')."""
    used = [name.split(":")[0] for name in parsed.get("net_devices") or []]
    if used:
        return used
    named = dict((e.get("hca_index"), e.get("hca")) for e in parsed.get("gdr_hcas") or [] if e.get("hca"))
    for connection in parsed.get("connections") or []:
        name = named.get(connection.get("net_index"))
        if connection.get("kind") == "NET" and name and name not in used:
            used.append(name)
    return used


def placement(parsed, expected=None):
    """Where a pod's GPUs and NICs landed, as its NCCL log shows it: ``aligned`` (every NET connection uses GPUDirect
    RDMA, over the NICs of the pod's rails where ``rails`` names them, with no fewer coll channels than ``channels``),
    ``misaligned`` (GPUDirect RDMA set up or offered but turned down - NCCL's distance check refuses it for a NIC off
    the GPU's rail -, a NIC outside the rails, or fewer channels: dranet's GB300 example measured 8 channels and about
    56 GB/s NUMA-local against 2 channels and about 25 GB/s cross-NUMA), or None when the log cannot tell (no RDMA
    connection, or GPUDirect RDMA not set up at all). -> {placement, reason, evidence}."""
    expected = expected or {}
    net = [c for c in parsed.get("connections") or [] if c.get("kind") == "NET" and c.get("net") not in (None, "Socket")]
    if not net:
        return {"placement": None, "reason": "no RDMA connection between nodes in this log: the placement of GPUs and "
                "NICs cannot be told from it", "evidence": []}
    used = _used_nics(parsed)
    rails = set(name.split(":")[0] for name in expected.get("rails") or [])
    outside = [name for name in used if rails and name not in rails]
    coll = (parsed.get("channels") or {}).get("coll") or parsed.get("ring_channels")
    fewer = bool(expected.get("channels") and coll and coll < expected["channels"])
    plain = [c for c in net if not c.get("gdr")]
    offered = _offered(parsed)
    signs = []
    if plain and (offered or expected.get("gdr")):
        signs.append("%d of %d NET connections without GPUDirect RDMA although it is %s: NCCL's own distance check "
                     "turned it down, as for a NIC that is not on the GPU's rail" % (
                         len(plain), len(net), "offered for the HCAs" if offered else "set up (peermem or DMA-BUF)"))
    if outside:
        signs.append("NCCL used %s, outside the rails of the pod's GPUs (%s)" % (
            ", ".join(outside), ", ".join(sorted(rails))))
    if fewer:
        signs.append("%d coll channels where an aligned pod opens %d" % (coll, expected["channels"]))
    channels = (", %d coll channels" % coll) if coll and not fewer else ""
    if signs:
        return {"placement": "misaligned", "reason": "GPUs and NICs misaligned: %s%s" % ("; ".join(signs), channels),
                "evidence": [c["line"] for c in plain[:1]] + offered[:1]}
    if plain:
        return {"placement": None, "reason": "GPUDirect RDMA is not set up (no peermem, no DMA-BUF offered): the log "
                "cannot tell an aligned pod from a misaligned one", "evidence": [plain[0]["line"]]}
    return {"placement": "aligned", "reason": "GPUs and NICs aligned: every NET connection uses GPUDirect RDMA over %s%s%s"
            % (", ".join(used) or "its NICs", " (the NICs of the pod's rails)" if rails else "", channels),
            "evidence": [net[0]["line"]]}


def _judge_placement(parsed, expected, reasons):
    """The placement as a reason: a verdict where the pod's claim named its rails (or the channels an aligned pod
    opens), a note otherwise."""
    found = placement(parsed, expected)
    promised = bool(expected.get("rails") or expected.get("channels"))
    ok = None if found["placement"] is None or not promised else found["placement"] == "aligned"
    _reason(reasons, "placement", ok, found["reason"], found["evidence"])


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
    loaded on every node of the run); else None (DMA-BUF may still give it: not judged). ``mnnvl`` only where the
    environment sets NCCL_MNNVL_ENABLE: True for 1, False for 0 (2, NCCL's default, decides by itself: None).
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
    expected = {"rdma": rdma, "ib_hca": values.get("NCCL_IB_HCA") or None, "gdr": gdr}
    if "NCCL_MNNVL_ENABLE" in values:
        expected["mnnvl"] = {"1": True, "0": False}.get(values["NCCL_MNNVL_ENABLE"])
    return expected


def describe_expected(expected):
    """'RDMA, NCCL_IB_HCA=..., GDR' in words, for a report's line."""
    parts = [{True: "RDMA", False: "sockets (RDMA off)", None: "transport not promised"}[expected.get("rdma")]]
    if expected.get("ib_hca"):
        parts.append("NCCL_IB_HCA=%s" % expected["ib_hca"])
    if expected.get("gdr") is not None:
        parts.append("GPUDirect RDMA %s" % ("on" if expected["gdr"] else "off"))
    if expected.get("p2p"):
        parts.append("peer-to-peer between a node's GPUs (NVLink)")
    if expected.get("rails"):
        parts.append("each GPU with the NICs of its rail (%s)" % ", ".join(expected["rails"]))
    if expected.get("mnnvl"):
        parts.append("multi-node NVLink")
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
        "mnnvl": parsed.get("mnnvl"), "nvls": parsed.get("nvls"),
        "expected": dict(expected), "expected_text": describe_expected(expected),
        "placement": placement(parsed, expected)["placement"] if _between_nodes(parsed) else None,
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
    # NCCL 2.20+ print MNNVL 0 on every machine: its absence is news only where the run asked for it.
    if entry.get("mnnvl") is not None and (entry["mnnvl"] or (entry.get("expected") or {}).get("mnnvl")):
        parts.append("multi-node NVLink %s" % ("on" if entry["mnnvl"] else "off"))
    if entry.get("nvls"):
        parts.append("NVLS")
    if entry.get("channels"):
        parts.append("%d coll channels" % entry["channels"]["coll"])
    if entry.get("placement"):
        parts.append("GPUs and NICs %s" % entry["placement"])
    return ", ".join(parts)
