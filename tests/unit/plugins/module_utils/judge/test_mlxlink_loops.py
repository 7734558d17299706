"""mlxlink as operators paste it (issue 52, fault 1): a loop over eight HCAs, each under the header the loop echoes
(``========== mlx5_0 FEC Counters ==========``) and piped through grep, read device by device; and a BER mlxlink
could not give - printed as nan, or not printed where the counters were asked for - is link_unread, never a healthy
link (issue 53, fault 4)."""

import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.filter.parsers import parse_mlxlink
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import link_health
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import mlxlink
from paths import fixture_path

FIXTURES = fixture_path("mlxlink")
LOOP = "loop_show_counters_grep_8_cx6_hdr_constructed.txt"
RAW_BER = [1e-8, 9e-9, 3e-8, 1e-7, 2e-8, 6e-8, 4e-9, 2e-8]


def _read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_a_pasted_loop_over_eight_hcas_reads_each_device_its_ber_and_lane_errors():
    result = parse_mlxlink(_read(LOOP), "a100-node")
    devices = result["devices"]
    # The loop's own command line (mlxlink -d /dev/mst/mt4123_pciconf$i) names no device.
    assert [d["device"] for d in devices] == ["mlx5_%d" % i for i in range(8)]
    assert [d["raw_ber"] for d in devices] == pytest.approx(RAW_BER)
    assert all(d["effective_ber"] == pytest.approx(15e-255) for d in devices)
    assert devices[3]["raw_errors_per_lane"] == [32379149, 224947] and devices[5]["raw_errors_per_lane"] == [4014318, 15682171]
    assert {d["fec"] for d in devices} == {"RS-FEC - (544,514) + PLR"} and {d["effective_errors"] for d in devices} == {0}
    assert result["findings"] == []   # raw BER 1E-7 at worst, below 1E-5: healthy, and every BER was read
    # A tighter raw limit names the worst lane's device.
    assert [f["target"] for f in parse_mlxlink(_read(LOOP), "a100-node", max_raw_ber=5e-8)["findings"]] == [
        "a100-node/mlx5_3", "a100-node/mlx5_5"]


def test_the_loop_the_issue_quotes_grep_i_ber_without_its_command_line():
    """for d in mlx5_{0..7}; do echo "========== $d FEC Counters =========="; mlxlink -d $d --show_counters | grep -i ber;
    done: the headers and the lines grep keeps (no per-lane errors: 'Errors Per Lane' has no 'ber')."""
    lines = [line for line in _read(LOOP).splitlines()
             if line.startswith("==========") or ("ber" in line.lower() and "mlxlink" not in line)]
    devices = mlxlink.parse_mlxlink("\n".join(lines) + "\n")["devices"]
    assert [(d["device"], d["raw_ber"], d["raw_errors_per_lane"]) for d in devices] == [
        ("mlx5_%d" % i, pytest.approx(ber), None) for i, ber in enumerate(RAW_BER)]
    assert all(d["symbol_ber"] == pytest.approx(15e-255) and d["effective_ber"] == pytest.approx(15e-255) for d in devices)


def test_a_header_that_names_no_device_starts_none():
    """The same paste goes on with the GPUs' NVLink errors (its next loop, real lines): no device 'GPU'."""
    text = _read(LOOP) + ("========== GPU 0 NVLink Errors ==========\n"
                          "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-fde0a018-ad1a-bbec-ccf6-50a9f64bd178)\n"
                          "\t Link 0: Replay Errors: 0\n")
    devices = mlxlink.parse_mlxlink(text)["devices"]
    assert len(devices) == 8 and devices[-1]["raw_ber"] == pytest.approx(2e-8)
    # A long run of '=' is read in linear time and names nothing.
    assert mlxlink.parse_mlxlink("=" * 200000 + "\n-E- x\n")["devices"] == []


@pytest.mark.parametrize("printed", ["nan", "-nan", "inf", "N/A"])
def test_a_ber_mlxlink_could_not_give_is_unread_not_healthy(printed):
    """The healthy BlueField-3 capture with its BER lines as a failed reading prints them (constructed from it)."""
    text = _read("bf3_100g_dac_healthy_m_c_sigcomm26.txt")
    unread = (text.replace("Effective Physical BER             : 15E-255", "Effective Physical BER             : " + printed)
              .replace("Raw Physical BER                   : 15E-255", "Raw Physical BER                   : " + printed))
    result = parse_mlxlink(unread, "dpu1")
    assert [(f["check"], f["severity"], f["target"], f["detail"]) for f in result["findings"]] == [
        ("link_unread", "warning", "dpu1//dev/mst/mt41692_pciconf0",
         "mlxlink printed effective BER %r and raw BER %r: the bit error rate could not be read" % (printed, printed))]
    (dev,) = result["devices"]
    assert dev["effective_ber"] is None and dev["unread_values"] == {"effective_ber": printed, "raw_ber": printed}
    # Only the raw BER unread: the effective one is still judged, the raw one said.
    half = text.replace("Raw Physical BER                   : 15E-255", "Raw Physical BER                   : nan")
    assert [f["detail"] for f in parse_mlxlink(half, "dpu1")["findings"]] == [
        "mlxlink printed raw BER 'nan': the bit error rate could not be read"]
    assert parse_mlxlink(text, "dpu1")["findings"] == []


def test_no_ber_where_the_counters_were_asked_for_is_unread():
    """mlxlink -c that printed no BER (the ConnectX-5 capture has no counter section): unread when the counters were
    asked for (the health check and discovery run -c); a text of plain mlxlink -d is not judged on what it never asked."""
    (dev,) = mlxlink.parse_mlxlink(_read("cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt"))["devices"]
    asked = link_health.mlxlink_findings("gpu07", [dict(dev, device="mlx5_0/1")], ber_expected=True)
    assert [(f["check"], f["target"]) for f in asked] == [("link_recommendation", "gpu07/mlx5_0/1"), ("link_unread", "gpu07/mlx5_0/1")]
    assert asked[1]["detail"] == "mlxlink printed no BER (no Effective or Raw Physical BER line) though its counters were asked for"
    assert [f["check"] for f in link_health.mlxlink_findings("gpu07", [dev])] == ["link_recommendation"]
    # A port that is down is judged by its state, not also as unread.
    down = dict(dev, state="Polling", physical_state="Disabled", unread_values={"raw_ber": "N/A"})
    assert [f["check"] for f in link_health.mlxlink_findings("gpu07", [down], ber_expected=True)] == [
        "link_state", "link_recommendation"]


@pytest.mark.parametrize("port", [2, 3, 0, "1", True, 1.0])
def test_a_port_an_hca_cannot_have_is_refused_naming_it(port):
    """mlxlink reads an HCA on port 1 only (mstflint's labelToHCALocalPort: 'Please Provide the Physical Device of
    Port 2'); a dual-port card's second port is its own device."""
    with pytest.raises(link_health.LinkHealthError) as raised:
        link_health.check_options({"port": port})
    assert str(raised.value).startswith("link_health port must be 1, got %r: " % (port,))
    assert "mlx5_1" in str(raised.value)
    assert link_health.check_options(True)["port"] == 1 and link_health.check_options({"port": 1})["port"] == 1
