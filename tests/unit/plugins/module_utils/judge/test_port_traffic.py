"""Which RDMA ports carried the bytes of a run, from two counter readings (one real: leptonai/gpud's H100 node)."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import port_traffic
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError

# port_xmit_data / port_rcv_data of an H100 node's HCAs as leptonai/gpud keeps them
# (components/accelerator/nvidia/infiniband/class/testdata/sys-class-infiniband-h100.0): one real reading.
GPUD_XMIT = 230442669431839
GPUD_RCV = {"mlx5_0/1": 230539874932483, "mlx5_1/1": 205128687774249}


def snapshot(extra_words):
    """The gpud reading as 'before' plus, for 'after', each port's 32-bit words moved during a run."""
    return dict((port, {"port_xmit_data": GPUD_XMIT + words, "port_rcv_data": GPUD_RCV.get(port, GPUD_RCV["mlx5_0/1"]) + words})
                for port, words in extra_words.items())


def test_bytes_per_port_and_the_idle_one():
    ports_ = ["mlx5_%d/1" % n for n in (0, 1, 4, 5, 6, 7, 8, 9)]
    before = snapshot(dict((p, 0) for p in ports_))
    moved = dict((p, 2500000000) for p in ports_)   # 10 GB each way on each port...
    moved["mlx5_5/1"] = 0                           # ...but none on mlx5_5
    moved["mlx5_9/1"] = 100000000                   # and 0.4 GB on mlx5_9
    result = port_traffic.port_counter_deltas(before, snapshot(moved), gpu_for_port={"mlx5_5/1": 3, "mlx5_9/1": 7})
    first = result["ports"][0]
    assert (first["port"], first["tx_bytes"], first["rx_bytes"], first["bytes"]) == ("mlx5_0/1", 10 ** 10, 10 ** 10, 2 * 10 ** 10)
    assert result["median_bytes"] == 2 * 10 ** 10
    assert result["flagged"] == ["mlx5_5/1", "mlx5_9/1"]
    assert [(f["target"], f["detail"]) for f in result["findings"]] == [
        ("mlx5_5/1", "mlx5_5/1 (closest to GPU 3) carried no bytes while 7 port(s) carried traffic"),
        ("mlx5_9/1", "mlx5_9/1 (closest to GPU 7) carried 800000000 bytes, 4.0 % of the median 20000000000 of the "
                     "ports that carried traffic")]


def test_byte_counters_resets_and_nothing_moved():
    result = port_traffic.port_counter_deltas({"erdma_0": {"rx_bytes": 11875584573, "tx_bytes": 12004433592}, "erdma_1": {"rx_bytes": 500}},
                                              {"erdma_0": {"rx_bytes": 11875584573 + 4096, "tx_bytes": 100}, "erdma_1": {"rx_bytes": 500}})
    assert [(p["port"], p["rx_bytes"], p["tx_bytes"], p["reset"], p["low"]) for p in result["ports"]] == [
        ("erdma_0", 4096, 100, True, False), ("erdma_1", 0, None, False, True)]
    quiet = port_traffic.port_counter_deltas({"a": {"port_xmit_data": 5}}, {"a": {"port_xmit_data": 5}})
    assert (quiet["median_bytes"], quiet["flagged"], quiet["findings"]) == (None, [], [])


@pytest.mark.parametrize("args, message", [
    (([], {}), "before must map each port to its counters, got list"),
    (({}, {}, ["x"]), "gpu_for_port must map port to GPU, got list"),
    (({}, {}, None, 2), "low_fraction must be a number between 0 and 1, got 2"),
])
def test_port_counter_deltas_refuses(args, message):
    with pytest.raises(ToolTextError, match=message):
        port_traffic.port_counter_deltas(*args)
