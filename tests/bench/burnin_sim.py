"""Burn-in strategies on a model fabric, driving the same planning code as the burnin role.

    python tests/bench/burnin_sim.py --hosts 4096 --slow 3 --bad-links 0 --noise 0.03 --seed 1 --strategy search

The model: every host and every link has a speed factor (1.0, a slow host --slow-factor, a bad link
--link-factor); a group run (nccl-tests all_reduce across its hosts) reaches the minimum of its members'
and its links' factors, times noise (1 + N(0, noise)), times --busbw GB/s. Prints one JSON object:
strategy, hosts, rounds, runs, found_slow_hosts, found_bad_links, false_slow_hosts, false_bad_links
(and missed_*). --sweep prints rounds against N = 64 ... 4096 for both strategies instead.
"""

import argparse
import json
import os
import random
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))

from ansible_collections.gpufabric.rdma.plugins.module_utils import burnin, burnin_search  # noqa: E402

PAIRWISE_SIMULATED_UP_TO = 128  # burnin.rank() compares every link with its hosts' others: O(pairs^2)


class Fabric(object):
    def __init__(self, hosts, slow, bad_links, noise, rng, slow_factor=0.6, link_factor=0.5, busbw=100.0):
        self.hosts = ["h%04d" % n for n in range(hosts)]
        self.slow = set(rng.sample(self.hosts, slow))
        pairs = set()
        while len(pairs) < bad_links:
            a, b = sorted(rng.sample(self.hosts, 2))
            pairs.add((a, b))
        self.bad = pairs
        self.noise, self.rng = noise, rng
        self.slow_factor, self.link_factor, self.busbw = slow_factor, link_factor, busbw

    def run(self, group):
        factor = 1.0
        members = set(group)
        if members & self.slow:
            factor = min(factor, self.slow_factor)
        for a, b in self.bad:
            if a in members and b in members:
                factor = min(factor, self.link_factor)
        return self.busbw * factor * (1 + self.rng.gauss(0, self.noise))


def search(fabric, tolerance, topology=None):
    state = burnin_search.start(fabric.hosts, tolerance=tolerance, topology=topology)
    while not state["done"]:
        tests = burnin_search.next_round(state)
        if not tests:
            break
        burnin_search.record(state, dict((t["id"], fabric.run(t["hosts"])) for t in tests))
    found = burnin_search.summary(state)
    return found["rounds"], found["runs"], found["slow_hosts"], [tuple(l) for l in found["bad_links"]]


def pairwise(fabric, tolerance):
    schedule = burnin.rounds(fabric.hosts)
    results = [{"a": a, "b": b, "busbw": fabric.run([a, b])} for pairs in schedule for (a, b) in pairs]
    ranked = burnin.rank(results, tolerance)
    links = [tuple(sorted(l.split("-"))) for l in ranked["bad_links"]]
    return len(schedule), len(results), ranked["slow_hosts"], links


def simulate(args):
    rng = random.Random(args.seed)
    fabric = Fabric(args.hosts, args.slow, args.bad_links, args.noise, rng, args.slow_factor, args.link_factor)
    topology = None
    if args.leaves:
        per = max(1, args.hosts // args.leaves)
        topology = dict((h, "leaf%02d" % (n // per)) for n, h in enumerate(fabric.hosts))
    started = time.time()
    if args.strategy == "search":
        rounds, runs, slow, links = search(fabric, args.tolerance, topology)
    else:
        rounds, runs, slow, links = pairwise(fabric, args.tolerance)
    truth_slow, truth_links = fabric.slow, set(fabric.bad)
    # A bad link next to a slow host looks like the slow host: neither strategy can tell them apart.
    found_links = set(links)
    return {"strategy": args.strategy, "hosts": args.hosts, "rounds": rounds, "runs": runs,
            "found_slow_hosts": len(set(slow) & truth_slow), "found_bad_links": len(found_links & truth_links),
            "false_slow_hosts": len(set(slow) - truth_slow), "false_bad_links": len(found_links - truth_links),
            "missed_slow_hosts": len(truth_slow - set(slow)), "missed_bad_links": len(truth_links - found_links),
            "seconds": round(time.time() - started, 3)}


def sweep(args):
    print("%6s  %-8s  %7s  %7s  %s" % ("hosts", "strategy", "rounds", "runs", "found/false slow hosts (seed %d)" % args.seed))
    n = 64
    while n <= 4096:
        for strategy in ("search", "pairwise"):
            if strategy == "pairwise" and n > PAIRWISE_SIMULATED_UP_TO:
                print("%6d  %-8s  %7d  %7d  (not simulated: N-1 rounds of N/2 pairs)" % (n, strategy, n - 1, (n - 1) * (n // 2)))
                continue
            result = simulate(argparse.Namespace(**dict(vars(args), hosts=n, strategy=strategy)))
            print("%6d  %-8s  %7d  %7d  %d/%d" % (n, strategy, result["rounds"], result["runs"],
                                                  result["found_slow_hosts"], result["false_slow_hosts"]))
        n *= 2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--slow", type=int, default=1)
    parser.add_argument("--bad-links", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--strategy", choices=("search", "pairwise"), default="search")
    parser.add_argument("--tolerance", type=float, default=0.15)
    parser.add_argument("--slow-factor", type=float, default=0.6)
    parser.add_argument("--link-factor", type=float, default=0.5)
    parser.add_argument("--leaves", type=int, default=0, help="hosts per leaf switch groups (topology); 0: none")
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args(argv)
    if args.hosts < 2 or args.slow < 0 or args.slow > args.hosts or args.bad_links < 0:
        parser.error("need --hosts >= 2 and 0 <= --slow <= --hosts")
    if args.sweep:
        sweep(args)
        return 0
    print(json.dumps(simulate(args), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
