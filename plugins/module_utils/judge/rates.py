# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Grey failures: what is slowly going wrong, read as rates over the monitor's own history, and the
static signs of a degraded part (a PCIe link below its width, GPU clocks held down by hardware).

A sample is ``{"at": epoch seconds, "counters": {"<target>|<counter>": value}}`` where the target is
an RDMA port (``mlx5_0/1``) or a network interface (``eth2``). The history is a list of samples,
oldest first; ``add_sample`` keeps the ones inside the window (plus one older as the base).
``rate_findings`` sums each counter's increments over the window (a counter that went down was reset:
its new value counts as the increment) and compares them with RATE_RULES.

Default thresholds and where they come from:

- ``symbol_error`` above 120 per hour: the IBTA bit-error-rate limit (10^-12) as a symbol error rate,
  which NVIDIA's NVSentinel NIC monitor design treats as a fatal predictor of link instability
  (docs/nic-health-monitor/link-counter-detection.md, section 2.4.2).
- ``link_downed``, ``excessive_buffer_overrun_errors``, ``local_link_integrity_errors`` and
  ``rnr_nak_retry_err``: any increment (NVSentinel's fatal counters, appendix A).
- ``link_error_recovery`` above 5 per minute, ``port_rcv_errors`` above 10 per second, and
  ``carrier_changes`` more than 2 in the window: NVSentinel's non-fatal defaults (appendix A).
- ``out_of_sequence`` and ``packet_seq_err`` (RoCE packets lost on a fabric that should be lossless)
  above 1 per second, ``np_cnp_sent`` / ``rp_cnp_handled`` (congestion notifications) above 1,000 per
  second: our defaults, set where a tuned RoCE fabric should never be; every threshold is an option.
- ``tx_pause_storm_error_events`` (mlx5: the NIC stopped sending PFC pauses after a stall, "PFC storm
  prevention") any increment; ``tx_pause_storm_warning_events`` any increment; ``rx_prio<N>_pause`` /
  ``tx_prio<N>_pause`` above 10,000 per second (a pause storm): the counters are the mlx5 driver's
  (kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst).

The readings come from the readers: ``ethtool -S`` (parse/ethtool.py), a PCI device's link attributes in sysfs
(parse/pcie_sysfs.py), the clock event reasons of ``nvidia-smi -q -x`` (parse/gpu.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding

HOUR = 3600.0
MAX_SAMPLES = 240

# counter -> (check, severity, kind, threshold): kind "any" (an increment), "count" (more than N in the
# window), "per_hour" (more than N per hour over the window).
RATE_RULES = {
    "symbol_error": ("rdma_error_rate", "critical", "per_hour", 120),
    "link_error_recovery": ("rdma_error_rate", "warning", "per_hour", 300),
    "port_rcv_errors": ("rdma_error_rate", "warning", "per_hour", 36000),
    "excessive_buffer_overrun_errors": ("rdma_error_rate", "critical", "any", 0),
    "local_link_integrity_errors": ("rdma_error_rate", "critical", "any", 0),
    "link_downed": ("link_flap", "critical", "any", 0),
    "carrier_changes": ("link_flap", "warning", "count", 2),
    "rnr_nak_retry_err": ("roce_congestion", "critical", "any", 0),
    "out_of_sequence": ("roce_congestion", "warning", "per_hour", 3600),
    "packet_seq_err": ("roce_congestion", "warning", "per_hour", 3600),
    "np_cnp_sent": ("roce_congestion", "info", "per_hour", 3600000),
    "rp_cnp_handled": ("roce_congestion", "info", "per_hour", 3600000),
    "tx_pause_storm_error_events": ("pfc_pause_storm", "critical", "any", 0),
    "tx_pause_storm_warning_events": ("pfc_pause_storm", "warning", "any", 0),
    "prio_pause": ("pfc_pause_storm", "warning", "per_hour", 36000000),
}
FIXES = {
    "rdma_error_rate": "reseat or replace the cable/transceiver of this port (check the switch side too); drain the node if it keeps rising",
    "link_flap": "the link went down and up: check the cable, transceiver and switch port logs; a flapping link stalls every job on it",
    "roce_congestion": "RoCE packets are lost or congested: check PFC/ECN on this host and its switch port (rdma_network role, mlnx_qos)",
    "pfc_pause_storm": "a PFC pause storm: find the stalled receiver (rx_prio*_pause on the peers), check the switch's PFC watchdog",
}
HW_COUNTERS = ("rnr_nak_retry_err", "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled")
_PRIO_PAUSE = re.compile(r"^(rx|tx)_prio([0-7])_pause$")
_STATE_DEFAULTS = {"window": 3600, "min_span": 300}


def rule_for(counter):
    if _PRIO_PAUSE.match(counter):
        return RATE_RULES["prio_pause"]
    return RATE_RULES.get(counter)


def pause_counters(stats):
    """The counters of an ethtool -S reading the pause-storm rules watch."""
    return dict((k, v) for k, v in stats.items()
                if k in ("tx_pause_storm_error_events", "tx_pause_storm_warning_events") or _PRIO_PAUSE.match(k))


def add_sample(history, sample, window):
    """history + sample, keeping the samples of the last ``window`` seconds and one before them (the base),
    at most MAX_SAMPLES; a sample older than the last one (a clock step back) starts the history again."""
    history = [s for s in (history or []) if isinstance(s, dict) and isinstance(s.get("at"), (int, float))]
    if history and sample["at"] <= history[-1]["at"]:
        history = []
    history.append(sample)
    start = sample["at"] - window
    inside = [i for i, s in enumerate(history) if s["at"] >= start]
    first = max(inside[0] - 1, 0) if inside else len(history) - 1
    return history[first:][-MAX_SAMPLES:]


def increments(history):
    """{key: (sum of increments, span seconds)} over the history (a decrease is a reset)."""
    totals = {}
    for before, after in zip(history, history[1:]):
        for key, value in (after.get("counters") or {}).items():
            if key not in (before.get("counters") or {}):
                continue
            previous = before["counters"][key]
            if not isinstance(value, int) or not isinstance(previous, int):
                continue
            delta = value - previous if value >= previous else value
            total = totals.get(key, 0)
            totals[key] = total + delta
    span = history[-1]["at"] - history[0]["at"] if len(history) > 1 else 0
    return dict((key, (total, span)) for key, total in totals.items())


def rate_findings(host, history, min_span=300, rules=None):
    """Findings for every counter whose increments over the history break its rule."""
    rules = rules or {}
    found = []
    for key, (total, span) in sorted(increments(history).items()):
        target, _sep, counter = key.rpartition("|")
        rule = rules.get("prio_pause" if _PRIO_PAUSE.match(counter) else counter) or rule_for(counter)
        if not rule or total <= 0 or span <= 0:
            continue
        check, severity, kind, threshold = rule
        per_hour = total * HOUR / max(span, min_span)
        if kind == "any":
            broken, limit = True, "any increment"
        elif kind == "count":
            broken, limit = total > threshold, "more than %d in %d s" % (threshold, span)
        else:
            broken, limit = per_hour > threshold, "above %s per hour" % _num(threshold)
        if broken:
            found.append(finding(check, severity, "%s/%s" % (host, target),
                                 "%s rose by %d in %d s (%s per hour; limit: %s)" % (counter, total, span, _num(per_hour), limit),
                                 FIXES[check]))
    return found


def _num(value):
    return ("%d" % value) if float(value).is_integer() else ("%.1f" % value)


# --- PCIe links ----------------------------------------------------------------------------

def pcie_findings(host, links):
    """links: [{address, kind ('gpu'|'nic'), name, current_width, max_width, current_speed, max_speed}].

    A link narrower than its maximum is a warning for GPUs and NICs (a bad riser, slot or retimer); a
    slower one only for NICs, since GPUs lower their PCIe speed on their own when idle.
    """
    found = []
    for link in links:
        target = "%s/%s" % (host, link.get("name") or link.get("address"))
        cw, mw = link.get("current_width"), link.get("max_width")
        cs, ms = link.get("current_speed"), link.get("max_speed")
        if cw is not None and mw is not None and 0 < cw < mw:
            found.append(finding("pcie_link", "warning", target,
                                 "PCIe %s runs at x%d of x%d (%s)" % (link.get("kind"), cw, mw, link.get("address")),
                                 "reseat the card or riser; check the slot and BIOS bifurcation; a narrow link caps its bandwidth"))
        elif link.get("kind") == "nic" and cs and ms and cs < ms:
            found.append(finding("pcie_link", "warning", target,
                                 "PCIe NIC runs at %s of %s GT/s (%s)" % (_num(cs), _num(ms), link.get("address")),
                                 "reseat the NIC; check the slot's generation in the BIOS; a slow link caps RDMA bandwidth"))
    return found


# --- GPU clocks -----------------------------------------------------------------------------

def clock_findings(host, gpus):
    """A warning for each GPU whose clocks are held down (gpu.parse_clock_events' list)."""
    found = []
    for gpu in gpus:
        if gpu["active"]:
            found.append(finding("gpu_clock_throttle", "warning", "%s/GPU %s" % (host, gpu.get("bus_id") or gpu["index"]),
                                 "clocks held down by %s (%s)" % (", ".join(gpu["active"]), gpu.get("bus_id")),
                                 "check cooling (fans, airflow, inlet temperature) and the power supply; a throttled GPU slows every rank"))
    return found
