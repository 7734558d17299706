"""ibstat and ibstatus on real outputs (sources in tests/unit/fixtures/README.md)."""


from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ibstat
from paths import fixture_bytes


read = fixture_bytes


def ports(cas):
    return [(ca["name"], p["port"], p["state"], p["physical_state"], p["rate"], p["link_layer"]) for ca in cas for p in ca["ports"]]


def test_ibstat_ndr_ib_and_a_disabled_ethernet_port_cut_off_mooncake2039():
    cas = ibstat.parse_ibstat(read("ibstat", "ib_and_roce_down_mooncake2039.txt"))
    assert ports(cas) == [("mlx5_0", 1, "ACTIVE", "LinkUp", 400, "InfiniBand"),
                          ("mlx5_1", 1, "DOWN", "Disabled", 40, "Ethernet")]
    first = cas[0]
    assert (first["ca_type"], first["firmware"], first["node_guid"], first["number_of_ports"]) == (
        "MT4129", "28.41.1000", "0x58a2e103001b2576", 1)
    assert (first["ports"][0]["base_lid"], first["ports"][0]["sm_lid"], first["ports"][0]["port_guid"]) == (
        287, 1024, "0x58a2e103001b2576")
    assert cas[2]["name"] == "mlx5_10" and cas[2]["ports"] == []   # the capture ends at 'Por'


def test_ibstat_roce_ports_mooncake1999():
    cas = ibstat.parse_ibstat(read("ibstat", "roce_active_mooncake1999.txt"))
    assert ports(cas) == [("mlx5_0", 1, "ACTIVE", "LinkUp", 200, "Ethernet"),
                          ("mlx5_1", 1, "ACTIVE", "LinkUp", 200, "Ethernet"),
                          ("mlx5_10", 1, "DOWN", "Disabled", None, None)]


def test_ibstat_redacted_values_and_ibpanic_gpud752():
    text = read("ibstat", "redacted_with_ibpanic_gpud752.txt")
    cas = ibstat.parse_ibstat(text)
    assert ports(cas) == [("mlx5_7", 1, "ACTIVE", "LinkUp", 200, "InfiniBand")]
    assert (cas[0]["ca_type"], cas[0]["node_guid"], cas[0]["ports"][0]["port_guid"]) == (None, None, None)
    assert cas[0]["ports"][0]["base_lid"] == 13305
    assert ibstat.ibstat_errors(text) == ["ibpanic: [1323906] main: stat of IB device 'mlx5_8' failed: No such file or directory"]


def test_ibstat_two_ports_between_ibwarn_debug_lines_rdmacore847():
    text = read("ibstat", "mlx4_two_ports_ibwarn_rdmacore847.txt")
    cas = ibstat.parse_ibstat(text)
    assert ports(cas) == [("mlx4_0", 1, "DOWN", "Disabled", 10, "InfiniBand"), ("mlx4_0", 2, "ACTIVE", "LinkUp", 56, None)]
    assert cas[0]["number_of_ports"] == 2 and cas[0]["ports"][1]["base_lid"] is None   # 'Base lid:' cut off
    assert len(ibstat.ibstat_errors(text)) == 4


def test_ibstat_after_an_ellipsis_nccl1591():
    cas = ibstat.parse_ibstat(read("ibstat", "ib_ndr_after_ellipsis_nccl1591.txt"))
    assert ports(cas) == [("mlx5_5", 1, "ACTIVE", "LinkUp", 400, "InfiniBand")]
    assert (cas[0]["ports"][0]["base_lid"], cas[0]["ports"][0]["sm_lid"]) == (987, 359)


def test_ibstatus_is_recognised_and_read_nccl1866():
    text = read("ibstat", "ibstatus_roce_edr_nccl1866.txt")
    assert ibstat.is_ibstatus(text)
    cas = ibstat.parse_ibstat(text)
    assert cas == ibstat.parse_ibstatus(text)
    assert ports(cas) == [("mlx5_0", 1, "ACTIVE", "LinkUp", 100, "Ethernet"), ("mlx5_1", 1, "ACTIVE", "LinkUp", 100, "Ethernet"),
                          ("mlx5_2", 1, None, None, None, None)]
    port = cas[0]["ports"][0]
    assert (port["width"], port["speed"], port["default_gid"], port["base_lid"]) == (
        "4X", "EDR", "fe80:0000:0000:0000:8ae9:a4ff:fe9c:7f1a", 0)
