import json
import shutil

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import rdma


def _by_name(devices):
    return dict((d["name"], d) for d in devices)


# ------------------------------------------------------------------ ibv_devinfo (real outputs)

def test_erdma_seed_002(read_fixture):
    devices = rdma.parse_ibv_devinfo(read_fixture("ibv_devinfo", "erdma_seed002.txt"))
    assert [d["name"] for d in devices] == ["rocep156s0", "rocep26s0"]
    down, up = devices
    assert down["transport"] == up["transport"] == "eRDMA"
    assert up["vendor_id"] == "0x1ded" and up["vendor_part_id"] == 4223
    assert up["fw_ver"] == "0.2.0"
    assert up["node_guid"] == "0216:3eff:fe10:f8b0"
    assert down["ports"][0]["state"] == "DOWN"
    port = up["ports"][0]
    assert port["state"] == "ACTIVE"
    assert port["link_layer"] == "Ethernet"
    assert port["active_mtu"] == 1024 and port["max_mtu"] == 1024
    assert port["gids"] == [] and port["roce_v2_gid_index"] is None
    assert rdma.summarize(devices) == {
        "count": 2, "active_ports": 1, "transports": ["eRDMA"],
        "link_layers": ["Ethernet"], "active_hcas": ["rocep26s0"], "ports_not_active": ["rocep156s0/1 DOWN"],
    }


def test_mlx4_infiniband_two_devices_two_ports(read_fixture):
    devices = _by_name(rdma.parse_ibv_devinfo(read_fixture("ibv_devinfo", "mlx4_ib_plain_heioy-books.txt")))
    assert sorted(devices) == ["mlx4_0", "mlx4_1"]
    mlx4_0 = devices["mlx4_0"]
    assert mlx4_0["transport"] == "InfiniBand"
    assert mlx4_0["board_id"] == "MT_1090120019"
    assert [p["port"] for p in mlx4_0["ports"]] == [1, 2]
    p1, p2 = mlx4_0["ports"]
    assert (p1["state"], p1["lid"], p1["sm_lid"], p1["active_mtu"]) == ("ACTIVE", 32, 18, 4096)
    assert p2["state"] == "DOWN" and p2["lid"] == 0
    assert p1["link_layer"] == p2["link_layer"] == "InfiniBand"


def test_mlx4_verbose_port_with_gid_and_rate(read_fixture):
    (device,) = rdma.parse_ibv_devinfo(read_fixture("ibv_devinfo", "mlx4_ib_verbose_port2_heioy-books.txt"))
    assert device["name"] == "mlx4_1" and device["transport"] == "InfiniBand"
    (port,) = device["ports"]
    assert port["port"] == 2
    assert port["phys_state"] == "Polling"        # verbs prints POLLING (2)
    assert port["rate_gbps"] == 10                # 4X * 2.5 Gbps
    assert port["gids"] == [{"index": 0, "gid": "fe80:0000:0000:0000:7cfe:9003:00a5:95c2",
                             "type": "IB", "netdev": None, "ipv4": None}]
    assert port["roce_v2_gid_index"] is None


def test_old_rxe_output_without_link_layer(read_fixture):
    (device,) = rdma.parse_ibv_devinfo(read_fixture("ibv_devinfo", "rxe_plain_rxe-dev-46.txt"))
    assert device["name"] == "rxe0"
    port = device["ports"][0]
    assert port["state"] == "ACTIVE" and port["active_mtu"] == 1024 and port["max_mtu"] == 4096
    # The paste has no link_layer line (the issue found Ethernet in sysfs: rxe is soft-RoCE). Unknown, not
    # InfiniBand, and so is the transport.
    assert port["link_layer"] is None
    assert device["transport"] == "unknown"
    assert rdma.summarize([device])["link_layers"] == []


def test_port_block_cut_by_head_leaves_link_layer_unknown(read_fixture):
    # `ibv_devinfo | head -17` of an Azure ConnectX-4 Lx VF: the block ends before "link_layer: Ethernet".
    cut = read_fixture("ibv_devinfo", "rdma_vf_head17_azhpc44_constructed.txt")
    (device,) = rdma.parse_ibv_devinfo(cut)
    port = device["ports"][0]
    assert (port["state"], port["active_mtu"], port["link_layer"]) == ("ACTIVE", 1024, None)
    assert device["transport"] == "unknown"
    summary = rdma.summarize([device])
    assert (summary["active_ports"], summary["transports"], summary["link_layers"]) == (1, ["unknown"], [])
    # the next line of the same capture settles it
    (whole,) = rdma.parse_ibv_devinfo(cut + "                        link_layer:             Ethernet\n")
    assert (whole["ports"][0]["link_layer"], whole["transport"]) == ("Ethernet", "RoCE")


def test_unknown_link_layer_does_not_name_the_gid_type():
    assert rdma.gid_type("IB/RoCE v1", None) is None
    assert rdma.gid_type("IB/RoCE v1", "Ethernet") == "RoCE v1"
    assert rdma.gid_type("IB/RoCE v1", "InfiniBand") == "IB"
    assert rdma.gid_type("RoCE v2", None) == "RoCE v2"


def test_verbose_roce_gid_lines_in_both_formats():
    # The two GID line layouts rdma-core has printed since it learned GID types: hex groups
    # with ', RoCE v1' and inet_ntop with ', RoCE v2' (libibverbs/examples/devinfo.c).
    text = (
        "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tphys_port_cnt:\t\t\t1\n"
        "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tactive_mtu:\t\t4096 (5)\n"
        "\t\t\tlink_layer:\t\tEthernet\n\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
        "\t\t\tphys_state:\t\tLINK_UP (5)\n"
        "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0ac0:ebff:fe3d:ca54, RoCE v1\n"
        "\t\t\tGID[  1]:\t\tfe80::ac0:ebff:fe3d:ca54, RoCE v2\n"
        "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0a6e:0021, RoCE v1\n"
        "\t\t\tGID[  3]:\t\t::ffff:10.110.0.33, RoCE v2\n"
    )
    (device,) = rdma.parse_ibv_devinfo(text)
    assert device["transport"] == "RoCE"
    port = device["ports"][0]
    assert port["phys_state"] == "LinkUp" and port["rate_gbps"] == 100
    assert [(g["index"], g["type"], g["ipv4"]) for g in port["gids"]] == [
        (0, "RoCE v1", None), (1, "RoCE v2", None), (2, "RoCE v1", "10.110.0.33"), (3, "RoCE v2", "10.110.0.33")]
    assert port["gids"][3]["gid"] == "0000:0000:0000:0000:0000:ffff:0a6e:0021"
    assert port["roce_v2_gid_index"] == 3


def test_empty_and_noise():
    assert rdma.parse_ibv_devinfo("") == []
    assert rdma.parse_ibv_devinfo("No IB devices found\n") == []


# ------------------------------------------------------------------ sysfs trees

def test_sysfs_roce_two_ports(fixture_file):
    devices = _by_name(sysfs.read_rdma_devices(fixture_file("sysfs", "roce_mlx5")))
    assert sorted(devices) == ["mlx5_0", "mlx5_1"]
    up = devices["mlx5_0"]
    assert up["driver"] == "mlx5_core" and up["transport"] == "RoCE"
    assert up["pci_address"] == "0000:0c:00.0" and up["numa_node"] == 0
    assert (up["fw_ver"], up["hca_type"], up["board_id"]) == ("22.36.1010", "MT4125", "MT_0000000359")
    assert up["node_type"] == "CA"
    port = up["ports"][0]
    assert (port["state"], port["phys_state"], port["link_layer"], port["rate_gbps"]) == ("ACTIVE", "LinkUp", "Ethernet", 100)
    assert port["netdev"] == "eth05"
    assert [g["index"] for g in port["gids"]] == [0, 1, 2, 3]      # zero GIDs dropped
    assert [g["type"] for g in port["gids"]] == ["RoCE v1", "RoCE v2", "RoCE v1", "RoCE v2"]
    assert port["gids"][3] == {"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a6e:0021",
                               "type": "RoCE v2", "netdev": "eth05", "ipv4": "10.110.0.33"}
    assert port["roce_v2_gid_index"] == 3
    down = devices["mlx5_1"]["ports"][0]
    assert (down["state"], down["phys_state"], down["rate_gbps"]) == ("DOWN", "Disabled", 40)
    # only a link-local RoCE v2 GID: still the one to use, for lack of a better one
    assert down["roce_v2_gid_index"] == 1
    assert rdma.summarize(list(devices.values()))["active_hcas"] == ["mlx5_0"]


def test_sysfs_erdma_gid_index_matches_seed_004(fixture_file):
    (device,) = sysfs.read_rdma_devices(fixture_file("sysfs", "erdma"))
    assert device["driver"] == "erdma" and device["transport"] == "eRDMA"
    port = device["ports"][0]
    assert port["gids"][1]["ipv4"] == "192.168.10.21"
    # the E-HPC guide sets NCCL_IB_GID_INDEX=1 on these nodes
    assert port["roce_v2_gid_index"] == 1


def test_sysfs_infiniband_with_ipoib(fixture_file):
    (device,) = sysfs.read_rdma_devices(fixture_file("sysfs", "ib_mlx5"))
    assert device["transport"] == "InfiniBand" and device["numa_node"] == 1
    port = device["ports"][0]
    assert (port["lid"], port["sm_lid"], port["rate_gbps"]) == (0x12, 1, 200)
    assert port["gids"][0]["type"] == "IB" and port["gids"][0]["netdev"] is None
    assert port["netdev"] == "ib0"
    assert port["roce_v2_gid_index"] is None


def test_no_rdma_is_an_empty_list(tmp_path):
    assert sysfs.read_rdma_devices(str(tmp_path)) == []
    assert rdma.summarize([]) == {"count": 0, "active_ports": 0, "transports": [], "link_layers": [], "active_hcas": [],
                                  "ports_not_active": []}


def test_merge_verbs_fills_active_mtu(fixture_file):
    devices = sysfs.read_rdma_devices(fixture_file("sysfs", "roce_mlx5"))
    verbs = [{"name": "mlx5_0", "transport": "RoCE", "ports": [{"port": 1, "active_mtu": 4096}]}]
    merged = _by_name(rdma.merge_verbs(devices, verbs))
    assert merged["mlx5_0"]["ports"][0]["active_mtu"] == 4096
    assert merged["mlx5_1"]["ports"][0]["active_mtu"] is None


@pytest.mark.parametrize("gids, up, expected", [
    ([], {}, None),
    ([{"index": 0, "type": "RoCE v1", "ipv4": "10.0.0.1", "netdev": "a"}], {}, None),
    ([{"index": 1, "type": "RoCE v2", "ipv4": None, "netdev": "a"},
      {"index": 5, "type": "RoCE v2", "ipv4": "10.0.0.1", "netdev": "b"},
      {"index": 3, "type": "RoCE v2", "ipv4": "10.0.0.2", "netdev": "c"}], {"c": False}, 5),
    ([{"index": 3, "type": "RoCE v2", "ipv4": "10.0.0.2", "netdev": "c"}], {"c": False}, 3),
])
def test_gid_index_preference(gids, up, expected):
    assert rdma.select_roce_v2_gid_index(gids, up) == expected


@pytest.mark.parametrize("text, expected", [
    ("4: ACTIVE", "ACTIVE"), ("PORT_ACTIVE (4)", "ACTIVE"), ("1: DOWN", "DOWN"), ("PORT_INIT (2)", "INIT"),
    ("5: LinkUp", "LinkUp"), ("LINK_UP (5)", "LinkUp"), ("PORT_CONFIGURATION_TRAINING (4)", "PortConfigurationTraining"),
    ("3: Disabled", "Disabled"), (None, None),
])
def test_parse_state(text, expected):
    assert rdma.parse_state(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("100 Gb/sec (4X EDR)", 100), ("2.5 Gb/sec (1X SDR)", 2.5), ("400 Gb/sec (4X NDR)", 400), ("", None), ("junk", None),
])
def test_parse_rate(text, expected):
    assert rdma.parse_rate_gbps(text) == expected


# ------------------------------------------------------------------ numbers that are not numbers

def _json_safe(devices):
    """What a module prints: a 4,000-digit hex LID parsed as an int cannot even be turned into text."""
    return json.loads(json.dumps(devices))


@pytest.mark.parametrize("lid", ["0x" + "f" * 4000, "9" * 4000, "9" * 5000, "0x10000", "65536", u"\u00b2", "1_0"])
def test_a_lid_that_is_not_16_bits_is_not_a_lid(read_fixture, lid):
    text = read_fixture("ibv_devinfo", "mlx4_ib_plain_heioy-books.txt")
    assert text.count("port_lid:\t\t22\n") == 1
    devices = _json_safe(_by_name(rdma.parse_ibv_devinfo(text.replace("port_lid:\t\t22\n", "port_lid:\t\t%s\n" % lid))))
    port = devices["mlx4_1"]["ports"][0]
    assert (port["state"], port["lid"], port["sm_lid"]) == ("ACTIVE", None, 1)
    assert devices["mlx4_0"]["ports"][0]["lid"] == 32   # the other device's LID is still read


@pytest.mark.parametrize("text, expected", [
    ("0x12", 0x12), ("18", 18), ("0xffff", 0xffff), ("0", 0), (" 0x1\n", 1),
    ("0x" + "f" * 4000, None), ("9" * 4000, None), ("-1", None), ("0x10000", None), (u"\u0661\u0668", None), ("", None),
])
def test_parse_lid(text, expected):
    assert rdma.parse_lid(text) == expected


@pytest.mark.parametrize("lid", ["0x" + "f" * 4000, "9" * 4000])
def test_a_sysfs_lid_that_is_not_16_bits_is_not_a_lid(fixture_file, tmp_path, lid):
    root = tmp_path / "sys"
    shutil.copytree(fixture_file("sysfs", "ib_mlx5"), str(root), symlinks=True)
    (root / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "lid").write_text(lid + "\n")
    (device,) = _json_safe(sysfs.read_rdma_devices(str(root)))
    assert (device["ports"][0]["lid"], device["ports"][0]["sm_lid"], device["ports"][0]["rate_gbps"]) == (None, 1, 200)


def test_a_port_directory_that_is_no_port_number_is_left_out(fixture_file, tmp_path):
    root = tmp_path / "sys"
    shutil.copytree(fixture_file("sysfs", "ib_mlx5"), str(root), symlinks=True)
    for name in (u"\u00b2", "9" * 200):   # str.isdigit() is True for both; int() refuses the first
        (root / "class" / "infiniband" / "mlx5_0" / "ports" / name).mkdir()
    (device,) = sysfs.read_rdma_devices(str(root))
    assert [port["port"] for port in device["ports"]] == [1]
    with pytest.raises(ValueError, match=r"is not a port number \(1-255\)"):
        rdma.port_from_sysfs(u"\u00b2", {}, {}, {})


@pytest.mark.parametrize("old, new", [
    ("\t\tport:\t2\n", "\t\tport:\t%s\n" % ("2" * 5000)),                          # int() digit limit
    ("GID[  0]:", "GID[%s]:" % ("1" * 5000)),
    ("active_mtu:\t\t4096 (5)", "active_mtu:\t\t%s (5)" % ("4" * 5000)),
    ("active_width:\t\t4X (2)", "active_width:\t\t%sX (2)" % ("4" * 5000)),
    ("active_speed:\t\t2.5 Gbps (1)", "active_speed:\t\t1.2.3 Gbps (1)"),         # float('1.2.3')
])
def test_numbers_in_ibv_devinfo_are_ascii_digits_and_few(read_fixture, old, new):
    text = read_fixture("ibv_devinfo", "mlx4_ib_verbose_port2_heioy-books.txt")
    assert text.count(old) == 1
    devices = _json_safe(rdma.parse_ibv_devinfo(text.replace(old, new)))
    assert [device["name"] for device in devices] == ["mlx4_1"]
