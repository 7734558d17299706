# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Bandwidth against message size as a standalone SVG picture (standard library only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from xml.sax.saxutils import escape

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
_WIDTH, _HEIGHT = 860, 420
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 250, 40, 60


def _nice_step(top):
    """A 1-2-5 grid step giving about five lines up to ``top``."""
    raw = top / 5.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _size_label(size):
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= factor:
            return "%g%s" % (size / float(factor), unit)
    return "%d" % size


def bandwidth_svg(series, threshold=None, title="NCCL bandwidth"):
    """series: [{'label': str, 'rows': parsed nccl-tests rows}] -> SVG text.

    Each series gives two curves, busbw (solid) and algbw (dashed), out-of-place values, on a
    log2 size axis; ``threshold`` (GB/s) is drawn as a horizontal red line, and a series' ``ceiling`` (GB/s, what its
    hardware carries) as a dotted line of its colour.
    """
    points = []
    for item in series:
        for row in item.get("rows") or []:
            group = row.get("out_of_place") or {}
            if group.get("busbw") is not None:
                points.append((row["size"], group.get("busbw"), group.get("algbw") or 0))
    if not points:
        raise ValueError("no rows with busbw to draw")
    sizes = [p[0] for p in points]
    x_min, x_max = math.log(min(sizes), 2), math.log(max(sizes), 2)
    if x_max == x_min:
        x_max = x_min + 1
    ceilings = [item.get("ceiling") for item in series if isinstance(item.get("ceiling"), (int, float))]
    y_top = max([max(p[1], p[2]) for p in points] + [threshold or 0] + ceilings) * 1.1 or 1.0
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x(size):
        return _LEFT + (math.log(size, 2) - x_min) / (x_max - x_min) * plot_w

    def y(value):
        return _TOP + plot_h - value / y_top * plot_h

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="12">' % (_WIDTH, _HEIGHT, _WIDTH, _HEIGHT),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15">%s</text>' % (_LEFT, escape(title))]
    grid = _nice_step(y_top)
    for i in range(int(y_top // grid) + 1):
        value = grid * i
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (_LEFT, _LEFT + plot_w, y(value), y(value)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (_LEFT - 6, y(value) + 4, value))
    step = max(1, int(math.ceil((x_max - x_min) / 10)))
    exponent = int(math.ceil(x_min))
    while exponent <= x_max:
        size = 2 ** exponent
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x(size), _TOP + plot_h + 18, _size_label(size)))
        exponent += step
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>' % (_LEFT, _LEFT + plot_w, _TOP + plot_h, _TOP + plot_h))
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>' % (_LEFT, _LEFT, _TOP, _TOP + plot_h))
    out.append('<text x="%d" y="%d" text-anchor="middle">message size (bytes)</text>' % (_LEFT + plot_w // 2, _HEIGHT - 18))
    out.append('<text transform="rotate(-90)" x="%d" y="18" text-anchor="middle">GB/s</text>' % -(_TOP + plot_h // 2))
    legend_y = _TOP + 10
    for n, item in enumerate(series):
        color = _COLORS[n % len(_COLORS)]
        rows = [r for r in item.get("rows") or [] if (r.get("out_of_place") or {}).get("busbw") is not None]
        for key, dash, name in (("busbw", "", "busbw"), ("algbw", ' stroke-dasharray="6 4"', "algbw")):
            if key == "algbw" and not any(r["out_of_place"].get("algbw") for r in rows):
                continue  # series without algbw (medians of busbw only) draw one curve
            path = " ".join("%.1f,%.1f" % (x(r["size"]), y(r["out_of_place"].get(key) or 0)) for r in rows)
            out.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (color, dash, path))
            out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                       % (_LEFT + plot_w + 12, _LEFT + plot_w + 36, legend_y, legend_y, color, dash))
            out.append('<text x="%d" y="%d">%s %s</text>' % (_LEFT + plot_w + 42, legend_y + 4, escape(item.get("label") or ""), name))
            legend_y += 18
        if isinstance(item.get("ceiling"), (int, float)):
            out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1" stroke-dasharray="1 3"/>'
                       % (_LEFT, _LEFT + plot_w, y(item["ceiling"]), y(item["ceiling"]), color))
            out.append('<text x="%d" y="%.1f" fill="%s">%s: hardware carries %g</text>'
                       % (_LEFT + 6, y(item["ceiling"]) - 5, color, escape(item.get("label") or ""), item["ceiling"]))
    if threshold is not None:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="red" stroke-width="1.5" stroke-dasharray="2 3"/>'
                   % (_LEFT, _LEFT + plot_w, y(threshold), y(threshold)))
        out.append('<text x="%d" y="%.1f" fill="red" text-anchor="end">min busbw %g</text>' % (_LEFT + plot_w, y(threshold) - 5, threshold))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _cell_color(fraction):
    """Red (0) through amber to green (1) for a share of the best pair's bandwidth."""
    fraction = max(0.0, min(1.0, fraction))
    if fraction < 0.5:
        red, green = 214, int(39 + (190 - 39) * fraction * 2)
    else:
        red, green = int(214 - (214 - 44) * (fraction - 0.5) * 2), int(190 - (190 - 160) * (fraction - 0.5) * 2)
    return "#%02x%02x%02x" % (red, green, 40)


def heatmap_svg(hosts, cells, title="Pair bandwidth", unit="GB/s", marked=()):
    """A host x host matrix of pair bandwidths as an SVG picture.

    ``cells``: {(a, b): value or None}, drawn in both triangles; None (a failed pair) is a grey
    cell marked "x". Colours run from red to green as a share of the best pair; the pairs in
    ``marked`` ((a, b) tuples, e.g. bad links) get a black frame.
    """
    hosts = list(hosts)
    if len(hosts) < 2:
        raise ValueError("a heat map needs at least two hosts")
    values = dict()
    for (a, b), value in cells.items():
        values[(a, b)] = values[(b, a)] = value
    known = [v for v in values.values() if v is not None]
    best = max(known) if known else 1.0
    marks = set()
    for a, b in marked:
        marks.update([(a, b), (b, a)])
    cell = max(26, min(64, int(640 / len(hosts))))
    label_w = max(60, 7 * max(len(h) for h in hosts) + 10)
    left, top = label_w, 40 + label_w
    width, height = left + cell * len(hosts) + 160, top + cell * len(hosts) + 30
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15">%s</text>' % (left, escape(title))]
    for i, host in enumerate(hosts):
        centre = cell * i + cell / 2.0
        out.append('<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>'
                   % (left - 6, top + centre, escape(host)))
        out.append('<text transform="translate(%.1f,%d) rotate(-60)">%s</text>' % (left + centre, top - 6, escape(host)))
    for i, a in enumerate(hosts):
        for j, b in enumerate(hosts):
            x, y = left + j * cell, top + i * cell
            if a == b:
                out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f4f4" stroke="white"/>' % (x, y, cell, cell))
                continue
            if (a, b) not in values:
                out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="white" stroke="#ddd"/>' % (x, y, cell, cell))
                continue
            value = values[(a, b)]
            fill = "#9e9e9e" if value is None else _cell_color(value / best if best else 0)
            stroke = ' stroke="black" stroke-width="2"' if (a, b) in marks else ' stroke="white"'
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"%s><title>%s - %s: %s</title></rect>'
                       % (x, y, cell, cell, fill, stroke, escape(a), escape(b),
                          "failed" if value is None else "%.1f %s" % (value, escape(unit))))
            text = "x" if value is None else ("%.0f" % value if value >= 10 else "%.1f" % value)
            out.append('<text x="%.1f" y="%.1f" text-anchor="middle" dominant-baseline="middle">%s</text>'
                       % (x + cell / 2.0, y + cell / 2.0, text))
    legend_x = left + cell * len(hosts) + 20
    for step in range(11):
        out.append('<rect x="%d" y="%d" width="18" height="12" fill="%s"/>'
                   % (legend_x, top + (10 - step) * 12, _cell_color(step / 10.0)))
    out.append('<text x="%d" y="%d">%.1f %s (best)</text>' % (legend_x + 24, top + 10, best, escape(unit)))
    out.append('<text x="%d" y="%d">0</text>' % (legend_x + 24, top + 130))
    out.append('<rect x="%d" y="%d" width="18" height="12" fill="#9e9e9e"/><text x="%d" y="%d">failed (x)</text>'
               % (legend_x, top + 150, legend_x + 24, top + 160))
    out.append('<rect x="%d" y="%d" width="18" height="12" fill="white" stroke="black" stroke-width="2"/>'
               '<text x="%d" y="%d">bad link</text>' % (legend_x, top + 170, legend_x + 24, top + 180))
    out.append("</svg>")
    return "\n".join(out) + "\n"
