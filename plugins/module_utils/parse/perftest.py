# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""perftest (ib_write_bw, ib_read_lat, ...) output to plain dictionaries, and threshold checks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text

_TITLE_RE = re.compile(r"^\s*((?:RDMA_Write|RDMA_Read|Send|Atomic)[\w ]{0,60}?(?:BW|Latency) Test)\s*$")
_BW_HEADER_RE = re.compile(r"#bytes\s+#iterations\s+BW peak\[(\w+/sec)\]\s+BW average\[(\w+/sec)\]\s+MsgRate\[Mpps\]")
_LAT_HEADER_RE = re.compile(r"#bytes\s+#iterations\s+t_min\[usec\]")
_FACT_KEYS = {
    "Device": "device", "Transport type": "transport", "Connection type": "connection_type",
    "Link type": "link_type", "Mtu": "mtu", "GID index": "gid_index", "Number of qps": "qps",
    "Data ex. method": "data_exchange", "Dual-port": "dual_port", "Using SRQ": "srq",
}
_LAT_COLUMNS = ("t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us", "p99_9_us")


class PerftestParseError(ValueError):
    """The text holds no perftest result header."""


def _num(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() and "." not in text else value


def _fact_parts(line):
    """' Dual-port       : OFF\t\tDevice         : mlx5_0' -> ['Dual-port       : OFF', 'Device         : mlx5_0'].

    Splits on tabs and on runs of three or more spaces, then glues a piece that starts with ':' to
    the key before it (the padding between a key and its colon is such a run too).
    """
    parts = []
    for piece in re.split(r"\t+| {3,}", line):
        if piece.startswith(":") and parts:
            parts[-1] += " " + piece
        elif piece.strip():
            parts.append(piece)
    return parts


def _facts(line, facts):
    for part in _fact_parts(line):
        key, sep, value = part.partition(":")
        key, value = key.strip(), value.strip()
        if sep and key in _FACT_KEYS and value:
            facts[_FACT_KEYS[key]] = value


def parse(text):
    """Bandwidth or latency test output -> {'test', 'kind', 'unit', facts..., 'rows'}."""
    result = {"test": None, "kind": None, "unit": None, "device": None, "transport": None,
              "connection_type": None, "link_type": None, "mtu": None, "gid_index": None, "rows": [],
              "errors": []}
    facts = {}
    for raw in _text.clean_lines(text, "perftest output"):
        line = raw.rstrip()
        if not line.strip() or set(line.strip()) <= set("-*"):
            continue
        match = _TITLE_RE.match(line)
        if match and result["test"] is None:
            result["test"] = " ".join(match.group(1).split())
            continue
        match = _BW_HEADER_RE.search(line)
        if match:
            result["kind"], result["unit"] = "bandwidth", match.group(2)
            continue
        if _LAT_HEADER_RE.search(line):
            result["kind"], result["unit"] = "latency", "usec"
            continue
        tokens = line.split()
        if result["kind"] and tokens and tokens[0].isdigit() and len(tokens) >= 3:
            values = [_num(t) for t in tokens]
            if None in values:
                continue
            if result["kind"] == "bandwidth" and len(values) >= 5:
                result["rows"].append({"bytes": values[0], "iterations": values[1], "bw_peak": values[2],
                                       "bw_average": values[3], "msg_rate_mpps": values[4],
                                       "unit": result["unit"]})
            elif result["kind"] == "latency":
                row = {"bytes": values[0], "iterations": values[1]}
                row.update(dict((name, None) for name in _LAT_COLUMNS))
                row.update(zip(_LAT_COLUMNS, values[2:]))
                result["rows"].append(row)
            continue
        if ":" in line and result["kind"] is None:
            _facts(line, facts)
            continue
        lowered = line.lower()
        if any(word in lowered for word in ("couldn't", "unable", "failed", "error", "refused")):
            result["errors"].append(line.strip())
    if result["kind"] is None:
        if result["errors"]:
            return result
        raise PerftestParseError("no perftest result header (#bytes #iterations ...) in the text")
    result.update(facts)
    mtu = re.match(r"^(\d+)", facts.get("mtu") or "")
    result["mtu"] = int(mtu.group(1)) if mtu else None
    if result["gid_index"] is not None and str(result["gid_index"]).isdigit():
        result["gid_index"] = int(result["gid_index"])
    return result


# Bytes a second in one unit perftest prints. Its "MB/sec" was always 2^20 bytes (print_report_bw divides
# by 0x100000 since 2013; the label became "MiB/sec" in 2024, linux-rdma/perftest PR 257, the number did
# not change); only --report_gbits prints decimal units (10^9 bits). Every bandwidth test prints through the
# same print_report_bw - ib_write_bw, ib_read_bw, ib_send_bw and ib_atomic_bw alike (an atomic moves 8 bytes
# an operation) - so one table serves them all. The MsgRate column agrees: bytes x Mpps = the average in
# 2^20-byte units (ib_atomic_bw over an SR-IOV VF: 8 B x 2.170493 Mpps = 16.56 MB/sec = 0.1389 Gb/s).
_BYTES_PER_SECOND = {"MiB/sec": 1048576.0, "MB/sec": 1048576.0}


def bw_gbps(row):
    """A bandwidth row's average in Gb/s (10^9 bits a second) whatever unit perftest printed."""
    value = row["bw_average"]
    if row["unit"] == "Gb/sec":
        return value
    return value * _BYTES_PER_SECOND.get(row["unit"], 1048576.0) * 8 / 1e9
