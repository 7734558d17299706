# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The DDP benchmark's output (roles/ddp_benchmark/files/ddp_benchmark.py), read and judged.

Lines, possibly behind launcher prefixes (srun -l, torchrun's "[rank0]:"), CRLF or colour:

    gpufabric-ddp rank=R host=H gpu=NAME images_per_s=X step_ms=Y
    gpufabric-ddp total world_size=N images_per_s=X per_gpu=Y model=resnet50 batch_size=B
    gpufabric-ddp allreduce bytes=S busbw_gbps=X algbw_gbps=Y
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import median

_LINE = re.compile(r"gpufabric-ddp (?:(total|allreduce) )?([a-z_]{1,24}=\S{1,200}(?: [a-z_]{1,24}=\S{1,200}){0,11})\s*$")
_PAIR = re.compile(r"([a-z_]{1,24})=(\S{1,200})")
_NUMBERS = ("images_per_s", "step_ms", "per_gpu", "busbw_gbps", "algbw_gbps")
_INTEGERS = ("rank", "world_size", "batch_size", "bytes")


class DdpParseError(ValueError):
    """The text holds no DDP benchmark result."""


def _fields(pairs):
    out = {}
    for key, value in _PAIR.findall(pairs):
        if key in _NUMBERS:
            try:
                out[key] = float(value)
            except ValueError:
                continue
        elif key in _INTEGERS:
            out[key] = int(value) if value.isdigit() else None
        else:
            out[key] = value
    return out


def parse(text):
    """-> {ranks: [{rank, host, gpu, images_per_s, step_ms}], total: {...} or None, allreduce: {...} or None}."""
    result = {"ranks": [], "total": None, "allreduce": None}
    for line in _text.launcher_lines(text if text is not None else "", "DDP benchmark output"):
        match = _LINE.search(line.strip())
        if not match:
            continue
        kind, fields = match.group(1) or "rank", _fields(match.group(2))
        if kind == "rank":
            result["ranks"].append(fields)
        else:
            result[kind] = fields
    if not result["ranks"] and result["total"] is None:
        raise DdpParseError("no 'gpufabric-ddp' result line in the output (did the benchmark start? is it ddp_benchmark.py?)")
    result["ranks"].sort(key=lambda r: r.get("rank") if r.get("rank") is not None else -1)
    if result["total"] is None:  # the job died before rank 0 summed: add what the ranks said
        rates = [r["images_per_s"] for r in result["ranks"] if r.get("images_per_s") is not None]
        result["total"] = {"world_size": len(rates), "images_per_s": sum(rates), "per_gpu": sum(rates) / len(rates) if rates else None,
                           "partial": True}
    return result


def efficiency(single, many, world_size):
    """Scaling efficiency: images/s on N GPUs over N x images/s on one GPU (None when either is unknown)."""
    if not single or not many or not world_size:
        return None
    return many / (world_size * single)


def judge(result, min_images_per_s_per_gpu=None, min_efficiency=None, single_gpu_images_per_s=None):
    """Failures (sentences) against the thresholds; [] = pass."""
    failures = []
    total = result.get("total") or {}
    world = total.get("world_size")
    if total.get("partial"):
        failures.append("rank 0 printed no total: the job ended early (%d rank line(s) read)" % len(result.get("ranks") or []))
    per_gpu = total.get("per_gpu")
    if min_images_per_s_per_gpu is not None and (per_gpu is None or per_gpu < min_images_per_s_per_gpu):
        failures.append("%s images/s per GPU, expected at least %s" % ("%.1f" % per_gpu if per_gpu else "no", min_images_per_s_per_gpu))
    if min_efficiency is not None:
        eff = efficiency(single_gpu_images_per_s, total.get("images_per_s"), world)
        if eff is None:
            failures.append("scaling efficiency unknown: no single-GPU figure to compare with")
        elif eff < min_efficiency:
            failures.append("scaling efficiency %.3f on %d GPUs, expected at least %s" % (eff, world, min_efficiency))
    return failures


def _shown(value, spec, missing):
    """value formatted with spec, or missing when there is none."""
    return spec % value if value else missing


def last_words(text, limit=300):
    """The line a person needs from a run that printed no result: the last exception or error line
    (Python's "ModuleNotFoundError: No module named 'torch'"), else the last line."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b", line) or line.lower().startswith(("error", "fatal")):
            return line[:limit]
    return lines[-1][:limit] if lines else ""


def report(runs, min_images_per_s_per_gpu=None, min_efficiency=None, baseline=None):
    """runs: [{world_size, round, stdout, rc}] of the local mode (1 GPU and N GPUs, interleaved) ->
    {rows, single, many, world_size, efficiency, failures, markdown}. Medians over the rounds."""
    rows, failures, rates = [], [], {}
    for run in runs:
        try:
            parsed = parse(run.get("stdout") or "")
            total = parsed["total"]
            rates.setdefault(int(run["world_size"]), []).append(total["images_per_s"])
            rows.append({"world_size": run["world_size"], "round": run.get("round"), "images_per_s": total["images_per_s"],
                         "per_gpu": total.get("per_gpu"), "allreduce_busbw_gbps": (parsed.get("allreduce") or {}).get("busbw_gbps")})
        except DdpParseError as exc:
            said = last_words(run.get("stderr") or "") or last_words(run.get("stdout") or "")
            told = "; it said: " + said if said else ""
            failures.append("%d GPU(s), round %s: %s (exit %s%s)" % (run["world_size"], run.get("round"), exc, run.get("rc"), told))

    single = median(rates[1]) if rates.get(1) else None
    world = max(rates) if rates else None
    many = median(rates[world]) if world else None
    eff = efficiency(single, many, world) if world and world > 1 else None
    summary = {"world_size": world, "images_per_s": many, "per_gpu": many / world if many and world else None}
    if min_images_per_s_per_gpu is not None and (summary["per_gpu"] is None or summary["per_gpu"] < min_images_per_s_per_gpu):
        failures.append("%s images/s per GPU on %s GPU(s), expected at least %s" % (
            _shown(summary["per_gpu"], "%.1f", "no"), world, min_images_per_s_per_gpu))
    if min_efficiency is not None and world and world > 1 and (eff is None or eff < min_efficiency):
        failures.append("scaling efficiency %s on %s GPUs, expected at least %s" % (_shown(eff, "%.3f", "unknown"), world, min_efficiency))
    lines = ["# DDP benchmark", "", "| GPUs | round | images/s | per GPU | all_reduce busbw (GB/s) |", "| ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        lines.append("| %d | %s | %.1f | %.1f | %s |" % (row["world_size"], row["round"], row["images_per_s"], row["per_gpu"] or 0,
                                                         _shown(row["allreduce_busbw_gbps"], "%.1f", "-")))
    lines += ["", "Median images/s: 1 GPU %s, %s GPUs %s; scaling efficiency (N GPUs over N x 1 GPU): %s." % (
        _shown(single, "%.1f", "-"), world or "-", _shown(many, "%.1f", "-"), _shown(eff, "%.3f", "-"))]
    if baseline:
        lines.append(baseline)
    lines += ["", "PASSED" if not failures else "FAILED: " + "; ".join(failures)]
    return {"rows": rows, "single": single, "many": many, "world_size": world, "efficiency": eff, "failures": failures,
            "markdown": "\n".join(lines) + "\n"}
