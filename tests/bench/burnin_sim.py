"""Burn-in strategies on a model fabric, driving the same planning code as the burnin role.

    python tests/bench/burnin_sim.py --hosts 4096 --slow 3 --bad-links 2 --noise 0.05 --seed 1 --strategy search
    python tests/bench/burnin_sim.py --hosts 1024 --hosts-per-leaf 32 --bad-uplinks 1 --slow 1 --noise 0.05

The model: a slow host (--slow-factor) slows every run it is in; a bad link (--link-factor) between two
hosts slows every run that holds both; a bad leaf uplink (--uplink-factor) slows every run that holds a
host of that leaf and a host of another leaf (every path across it). A run reaches the worst of these
factors, times noise (multiplicative: 1 + N(0, noise), or uniform in +-noise with --noise-model uniform),
times --busbw GB/s. With --hosts-per-leaf the search is given the topology ({host: leaf}, or
{host: {leaf, spine}} with --leaves-per-spine).

Faults are placed where a burn-in can see them: bad links between hosts that are not slow and that do not
cross a bad uplink (such a link is hidden behind the slower fault in every run that holds it).

Prints one JSON object: strategy, hosts, rounds, runs, found/missed/false slow hosts, bad links and bad
uplinks, unresolved groups. --sweep prints rounds against N = 64 ... 4096 for both strategies instead.
"""

import argparse
import json
import os
import random
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search_report  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import burnin_search, burnin_search_record  # noqa: E402

PAIRWISE_SIMULATED_UP_TO = 128  # burnin.rank() compares every link with its hosts' others: O(pairs^2)
DEFAULTS = {"hosts": 64, "slow": 1, "bad_links": 0, "bad_uplinks": 0, "noise": 0.03, "noise_model": "gauss",
            "seed": 1, "strategy": "search", "tolerance": 0.15, "slow_factor": 0.6, "link_factor": 0.5,
            "uplink_factor": 0.5, "hosts_per_leaf": 0, "leaves_per_spine": 0, "leaves": 0}


class Fabric(object):
    def __init__(self, hosts, slow, bad_links, noise, rng, slow_factor=0.6, link_factor=0.5, busbw=100.0,
                 hosts_per_leaf=0, bad_uplinks=0, uplink_factor=0.5, noise_model="gauss", leaves_per_spine=0):
        self.hosts = ["h%04d" % n for n in range(hosts)]
        self.leaf_of = {}
        if hosts_per_leaf:
            self.leaf_of = dict((h, "leaf%03d" % (n // hosts_per_leaf)) for n, h in enumerate(self.hosts))
        leaves = sorted(set(self.leaf_of.values()))
        if bad_uplinks > len(leaves):
            raise ValueError("%d bad uplinks need as many leaves, the fabric has %d" % (bad_uplinks, len(leaves)))
        self.bad_uplinks = set(rng.sample(leaves, bad_uplinks))
        self.slow = set(rng.sample(self.hosts, slow))
        healthy = [h for h in self.hosts if h not in self.slow]
        pairs = set()
        while len(pairs) < bad_links:
            a, b = sorted(rng.sample(healthy, 2))
            if self._crosses_bad_uplink([a, b]):
                continue
            pairs.add((a, b))
        self.bad = pairs
        self.noise, self.noise_model, self.rng = noise, noise_model, rng
        self.slow_factor, self.link_factor, self.uplink_factor, self.busbw = slow_factor, link_factor, uplink_factor, busbw
        self.leaves_per_spine = leaves_per_spine
        self.bad_leaf_hosts = dict((leaf, set(h for h in self.hosts if self.leaf_of[h] == leaf)) for leaf in self.bad_uplinks)

    def _crosses_bad_uplink(self, group):
        leaves = set(self.leaf_of.get(h) for h in group)
        return len(leaves) > 1 and bool(leaves & self.bad_uplinks)

    def topology(self):
        if not self.leaf_of:
            return None
        if not self.leaves_per_spine:
            return dict(self.leaf_of)
        return dict((h, {"leaf": leaf, "spine": "spine%02d" % (int(leaf[4:]) // self.leaves_per_spine)})
                    for h, leaf in self.leaf_of.items())

    def factor(self, group):
        members = set(group)
        factor = 1.0
        if any(h in members for h in self.slow):
            factor = min(factor, self.slow_factor)
        for a, b in self.bad:
            if a in members and b in members:
                factor = min(factor, self.link_factor)
        for hosts in self.bad_leaf_hosts.values():
            inside = len(members & hosts)
            if inside and inside < len(members):
                factor = min(factor, self.uplink_factor)
        return factor

    def run(self, group):
        if self.noise_model == "uniform":
            noise = self.rng.uniform(-self.noise, self.noise)
        else:
            noise = self.rng.gauss(0, self.noise)
        return self.busbw * self.factor(group) * (1 + noise)


def search(fabric, tolerance, topology=None):
    state = burnin_search.start(fabric.hosts, tolerance=tolerance, topology=topology)
    while not state["done"]:
        tests = burnin_search.next_round(state)
        if not tests:
            break
        burnin_search_record.record(state, dict((t["id"], fabric.run(t["hosts"])) for t in tests))
    found = burnin_search_report.summary(state)
    return (found["rounds"], found["runs"], found["slow_hosts"], [tuple(link) for link in found["bad_links"]],
            found.get("bad_uplinks", []), found["unresolved"])


def pairwise(fabric, tolerance):
    schedule = burnin.rounds(fabric.hosts)
    results = [{"a": a, "b": b, "busbw": fabric.run([a, b])} for pairs in schedule for (a, b) in pairs]
    ranked = burnin.rank(results, tolerance)
    links = [tuple(sorted(link.split("-"))) for link in ranked["bad_links"]]
    return len(schedule), len(results), ranked["slow_hosts"], links, [], []


def simulate(args):
    """One search (or pairwise burn-in) on a fresh fabric -> counts of what was found, missed and false."""
    args = argparse.Namespace(**dict(DEFAULTS, **vars(args)))
    rng = random.Random(args.seed)
    per_leaf = args.hosts_per_leaf or (max(1, args.hosts // args.leaves) if args.leaves else 0)
    fabric = Fabric(args.hosts, args.slow, args.bad_links, args.noise, rng, args.slow_factor, args.link_factor,
                    hosts_per_leaf=per_leaf, bad_uplinks=args.bad_uplinks, uplink_factor=args.uplink_factor,
                    noise_model=args.noise_model, leaves_per_spine=args.leaves_per_spine)
    started = time.time()
    if args.strategy == "search":
        rounds, runs, slow, links, uplinks, unresolved = search(fabric, args.tolerance, fabric.topology())
    else:
        rounds, runs, slow, links, uplinks, unresolved = pairwise(fabric, args.tolerance)
    truth_slow, truth_links, truth_uplinks = fabric.slow, set(fabric.bad), fabric.bad_uplinks
    found_links, found_uplinks = set(links), set(uplinks)
    return {"strategy": args.strategy, "hosts": args.hosts, "rounds": rounds, "runs": runs,
            "found_slow_hosts": len(set(slow) & truth_slow), "found_bad_links": len(found_links & truth_links),
            "found_bad_uplinks": len(found_uplinks & truth_uplinks),
            "false_slow_hosts": len(set(slow) - truth_slow), "false_bad_links": len(found_links - truth_links),
            "false_bad_uplinks": len(found_uplinks - truth_uplinks), "unresolved": len(unresolved),
            "missed_slow_hosts": len(truth_slow - set(slow)), "missed_bad_links": len(truth_links - found_links),
            "missed_bad_uplinks": len(truth_uplinks - found_uplinks),
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
    parser.add_argument("--bad-uplinks", type=int, default=0, help="leaves whose uplink is bad (needs --hosts-per-leaf)")
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--noise-model", choices=("gauss", "uniform"), default="gauss")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--strategy", choices=("search", "pairwise"), default="search")
    parser.add_argument("--tolerance", type=float, default=0.15)
    parser.add_argument("--slow-factor", type=float, default=0.6)
    parser.add_argument("--link-factor", type=float, default=0.5)
    parser.add_argument("--uplink-factor", type=float, default=0.5)
    parser.add_argument("--hosts-per-leaf", type=int, default=0, help="hosts under each leaf switch (topology); 0: none")
    parser.add_argument("--leaves-per-spine", type=int, default=0, help="leaves grouped under each spine; 0: no spines")
    parser.add_argument("--leaves", type=int, default=0, help="number of leaves (instead of --hosts-per-leaf)")
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args(argv)
    if args.hosts < 2 or args.slow < 0 or args.slow > args.hosts or args.bad_links < 0 or args.bad_uplinks < 0:
        parser.error("need --hosts >= 2, 0 <= --slow <= --hosts, --bad-links >= 0 and --bad-uplinks >= 0")
    if args.bad_uplinks and not (args.hosts_per_leaf or args.leaves):
        parser.error("--bad-uplinks needs a topology: --hosts-per-leaf or --leaves")
    if args.sweep:
        sweep(args)
        return 0
    print(json.dumps(simulate(args), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
