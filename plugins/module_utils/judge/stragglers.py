# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Which ranks hold a running job back, from the NCCL Inspector's figures (parse/nccl_inspector.py).

A collective ends on every rank at about the same moment - no rank finishes before the last one has sent its part -
so the Inspector's execution time of one collective (measured on each rank's GPU, kernel start to kernel end) is
short on the rank that arrived last and long on every rank that waited for it: the others' time minus its own is how
long they waited. Compared rank against rank at the same sequence number (the same collective, the same message
size, the same moment of the job), that rule does not move with the job's phases: a slower step, an evaluation, a
checkpoint change every rank's time alike. Rules (RULES, each overridable):

- **late**: at one collective, the rank with the shortest time is the last to arrive when the others' median time
  exceeds its own by at least ``min_wait_us`` and by at least ``min_wait_share`` of that median (less is launch
  jitter). A rank that is last in at least ``late_share`` of the collectives compared (at least ``min_collectives`` of
  them, each with every rank of the communicator read) is named: a GPU whose clocks are held down computes slower and
  comes late to every step's collectives, as does a process stalled by its CPU or its data. With the Prometheus
  textfiles each bucket (collective, message size, algorithm) is one comparison of its ranks' mean times
  (``min_buckets``).
- **slow**: communicators of the same shape (ranks, nodes) that ran the same collective at the same size are
  compared by their bus bandwidth (per collective the best of its ranks - the one that waited least - then the
  median); one below ``slow_ratio`` of the median of at least ``min_peer_comms`` such communicators runs slow. The
  hosts in every slow one and in no fast one are named, each with its ranks there: a NIC port trained down or a
  PCIe link at half width slows every communicator that crosses it and no other.

A communicator whose ranks agree names nobody. Each straggler carries its host (as the Inspector wrote it), process,
GPU (the nvidia-smi index of its process, where the node said which) and the NIC its rail uses (the node's GPU-to-NIC
map). Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import median

RULES = {"min_wait_us": 50.0, "min_wait_share": 0.2, "late_share": 0.5, "min_collectives": 10, "min_buckets": 1,
         "slow_ratio": 0.8, "min_peer_comms": 3}
_FRACTIONS = ("min_wait_share", "late_share", "slow_ratio")
_COUNTS = ("min_collectives", "min_buckets", "min_peer_comms")
VERDICTS = ("stragglers", "agree", "unknown")
MAX_STRAGGLERS = 64


def check_rules(rules):
    """RULES with the given ones over them; ValueError naming the rule, the value and what would be right."""
    merged = dict(RULES)
    for key, value in (rules or {}).items():
        if key not in RULES:
            raise ValueError("unknown rule %r (known: %s)" % (key, ", ".join(sorted(RULES))))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError("rule %s must be a number, got %r" % (key, value))
        if key in _FRACTIONS and not 0 < value <= 1:
            raise ValueError("rule %s must be a fraction above 0 and at most 1, got %r" % (key, value))
        if key in _COUNTS and (value < 1 or int(value) != value):
            raise ValueError("rule %s must be a whole number of at least 1, got %r" % (key, value))
        if key == "min_wait_us" and not 0 <= value < 1e9:
            raise ValueError("rule min_wait_us must be microseconds, 0 or more, got %r" % (value,))
        merged[key] = int(value) if key in _COUNTS else float(value)
    return merged


def _placement(placement, host, pid, gpu_label=None):
    """(nvidia-smi index, bus id, [NICs]) of a process: the node that wrote ``host`` (its inventory name, or a name
    in its ``hostnames``; on shared storage the one whose processes hold the pid), its GPU from the node's processes,
    else the Prometheus gpu label (a CUDA index); the NICs from the node's GPU-to-NIC map."""
    nodes = [node for key, node in sorted((placement or {}).items())
             if isinstance(node, dict) and (key == host or host in (node.get("hostnames") or []))]
    node = next((n for n in nodes if str(pid) in (n.get("processes") or {})), nodes[0] if nodes else {})
    process = (node.get("processes") or {}).get(str(pid)) if pid is not None else None
    index = bus = None
    if process:
        index, bus = process.get("index"), process.get("bus_id")
    elif gpu_label and str(gpu_label).startswith("GPU") and str(gpu_label)[3:].isdigit():
        index = int(str(gpu_label)[3:])
    nics = (node.get("gpu_nics") or {}).get("GPU%s" % index) if index is not None else None
    return index, bus, list(nics or [])


def _compare(entry, members):
    """One collective's ranks -> (last to arrive, the others' median time, its time) or None; every member read."""
    ranks = entry.get("ranks") or {}
    if len(ranks) < 2 or len(ranks) != len(members):
        return None
    times = sorted((figures[0], int(rank)) for rank, figures in ranks.items() if figures and figures[0] is not None)
    if len(times) != len(ranks) or times[0][0] == times[1][0]:
        return (None, median([t for t, r in times]), times[0][0]) if len(times) == len(ranks) else None
    return times[0][1], median([t for t, r in times[1:]]), times[0][0]


def _significant(wait, others, rules):
    return wait >= rules["min_wait_us"] and others > 0 and wait >= rules["min_wait_share"] * others


def _rank_figures(comm):
    figures = {}
    for row in comm.get("ranks") or []:
        figures[row["rank"]] = {"rank": row["rank"], "host": row.get("host"), "pid": row.get("pid"), "compared": 0,
                                "late": 0, "waits": [], "times": [], "busbw": []}
    return figures


def judge_communicator(comm, rules):
    """One communicator of parse_nccl_inspector -> {id, name, n_ranks, nnodes, ranks_seen, compared, partial,
    verdict, late: [rank], ranks: [{rank, host, pid, compared, late, late_share, wait_us, exec_us, busbw}]}."""
    ranks = _rank_figures(comm)
    members = set(ranks)
    compared = partial = 0
    for entry in comm.get("collectives") or []:
        outcome = _compare(entry, members)
        if outcome is None:
            partial += 1
            continue
        compared += 1
        late, others, own = outcome
        for rank, values in entry["ranks"].items():
            row = ranks[int(rank)]
            row["compared"] += 1
            row["times"].append(values[0])
            if values[1] is not None:
                row["busbw"].append(values[1])
        if late is not None and _significant(others - own, others, rules):
            ranks[late]["late"] += 1
            ranks[late]["waits"].append(others - own)
    out = []
    for rank in sorted(ranks):
        row = ranks[rank]
        out.append({"rank": rank, "host": row["host"], "pid": row["pid"], "compared": row["compared"],
                    "late": row["late"], "late_share": _share(row["late"], row["compared"]),
                    "wait_us": median(row["waits"]), "exec_us": median(row["times"]), "busbw": median(row["busbw"])})
    late = [r["rank"] for r in out if r["compared"] >= rules["min_collectives"]
            and r["late_share"] is not None and r["late_share"] >= rules["late_share"]]
    missing = (comm.get("n_ranks") or len(members)) - len(members)
    verdict = ("stragglers" if late else "too few" if compared < rules["min_collectives"]
               else "partial" if missing > 0 else "agree")
    return {"id": comm.get("id"), "name": comm.get("name"), "n_ranks": comm.get("n_ranks"), "nnodes": comm.get("nnodes"),
            "ranks_seen": len(members), "ranks_missing": max(0, missing), "compared": compared, "partial": partial,
            "verdict": verdict, "late": late, "ranks": out}


def _share(part, whole):
    return round(float(part) / whole, 4) if whole else None


def comm_label(judged):
    """A communicator as a person reads it: its name where the job gave one, else its hash."""
    name = judged.get("name")
    return name if name and name != "unknown" else "communicator %s" % judged.get("id")


def _late_line(judged, row, gpu, nics):
    figures = (row["late"], row["compared"], comm_label(judged), round(100 * row["late_share"]), row["wait_us"] or 0,
               row["exec_us"] or 0, "" if gpu is None else "; GPU %s" % gpu,
               "; its rail's NIC %s" % ", ".join(nics) if nics else "")
    return ("last to arrive at %d of %d collectives of %s compared (%d%%); the others waited a median %.0f us for it "
            "(its own time %.0f us)%s%s" % figures)


def _straggler(judged, row, kind, why, placement, gpu_label=None):
    index, bus, nics = _placement(placement, row.get("host"), row.get("pid"), gpu_label)
    return {"comm": judged.get("id"), "comm_name": judged.get("name"), "rank": row.get("rank"), "node": row.get("host"),
            "pid": row.get("pid"), "nvml_gpu": index, "gpu_bus_id": bus, "gpu": gpu_label, "nics": nics, "kind": kind,
            "why": why, "late_share": row.get("late_share"), "wait_us": row.get("wait_us"),
            "exec_us": row.get("exec_us"), "busbw": row.get("busbw"), "compared": row.get("compared")}


def _comm_bandwidth(comm, rules):
    """{(op, size): median over its collectives of the best rank's bus bandwidth} with enough collectives."""
    best = {}
    for entry in comm.get("collectives") or []:
        values = [f[1] for f in (entry.get("ranks") or {}).values() if f and f[1] is not None]
        if values:
            best.setdefault((entry.get("op"), entry.get("size")), []).append(max(values))
    return dict((key, median(values)) for key, values in best.items() if len(values) >= rules["min_collectives"])


def slow_communicators(communicators, rules):
    """The 'slow' rule over same-shaped communicators -> [{shape, op, size, slow: [ids], fast: [ids], busbw, median,
    hosts: the hosts in every slow one and no fast one}]."""
    groups = {}
    for comm in communicators:
        hosts = set(r.get("host") for r in comm.get("ranks") or [])
        for (op, size), busbw in _comm_bandwidth(comm, rules).items():
            key = (comm.get("n_ranks"), comm.get("nnodes"), op, size)
            groups.setdefault(key, []).append((comm.get("id"), busbw, hosts))
    found = []
    for key in sorted(groups, key=lambda k: tuple(str(p) for p in k)):
        members = groups[key]
        if len(members) < rules["min_peer_comms"]:
            continue
        middle = median([b for i, b, h in members])
        slow = [m for m in members if m[1] < rules["slow_ratio"] * middle]
        if not slow:
            continue
        fast_hosts = set().union(*[h for i, b, h in members if (i, b, h) not in slow])
        common = set.intersection(*[set(h) for i, b, h in slow]) - fast_hosts
        found.append({"n_ranks": key[0], "nnodes": key[1], "op": key[2], "size": key[3], "median": middle,
                      "slow": dict((i, b) for i, b, h in slow), "fast": len(members) - len(slow),
                      "hosts": sorted(h for h in common if h)})
    return found


def bucket_groups(buckets):
    """The Prometheus buckets of collectives as communicators: {(job, comm_id or comm_name, nranks, n_nodes):
    {(collective, message_size, algo_proto): {(node, gpu, comm_rank): (exec_us, busbw)}}} - the textfiles of NCCL
    2.30 name no communicator but by its name, nor any rank (comm_rank None); a newer plugin's do."""
    groups = {}
    for bucket in buckets or []:
        if bucket.get("kind") != "coll" or bucket.get("exec_us") is None:
            continue
        comm = (bucket.get("slurm_job_id"), bucket.get("comm_id") or bucket.get("comm_name"), bucket.get("nranks"),
                bucket.get("n_nodes"))
        size = (bucket.get("collective"), bucket.get("message_size"), bucket.get("algo_proto"))
        member = (bucket.get("node"), bucket.get("gpu"), bucket.get("comm_rank"))
        groups.setdefault(comm, {}).setdefault(size, {})[member] = (bucket["exec_us"], bucket.get("busbw"))
    return groups


def judge_buckets(key, sizes, rules):
    """One Prometheus 'communicator' (job, comm_name, nranks, n_nodes) -> judged like judge_communicator, its ranks
    named by node and GPU (the textfiles carry no rank)."""
    members = sorted(set(member for ranks in sizes.values() for member in ranks),
                     key=lambda m: (str(m[0]), str(m[1]), str(m[2])))
    rows = dict((m, {"rank": int(m[2]) if str(m[2] or "").isdigit() else None, "host": m[0], "gpu": m[1],
                     "compared": 0, "late": 0, "waits": [], "times": [], "busbw": []}) for m in members)
    compared = 0
    for size in sorted(sizes, key=lambda s: tuple(str(p) for p in s)):
        entry = {"ranks": dict((str(index), list(sizes[size][m]) + [None]) for index, m in enumerate(members)
                               if m in sizes[size])}
        outcome = _compare(entry, set(range(len(members))))
        if outcome is None:
            continue
        compared += 1
        late, others, own = outcome
        for index, values in entry["ranks"].items():
            row = rows[members[int(index)]]
            row["compared"] += 1
            row["times"].append(values[0])
            if values[1] is not None:
                row["busbw"].append(values[1])
        if late is not None and _significant(others - own, others, rules):
            rows[members[late]]["late"] += 1
            rows[members[late]]["waits"].append(others - own)
    out = [{"rank": r["rank"], "host": r["host"], "gpu": r["gpu"], "pid": None, "compared": r["compared"], "late": r["late"],
            "late_share": _share(r["late"], r["compared"]), "wait_us": median(r["waits"]), "exec_us": median(r["times"]),
            "busbw": median(r["busbw"])} for r in (rows[m] for m in members)]
    late = [index for index, r in enumerate(out) if r["compared"] >= rules["min_buckets"]
            and r["late_share"] is not None and r["late_share"] >= rules["late_share"]]
    nranks = int(key[2]) if str(key[2] or "").isdigit() else None
    missing = (nranks or len(members)) - len(members)
    verdict = ("stragglers" if late else "too few" if compared < rules["min_buckets"]
               else "partial" if missing > 0 else "agree")
    return {"id": "%s (job %s)" % (key[1], key[0]), "name": key[1], "job": key[0], "n_ranks": nranks,
            "nnodes": int(key[3]) if str(key[3] or "").isdigit() else None, "ranks_seen": len(members),
            "ranks_missing": max(0, missing), "compared": compared, "partial": 0, "verdict": verdict, "late": late,
            "ranks": out, "source": "prom"}


def _named_late(judged, placement):
    named = []
    for index in judged["late"]:
        row = judged["ranks"][index] if judged.get("source") == "prom" else \
            next(r for r in judged["ranks"] if r["rank"] == index)
        index_gpu, ignored, nics = _placement(placement, row.get("host"), row.get("pid"), row.get("gpu"))
        named.append(_straggler(judged, row, "late", _late_line(judged, row, index_gpu, nics), placement, row.get("gpu")))
    return named


def _named_slow(found, judged_by_id, placement):
    named = []
    for group in found:
        for comm_id, busbw in sorted(group["slow"].items()):
            judged = judged_by_id.get(comm_id) or {"id": comm_id, "ranks": []}
            for row in judged["ranks"]:
                if row.get("host") not in group["hosts"]:
                    continue
                why = ("its communicator ran %s of %s bytes at %.1f GB/s, %d%% of the %.1f GB/s median of %d "
                       "communicators of %s ranks; %s is in every slow one and in no fast one" % (
                           group["op"], group["size"], busbw, round(100 * busbw / group["median"]), group["median"],
                           len(group["slow"]) + group["fast"], group["n_ranks"], row.get("host")))
                named.append(_straggler(judged, row, "slow", why, placement))
    return named


def nccl_stragglers(parsed, rules=None, placement=None):
    """parse_nccl_inspector's result -> {verdict, summary, stragglers, stragglers_left_out, communicators,
    slow_communicators, rules, dropped, problems}. ``placement``: {host: {processes: {pid: {index, bus_id}},
    gpu_nics: {GPU0: [mlx5_0]}}} as the nodes read it (the nccl_inspector module; discovery's topology)."""
    rules = check_rules(rules)
    comms = [judge_communicator(c, rules) for c in parsed.get("communicators") or []]
    groups = bucket_groups(parsed.get("buckets"))
    comms += [judge_buckets(key, groups[key], rules) for key in sorted(groups, key=lambda k: tuple(str(p) for p in k))]
    for comm in comms:
        for row in comm["ranks"] if comm.get("source") != "prom" else ():
            index = _placement(placement, row.get("host"), row.get("pid"))[0]
            row["gpu"] = None if index is None else "GPU%s" % index
    found = slow_communicators(parsed.get("communicators") or [], rules)
    stragglers = [s for c in comms for s in _named_late(c, placement)]
    stragglers += _named_slow(found, dict((c["id"], c) for c in comms), placement)
    result = {"stragglers": stragglers[:MAX_STRAGGLERS], "stragglers_left_out": max(0, len(stragglers) - MAX_STRAGGLERS),
              "communicators": comms, "slow_communicators": found, "rules": rules,
              "dropped": dict(parsed.get("dropped") or {}), "problems": list(parsed.get("problems") or [])}
    result.update(_verdict(comms, found, stragglers, rules))
    return result


def _verdict(comms, found, stragglers, rules):
    if stragglers:
        ranks = sorted(set("%s rank %s" % (s["node"], s["rank"]) if s["rank"] is not None
                           else "%s %s" % (s["node"], s["gpu"]) for s in stragglers))
        return {"verdict": "stragglers", "summary": "%d straggler(s): %s" % (len(ranks), ", ".join(ranks[:8]))}
    if not comms:
        return {"verdict": "unknown", "summary": "no collective of the job was read: nothing to compare"}
    judged = [c for c in comms if c["verdict"] in ("agree", "partial")]
    partial = [c for c in judged if c["verdict"] == "partial"]
    if not judged:
        return {"verdict": "unknown", "summary": "too few collectives to compare: %s" % "; ".join(
            "%s %d compared of the %d needed" % (comm_label(c), c["compared"], rules["min_collectives"]
                                                 if c.get("source") != "prom" else rules["min_buckets"])
            for c in comms[:4])}
    if partial:
        return {"verdict": "unknown", "summary": "the ranks read agree, but %s" % "; ".join(
            "%d of the %s ranks of %s were not read" % (c["ranks_missing"], c["n_ranks"], comm_label(c))
            for c in partial[:4])}
    slow = " (%d group(s) of communicators with a slow one but no host in common)" % len(found) if found else ""
    return {"verdict": "agree", "summary": "the ranks of %d communicator(s) agree: none comes late%s" % (
        len(judged), slow)}
