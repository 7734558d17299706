"""topology.conf for a large fabric: a synthetic rail-less fat tree of 1,000 nodes (32 per leaf, 8 spines)
and one of 4,096, each written two ways - from a host -> leaf map (the inventory path) and from the
fabric's ibnetdiscover text (parse, sort into a tree, render). Prints seconds, best of 5; the 1,000-node
render must take under a second (it fails otherwise).

    python tests/bench/bench_topology.py

The ibnetdiscover text is generated in the layout of the X5 capture (tests/unit/fixtures/ibnetdiscover/):
Switch blocks with port lines to hosts ("gpuNNNN mlx5_0") and spines, and one Ca block per host.
"""

from __future__ import print_function

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ibnetdiscover  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import slurm_conf, tree  # noqa: E402

PER_LEAF = 32
SPINES = 8
LIMIT_1000 = 1.0


def fabric_map(nodes):
    leaves = (nodes + PER_LEAF - 1) // PER_LEAF
    mapping = dict(("gpu%04d" % n, "leaf%03d" % ((n - 1) // PER_LEAF + 1)) for n in range(1, nodes + 1))
    spines = dict(("leaf%03d" % l, ["spine%d" % s for s in range(1, SPINES + 1)]) for l in range(1, leaves + 1))
    return mapping, spines


def fabric_text(nodes):
    leaves = (nodes + PER_LEAF - 1) // PER_LEAF
    spine_guid = ["%016x" % (0x5000 + s) for s in range(SPINES)]
    leaf_guid = ["%016x" % (0x4000 + l) for l in range(leaves)]
    host_guid = ["%016x" % (0x100000 + n) for n in range(nodes)]
    blocks = []
    for s in range(SPINES):
        lines = ['Switch\t64 "S-%s"\t\t# "MF0;spine%d:MQM9700/U1" enhanced port 0 lid %d lmc 0' % (spine_guid[s], s + 1, 10 + s)]
        for l in range(leaves):
            lines.append('[%d]\t"S-%s"[%d]\t\t# "MF0;leaf%03d:MQM9700/U1" lid %d 4xNDR' % (l + 1, leaf_guid[l], 33 + s, l + 1, 100 + l))
        blocks.append("\n".join(lines))
    for l in range(leaves):
        lines = ['Switch\t64 "S-%s"\t\t# "MF0;leaf%03d:MQM9700/U1" enhanced port 0 lid %d lmc 0' % (leaf_guid[l], l + 1, 100 + l)]
        members = range(l * PER_LEAF, min(nodes, (l + 1) * PER_LEAF))
        for port, n in enumerate(members, 1):
            short = host_guid[n].lstrip("0")
            lines.append('[%d]\t"H-%s"[1](%s) \t\t# "gpu%04d mlx5_0" lid %d 4xNDR' % (port, host_guid[n], short, n + 1, 1000 + n))
        for s in range(SPINES):
            lines.append('[%d]\t"S-%s"[%d]\t\t# "MF0;spine%d:MQM9700/U1" lid %d 4xNDR' % (33 + s, spine_guid[s], l + 1, s + 1, 10 + s))
        blocks.append("\n".join(lines))
    for n in range(nodes):
        l = n // PER_LEAF
        blocks.append('vendid=0x2c9\ndevid=0x1021\nsysimgguid=0x%s\ncaguid=0x%s\nCa\t1 "H-%s"\t\t# "gpu%04d mlx5_0"\n'
                      '[1](%s) \t"S-%s"[%d]\t\t# lid %d lmc 0 "MF0;leaf%03d:MQM9700/U1" lid %d 4xNDR'
                      % (host_guid[n].lstrip("0"), host_guid[n].lstrip("0"), host_guid[n], n + 1, host_guid[n].lstrip("0"),
                         leaf_guid[l], n % PER_LEAF + 1, 1000 + n, l + 1, 100 + l))
    return "\n\n".join(blocks) + "\n"


def best_of(func, runs=5):
    best = result = None
    for run in range(runs):
        start = time.perf_counter()
        result = func()
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def check(text, nodes):
    listed = []
    for line in text.splitlines():
        if line.startswith("SwitchName=") and " Nodes=" in line:
            listed += slurm_jobs.expand_hostlist(line.split(" Nodes=", 1)[1])
    assert sorted(listed) == ["gpu%04d" % n for n in range(1, nodes + 1)], "not every node is listed once"
    assert "SwitchName=top Switches=spine[1-%d]" % SPINES in text, "no top switch over the spines"


def main():
    failed = False
    for nodes in (1000, 4096):
        mapping, spines = fabric_map(nodes)
        seconds, text = best_of(lambda: slurm_conf.slurm_topology_conf(mapping, leaf_spines=spines))
        check(text, nodes)
        print("topology.conf from a host -> leaf map  %5d nodes  %.3f s" % (nodes, seconds))
        if nodes == 1000 and seconds >= LIMIT_1000:
            print("FAIL: %d nodes took %.3f s, more than %.1f s" % (nodes, seconds, LIMIT_1000))
            failed = True
        ibnet = fabric_text(nodes)
        seconds, text = best_of(lambda: slurm_conf.slurm_topology_conf(tree.fabric_tree(ibnetdiscover.parse_ibnetdiscover(ibnet))))
        check(text, nodes)
        print("topology.conf from ibnetdiscover       %5d nodes  %.3f s  (%d characters parsed)" % (nodes, seconds, len(ibnet)))
        if nodes == 1000 and seconds >= LIMIT_1000:
            print("FAIL: %d nodes from ibnetdiscover took %.3f s, more than %.1f s" % (nodes, seconds, LIMIT_1000))
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
