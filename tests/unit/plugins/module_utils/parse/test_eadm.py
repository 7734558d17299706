"""eadm stat (seed 002) on a real output (sources in tests/unit/fixtures/README.md)."""


from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import eadm
from paths import fixture_bytes


read = fixture_bytes


def test_eadm_stat_live_summary_seed002():
    found = eadm.parse_eadm_stat(read("eadm", "stat_live_seed002.txt"))
    assert found["device"] == "rocep26s0"
    # 11.06 GiB and 11.18 GiB as printed, in bytes: accurate to the printed digits only
    assert (found["rx_bytes"], found["tx_bytes"], found["approximate"]) == (11875584573, 12004433592, True)
    assert (found["rx_packets"], found["tx_packets"]) == (8406769, 8546764)
    assert found["duration_seconds"] == 2812.8   # 46.88 minutes
    counters = found["counters"]
    assert (counters["rx_bytes_max_per_s"], counters["tx_bytes_average_per_s"], counters["rx_packets_average_per_s"],
            counters["tx_packets_max_per_s"], counters["rx_bytes_min_per_s"]) == (54976840, 4267704, 2988, 37488, 0)
    assert len(counters) == 17
    assert found["samples"] == [{"time": "15:59:56", "rx_bytes_per_s": 0, "rx_packets_per_s": 0,
                                 "tx_bytes_per_s": 0, "tx_packets_per_s": 0}]


def test_eadm_stat_counter_lines_and_nothing():
    found = eadm.parse_eadm_stat("$ eadm stat -d erdma_0\ntx_bytes: 1024\nrx_bytes = 2048\n")
    assert (found["device"], found["tx_bytes"], found["rx_bytes"], found["approximate"]) == ("erdma_0", 1024, 2048, False)
    assert eadm.parse_eadm_stat("eadm: command not found")["rx_bytes"] is None
