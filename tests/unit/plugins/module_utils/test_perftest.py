import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils import perftest


def test_write_bw_gbits_post_list(read_fixture):
    r = perftest.parse(read_fixture("perftest", "write_bw_gbits_perftest-273.txt"))
    assert (r["test"], r["kind"], r["unit"]) == ("RDMA_Write Post List BW Test", "bandwidth", "Gb/sec")
    assert (r["device"], r["transport"], r["connection_type"], r["link_type"]) == ("ib0", "IB", "RC", "Ethernet")
    assert (r["mtu"], r["gid_index"]) == (4096, 2)
    assert r["rows"] == [{"bytes": 8, "iterations": 224958464, "bw_peak": 0.0, "bw_average": 0.48,
                          "msg_rate_mpps": 7.498617, "unit": "Gb/sec"}]


def test_send_bw_mbsec_rows_only(read_fixture):
    r = perftest.parse(read_fixture("perftest", "send_bw_mbsec_perftest-65.txt"))
    (row,) = r["rows"]
    assert (row["bytes"], row["bw_average"], row["unit"]) == (1024, 5544.28, "MB/sec")
    assert perftest.bw_gbps(row) == pytest.approx(44.354, abs=0.001)
    assert r["device"] is None


def test_latency_with_cpu_frequency_noise(read_fixture):
    r = perftest.parse(read_fixture("perftest", "write_lat_constructed.txt"))
    assert (r["test"], r["kind"], r["link_type"], r["gid_index"], r["mtu"]) == (
        "RDMA_Write Latency Test", "latency", "Ethernet", 1, 1024)
    assert r["rows"][0] == {"bytes": 2, "iterations": 1000, "t_min_us": 1.76, "t_max_us": 6.12,
                            "t_typical_us": 1.79, "t_avg_us": 1.8, "t_stdev_us": 0.06, "p99_us": 1.88,
                            "p99_9_us": 6.12}
    assert len(r["rows"]) == 2


def test_thresholds(read_fixture):
    bw = perftest.parse(read_fixture("perftest", "send_bw_mbsec_perftest-65.txt"))
    assert perftest.check_thresholds(bw, min_bw_gbps=40) == []
    assert perftest.check_thresholds(bw, min_bw_gbps=90) == [
        "bandwidth test, 1024 B: average 44.35 Gb/s, expected at least 90 Gb/s"]
    lat = perftest.parse(read_fixture("perftest", "write_lat_constructed.txt"))
    assert perftest.check_thresholds(lat, max_lat_us=1.5) == [
        "RDMA_Write Latency Test, 4 B: typical latency 1.80 us, expected at most 1.5 us"]


def test_no_device_is_an_error_result_not_a_crash():
    r = perftest.parse(" Couldn't get device list\n")
    assert r["kind"] is None and r["errors"] == ["Couldn't get device list"]
    assert perftest.check_thresholds(r, min_bw_gbps=1) == ["no result rows: Couldn't get device list"]


def test_garbage():
    with pytest.raises(perftest.PerftestParseError):
        perftest.parse("hello")
