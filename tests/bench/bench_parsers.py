"""Parser throughput: a 10,000-row nccl-tests log, a log with 1,000 rank lines, the same 10,000 rows
behind Open MPI's --timestamp-output --tag-output labels, and ibv_devinfo with a 1,000,000-character
line of spaces inside a port block (the shape that made the old parser quadratic).

    make bench

The logs are built from the real captures in tests/unit/fixtures: the 8x H200 header and rows
repeated (sizes renumbered so every row is distinct), its Rank line repeated with rank numbers
0..999. Prints rows (or characters) per second, best of 5 runs.
"""

from __future__ import print_function

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_tests, rdma  # noqa: E402

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
    tagged = "\n".join("Mon Nov 23 17:25:02 2026[1,0]<stdout>:" + line for line in big.splitlines())
    seconds, result = best_of(nccl_tests.parse, tagged)
    assert len(result["rows"]) == 10000, "the launcher-labelled log did not parse whole"
    print("parse_nccl_tests  10,000 rows, mpirun --timestamp-output --tag-output  %.3f s  %10.0f rows/s"
          % (seconds, 10000 / seconds))
    with open(os.path.join(ROOT, "tests", "unit", "fixtures", "ibv_devinfo", "mlx4_ib_verbose_port2_heioy-books.txt")) as handle:
        devinfo = handle.read()
    long_line = "\t\t\tnode_guid: a" + " " * 1000000 + "b\n"
    text = devinfo.replace("\n", "\n" + long_line, 5)
    seconds, result = best_of(rdma.parse_ibv_devinfo, text)
    assert result, "ibv_devinfo with a long line did not parse"
    print("parse_ibv_devinfo  a 1,000,000-character line  %.3f s  %10.0f characters/s" % (seconds, len(text) / seconds))


if __name__ == "__main__":
    main()
