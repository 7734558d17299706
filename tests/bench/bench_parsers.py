"""Parser throughput: a 10,000-row nccl-tests log and a log with 1,000 rank lines.

    make bench

Both logs are built from the real 8x H200 capture in tests/unit/fixtures/nccl_tests: its header
and rows repeated (sizes renumbered so every row is distinct), its Rank line repeated with
rank numbers 0..999. Prints rows (or rank lines) per second, best of 5 runs.
"""

from __future__ import print_function

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))

from ansible_collections.gpufabric.rdma.plugins.module_utils import nccl_tests  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "nccl_tests", "all_reduce_g8_h200x8.txt")


def build_logs():
    with open(FIXTURE) as handle:
        lines = handle.read().splitlines()
    header = [line for line in lines if line.startswith("#") and "Rank" not in line and "Avg" not in line
              and "Out of bounds" not in line and "concluded" not in line]
    rows = [line for line in lines if line and not line.startswith("#")]
    rank_line = next(line for line in lines if "Rank  0 " in line)
    big = list(header)
    for i in range(10000):
        fields = rows[i % len(rows)].split()
        fields[0] = str(8 * (i + 1))
        big.append("  ".join(fields))
    big += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 108.749", "# Collective test concluded: all_reduce_perf"]
    ranks = list(header[:5])
    for rank in range(1000):
        ranks.append(rank_line.replace("Rank  0 ", "Rank %3d " % rank).replace("device  0", "device %2d" % (rank % 8)))
    ranks += header[5:] + rows + ["# Avg bus bandwidth    : 108.749", "# Collective test concluded: all_reduce_perf"]
    return "\n".join(big), "\n".join(ranks)


def best_of(func, text, runs=5):
    best = None
    for run in range(runs):
        start = time.perf_counter()
        result = func(text)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def main():
    big, ranks = build_logs()
    seconds, result = best_of(nccl_tests.parse, big)
    assert len(result["rows"]) == 10000 and result["passed"], "the 10,000-row log did not parse whole"
    print("parse_nccl_tests  10,000 rows      %.3f s  %10.0f rows/s" % (seconds, 10000 / seconds))
    seconds, result = best_of(nccl_tests.parse, ranks)
    assert len(result["ranks"]) == 1000, "the 1,000 rank lines did not parse whole"
    print("parse_nccl_tests   1,000 rank lines %.3f s  %10.0f rank lines/s" % (seconds, 1000 / seconds))


if __name__ == "__main__":
    main()
