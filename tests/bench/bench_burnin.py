"""make bench: the burn-in search strategy against its target, and rounds against N for both strategies.

Target: on model fabrics of N = 512 ... 4096 hosts with K slow hosts (0.6 of normal) and L bad links (0.5),
K + L up to 6, noise 5 % (multiplicative, 1 + N(0, 0.05)), 100 seeds per cell: every slow host and bad link
found, nothing false (no false slow host, bad link or uplink, no unresolved group), in at most
2 (K + L) log2 N + 10 rounds. With a topology (32 hosts per leaf) and one bad leaf uplink among the L
faults, the leaf is named (not its hosts, not links). Exits 1 when a cell misses the target.

    python tests/bench/bench_burnin.py [--seeds 100] [--jobs N] [--no-sweep]
"""

import argparse
import math
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import burnin_sim  # noqa: E402

SIZES = (512, 1024, 2048, 4096)
# (slow hosts K, bad host-to-host links, bad leaf uplinks): L = links + uplinks; uplink cells get a topology.
MIXES = ((1, 0, 0), (0, 1, 0), (0, 2, 0), (2, 2, 0), (0, 4, 0), (3, 3, 0), (0, 6, 0), (6, 0, 0),
         (0, 0, 1), (2, 3, 1))
HOSTS_PER_LEAF = 32
NOISE = 0.05


def _one(job):
    hosts, slow, links, uplinks, seed = job
    result = burnin_sim.simulate(argparse.Namespace(
        hosts=hosts, slow=slow, bad_links=links, bad_uplinks=uplinks, noise=NOISE, seed=seed, strategy="search",
        hosts_per_leaf=HOSTS_PER_LEAF if uplinks else 0))
    return (hosts, slow, links, uplinks), result


def target(seeds, jobs):
    print("search strategy: N hosts, K slow hosts (x0.6), L faults = bad links (x0.5) + bad leaf uplinks (x0.5, "
          "topology %d hosts per leaf), noise %d %%, %d seeds per cell" % (HOSTS_PER_LEAF, NOISE * 100, seeds))
    print("%5s %2s %5s %7s  %-20s %-17s %-10s %6s %6s %6s  %s" % (
        "N", "K", "L", "uplink", "found/faults", "missed", "false", "unres", "rounds", "bound", "verdict"))
    work = [(n, k, l, u, seed) for n in SIZES for (k, l, u) in MIXES for seed in range(1, seeds + 1)]
    cells = {}
    started = time.time()
    if jobs > 1:
        with multiprocessing.Pool(jobs) as pool:
            done = pool.imap_unordered(_one, work, chunksize=4)
            for cell, result in done:
                cells.setdefault(cell, []).append(result)
    else:
        for job in work:
            cell, result = _one(job)
            cells.setdefault(cell, []).append(result)
    ok = True
    totals = dict(faults=0, found=0, missed=0, false=0, unresolved=0)
    for n in SIZES:
        for (k, l, u) in MIXES:
            results = cells[(n, k, l, u)]
            faults = (k + l + u) * len(results)
            found = sum(r["found_slow_hosts"] + r["found_bad_links"] + r["found_bad_uplinks"] for r in results)
            missed = dict(slow=sum(r["missed_slow_hosts"] for r in results), link=sum(r["missed_bad_links"] for r in results),
                          uplink=sum(r["missed_bad_uplinks"] for r in results))
            false = dict(slow=sum(r["false_slow_hosts"] for r in results), link=sum(r["false_bad_links"] for r in results),
                         uplink=sum(r["false_bad_uplinks"] for r in results))
            unresolved = sum(r["unresolved"] for r in results)
            worst = max(r["rounds"] for r in results)
            bound = 2 * (k + l + u) * math.log2(n) + 10
            passed = found == faults and not sum(false.values()) and not unresolved and worst <= bound
            ok = ok and passed
            totals["faults"] += faults
            totals["found"] += found
            totals["missed"] += sum(missed.values())
            totals["false"] += sum(false.values())
            totals["unresolved"] += unresolved
            print("%5d %2d %5d %7s  %-20s %-17s %-10s %6d %6d %6.0f  %s" % (
                n, k, l + u, "leaf" if u else "-", "%d/%d" % (found, faults),
                "%d/%d/%d" % (missed["slow"], missed["link"], missed["uplink"]),
                "%d/%d/%d" % (false["slow"], false["link"], false["uplink"]), unresolved, worst, bound,
                "PASS" if passed else "FAIL"))
    print("missed and false: slow hosts/bad links/bad uplinks; rounds: the most of any seed; bound: 2(K+L)log2(N)+10")
    print("all cells: %(found)d of %(faults)d faults found, %(missed)d missed, %(false)d false, %(unresolved)d unresolved"
          % totals + " (%.0f s, %d processes)" % (time.time() - started, jobs))
    return ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--no-sweep", action="store_true", help="leave out the rounds-against-N table")
    args = parser.parse_args(argv)
    ok = target(args.seeds, args.jobs)
    if not args.no_sweep:
        print()
        settings = dict(burnin_sim.DEFAULTS)
        settings.update(hosts=64, slow=2, bad_links=1, noise=0.03, seed=1)
        burnin_sim.sweep(argparse.Namespace(**settings))
    print()
    print("burn-in search target: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
