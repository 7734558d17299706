"""The RDMA and NVLink tools operators run by hand, on real outputs (sources in /tmp/helper-tools-fixtures.md,
to go into tests/unit/fixtures/README.md): ibstat and ibstatus, ibdev2netdev (plain, -v, column -t),
show_gids, rdma link (2017 JSON, 2018 text, current text), eadm stat (seed 002), nvidia-smi nvlink
--status / -e; and the checks made from them."""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import rdma_tools as rt
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")


def read(*parts):
    with open(os.path.join(FIXTURES, *parts), "rb") as handle:
        return handle.read()


def ports(cas):
    return [(ca["name"], p["port"], p["state"], p["physical_state"], p["rate"], p["link_layer"]) for ca in cas for p in ca["ports"]]


# ----------------------------------------------------------------------------- ibstat / ibstatus


def test_ibstat_ndr_ib_and_a_disabled_ethernet_port_cut_off_mooncake2039():
    cas = rt.parse_ibstat(read("ibstat", "ib_and_roce_down_mooncake2039.txt"))
    assert ports(cas) == [("mlx5_0", 1, "ACTIVE", "LinkUp", 400, "InfiniBand"),
                          ("mlx5_1", 1, "DOWN", "Disabled", 40, "Ethernet")]
    first = cas[0]
    assert (first["ca_type"], first["firmware"], first["node_guid"], first["number_of_ports"]) == (
        "MT4129", "28.41.1000", "0x58a2e103001b2576", 1)
    assert (first["ports"][0]["base_lid"], first["ports"][0]["sm_lid"], first["ports"][0]["port_guid"]) == (
        287, 1024, "0x58a2e103001b2576")
    assert cas[2]["name"] == "mlx5_10" and cas[2]["ports"] == []   # the capture ends at 'Por'


def test_ibstat_roce_ports_mooncake1999():
    cas = rt.parse_ibstat(read("ibstat", "roce_active_mooncake1999.txt"))
    assert ports(cas) == [("mlx5_0", 1, "ACTIVE", "LinkUp", 200, "Ethernet"),
                          ("mlx5_1", 1, "ACTIVE", "LinkUp", 200, "Ethernet"),
                          ("mlx5_10", 1, "DOWN", "Disabled", None, None)]


def test_ibstat_redacted_values_and_ibpanic_gpud752():
    text = read("ibstat", "redacted_with_ibpanic_gpud752.txt")
    cas = rt.parse_ibstat(text)
    assert ports(cas) == [("mlx5_7", 1, "ACTIVE", "LinkUp", 200, "InfiniBand")]
    assert (cas[0]["ca_type"], cas[0]["node_guid"], cas[0]["ports"][0]["port_guid"]) == (None, None, None)
    assert cas[0]["ports"][0]["base_lid"] == 13305
    assert rt.ibstat_errors(text) == ["ibpanic: [1323906] main: stat of IB device 'mlx5_8' failed: No such file or directory"]


def test_ibstat_two_ports_between_ibwarn_debug_lines_rdmacore847():
    text = read("ibstat", "mlx4_two_ports_ibwarn_rdmacore847.txt")
    cas = rt.parse_ibstat(text)
    assert ports(cas) == [("mlx4_0", 1, "DOWN", "Disabled", 10, "InfiniBand"), ("mlx4_0", 2, "ACTIVE", "LinkUp", 56, None)]
    assert cas[0]["number_of_ports"] == 2 and cas[0]["ports"][1]["base_lid"] is None   # 'Base lid:' cut off
    assert len(rt.ibstat_errors(text)) == 4


def test_ibstat_after_an_ellipsis_nccl1591():
    cas = rt.parse_ibstat(read("ibstat", "ib_ndr_after_ellipsis_nccl1591.txt"))
    assert ports(cas) == [("mlx5_5", 1, "ACTIVE", "LinkUp", 400, "InfiniBand")]
    assert (cas[0]["ports"][0]["base_lid"], cas[0]["ports"][0]["sm_lid"]) == (987, 359)


def test_ibstatus_is_recognised_and_read_nccl1866():
    text = read("ibstat", "ibstatus_roce_edr_nccl1866.txt")
    assert rt.is_ibstatus(text)
    cas = rt.parse_ibstat(text)
    assert cas == rt.parse_ibstatus(text)
    assert ports(cas) == [("mlx5_0", 1, "ACTIVE", "LinkUp", 100, "Ethernet"), ("mlx5_1", 1, "ACTIVE", "LinkUp", 100, "Ethernet"),
                          ("mlx5_2", 1, None, None, None, None)]
    port = cas[0]["ports"][0]
    assert (port["width"], port["speed"], port["default_gid"], port["base_lid"]) == (
        "4X", "EDR", "fe80:0000:0000:0000:8ae9:a4ff:fe9c:7f1a", 0)


# ----------------------------------------------------------------------------- ibdev2netdev


def test_ibdev2netdev_column_t_with_comments_imbue4():
    found = rt.parse_ibdev2netdev(read("ibdev2netdev", "column_t_comments_imbue4.txt"))
    assert len(found) == 12
    assert [(p["device"], p["port"], p["netdev"], p["state"]) for p in found[:2]] == [
        ("mlx5_0", 1, "ibp26s0", "Down"), ("mlx5_1", 1, "enp27s0f0np0", "Up")]
    assert [p["device"] for p in found if p["state"] == "Up"] == ["mlx5_1", "mlx5_7"]


def test_ibdev2netdev_plain_then_verbose_with_vfs_sriovcni():
    found = rt.parse_ibdev2netdev(read("ibdev2netdev", "plain_and_verbose_vfs_sriovcni.txt"))
    assert [(p["device"], p["netdev"], p["state"], p["pci_address"]) for p in found[:3]] == [
        ("mlx5_0", "enp2s0f0", "Up", None), ("mlx5_1", "enp2s0f1", "Up", None), ("mlx5_0", "enp2s0f0", "Up", "0000:02:00.0")]
    pf, vf = found[2], found[4]
    assert (pf["hca_type"], pf["part"], pf["description"], pf["firmware"], pf["port"], pf["port_state"]) == (
        "MT4115", "MT1523X04353", "CX456A - ConnectX-4 QSFP", "12.23.1020", 1, "ACTIVE")
    assert (vf["device"], vf["hca_type"], vf["part"], vf["description"], vf["firmware"], vf["port_state"], vf["state"]) == (
        "mlx5_2", "MT4116", None, None, "12.23.1020", "DOWN", "Down")


@pytest.mark.parametrize("line, expected", [
    # Two -v shapes seen in public documents found through the search index (their repositories were not
    # resolved, so they are not fixtures): a BlueField-3 whose description is padded with spaces before 'fw'...
    ("0000:0d:00.0 mlx5_0 (MT41692 - 900-9D3B4-00EN-EA0) BlueField-3 E-series SuperNIC 400GbE/NDR single port QSFP112, "
     "PCIe Gen5.0 x16 FHHL, Crypto Enabled, 16GB DDR5, BMC, Tall Bracket" + " " * 55 + "fw 32.42.1000 port 1 (ACTIVE) ==> ibs2f0 (Up)",
     ("mlx5_0", 1, "ibs2f0", "Up", "MT41692", "32.42.1000", "ACTIVE")),
    # ...and a description holding parentheses, with a Lustre network after the netdev's state
    ("0000:b8:00.1 mlx5_13 (MT4123 - MCX653106A-ECAT) ConnectX-6 VPI adapter card, 100Gb/s (HDR100, EDR IB and 100GbE), "
     "dual-port QSFP56 fw 20.26.4012 port 1 (ACTIVE) ==> ib4 (Up) (o2ib)",
     ("mlx5_13", 1, "ib4", "Up", "MT4123", "20.26.4012", "ACTIVE")),
])
def test_ibdev2netdev_verbose_descriptions(line, expected):
    found = rt.parse_ibdev2netdev(line)[0]
    assert (found["device"], found["port"], found["netdev"], found["state"], found["hca_type"], found["firmware"],
            found["port_state"]) == expected


def test_ibdev2netdev_virtual_functions_sriovop635():
    found = rt.parse_ibdev2netdev(read("ibdev2netdev", "ib_vfs_sriovop635.txt"))
    assert len(found) == 16 and found[0] == {
        "device": "mlx5_19", "port": 1, "netdev": "ibp75s0v7", "state": "Down", "pci_address": None, "hca_type": None,
        "part": None, "description": None, "firmware": None, "port_state": None}


# ----------------------------------------------------------------------------- show_gids and the GID index

TUTORIAL = ("show_gids", "roce_3dev_rdmatutorial.txt")


def test_show_gids_table_rdmatutorial():
    text = read(*TUTORIAL)
    gids = rt.parse_show_gids(text)
    assert len(gids) == 12 == rt.show_gids_found(text)
    assert gids[3] == {"device": "mlx5_0", "port": 1, "index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a6e:0021",
                       "ipv4": "10.110.0.33", "version": "v2", "netdev": "eth05"}
    assert gids[0]["ipv4"] is None and gids[0]["version"] == "v1"


def test_roce_v2_gid_index_as_seed_003_reads_it_by_hand():
    gids = rt.parse_show_gids(read(*TUTORIAL))
    assert rt.roce_v2_gid_index(gids) == 3
    assert rt.roce_v2_gid_index(gids, netdev="eth02") == 3
    assert rt.roce_v2_gid_index(gids, ipv4="26.110.178.29") == 3
    assert rt.roce_v2_gid_index(gids, netdev="eth09") is None
    macvlan = rt.parse_show_gids(read("show_gids", "macvlan_index4_7_nccl1573.txt"))
    assert rt.roce_v2_gid_index(macvlan, netdev="net2") == 7        # index 7 in this pod, not the usual 3
    spaces = rt.parse_show_gids(read("show_gids", "spaces_ipv4_at_4_5_nccl1510.txt"))
    assert rt.roce_v2_gid_index(spaces, netdev="net1") == 5 and len(spaces) == 4   # the cut-off 5th line is dropped


def test_show_gids_without_ipv4_or_empty():
    ionic = rt.parse_show_gids(read("show_gids", "ipv6_only_v2_ionic_mooncake1617.txt"))
    assert len(ionic) == 10 and {g["ipv4"] for g in ionic} == {None}
    assert rt.roce_v2_gid_index(ionic) is None   # no IPv4 GID: NCCL needs NCCL_IB_ADDR_FAMILY=AF_INET6 here
    assert ionic[1]["gid"] == "fd93:16d3:59b6:010d:0690:81ff:fe39:e3e8"
    text = read("show_gids", "empty_in_pod_rdmasriov30.txt")
    assert rt.parse_show_gids(text) == [] and rt.show_gids_found(text) == 0


def test_gid_index_refuses_what_is_not_a_gid_list():
    with pytest.raises(rt.ToolTextError, match="gids must be parse_show_gids' list, got str"):
        rt.roce_v2_gid_index("mlx5_0")
    with pytest.raises(rt.ToolTextError, match=r"gids\[0\] must be a mapping, got int"):
        rt.roce_v2_gid_index([3])


def test_cross_check_against_the_roce_sysfs_tree(fixture_file):
    # The sysfs fixture took mlx5_0's GIDs from this very listing; its mlx5_1 is another port (eth06, no IPv4)
    # and it has no mlx5_2: every difference is named.
    devices = sysfs.read_rdma_devices(fixture_file("sysfs", "roce_mlx5"))
    found = rt.cross_check_gids(rt.parse_show_gids(read(*TUTORIAL)), devices)
    by_target = dict((f["target"], f) for f in found)
    assert not [t for t in by_target if t.startswith("mlx5_0")]   # mlx5_0 agrees entry for entry
    assert by_target["mlx5_1/1 GID 0"]["detail"] == (
        "show_gids and rdma_devices differ: address fe80:0000:0000:0000:0e42:a1ff:fea4:94a8 vs "
        "fe80:0000:0000:0000:0ac0:ebff:fe3d:ca55; netdev eth02 vs eth06")
    assert by_target["mlx5_1/1 GID 3"]["detail"].startswith("show_gids lists 0000:0000:0000:0000:0000:ffff:1a6e:b11d v2 (eth02)")
    assert by_target["mlx5_2/1 GID 0"]["detail"] == "show_gids lists mlx5_2/1 but rdma_devices has no such port"
    assert by_target["mlx5_1/1"] == {"check": "gid_index_mismatch", "severity": "warning", "target": "mlx5_1/1",
                                     "detail": "RoCE v2 IPv4 GID index: show_gids gives 3, rdma_devices 1",
                                     "fix_hint": "set NCCL_IB_GID_INDEX from sysfs (rdma_devices) after the addresses settle"}
    assert {f["severity"] for f in found} == {"warning"}


def test_cross_check_agrees_on_its_own_ports(fixture_file):
    devices = sysfs.read_rdma_devices(fixture_file("sysfs", "roce_mlx5"))
    mlx5_0 = [g for g in rt.parse_show_gids(read(*TUTORIAL)) if g["device"] == "mlx5_0"]
    assert rt.cross_check_gids(mlx5_0, devices) == []
    assert rt.cross_check_gids(mlx5_0[:3], devices) == [{
        "check": "gid_table_mismatch", "severity": "info", "target": "mlx5_0/1 GID 3",
        "detail": "rdma_devices has 0000:0000:0000:0000:0000:ffff:0a6e:0021 (RoCE v2) that show_gids did not list",
        "fix_hint": "show_gids may have been cut off; re-run it"}, {
        "check": "gid_index_mismatch", "severity": "warning", "target": "mlx5_0/1",
        "detail": "RoCE v2 IPv4 GID index: show_gids gives None, rdma_devices 3",
        "fix_hint": "set NCCL_IB_GID_INDEX from sysfs (rdma_devices) after the addresses settle"}]


# ----------------------------------------------------------------------------- rdma link


def links(found):
    return [(l["device"], l["port"], l["state"], l["physical_state"], l["netdev"]) for l in found]


def test_rdma_link_current_form_ib_and_roce_sriovop635():
    found = rt.parse_rdma_link(read("rdma_link", "ib_subnet_lid_sriovop635.txt"))
    assert links(found)[:5] == [("mlx5_0", 1, "ACTIVE", "LinkUp", None), ("mlx5_1", 1, "DOWN", "Disabled", None),
                                ("mlx5_2", 1, "ACTIVE", "LinkUp", None), ("mlx5_3", 1, "DOWN", "Disabled", None),
                                ("mlx5_4", 1, "ACTIVE", "LinkUp", "enp97s0f0")]
    assert (found[0]["subnet_prefix"], found[0]["lid"], found[0]["sm_lid"], found[0]["lmc"]) == ("fe80:0000:0000:0000", 3, 1, 0)
    assert (found[9]["device"], found[9]["state"], found[9]["physical_state"]) == ("mlx5_9", "DOWN", None)   # cut off


@pytest.mark.parametrize("name, expected", [
    ("roce_daocloud.txt", [("mlx5_0", 1, "ACTIVE", "LinkUp", "enp4s0f0np0"), ("mlx5_1", 1, "ACTIVE", "LinkUp", "enp4s0f1np1")]),
    ("trailing_space_3fs283.txt", [("mlx5_0", 1, "ACTIVE", "LinkUp", "p1p1"), ("mlx5_1", 1, "ACTIVE", "LinkUp", "p1p2")]),
    ("rxe_3fs263.txt", [("rxe_0", 1, "ACTIVE", "LinkUp", "p1p1")]),
])
def test_rdma_link_roce_and_soft_roce(name, expected):
    assert links(rt.parse_rdma_link(read("rdma_link", name))) == expected


def test_rdma_link_old_form_and_details_iproute2_2018():
    found = rt.parse_rdma_link(read("rdma_link", "old_format_netdev_iproute2_2018.txt"))
    assert links(found) == [("mlx5_3", 1, "ACTIVE", "LinkUp", "ens7")] * 2
    assert (found[0]["ifindex"], found[1]["netdev_index"], found[1]["caps"]) == (4, 7, ["CM", "IP_BASED_GIDS"])
    detailed = rt.parse_rdma_link(read("rdma_link", "old_format_details_caps_iproute2_2018.txt"))[0]
    assert (detailed["state"], detailed["physical_state"], detailed["lid"], detailed["sm_lid"]) == ("ACTIVE", "LinkUp", 2, 2)
    assert detailed["caps"][0] == "SM" and detailed["caps"][-1] == "EXT_INFO" and len(detailed["caps"]) == 15


def test_rdma_link_json_iproute2_2017():
    found = rt.parse_rdma_link(read("rdma_link", "json_pretty_iproute2_2017.txt"))
    assert links(found) == [("mlx5_0", 1, "ACTIVE", "LinkUp", None), ("mlx5_1", 1, "ACTIVE", "LinkUp", None)]
    assert (found[1]["lid"], found[1]["sm_lid"], found[1]["caps"], found[1]["ifindex"]) == (13400, 49151, ["AUTO_MIG"], 2)


def test_rdma_link_json_of_current_iproute2():
    # iproute2 since 2019 prints the device in "ifname" and the port apart (rdma/link.c, print_uint "port").
    found = rt.parse_rdma_link('[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP",'
                               '"netdev":"ens1f0np0","netdev_index":4}]')
    assert links(found) == [("mlx5_0", 1, "ACTIVE", "LinkUp", "ens1f0np0")] and found[0]["netdev_index"] == 4
    with pytest.raises(rt.ToolTextError, match="rdma -j link output is not valid JSON"):
        rt.parse_rdma_link('[{"ifname": "mlx5_0", ')
    with pytest.raises(rt.ToolTextError, match="rdma -j link item 1 is not an object"):
        rt.parse_rdma_link('[{"ifname": "mlx5_0"}, 5]')


# ----------------------------------------------------------------------------- eadm stat


def test_eadm_stat_live_summary_seed002():
    found = rt.parse_eadm_stat(read("eadm", "stat_live_seed002.txt"))
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
    found = rt.parse_eadm_stat("$ eadm stat -d erdma_0\ntx_bytes: 1024\nrx_bytes = 2048\n")
    assert (found["device"], found["tx_bytes"], found["rx_bytes"], found["approximate"]) == ("erdma_0", 1024, 2048, False)
    assert rt.parse_eadm_stat("eadm: command not found")["rx_bytes"] is None


# ----------------------------------------------------------------------------- nvidia-smi nvlink


def test_nvlink_status_a100_8_gpus_gpud():
    gpus = rt.parse_nvlink_status(read("nvlink", "status_a100x8_gpud.txt"))
    assert [g["index"] for g in gpus] == list(range(8))
    assert (gpus[0]["name"], gpus[0]["uuid"]) == ("NVIDIA A100-SXM4-80GB", "GPU-5269b708-678a-b1a8-60f0-c90406537486")
    assert {len(g["links"]) for g in gpus} == {12} and {l["speed_gbps"] for g in gpus for l in g["links"]} == {25}
    assert rt.nvlink_down_findings(gpus) == []


def test_nvlink_status_inactive_links_azhpc73():
    gpus = rt.parse_nvlink_status(read("nvlink", "status_v100_inactive_azhpc73.txt"))
    assert [(l["link"], l["speed_gbps"], l["active"]) for l in gpus[0]["links"]] == [
        (0, 25.781, True), (1, 25.781, True), (2, 25.781, True), (3, None, False), (4, 25.781, True), (5, None, False)]
    assert gpus[0]["uuid"] is None   # redacted as '...'
    assert rt.nvlink_down_findings(gpus) == [{
        "check": "nvlink_down", "severity": "warning", "target": "GPU 3",
        "detail": "GPU 3 link(s) 3, 5 inactive while 4 of its links are active",
        "fix_hint": "NCCL loses that share of NVLink bandwidth: check nvidia-smi nvlink -e and the cabling or baseboard"}]


def test_a_gpu_whose_links_are_all_down_while_its_peers_are_up():
    text = read("nvlink", "status_a100x8_gpud.txt").decode().replace("GPU 7: NVIDIA A100-SXM4-80GB", "GPU 7: X")
    head, tail = text.split("GPU 7: X")
    tail = "\n".join(line.replace("25 GB/s", "<inactive>") for line in tail.split("\n"))
    found = rt.nvlink_down_findings(rt.parse_nvlink_status(head + "GPU 7: X" + tail))
    assert [(f["severity"], f["target"]) for f in found] == [("critical", "GPU 7")]
    assert found[0]["detail"] == "all 12 NVLinks of GPU 7 (X) are inactive while 7 other GPU(s) have active links"


@pytest.mark.parametrize("name, gpus, links, elided", [
    ("status_a100_tabs_truncated_nccltests228.txt", 3, [12, 12, 1], [False, False, True]),
    ("status_h100_elided_mlengineering.txt", 1, [2], [True]),
    ("status_gb200_k8stestinfra371.txt", 2, [18, 2], [False, True]),
])
def test_nvlink_status_tabs_and_elisions(name, gpus, links, elided):
    found = rt.parse_nvlink_status(read("nvlink", name))
    assert (len(found), [len(g["links"]) for g in found], [g["elided"] for g in found]) == (gpus, links, elided)
    assert rt.nvlink_down_findings(found) == []   # a shorter, elided listing is not a link down


@pytest.mark.parametrize("name", ["status_a10_no_nvlink_gpud.txt", "status_h100_vm_empty.txt", "errors_h100_vm_empty.txt"])
def test_no_nvlink_prints_nothing_and_finds_nothing(name):
    assert rt.parse_nvlink_status(read("nvlink", name)) == [] and rt.parse_nvlink_errors(read("nvlink", name)) == []
    assert rt.nvlink_down_findings([]) == [] and rt.nvlink_error_findings(None, []) == []


def test_nvlink_error_counters_h100_mlengineering():
    gpus = rt.parse_nvlink_errors(read("nvlink", "errors_h100_mlengineering.txt"))
    assert (gpus[0]["index"], gpus[0]["name"], gpus[0]["elided"]) == (0, "NVIDIA H100 80GB HBM3", True)
    assert [l["link"] for l in gpus[0]["links"]] == [0, 1, 17]
    assert gpus[0]["links"][2] == {"link": 17, "replay_errors": 0, "recovery_errors": 0, "crc_errors": 0,
                                   "counters": {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}}
    assert rt.nvlink_error_findings(gpus, gpus) == [] and rt.nvlink_error_findings(None, gpus) == []


def test_rising_nvlink_error_counters():
    before = rt.parse_nvlink_errors(read("nvlink", "errors_h100_mlengineering.txt"))
    after = rt.parse_nvlink_errors(read("nvlink", "errors_h100_mlengineering.txt").decode()
                                   .replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 12")
                                   .replace("Link 17: Recovery Errors: 0", "Link 17: Recovery Errors: 1"))
    found = rt.nvlink_error_findings(before, after)
    assert [(f["severity"], f["target"], f["detail"]) for f in found] == [
        ("warning", "GPU 0 link 1", "crc errors rose by 12 (0 -> 12)"),
        ("critical", "GPU 0 link 17", "recovery errors rose by 1 (0 -> 1)")]
    assert rt.nvlink_error_findings(after, before)[0]["detail"] == "crc errors went from 12 to 0: the counters were reset"
    assert [f["severity"] for f in rt.nvlink_error_findings(None, after)] == ["info", "info"]
    assert [f["target"] for f in rt.nvlink_error_findings(before, after, min_increase=2)] == ["GPU 0 link 1"]


def test_nvlink_errors_without_a_gpu_header_and_other_counters():
    # the shape of a public note (2x RTX A6000 in a rented container) whose -e listing came without its 'GPU n:' line
    found = rt.parse_nvlink_errors("\t Link 0: Replay Errors: 0\n\t Link 0: Recovery Errors: 0\n\t Link 0: CRC Errors: 0\n"
                                   "\t Link 0: Tx Discards: 2\n")
    assert found[0]["index"] is None and found[0]["links"][0]["counters"]["tx_discards"] == 2


def test_nvlink_helpers_refuse_other_things():
    with pytest.raises(rt.ToolTextError, match="status must be a parsed nvidia-smi nvlink list, got str"):
        rt.nvlink_down_findings("GPU 0")
    with pytest.raises(rt.ToolTextError, match=r"after\[0\] is not a GPU"):
        rt.nvlink_error_findings(None, [{"index": 0}])
    with pytest.raises(rt.ToolTextError, match="min_increase must be a whole number of 1 or more, got 0"):
        rt.nvlink_error_findings(None, [], min_increase=0)


# ----------------------------------------------------------------------------- which ports carried the bytes

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
    result = rt.port_counter_deltas(before, snapshot(moved), gpu_for_port={"mlx5_5/1": 3, "mlx5_9/1": 7})
    first = result["ports"][0]
    assert (first["port"], first["tx_bytes"], first["rx_bytes"], first["bytes"]) == ("mlx5_0/1", 10 ** 10, 10 ** 10, 2 * 10 ** 10)
    assert result["median_bytes"] == 2 * 10 ** 10
    assert result["flagged"] == ["mlx5_5/1", "mlx5_9/1"]
    assert [(f["target"], f["detail"]) for f in result["findings"]] == [
        ("mlx5_5/1", "mlx5_5/1 (closest to GPU 3) carried no bytes while 7 port(s) carried traffic"),
        ("mlx5_9/1", "mlx5_9/1 (closest to GPU 7) carried 800000000 bytes, 4.0 % of the median 20000000000 of the "
                     "ports that carried traffic")]


def test_byte_counters_resets_and_nothing_moved():
    result = rt.port_counter_deltas({"erdma_0": {"rx_bytes": 11875584573, "tx_bytes": 12004433592}, "erdma_1": {"rx_bytes": 500}},
                                    {"erdma_0": {"rx_bytes": 11875584573 + 4096, "tx_bytes": 100}, "erdma_1": {"rx_bytes": 500}})
    assert [(p["port"], p["rx_bytes"], p["tx_bytes"], p["reset"], p["low"]) for p in result["ports"]] == [
        ("erdma_0", 4096, 100, True, False), ("erdma_1", 0, None, False, True)]
    quiet = rt.port_counter_deltas({"a": {"port_xmit_data": 5}}, {"a": {"port_xmit_data": 5}})
    assert (quiet["median_bytes"], quiet["flagged"], quiet["findings"]) == (None, [], [])


@pytest.mark.parametrize("args, message", [
    (([], {}), "before must map each port to its counters, got list"),
    (({}, {}, ["x"]), "gpu_for_port must map port to GPU, got list"),
    (({}, {}, None, 2), "low_fraction must be a number between 0 and 1, got 2"),
])
def test_port_counter_deltas_refuses(args, message):
    with pytest.raises(rt.ToolTextError, match=message):
        rt.port_counter_deltas(*args)


# ----------------------------------------------------------------------------- text as it is found

PARSERS = {
    "ibstat": rt.parse_ibstat, "ibdev2netdev": rt.parse_ibdev2netdev, "show_gids": rt.parse_show_gids,
    "rdma_link": rt.parse_rdma_link, "eadm": rt.parse_eadm_stat,
    "nvlink": lambda text: (rt.parse_nvlink_status(text), rt.parse_nvlink_errors(text)),
}
CASES = [(tool, name) for tool in sorted(PARSERS) for name in sorted(os.listdir(os.path.join(FIXTURES, tool)))]


def _variants(data):
    lines = data.split(b"\n")
    return {"crlf": data.replace(b"\n", b"\r\n"), "bom": b"\xef\xbb\xbf" + data,
            "ansi": b"\n".join(b"\x1b[1;32m" + line + b"\x1b[0m" if line.strip() else line for line in lines),
            "stray_bytes": b"\xff\xfe\x80 stray \xc3\x28 bytes\n" + data}


@pytest.mark.parametrize("tool, name", CASES, ids=["%s/%s" % case for case in CASES])
def test_same_facts_from_dirty_text(tool, name):
    data = read(tool, name)
    clean = PARSERS[tool](data)
    for variant, dirty in _variants(data).items():
        assert PARSERS[tool](dirty) == clean, variant


@pytest.mark.parametrize("tool, name", CASES, ids=["%s/%s" % case for case in CASES])
def test_an_output_cut_anywhere_parses_or_says_why(tool, name):
    data = read(tool, name)
    for cut in range(len(data) + 1):
        try:
            PARSERS[tool](data[:cut])
        except rt.ToolTextError as exc:   # only a cut JSON document may be refused, with a message
            assert str(exc).startswith("rdma -j link output is not valid JSON"), str(exc)


RUNNER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import rdma_tools as rt
shapes = json.loads(sys.stdin.read())
for name, text in shapes.items():
    for parse in (rt.parse_ibstat, rt.parse_ibstatus, rt.parse_ibdev2netdev, rt.parse_show_gids, rt.parse_rdma_link,
                  rt.parse_eadm_stat, rt.parse_nvlink_status, rt.parse_nvlink_errors):
        started = time.time()
        try:
            parse(text)
        except rt.ToolTextError:
            pass
        assert time.time() - started < 5, (name, parse.__name__)
print("ok")
"""


def test_100000_character_lines_take_linear_time():
    n = 100000
    shapes = {
        "spaces": "CA 'mlx5_0'\n\tPort 1:\n\t\tState:" + " " * n + "x",
        "ca": "CA '" + "x" * n,
        "ibstatus": "Infiniband device 'mlx5_0' port 1 status:\n\trate: " + "1" * n + " Gb/sec (" + "4X" * (n // 2),
        "arrows": "==> " * (n // 4),
        "verbose": "0000:02:00.0 mlx5_0 (" + "MT4115 - " * (n // 9) + " fw port 1 ( ==> x (Up)",
        "gids": "mlx5_0\t1\t0\t" + ":" * n + "\t10.0.0.1 v2 eth0",
        "link": "link mlx5_0/1 " + "state " * (n // 6),
        "old_link": "1/1: mlx5_0/1: caps: <" + "A, " * (n // 3),
        "json": "[" * n,
        "eadm": "Monitoring x...\n  bytes " + "1" * n + " GiB | 2 GiB\n 15:59:56  rx: " + " " * n + "0 B/s",
        "nvlink": "GPU 0: x (UUID: " + "(" * n + ")\n Link 0: " + "1" * n + " GB/s",
        "digits": "1" * n,
        "escape": "\x1b[" * (n // 2),
    }
    collections = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "build", "collections"))
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER, collections], input=json.dumps(shapes),
                              capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("a parser did not finish 100,000-character lines in 60 s: a regular expression backtracks")
    assert proc.returncode == 0, proc.stderr[-2000:]
