"""make bench: the burn-in search strategy against its target, and rounds against N for both strategies.

Target: 3 % noise, slow hosts at 0.6 of normal, N = 4096: up to 3 slow hosts found with no false positive
in at least 99 of 100 seeds, in at most 2*K*log2(N) + 10 rounds (pairwise: 4095 rounds).
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import burnin_sim  # noqa: E402


def target(hosts=4096, seeds=100):
    print("search strategy, N=%d, noise 3 %%, slow hosts at 0.6, %d seeds per K" % (hosts, seeds))
    print("%2s  %10s  %10s  %10s  %s" % ("K", "all found", "no false", "max rounds", "limit 2*K*log2(N)+10"))
    ok = True
    for slow in (1, 2, 3):
        found = clean = 0
        worst = 0
        started = time.time()
        for seed in range(1, seeds + 1):
            result = burnin_sim.simulate(argparse.Namespace(
                hosts=hosts, slow=slow, bad_links=0, noise=0.03, seed=seed, strategy="search", tolerance=0.15,
                slow_factor=0.6, link_factor=0.5, leaves=0))
            found += result["found_slow_hosts"] == slow
            clean += result["false_slow_hosts"] == 0
            worst = max(worst, result["rounds"])
        limit = 2 * slow * math.log2(hosts) + 10
        passed = found >= 99 and clean >= 99 and worst <= limit
        ok = ok and passed
        print("%2d  %10d  %10d  %10d  %.0f  %s  (%.1f s)" % (slow, found, clean, worst, limit,
                                                             "PASS" if passed else "FAIL", time.time() - started))
    return ok


def main():
    ok = target()
    print()
    burnin_sim.sweep(argparse.Namespace(hosts=64, slow=2, bad_links=1, noise=0.03, seed=1, strategy="search",
                                        tolerance=0.15, slow_factor=0.6, link_factor=0.5, leaves=0, sweep=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
