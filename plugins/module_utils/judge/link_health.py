# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The physical layer of a link: findings from mlxlink (per HCA port) and iblinkinfo (per switch port).

Pure: parsed readings in, findings out (common.findings). A link that trained below what it and its cable can
(speed or width; PCIe generation or lanes), a transceiver's or firmware's recommendation other than "No issue was
observed", BER above a threshold or rising between two readings, FEC off at a speed that needs it, a port not
Active, link-down events that rose, and in iblinkinfo the "Could be" hint of a degraded link, a 1X link, and a link
slower or narrower than the fabric's majority. Each finding names the HCA and port, or the switch, its port and
the peer; a value mlxlink could not give (None) is never judged good or bad, only unknown - and a BER it printed as
nan, inf or N/A on a link that is up, or no BER at all where the counters were asked for, is ``link_unread``: a
link whose error rate nobody read is not a healthy link.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import posixpath
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding

# Defaults of the BER limits; each is a setting (link_health options). Effective BER is what FEC leaves; raw BER
# what the wire gives before FEC.
MAX_EFFECTIVE_BER = 1e-12
MAX_RAW_BER = 1e-5
NO_ISSUE = "No issue was observed"
# Speed names in mlxlink's order, slowest first (InfiniBand, then Ethernet lane rates and port speeds).
SPEED_ORDER = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR",
               "1G", "10G", "25G", "40G", "50G", "100G", "200G", "400G", "800G", "1600G")
# Speeds that run PAM4 lanes, where a link without FEC does not hold its error rate.
NEEDS_FEC = ("HDR", "NDR", "XDR", "200G", "400G", "800G", "1600G")
CABLE_FIX = "reseat or replace the cable or transceiver, check the switch port (mlxlink -m for the module)"
NOT_RUN_FIX = ("check that the NVIDIA driver (mlx5_core) is loaded and the HCAs are in /sys/class/infiniband, or name "
               "them in link_health devices; on a node without an NVIDIA HCA leave link_health off")
# mlxlink reads an HCA through its PCI function: port 1 only ("Please Provide the Physical Device of Port 2", mstflint
# mlxlink_commander.cpp, labelToHCALocalPort). A dual-port card is two devices (mlx5_0, mlx5_1), each with port 1.
HCA_PORTS = (1,)
BER_FIELDS = (("effective_ber", "effective BER"), ("raw_ber", "raw BER"))
BER_UNREAD_FIX = ("read the port again (mlxlink -d <device> -c, as root); a BER mlxlink prints as nan or N/A on a link "
                  "that is up points at the firmware or MFT: update them. Until it reads, this link's errors go unseen")
KEYS = ("tool", "devices", "port", "max_effective_ber", "max_raw_ber")
DEVICE_RE = re.compile(r"^(?:mlx[45]_[0-9]{1,3}|/dev/mst/[A-Za-z0-9_.:-]{1,64}|(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$")


class LinkHealthError(ValueError):
    """The link_health option is not what it reads; the message names the value."""


def check_options(given):
    """The health check's ``link_health`` option (true, or a mapping of KEYS) -> {tool, devices, port,
    max_effective_ber, max_raw_ber}; LinkHealthError naming the bad value."""
    if given is True:
        given = {}
    if not isinstance(given, dict):
        raise LinkHealthError("link_health must be true or a mapping of %s, got %r" % (", ".join(KEYS), given))
    unknown = sorted(set(given) - set(KEYS))
    if unknown:
        raise LinkHealthError("link_health: unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(KEYS)))
    tool = given.get("tool") or "mlxlink"
    if not isinstance(tool, str) or posixpath.basename(tool) != "mlxlink" or "\n" in tool:
        raise LinkHealthError("link_health tool must be mlxlink or a path to it, got %r" % (tool,))
    devices = given.get("devices") or []
    if not isinstance(devices, list) or not all(isinstance(d, str) and DEVICE_RE.match(d) for d in devices):
        raise LinkHealthError("link_health devices must be mlx5_N names, /dev/mst paths or PCI addresses, got %r" % (devices,))
    port = given.get("port", 1)
    if isinstance(port, bool) or not isinstance(port, int) or port not in HCA_PORTS:
        raise LinkHealthError("link_health port must be 1, got %r: mlxlink reads an HCA port through its own device - "
                              "a dual-port card is two devices (mlx5_0 and mlx5_1), each port 1; name the second one in "
                              "devices" % (port,))
    limits = {}
    for key, default in (("max_effective_ber", MAX_EFFECTIVE_BER), ("max_raw_ber", MAX_RAW_BER)):
        value = given.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise LinkHealthError("link_health %s must be a positive number (1e-12), got %r" % (key, value))
        limits[key] = float(value)
    return dict(tool=tool, devices=devices, port=port, **limits)


def _speed_name(value):
    """'IB-EDR' -> 'EDR', '25GbE' -> '25G', '100G_4X' -> '100G', 'NVLink-XDR' -> 'XDR'; None when unknown."""
    text = (value or "").upper().replace("GBE", "G").split("_")[0]
    text = text.split("-")[-1]
    return text if text in SPEED_ORDER else None


def _rank(name):
    return SPEED_ORDER.index(name) if name in SPEED_ORDER else -1


def ber_unread(target, dev, ber_expected=False):
    """[link_unread] when the device's BER could not be read: mlxlink printed it as something other than a finite
    number (nan, inf, N/A), or - ``ber_expected``, the counters were asked for (mlxlink -c) - printed no BER at all.
    A link that is not Active is judged by its state instead."""
    if dev.get("state") and dev["state"] != "Active":
        return []
    printed = dev.get("unread_values") or {}
    bad = ["%s %r" % (what, printed[key]) for key, what in BER_FIELDS if key in printed]
    if bad:
        detail = "mlxlink printed %s: the bit error rate could not be read" % " and ".join(bad)
    elif ber_expected and all(dev.get(key) is None for key, dummy in BER_FIELDS):
        detail = "mlxlink printed no BER (no Effective or Raw Physical BER line) though its counters were asked for"
    else:
        return []
    return [finding("link_unread", "warning", target, detail, BER_UNREAD_FIX)]


def unread_findings(host, not_run, problems):
    """[link_unread] for a check that did not run (``not_run``: why, naming the host) and for each port mlxlink could
    not read (``problems``: [(device/port, why)])."""
    found = [finding("link_unread", "warning", host, "not run: %s" % not_run, NOT_RUN_FIX)] if not_run and not problems else []
    return found + [finding("link_unread", "warning", "%s/%s" % (host, label),
                            "the link's physical layer could not be read: %s" % problem,
                            "install MFT or mstflint's mlxlink and run the check as root; until then BER, FEC "
                            "and the recommendation of this port go unseen") for label, problem in problems]


def mlxlink_findings(host, devices, max_effective_ber=MAX_EFFECTIVE_BER, max_raw_ber=MAX_RAW_BER, ber_expected=False):
    """parse_mlxlink's devices of one host -> findings, each naming host/device. ``ber_expected``: the text is of
    ``mlxlink -c``, so a device without a BER is unread (ber_unread)."""
    found = []
    for index, dev in enumerate(devices):
        target = "%s/%s" % (host, dev.get("device") or "device %d" % index)
        state = dev.get("state")
        if state and state != "Active":
            found.append(finding("link_state", "critical", target, "the link is %s (physical state %s)" % (
                state, dev.get("physical_state") or "?"), CABLE_FIX))
        advice = dev.get("recommendation")
        if advice and not advice.startswith(NO_ISSUE):
            found.append(finding("link_recommendation", "warning", target, "mlxlink recommends: %s (status opcode %s%s)" % (
                advice, dev.get("status_opcode") or "?",
                ", %s" % dev["group_opcode"] if dev.get("group_opcode") else ""), "follow the recommendation; " + CABLE_FIX))
        active = _speed_name(dev.get("speed"))
        possible = [s for s in (dev.get("enabled_speeds") or []) if _speed_name(s) and (
            dev.get("cable_speeds") is None or _speed_name(s) in [_speed_name(c) for c in dev["cable_speeds"]])]
        best = max((_speed_name(s) for s in possible), key=_rank, default=None)
        if active and best and _rank(active) < _rank(best):
            found.append(finding("link_speed", "warning", target, "the link trained at %s; the port and its cable can "
                                 "run %s" % (dev["speed"], best), CABLE_FIX))
        pcie = dev.get("pcie") or {}
        slower = [(what, pcie.get(what + "_active"), pcie.get(what + "_enabled")) for what in ("speed", "width")
                  if pcie.get(what + "_enabled") and pcie.get(what + "_active") != pcie.get(what + "_enabled")]
        if slower:
            found.append(finding("link_pcie", "warning", target, "PCIe %s" % "; ".join(
                "%s %s where %s is enabled" % (what, now, want) for what, now, want in slower),
                "reseat the card, check the slot's width, riser and BIOS PCIe settings"))
        fec = dev.get("fec") or ""
        if active in NEEDS_FEC and "no fec" in fec.lower():
            found.append(finding("link_fec", "warning", target, "FEC is off on a %s link" % dev["speed"],
                                 "enable RS-FEC on both ends (the switch port and mlxconfig/mlxlink --fec)"))
        for key, limit, what in (("effective_ber", max_effective_ber, "effective BER (after FEC)"),
                                 ("raw_ber", max_raw_ber, "raw BER (before FEC)")):
            value = dev.get(key)
            if value is not None and value > limit:
                found.append(finding("link_ber", "warning", target, "%s %.1E above %.0E" % (what, value, limit), CABLE_FIX))
        found += ber_unread(target, dev, ber_expected)
    return found


def rising_link_counters(host, before, after):
    """Two parse_mlxlink device lists of one host (earlier, later) -> findings for link-down events and effective
    errors that rose, and an effective BER that rose tenfold or more; a device or value missing from either is
    not judged."""
    found = []
    earlier = dict((d.get("device"), d) for d in before if d.get("device"))
    for dev in after:
        old = earlier.get(dev.get("device"))
        if old is None:
            continue
        target = "%s/%s" % (host, dev["device"])
        was, now = old.get("link_down_counter"), dev.get("link_down_counter")
        if was is not None and now is not None and now > was:
            found.append(finding("link_down", "critical", target, "link down counter rose from %d to %d" % (was, now),
                                 CABLE_FIX))
        was, now = old.get("effective_errors"), dev.get("effective_errors")
        if was is not None and now is not None and now > was:
            found.append(finding("link_errors", "warning", target, "effective errors rose from %d to %d" % (was, now),
                                 CABLE_FIX))
        was, now = old.get("effective_ber"), dev.get("effective_ber")
        if was is not None and now is not None and now > max(was, 1e-300) * 10 and now > 1e-15:
            found.append(finding("link_ber", "warning", target, "effective BER rose from %.1E to %.1E" % (was, now), CABLE_FIX))
    return found


def _link_name(port):
    node = port.get("node_name") or port.get("node_guid") or "?"
    peer = port.get("peer_name") or "?"
    return "%s port %s -> %s port %s" % (node, port["port"], peer, port.get("peer_port") if port.get("peer_port") is not None else "?")


def iblinkinfo_findings(ports):
    """parse_iblinkinfo's ports -> findings: the "Could be" hint (trained below what both ends can), 1X links, and
    Active links slower or narrower than the fabric's most common speed and width. Down ports are not links."""
    found, seen = [], set()
    active = [p for p in ports if p.get("state") == "Active" and p.get("width") and p.get("speed_gbps") is not None]
    widths = [p["width"] for p in active]
    speeds = [p["speed_gbps"] for p in active]
    common_width = max(set(widths), key=widths.count) if widths else None
    common_speed = max(set(speeds), key=speeds.count) if speeds else None
    for port in active:
        # Each link is printed from both ends; judge it once, from the first end listed.
        key = frozenset([(port.get("node_name"), port["port"]), (port.get("peer_name"), port.get("peer_port"))])
        if key in seen:
            continue
        seen.add(key)
        target = _link_name(port)
        hint = port.get("could_be")
        if hint:
            could = " ".join(x for x in (hint.get("width"), "%g Gbps" % hint["speed_gbps"] if hint.get("speed_gbps") else None) if x)
            found.append(finding("link_degraded", "warning", target, "trained at %s %g Gbps; could be %s" % (
                port["width"], port["speed_gbps"], could), CABLE_FIX))
        elif port["width"] == "1X" and common_width != "1X":
            found.append(finding("link_degraded", "warning", target, "trained at 1X (%g Gbps)" % port["speed_gbps"], CABLE_FIX))
        elif (port["speed_gbps"] < common_speed or _lanes(port["width"]) < _lanes(common_width)) and len(active) > 2:
            found.append(finding("link_degraded", "warning", target, "trained at %s %g Gbps; most links of the fabric run "
                                 "%s %g Gbps" % (port["width"], port["speed_gbps"], common_width, common_speed), CABLE_FIX))
    return found


def _lanes(width):
    return int(width[:-1]) if width and width[:-1].isdigit() else 0


def _switch_port(attachment, host, nic):
    """The switch and port behind a host's HCA (``observed_attachment``'s {host: {nic: {leaf, port}}}), or None."""
    where = (attachment or {}).get(host, {}).get(nic)
    if not where or not where.get("leaf"):
        return None
    return where["leaf"], where.get("port")


def with_switch_ports(found, attachment):
    """Link findings whose target is '<host>/<device>/<port>' (or '<host>/<device>', port 1) gain ``switch`` and ``switch_port`` - the switch port the
    fabric map (ibnetdiscover's, topology/cabling.observed_attachment) says that HCA port is cabled to - and the detail
    says it. Findings the map does not know stay as they are."""
    result = []
    for item in found:
        parts = str(item.get("target") or "").split("/")
        behind = None
        if item.get("check", "").startswith("link_") and len(parts) in (2, 3):
            nic = parts[1] if len(parts) == 2 or parts[2] == "1" else "%s:%s" % (parts[1], parts[2])
            behind = _switch_port(attachment, parts[0], nic)
        if behind:
            item = dict(item, switch=behind[0], switch_port=behind[1],
                        detail="%s (cabled to %s port %s)" % (item.get("detail"), behind[0], behind[1]))
        result.append(item)
    return result


def physical_links(hosts, attachment):
    """{host: ['mlx5_0 -> leaf-03 port 17', ...]} for the hosts the fabric map knows: the cables behind a host."""
    result = {}
    for host in hosts:
        nics = (attachment or {}).get(host) or {}
        lines = ["%s -> %s port %s" % (nic, where.get("leaf"), where.get("port")) for nic, where in sorted(nics.items())
                 if where.get("leaf")]
        if lines:
            result[host] = lines
    return result
