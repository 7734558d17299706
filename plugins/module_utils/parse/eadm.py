# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Alibaba Cloud eRDMA's ``eadm stat`` read: a device's bytes and packets each way, their rates, the time
measured and the live samples.

Pure functions, standard library only, one pass over the lines; every regular expression here is linear.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import leading_number as _number


_SIZE_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4, "PiB": 1024 ** 5,
               "kB": 1000, "KB": 1024, "MB": 1000 ** 2, "GB": 1000 ** 3, "TB": 1000 ** 4, "PB": 1000 ** 5}
_TIME_UNITS = {"second": 1, "seconds": 1, "sec": 1, "s": 1, "minute": 60, "minutes": 60, "min": 60,
               "hour": 3600, "hours": 3600, "h": 3600, "day": 86400, "days": 86400}
_AMOUNT_RE = re.compile(r"^([0-9]{1,15}(?:\.[0-9]{1,6})?) ?([A-Za-z]{0,3})(/s)?$")
_MONITOR_RE = re.compile(r"^Monitoring ([^\s.]{1,64})\.\.\.")
_TRAFFIC_RE = re.compile(r"^([^\s/]{1,64}) +/ +traffic statistics")
_COMMAND_DEV_RE = re.compile(r"(?:^|\s)-d\s+([^\s]{1,64})")
_LIVE_RE = re.compile(r"^([0-9]{2}:[0-9]{2}:[0-9]{2}) +rx: +([0-9.]{1,20} [A-Za-z]{0,3}/s) +([0-9]{1,15}) p/s +"
                      r"tx: +([0-9.]{1,20} [A-Za-z]{0,3}/s) +([0-9]{1,15}) p/s")
_COUNTER_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]{0,63})\s*[:=]\s*([0-9]{1,20})$")


def _amount(text):
    """'11.06 GiB' -> (11875584246, True: rounded); '0 B/s' -> (0, False); '8406769' -> (8406769, False)."""
    match = _AMOUNT_RE.match(text.strip())
    if not match:
        return None, False
    number, unit = match.group(1), match.group(2) or ""
    if unit in ("", "p"):
        return (int(float(number)) if "." in number else int(number)), "." in number
    if unit not in _SIZE_UNITS:
        return None, False
    scaled = float(number) * _SIZE_UNITS[unit]
    return int(round(scaled)), ("." in number and unit != "B")


def parse_eadm_stat(value):
    """Alibaba Cloud eRDMA ``eadm stat -d <dev> [-l]`` output -> the device's traffic.

    Returns ``device``, ``rx_bytes``, ``tx_bytes`` (bytes), ``rx_packets``, ``tx_packets``, ``counters``
    (every figure printed, by name: ``rx_bytes_max_per_s``, ``tx_packets_average_per_s``, ...),
    ``duration_seconds``, ``samples`` (the live ``rx: ... tx: ...`` lines) and ``approximate`` (True when
    a byte total was printed rounded, e.g. ``11.06 GiB``: accurate to the printed digits only).
    Counter lines ``name: value`` are kept in ``counters`` too.
    """
    result = {"device": None, "rx_bytes": None, "tx_bytes": None, "rx_packets": None, "tx_packets": None,
              "counters": {}, "duration_seconds": None, "samples": [], "approximate": False}
    counters = result["counters"]
    section = None
    for raw in _text.clean_lines(value, "eadm stat output"):
        line = raw.strip()
        if not line or set(line) <= set("-+| "):
            continue
        if result["device"] is None:
            match = _MONITOR_RE.match(line) or _TRAFFIC_RE.match(line)
            if match:
                result["device"] = match.group(1)
            elif "eadm" in line:
                match = _COMMAND_DEV_RE.search(line)
                if match:
                    result["device"] = match.group(1)
        match = _LIVE_RE.match(line)
        if match:
            sample = {"time": match.group(1)}
            for key, group in (("rx_bytes_per_s", 2), ("rx_packets_per_s", 3), ("tx_bytes_per_s", 4),
                               ("tx_packets_per_s", 5)):
                sample[key] = _amount(match.group(group).replace("/s", ""))[0]
            result["samples"].append(sample)
            continue
        if "|" in line:
            left, dummy, right = line.partition("|")
            words = left.split(None, 1)
            if len(words) < 2:
                continue
            label, rx_text = words[0].lower(), words[1]
            if label in ("bytes", "packets"):
                section = label
                names = ("rx_%s" % label, "tx_%s" % label)
            elif label in ("max", "average", "min") and section:
                names = ("rx_%s_%s_per_s" % (section, label), "tx_%s_%s_per_s" % (section, label))
            else:
                continue
            for name, text in zip(names, (rx_text, right)):
                text = text.strip().replace(" p/s", "").replace("/s", "")
                number, rounded = _amount(text)
                if number is not None:
                    counters[name] = number
                    if name in ("rx_bytes", "tx_bytes") and rounded:
                        result["approximate"] = True
            continue
        words = line.split()
        if words[0] == "time" and len(words) >= 3 and words[2] in _TIME_UNITS:
            seconds = _number(words[1])
            if seconds is not None:
                result["duration_seconds"] = round(seconds * _TIME_UNITS[words[2]], 3)
                counters["time_seconds"] = result["duration_seconds"]
            continue
        match = _COUNTER_RE.match(line)
        if match:
            counters[match.group(1)] = int(match.group(2))
    for key in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
        result[key] = counters.get(key)
    return result
