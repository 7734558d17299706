"""Grey failures as rates over the monitor's history (rates.py) and the readers behind them (sysfs; ethtool -S,
PCIe link attributes and nvidia-smi -q -x clock events in parse/).

Counter series: RDMA hardware does not exist here and no public source publishes a time series of
one port's sysfs counters, so the series are built from the counter names and reset behaviour of the
kernel ABI (Documentation/ABI/stable/sysfs-class-infiniband); the thresholds are NVSentinel's
(docs/nic-health-monitor/link-counter-detection.md) and the IBTA's, as rates.py says.
"""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import rates
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ethtool, pcie_sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu as nvidia_smi


def series(values, step=60, key="mlx5_0/1|symbol_error", start=1000):
    return [{"at": start + i * step, "counters": {key: v}} for i, v in enumerate(values)]


def history_of(values, step=60, key="mlx5_0/1|symbol_error", window=3600):
    history = []
    for sample in series(values, step, key):
        history = rates.add_sample(history, sample, window)
    return history


def test_symbol_errors_below_the_ibta_rate_are_quiet_and_above_it_critical():
    # 60 s apart for an hour: 100 errors in the hour is under 120/h, 200 is over.
    quiet = history_of([i * 100 // 60 for i in range(61)])
    assert rates.rate_findings("n1", quiet) == []
    loud = history_of([i * 200 // 60 for i in range(61)])
    (found,) = rates.rate_findings("n1", loud)
    assert (found["check"], found["severity"], found["target"]) == ("rdma_error_rate", "critical", "n1/mlx5_0/1")
    assert found["detail"] == "symbol_error rose by 200 in 3600 s (200 per hour; limit: above 120 per hour)"


def test_a_short_burst_is_not_extrapolated_past_min_span():
    # 5 errors in 10 s would be 1800/h; over the 300 s minimum span it is 60/h: quiet.
    assert rates.rate_findings("n1", history_of([0, 5], step=10)) == []
    assert rates.rate_findings("n1", history_of([0, 5], step=10), min_span=1)[0]["severity"] == "critical"


def test_a_counter_reset_counts_its_new_value_not_a_negative_jump():
    history = history_of([1000, 1000, 3, 3], step=600)
    assert rates.increments(history) == {"mlx5_0/1|symbol_error": (3, 1800)}
    assert rates.rate_findings("n1", history) == []


def test_fatal_counters_fire_on_any_increment():
    for counter, check in (("link_downed", "link_flap"), ("excessive_buffer_overrun_errors", "rdma_error_rate"),
                           ("local_link_integrity_errors", "rdma_error_rate"), ("rnr_nak_retry_err", "roce_congestion")):
        (found,) = rates.rate_findings("n1", history_of([7, 7, 8], key="mlx5_0/1|" + counter))
        assert (found["check"], found["severity"]) == (check, "critical")


def test_carrier_changes_more_than_two_in_the_window_is_a_flap():
    assert rates.rate_findings("n1", history_of([4, 5, 6], key="eth2|carrier_changes")) == []
    (found,) = rates.rate_findings("n1", history_of([4, 5, 6, 7], key="eth2|carrier_changes"))
    assert (found["check"], found["severity"], found["target"]) == ("link_flap", "warning", "n1/eth2")


def test_recovery_once_the_window_has_passed_without_increments():
    history = []
    for at, value in ((0, 0), (60, 500), (120, 500)):
        history = rates.add_sample(history, {"at": at, "counters": {"mlx5_0/1|symbol_error": value}}, window=300)
    assert rates.rate_findings("n1", history, min_span=60)
    for at in (400, 700):
        history = rates.add_sample(history, {"at": at, "counters": {"mlx5_0/1|symbol_error": 500}}, window=300)
    assert [s["at"] for s in history] == [120, 400, 700]  # the base and the window
    assert rates.rate_findings("n1", history, min_span=60) == []


def test_the_history_is_bounded_and_restarts_when_the_clock_steps_back():
    history = []
    for i in range(1000):
        history = rates.add_sample(history, {"at": i, "counters": {}}, window=10 ** 6)
    assert len(history) == rates.MAX_SAMPLES
    assert rates.add_sample(history, {"at": 5, "counters": {}}, 3600) == [{"at": 5, "counters": {}}]


def test_thresholds_can_be_overridden():
    history = history_of([0, 50], step=3600)
    assert rates.rate_findings("n1", history) == []
    rules = {"symbol_error": ("rdma_error_rate", "critical", "per_hour", 10)}
    assert rates.rate_findings("n1", history, rules=rules)[0]["check"] == "rdma_error_rate"


# `ethtool -S` of a Broadcom tg3 NIC, published in lolyu/aoi
# (linux/linux_performance_monitor_and_tuning/performance_monitor_tools/ethtool.md): no pause-storm counters.
TG3 = """NIC statistics:
     rx_octets: 314843626
     rx_fragments: 0
     rx_ucast_packets: 237992
     rx_xon_pause_rcvd: 0
     rx_xoff_pause_rcvd: 0
"""
# mlx5 counter names from the kernel's mlx5 counters documentation
# (Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst), values made up.
MLX5 = """NIC statistics:\r
     rx_prio3_pause: 41927\r
     tx_prio3_pause: 1290418\r
     rx_prio3_pause_duration: 8134\r
     tx_pause_storm_warning_events: 0\r
     tx_pause_storm_error_events: 1\r
     \x1b[1mgarbage line\x1b[0m\r
"""


def test_ethtool_stats_parse_and_only_the_pause_counters_are_kept():
    assert rates.pause_counters(ethtool.parse_ethtool_stats(TG3)) == {}
    stats = ethtool.parse_ethtool_stats(MLX5)
    assert rates.pause_counters(stats) == {"rx_prio3_pause": 41927, "tx_prio3_pause": 1290418,
                                           "tx_pause_storm_warning_events": 0, "tx_pause_storm_error_events": 1}
    history = history_of([1, 2], key="eth2|tx_pause_storm_error_events")
    (found,) = rates.rate_findings("n1", history)
    assert (found["check"], found["severity"]) == ("pfc_pause_storm", "critical")


def test_a_pause_storm_is_a_sustained_prio_pause_rate():
    # 5,000 pauses a second for 6 minutes is congestion; 20,000 a second is a storm (above 10,000/s).
    assert rates.rate_findings("n1", history_of([0, 600000, 1200000, 1800000], step=120, key="eth2|rx_prio3_pause")) == []
    (found,) = rates.rate_findings("n1", history_of([0, 2400000, 4800000, 7200000], step=120, key="eth2|rx_prio3_pause"))
    assert found["check"] == "pfc_pause_storm" and found["severity"] == "warning"


def _pcie_tree(tmp_path, fixture_file, degrade=None):
    root = tmp_path / "sys"
    with open(fixture_file("pcie", "links_h100_vm.tsv")) as handle:
        for line in handle:
            if line.startswith("#"):
                continue
            address, *values = line.rstrip("\n").split("\t")
            device = root / "bus" / "pci" / "devices" / address
            device.mkdir(parents=True)
            for name, value in zip(("class", "vendor", "device", "current_link_width", "max_link_width",
                                    "current_link_speed", "max_link_speed"), values):
                if value != "-":
                    (device / name).write_text(value + "\n")
            if degrade and address in degrade:
                for name, value in degrade[address].items():
                    (device / name).write_text(value + "\n")
    return str(root)


def test_pcie_links_of_a_real_gpu_read_healthy(tmp_path, fixture_file):
    links = sysfs.read_pcie_links(_pcie_tree(tmp_path, fixture_file))
    assert links == [{"address": "0000:00:06.0", "kind": "gpu", "name": "GPU@0000:00:06.0", "current_width": 16,
                      "max_width": 16, "current_speed": 32.0, "max_speed": 32.0}]
    assert rates.pcie_findings("n1", links) == []


def test_a_gpu_link_narrower_than_its_maximum_is_a_warning_but_a_slower_one_is_not(tmp_path, fixture_file):
    narrow = sysfs.read_pcie_links(_pcie_tree(tmp_path / "a", fixture_file, {"0000:00:06.0": {"current_link_width": "8"}}))
    (found,) = rates.pcie_findings("n1", narrow)
    assert (found["check"], found["detail"]) == ("pcie_link", "PCIe gpu runs at x8 of x16 (0000:00:06.0)")
    idle = sysfs.read_pcie_links(_pcie_tree(tmp_path / "b", fixture_file, {"0000:00:06.0": {"current_link_speed": "2.5 GT/s PCIe"}}))
    assert rates.pcie_findings("n1", idle) == []  # GPUs slow their link down when idle
    nic = [{"address": "0000:3b:00.0", "kind": "nic", "name": "mlx5_0", "current_width": 16, "max_width": 16,
            "current_speed": 16.0, "max_speed": 32.0}]
    assert rates.pcie_findings("n1", nic)[0]["detail"] == "PCIe NIC runs at 16 of 32 GT/s (0000:3b:00.0)"


@pytest.mark.parametrize("text, value", [("32.0 GT/s PCIe", 32.0), ("8 GT/s", 8.0), ("Unknown", None), ("", None),
                                         ("\x1b[0m2.5 GT/s", 2.5)])
def test_link_speeds_parse(text, value):
    assert pcie_sysfs.parse_link_speed(text) == value


def test_clock_events_of_real_h200s_are_quiet_and_a_hw_slowdown_is_a_warning(read_fixture):
    text = read_fixture("nvidia_smi", "q_h200x2.xml")
    gpus = nvidia_smi.parse_clock_events(text)
    assert [g["active"] for g in gpus] == [[], []]
    assert rates.clock_findings("n1", gpus) == []
    # The same capture with GPU 0's hardware slowdown engaged (as nvidia-smi prints an active reason).
    slowed = text.replace("<clocks_event_reason_hw_slowdown>Not Active<", "<clocks_event_reason_hw_slowdown>Active<", 1)
    (found,) = rates.clock_findings("n1", nvidia_smi.parse_clock_events(slowed))
    assert found["check"] == "gpu_clock_throttle" and "hw_slowdown" in found["detail"]


def test_clock_events_of_older_drivers_are_read_too():
    # The clocks_throttle_reasons block of a GTX 1060 (driver 384), published in netdata/netdata#2922.
    xml = """<nvidia_smi_log><gpu id="00000000:01:00.0"><clocks_throttle_reasons>
        <clocks_throttle_reason_gpu_idle>Active</clocks_throttle_reason_gpu_idle>
        <clocks_throttle_reason_applications_clocks_setting>Not Active</clocks_throttle_reason_applications_clocks_setting>
        <clocks_throttle_reason_sw_power_cap>Not Active</clocks_throttle_reason_sw_power_cap>
        <clocks_throttle_reason_hw_slowdown>Not Active</clocks_throttle_reason_hw_slowdown>
        <clocks_throttle_reason_sync_boost>Not Active</clocks_throttle_reason_sync_boost>
        <clocks_throttle_reason_sw_thermal_slowdown>Not Active</clocks_throttle_reason_sw_thermal_slowdown>
        </clocks_throttle_reasons></gpu></nvidia_smi_log>"""
    assert nvidia_smi.parse_clock_events(xml) == [{"index": 0, "bus_id": "00000000:01:00.0", "active": []}]
    (gpu,) = nvidia_smi.parse_clock_events(xml.replace("sw_thermal_slowdown>Not Active", "sw_thermal_slowdown>Active"))
    assert gpu["active"] == ["sw_thermal_slowdown"]
    with pytest.raises(ValueError, match="not XML"):
        nvidia_smi.parse_clock_events("nvidia-smi: command not found")


def test_the_grey_counters_are_read_from_sysfs(tmp_path):
    port = tmp_path / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    (port / "counters").mkdir(parents=True)
    (port / "hw_counters").mkdir()
    (port / "counters" / "symbol_error").write_text("12\n")
    (port / "hw_counters" / "out_of_sequence").write_text("4\n")
    (port / "hw_counters" / "np_cnp_sent").write_text("garbage\n")
    net = tmp_path / "class" / "net" / "eth2"
    net.mkdir(parents=True)
    (net / "carrier_changes").write_text("2\n")
    assert sysfs.read_grey_counters(str(tmp_path), ["eth2", "missing0"]) == {
        "mlx5_0/1|symbol_error": 12, "mlx5_0/1|out_of_sequence": 4, "eth2|carrier_changes": 2}


def test_sysfs_counters_that_are_no_numbers_are_left_out(tmp_path):
    """A counter that reads '²' (isdigit() is true for it) or 5,000 digits is no reading, never a traceback."""
    from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
    counters = tmp_path / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters"
    counters.mkdir(parents=True)
    (counters / "symbol_error").write_text("\u00b2\n")
    (counters / "link_downed").write_text("9" * 5000 + "\n")
    (counters / "port_rcv_errors").write_text("7\n")
    assert sysfs.read_port_counters(str(tmp_path)) == {"mlx5_0/1": {"port_rcv_errors": 7}}
    assert sysfs.count("18446744073709551615") == 18446744073709551615 and sysfs.count("-1") is None
