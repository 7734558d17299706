"""The physical layer of a link (issue 39): mlxlink and iblinkinfo read on real public captures (current and old
mlxlink layouts, BlueField-3, ConnectX-5, a Spectrum switch port, a GPU's NVLink port, PCIe; iblinkinfo's block and
line layouts, EDR and QDR fabrics) and judged: a recommendation other than "No issue", a PCIe link below its enabled
generation or width, a "Could be" hint, BER over its limit or rising, FEC off where the speed needs it."""

import copy
import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.rdma.plugins.filter.parsers import parse_iblinkinfo, parse_mlxlink
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import link_health
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import iblinkinfo, mlxlink
from paths import FIXTURES


def _read(*path):
    with open(os.path.join(FIXTURES, *path)) as handle:
        return handle.read()


def _found(result):
    return [(f["check"], f["severity"], f["target"], f["detail"]) for f in result["findings"]]


def test_a_healthy_bluefield3_port_with_counters_and_module_info():
    result = parse_mlxlink(_read("mlxlink", "bf3_100g_dac_healthy_m_c_sigcomm26.txt"), "dpu1")
    (dev,) = result["devices"]
    assert (dev["device"], dev["state"], dev["physical_state"], dev["speed"], dev["width"]) == (
        "/dev/mst/mt41692_pciconf0", "Active", "LinkUp", "100G", "4x")
    assert dev["fec"] == "Standard RS-FEC - RS(528,514)" and dev["recommendation"] == "No issue was observed"
    assert (dev["firmware_version"], dev["status_opcode"], dev["group_opcode"]) == ("32.43.2402", "0", None)
    assert dev["raw_errors_per_lane"] == [0, 0, 0, 0] and dev["link_down_counter"] == 0
    assert dev["effective_ber"] == pytest.approx(15e-255) and dev["time_since_clear_min"] == 25074.8
    assert dev["sections"]["Module Info"]["Vendor Part Number"] == "Q28-PC03"
    assert dev["enabled_speeds"] == ["100G_4X"] and result["findings"] == []


@pytest.mark.parametrize("name, speed, fec, firmware", [
    ("bf3_ib_edr_trailing_spaces_fusee_cxl.txt", "IB-EDR", "Standard LL RS-FEC - RS(271,257)", "32.47.1088"),
    ("spectrum_25gbe_1x_firecode_old_layout_cumulus_docs.txt", "25GbE", "Firecode FEC", None),
    ("nvlink_xdr_gpu_port_cluster_toolkit.txt", "NVLink-XDR", "Interleaved_Standard_RS_FEC_PLR - (544,514)", "36.2014.1676"),
])
def test_layouts_trailing_spaces_and_ports_of_other_kinds_read_the_same(name, speed, fec, firmware):
    (dev,) = mlxlink.parse_mlxlink(_read("mlxlink", name))["devices"]
    assert (dev["speed"], dev["fec"], dev["firmware_version"], dev["state"]) == (speed, fec, firmware, "Active")
    assert dev["recommendation"] == "No issue was observed"   # the old layout's full stop is not part of it
    assert link_health.mlxlink_findings("n", [dev]) == []


def test_a_recommendation_names_the_port_and_the_opcode():
    result = parse_mlxlink(_read("mlxlink", "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt"), "gpu07", "mlx5_0")
    assert _found(result) == [("link_recommendation", "warning", "gpu07/mlx5_0",
                               "mlxlink recommends: Cable speed not enabled (status opcode 25, PHY FW)")]


def test_a_pcie_link_below_its_enabled_generation_and_width():
    result = parse_mlxlink(_read("mlxlink", "pcie_gen1_x4_degraded_eye_exception_skyao.txt"), "gpu03", "mt4123_pciconf0")
    (dev,) = result["devices"]
    assert dev["pcie"] == {"speed_active": "2.5G-Gen 1", "speed_enabled": "16G-Gen 4", "width_active": "4X",
                           "width_enabled": "16X"}
    assert dev["errors"] == ["Showing Eye via SLRG raised the following exception: Eye information available for Gen3 and above"]
    assert _found(result) == [("link_pcie", "warning", "gpu03/mt4123_pciconf0",
                               "PCIe speed 2.5G-Gen 1 where 16G-Gen 4 is enabled; width 4X where 16X is enabled")]
    gen3 = parse_mlxlink(_read("mlxlink", "pcie_gen3_x16_eye_opening_skyao.txt"), "gpu03")
    assert [f["detail"] for f in gen3["findings"]] == ["PCIe speed 8G-Gen 3 where 16G-Gen 4 is enabled"]


def test_ber_state_fec_and_speed_judged_on_a_real_capture_with_its_values_changed():
    """The healthy BlueField-3 capture with the values a failing link shows (constructed from it)."""
    text = _read("mlxlink", "bf3_100g_dac_healthy_m_c_sigcomm26.txt")
    sick = (text.replace("Effective Physical BER             : 15E-255", "Effective Physical BER             : 3E-10")
            .replace("Raw Physical BER                   : 15E-255", "Raw Physical BER                   : 2E-4")
            .replace("Speed                              : 100G", "Speed                              : 50G")
            .replace("Enabled Link Speed (Ext.)          : 0x00000200 (100G_4X)",
                     "Enabled Link Speed (Ext.)          : 0x00000210 (100G_4X,50G_2X)"))
    found = _found(parse_mlxlink(sick, "dpu1"))
    assert [f[0] for f in found] == ["link_speed", "link_ber", "link_ber"]
    assert found[0][3] == "the link trained at 50G; the port and its cable can run 100G"
    assert found[1][3] == "effective BER (after FEC) 3.0E-10 above 1E-12" and found[2][3] == "raw BER (before FEC) 2.0E-04 above 1E-05"
    assert _found(parse_mlxlink(sick, "dpu1", max_effective_ber=1e-9, max_raw_ber=1e-3))[1:] == []
    down = parse_mlxlink(text.replace(": Active", ": Polling").replace(": LinkUp", ": Disabled"), "dpu1")
    assert _found(down)[0][:2] == ("link_state", "critical")
    hdr = parse_mlxlink(_read("mlxlink", "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt").replace("IB-SDR", "IB-HDR"))
    assert "link_fec" in [f[0] for f in _found(hdr)]


def test_counters_that_rose_between_two_readings():
    (before,) = mlxlink.parse_mlxlink(_read("mlxlink", "bf3_100g_dac_healthy_m_c_sigcomm26.txt"))["devices"]
    after = copy.deepcopy(before)
    after.update(link_down_counter=3, effective_errors=12, effective_ber=2e-13)
    found = [(f["check"], f["detail"]) for f in link_health.rising_link_counters("dpu1", [before], [after])]
    assert found == [("link_down", "link down counter rose from 0 to 3"), ("link_errors", "effective errors rose from 0 to 12"),
                     ("link_ber", "effective BER rose from 1.5E-254 to 2.0E-13")]
    after["link_down_counter"] = None   # unknown now: not judged
    assert "link_down" not in [f["check"] for f in link_health.rising_link_counters("dpu1", [before], [after])]


def test_several_devices_in_one_text_and_refused_options():
    """A loop over two HCAs (two real captures one after the other, each behind its command line) and an -E- line."""
    text = ("$ mlxlink -d mlx5_0\n" + _read("mlxlink", "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt")
            + "\n-E- \"--show_ber_monitor\" option is not supported for HCA\n$ mlxlink -d mlx5_1\n"
            + _read("mlxlink", "bf3_ib_edr_trailing_spaces_fusee_cxl.txt"))
    devices = mlxlink.parse_mlxlink(text)["devices"]
    assert [(d["device"], d["speed"]) for d in devices] == [("mlx5_0", "IB-SDR"), ("mlx5_1", "IB-EDR")]
    assert devices[0]["errors"] == ['"--show_ber_monitor" option is not supported for HCA'] and devices[1]["errors"] == []
    # Without command lines, a second Operational Info starts the next device.
    bare = _read("mlxlink", "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt") + _read("mlxlink", "bf3_ib_edr_trailing_spaces_fusee_cxl.txt")
    assert [d["speed"] for d in mlxlink.parse_mlxlink(bare)["devices"]] == ["IB-SDR", "IB-EDR"]
    with pytest.raises(mlxlink.MlxlinkError):
        mlxlink.parse_mlxlink("State : Active\n")
    with pytest.raises(AnsibleFilterError, match="max_effective_ber and max_raw_ber must be positive"):
        parse_mlxlink(text, max_raw_ber=0)


def test_iblinkinfo_blocks_name_every_port_and_its_peer():
    result = parse_iblinkinfo(_read("iblinkinfo", "qdr_infiniscale_iv_dual_port_ca_cc_rdma_test.txt"))
    ports = result["ports"]
    assert len(ports) == 27 and result["unparsed"] == [] and result["findings"] == []
    dual = [p for p in ports if p["node_name"] == "teaker-9 HCA-1"]
    assert [(p["port"], p["node_guid"], p["lid"], p["peer_port"]) for p in dual] == [
        (1, "0xf45214030091ba51", 6, 3), (2, "0xf45214030091ba52", 4, 14)]
    down = [p for p in ports if p["state"] == "Down"]
    assert len(down) == 9 and down[0]["physical_state"] == "Polling" and down[0]["peer_name"] is None
    switch = [p for p in ports if p["node_type"] == "switch" and p["port"] == 14][0]
    assert (switch["node_guid"], switch["lid"], switch["width"], switch["speed_gbps"], switch["peer_name"]) == (
        "0x0002c902004b2678", 2, "4X", 10.0, "teaker-9 HCA-1")
    edr = parse_iblinkinfo(_read("iblinkinfo", "edr_sb7700_down_polling_linpack.txt"))
    assert {p["speed_gbps"] for p in edr["ports"] if p["state"] == "Active"} == {25.78125} and edr["findings"] == []


def test_a_could_be_hint_names_the_degraded_link_once():
    result = parse_iblinkinfo(_read("iblinkinfo", "line_mode_could_be_12x_ibsim_ncp_ain.txt"))
    first = result["ports"][0]
    assert (first["node_guid"], first["node_name"], first["lid"], first["port"], first["peer_guid"], first["peer_lid"]) == (
        "0x0000000000200005", "hxa-su2-leaf-r2", 9, 33, "0x0000000000200000", 2)
    assert first["could_be"] == {"width": "12X", "speed_gbps": 10.0}
    assert _found(result) == [("link_degraded", "warning", "hxa-su2-leaf-r2 port 33 -> hxa-spine01 port 4",
                               "trained at 4X 2.5 Gbps; could be 12X 10 Gbps")]


def test_a_link_slower_than_the_fabric_and_a_1x_link():
    text = _read("iblinkinfo", "qdr_infiniscale_iv_dual_port_ca_cc_rdma_test.txt")
    # Both ends of two links changed (constructed from the capture): teaker-8's link at 5 Gbps, teaker-6's at 1X.
    slow = (text.replace('2    4[  ] ==( 4X          10.0 Gbps', '2    4[  ] ==( 4X           5.0 Gbps')
            .replace('7    1[  ] ==( 4X          10.0 Gbps', '7    1[  ] ==( 4X           5.0 Gbps')
            .replace('2    6[  ] ==( 4X          10.0 Gbps', '2    6[  ] ==( 1X          10.0 Gbps')
            .replace('8    1[  ] ==( 4X          10.0 Gbps', '8    1[  ] ==( 1X          10.0 Gbps'))
    found = [(f["target"], f["detail"]) for f in link_health.iblinkinfo_findings(iblinkinfo.parse_iblinkinfo(slow)["ports"])]
    assert found == [
        ("teaker-6 HCA-1 port 1 -> Infiniscale-IV Mellanox Technologies port 6", "trained at 1X (10 Gbps)"),
        ("teaker-8 HCA-1 port 1 -> Infiniscale-IV Mellanox Technologies port 4",
         "trained at 4X 5 Gbps; most links of the fabric run 4X 10 Gbps")]
    with pytest.raises(iblinkinfo.IblinkinfoError):
        iblinkinfo.parse_iblinkinfo("CA: x:\n")


def test_a_link_finding_names_the_switch_port_the_fabric_map_knows():
    """Issue 39: the ConnectX-5 port mlxlink advises on, joined with the fabric map (observed_attachment's shape, as
    ibnetdiscover's 'gpu07 mlx5_0' NodeDescription gives it); a port the map does not know stays as it was."""
    result = parse_mlxlink(_read("mlxlink", "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt"), "gpu07", "mlx5_0")
    attachment = {"gpu07": {"mlx5_0": {"leaf": "leaf-03", "port": 17, "source": "ibnetdiscover"}}}
    (joined,) = link_health.with_switch_ports(result["findings"], attachment)
    assert (joined["switch"], joined["switch_port"]) == ("leaf-03", 17)
    assert joined["detail"].endswith("(cabled to leaf-03 port 17)")
    assert link_health.with_switch_ports(result["findings"], {"gpu08": attachment["gpu07"]}) == result["findings"]
    assert link_health.physical_links(["gpu07", "gpu08"], attachment) == {"gpu07": ["mlx5_0 -> leaf-03 port 17"]}
