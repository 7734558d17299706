# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Measured NCCL tuning, as pure decisions over nccl-tests results.

The nccl_tune role measures every candidate setting against NCCL's defaults in one run, interleaved
(default, candidate, default, ...) and repeated, per collective and size. This module decides:

- ``spread``: how much the defaults vary from run to run at each size, in the same run;
- ``judge``: a candidate is kept when its gain (geometric mean over the judged sizes, 16 MiB to 1 GiB by
  default, of candidate busbw / default busbw, medians of the repeats) beats the defaults' own spread,
  and it loses no more than ``max_loss`` (2 %) at any size of at least ``guard_from`` (1 MiB);
- ``combine``: the winners' variables together (one value per variable: the better candidate's);
- the combination is then measured again (``judge`` once more) and kept only if it still passes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import ceiling
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_run
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import median

MIB = 1 << 20
GIB = 1 << 30
RULE_DEFAULTS = {"window": [16 * MIB, GIB], "guard_from": MIB, "max_loss": 0.02, "min_gain": 0.0}
_NAME = re.compile(r"^NCCL_[A-Z0-9_]{1,64}$")
_VALUE = re.compile(r"^[A-Za-z0-9_.,:=+-]{1,128}$")
DEFAULT = "default"


def candidates(has_rdma, gpus):
    """The search space: one setting per candidate, named after it."""
    space = [
        ("NCCL_MIN_NCHANNELS", "16"), ("NCCL_MIN_NCHANNELS", "32"), ("NCCL_MAX_NCHANNELS", "16"),
        ("NCCL_PROTO", "Simple"), ("NCCL_PROTO", "LL128,Simple"), ("NCCL_ALGO", "Ring"), ("NCCL_ALGO", "Tree"),
        ("NCCL_BUFFSIZE", "8388608"), ("NCCL_BUFFSIZE", "16777216"),
    ]
    if has_rdma:
        space += [("NCCL_IB_QPS_PER_CONNECTION", "2"), ("NCCL_IB_QPS_PER_CONNECTION", "4"),
                  ("NCCL_NCHANNELS_PER_NET_PEER", "2"), ("NCCL_NCHANNELS_PER_NET_PEER", "4"),
                  ("NCCL_NET_GDR_LEVEL", "PHB"), ("NCCL_NET_GDR_LEVEL", "SYS")]
    if gpus < 3:  # Tree needs 3 ranks or more to differ from Ring
        space = [s for s in space if s != ("NCCL_ALGO", "Tree")]
    return [{"name": "%s=%s" % (k, v), "env": {k: v}} for k, v in space]


def check_candidates(items):
    """[{name, env}] checked: names unique, variables NCCL_*, values one plain word (they reach a command line)."""
    if not isinstance(items, list) or not items:
        raise ValueError("candidates must be a non-empty list of {name, env}")
    names = set()
    for n, item in enumerate(items):
        where = "candidate %d" % (n + 1)
        if not isinstance(item, dict) or not isinstance(item.get("env"), dict) or not item["env"]:
            raise ValueError("%s must be a mapping with a non-empty env, got %r" % (where, item))
        name = item.get("name") or ",".join("%s=%s" % kv for kv in sorted(item["env"].items()))
        if name in names or name == DEFAULT:
            raise ValueError("%s: the name %r is used twice (or is %r)" % (where, name, DEFAULT))
        names.add(name)
        for key, value in item["env"].items():
            if not _NAME.match(str(key)):
                raise ValueError("%s: %r is not an NCCL_* variable name" % (where, key))
            if not _VALUE.match(str(value)):
                raise ValueError("%s: %s=%r is not one plain word" % (where, key, value))
        item["name"] = name
    return items


def busbw_by_size(result):
    """{size: out-of-place busbw} of one parsed nccl-tests result."""
    table = {}
    for row in result.get("rows") or []:
        value = (row.get("out_of_place") or {}).get("busbw")
        if value is not None:
            table[row["size"]] = value
    return table


def run_failure(run, parsed=None):
    """Why a runner record ({rc, stdout, stderr}) is not a measurement (None when it is): the one verdict of a run
    (judge/nccl_run.py) - not run, exited non-zero, no result rows, nccl-tests' own checks failed, nan/inf.
    Such a run is counted and shown, never used."""
    read = nccl_tests.parse if parsed is None else (lambda text: parsed)
    command = run.get("command") or " ".join(str(a) for a in run.get("cmd") or [])
    return nccl_run.verdict({"rc": run.get("rc"), "output": run.get("stdout"), "stderr": run.get("stderr"),
                             "command": command}, read)["error"]


def collect(runs):
    """Runner records [{collective, candidate, repeat, stdout, rc}] -> {collective: {candidate: {size: [busbw, ...]}}}.

    Only measurements count: a run that failed (run_failure) is left out here and listed in the report."""
    table = {}
    for run in runs:
        try:
            parsed = nccl_tests.parse(run.get("stdout") or "")
        except ValueError:
            continue
        if run_failure(run, parsed):
            continue
        for size, value in busbw_by_size(parsed).items():
            table.setdefault(run["collective"], {}).setdefault(run["candidate"], {}).setdefault(size, []).append(value)
    return table


def spread(samples):
    """{size: [busbw, ...]} of the defaults -> {size: (max - min) / median} (0 with fewer than two runs)."""
    out = {}
    for size, values in samples.items():
        middle = median(values)
        out[size] = (max(values) - min(values)) / middle if len(values) > 1 and middle else 0.0
    return out


def compare(default, candidate, rules=None):
    """One candidate against the defaults of one collective -> the numbers the decision rests on."""
    rules = dict(RULE_DEFAULTS, **(rules or {}))
    low, high = rules["window"]
    ratios = {}
    for size in sorted(set(default) & set(candidate)):
        base, tuned = median(default[size]), median(candidate[size])
        if base and tuned is not None:
            ratios[size] = tuned / base
    window = [ratios[s] for s in ratios if low <= s <= high]
    guarded = dict((s, r) for s, r in ratios.items() if s >= rules["guard_from"])
    noise = spread(default)
    window_noise = max([noise[s] for s in noise if low <= s <= high] or [0.0])
    gain = math.exp(sum(math.log(r) for r in window) / len(window)) if window and all(r > 0 for r in window) else None
    worst = min(guarded.items(), key=lambda kv: kv[1]) if guarded else (None, None)
    return {"gain": gain, "noise": window_noise, "worst_size": worst[0], "worst_ratio": worst[1],
            "ratios": ratios, "sizes_judged": len(window)}


def verdict(numbers, rules=None):
    """(kept, why) for the numbers of compare()."""
    rules = dict(RULE_DEFAULTS, **(rules or {}))
    if numbers["gain"] is None:
        return False, "no size in the judged window was measured by both"
    if numbers["worst_ratio"] is not None and numbers["worst_ratio"] < 1 - rules["max_loss"]:
        return False, "loses %.1f %% at %s (more than %.0f %%)" % (
            (1 - numbers["worst_ratio"]) * 100, size_label(numbers["worst_size"]), rules["max_loss"] * 100)
    needed = max(numbers["noise"], rules["min_gain"])
    if numbers["gain"] - 1 <= needed:
        return False, "gain %+.1f %% does not beat the defaults' run-to-run spread of %.1f %%" % (
            (numbers["gain"] - 1) * 100, needed * 100)
    return True, "gain %+.1f %% beats the spread of %.1f %%; worst %+.1f %% at %s" % (
        (numbers["gain"] - 1) * 100, needed * 100, ((numbers["worst_ratio"] or 1) - 1) * 100, size_label(numbers["worst_size"]))


def judge(table, rules=None):
    """{collective: {candidate: {size: [busbw]}}} -> {collective: {candidate: {kept, why, gain, ...}}}."""
    decisions = {}
    for collective, by_candidate in sorted(table.items()):
        default = by_candidate.get(DEFAULT) or {}
        for name, samples in sorted(by_candidate.items()):
            if name == DEFAULT:
                continue
            numbers = compare(default, samples, rules)
            kept, why = verdict(numbers, rules)
            numbers.update(kept=kept, why=why)
            numbers["ratios"] = dict((str(k), round(v, 4)) for k, v in numbers["ratios"].items())
            decisions.setdefault(collective, {})[name] = numbers
    return decisions


def combine(decisions, candidate_env):
    """The winners' variables together: a candidate is a winner when it is kept for every collective it was
    measured on; where two winners set one variable, the one with the higher mean gain wins."""
    scores = {}
    for collective, by_candidate in decisions.items():
        for name, numbers in by_candidate.items():
            scores.setdefault(name, []).append(numbers)
    winners = []
    for name, all_numbers in scores.items():
        if all(n["kept"] for n in all_numbers):
            winners.append((sum(n["gain"] for n in all_numbers) / len(all_numbers), name))
    env = {}
    chosen = []
    for gain, name in sorted(winners, reverse=True):
        setting = candidate_env[name]
        if any(key in env for key in setting):
            continue
        env.update(setting)
        chosen.append(name)
    return env, chosen


def size_label(size):
    if size is None:
        return "-"
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return "%d %s" % (size // scale, unit)
    return "%d B" % size


def geomean_ratio(table, collective, name, rules=None):
    """The confirmation figure: geometric mean of tuned/default busbw over the window, and the worst size."""
    by_candidate = table.get(collective) or {}
    return compare(by_candidate.get(DEFAULT) or {}, by_candidate.get(name) or {}, rules)


def hardware_check(table, expected):
    """The tuner's sanity check: NCCL's defaults against what the hardware carries, per collective (``expected``:
    {collective: busbw_ceiling's result}). A default far below it means the node is broken, not untuned: no setting
    found on it is worth keeping. -> {collective: {busbw, bound, size, measured, ratio, failure, note}}."""
    out = {}
    for collective, found in sorted((expected or {}).items()):
        if not isinstance(found, dict):
            continue
        sizes = (table.get(collective) or {}).get(DEFAULT) or {}
        size = max(sizes) if sizes else None
        measured = median(sizes[size]) if size is not None else None
        failure, note, ratio = ceiling.judge(size, measured, found, found.get("fraction"))
        out[collective] = {"busbw": found.get("busbw"), "bound": found.get("bound") or found.get("why"), "size": size,
                           "measured": measured, "ratio": None if ratio is None else round(ratio, 3),
                           "failure": failure, "note": note}
    return out


def report(search, confirm=None, rules=None, candidate_env=None, expected=None):
    """The whole tuning result from the runner records: search decisions, the combined environment and,
    when a confirmation run was made, its per-collective figures and the final environment. ``expected``
    ({collective: busbw_ceiling's result}): the defaults are set against what the hardware carries (``hardware``)."""
    rules = dict(RULE_DEFAULTS, **(rules or {}))
    table = collect(search.get("runs") or [])
    decisions = judge(table, rules)
    candidate_env = candidate_env or dict((r["candidate"], r.get("env") or {}) for r in search.get("runs") or [])
    env, chosen = combine(decisions, candidate_env)
    out = {"rules": rules, "decisions": decisions, "combined_env": env, "winners": chosen,
           "search": {"runs": len(search.get("runs") or []), "skipped": search.get("skipped", 0),
                      "elapsed_s": search.get("elapsed_s"),
                      "failed_runs": [dict([(k, r.get(k)) for k in ("collective", "candidate", "repeat", "rc")]
                                           + [("why", run_failure(r))])
                                      for r in search.get("runs") or [] if run_failure(r)]},
           "env": {}, "confirmed": None, "table": _table(table), "hardware": hardware_check(table, expected)}
    if confirm is not None:
        confirm_table = collect(confirm.get("runs") or [])
        names = sorted(set(r["candidate"] for r in confirm.get("runs") or []) - {DEFAULT})
        figures = {}
        for name in names:
            per = {}
            for collective in sorted(confirm_table):
                numbers = compare((confirm_table[collective].get(DEFAULT) or {}),
                                  (confirm_table[collective].get(name) or {}), rules)
                kept, why = verdict(numbers, rules)
                per[collective] = {"gain": numbers["gain"], "worst_ratio": numbers["worst_ratio"],
                                   "worst_size": numbers["worst_size"], "noise": numbers["noise"], "kept": kept, "why": why,
                                   "ratios": dict((str(k), round(v, 4)) for k, v in numbers["ratios"].items())}
            figures[name] = per
        passing = [(min(f["gain"] or 0 for f in per.values()), name) for name, per in figures.items()
                   if per and all(f["kept"] for f in per.values())]
        out["confirmed"] = {"figures": figures, "table": _table(confirm_table),
                            "runs": len(confirm.get("runs") or []), "elapsed_s": confirm.get("elapsed_s")}
        if passing:
            best = max(passing)[1]
            out["env"] = next(r["env"] for r in confirm["runs"] if r["candidate"] == best)
            out["confirmed"]["chosen"] = best
    return out


def _table(table):
    """JSON-friendly medians: {collective: {candidate: {size: median busbw}}} with string sizes."""
    return dict((c, dict((n, dict((str(s), median(v)) for s, v in sorted(sizes.items())))
                         for n, sizes in cands.items())) for c, cands in table.items())


def markdown(result):
    """tune.md: the decision per candidate, then the confirmation, in words a person can check."""
    lines = ["# NCCL tuning", "",
             "Rule: keep a setting when its geometric-mean busbw gain over %s-%s beats the defaults' run-to-run "
             "spread measured in the same run, and it loses at most %.0f %% at any size from %s." % (
                 size_label(result["rules"]["window"][0]), size_label(result["rules"]["window"][1]),
                 result["rules"]["max_loss"] * 100, size_label(result["rules"]["guard_from"])), "",
             "## Search (%d runs: %d measured, %d failed; %s s%s)" % (
                 result["search"]["runs"], result["search"]["runs"] - len(result["search"]["failed_runs"]),
                 len(result["search"]["failed_runs"]), result["search"]["elapsed_s"],
                 ", %d skipped by the time budget" % result["search"]["skipped"] if result["search"]["skipped"] else ""), "",
             "| collective | candidate | gain | spread | worst | kept | why |", "| --- | --- | ---: | ---: | ---: | --- | --- |"]
    for collective, by_candidate in sorted(result["decisions"].items()):
        for name, n in sorted(by_candidate.items()):
            lines.append("| %s | `%s` | %s | %.1f %% | %s | %s | %s |" % (
                collective, name, "%+.1f %%" % ((n["gain"] - 1) * 100) if n["gain"] else "-", n["noise"] * 100,
                "%+.1f %% at %s" % ((n["worst_ratio"] - 1) * 100, size_label(n["worst_size"])) if n["worst_ratio"] else "-",
                "yes" if n["kept"] else "no", n["why"]))
    failed = result["search"]["failed_runs"]
    if failed:
        lines += ["", "Failed runs (left out of every decision above):", ""]
        lines += ["- %s `%s` repeat %s: %s" % (f["collective"], f["candidate"], f["repeat"], f["why"]) for f in failed[:20]]
        if len(failed) > 20:
            lines.append("- and %d more" % (len(failed) - 20))
    lines += ["", "Winners combined: %s" % (", ".join("`%s`" % w for w in result["winners"]) or "none"), ""]
    hardware = result.get("hardware") or {}
    if hardware:
        lines += ["## NCCL's defaults against what the hardware carries", ""]
        for collective, h in sorted(hardware.items()):
            if h["busbw"] is None:
                lines.append("- %s: not known (%s)" % (collective, h["bound"]))
            elif h["failure"]:
                lines.append("- %s: **BROKEN, not untuned**: the defaults' median %s; no setting found on this node is "
                             "worth keeping - fix it first (summary of gpufabric.rdma.validate)" % (collective, h["failure"]))
            else:
                lines.append("- %s: the defaults reach %s of %g GB/s (%s)%s" % (
                    collective, "-" if h["ratio"] is None else "%.0f %%" % (h["ratio"] * 100), h["busbw"], h["bound"],
                    "; " + h["note"] if h["note"] else ""))
        lines.append("")
    if result.get("confirmed"):
        lines += ["## Fresh comparison (%d runs, %s s)" % (result["confirmed"]["runs"], result["confirmed"]["elapsed_s"]), "",
                  "| environment | collective | geomean gain | worst size >= %s | kept |" % size_label(result["rules"]["guard_from"]),
                  "| --- | --- | ---: | ---: | --- |"]
        for name, per in sorted(result["confirmed"]["figures"].items()):
            for collective, f in sorted(per.items()):
                lines.append("| `%s` | %s | %s | %s | %s |" % (
                    name, collective, "%.3f" % f["gain"] if f["gain"] else "-",
                    "%.3f at %s" % (f["worst_ratio"], size_label(f["worst_size"])) if f["worst_ratio"] else "-",
                    "yes" if f["kept"] else "no: " + f["why"]))
        lines.append("")
    lines.append("Environment to use: %s" % (" ".join("%s=%s" % kv for kv in sorted(result["env"].items()))
                                             or "NCCL's defaults (no setting beat them)"))
    return "\n".join(lines) + "\n"


def svg_series(result):
    """Series for chart.bandwidth_svg: default and tuned median busbw per size, per collective."""
    table = (result.get("confirmed") or {}).get("table") or result["table"]
    chosen = (result.get("confirmed") or {}).get("chosen")
    series = []
    for collective, by_candidate in sorted(table.items()):
        for name in [DEFAULT] + ([chosen] if chosen else []):
            sizes = by_candidate.get(name) or {}
            rows = [{"size": int(s), "out_of_place": {"busbw": v, "algbw": None}} for s, v in sorted(sizes.items(), key=lambda kv: int(kv[0]))]
            if rows:
                series.append({"label": "%s %s" % (collective, "default" if name == DEFAULT else "tuned"), "rows": rows})
    return series
