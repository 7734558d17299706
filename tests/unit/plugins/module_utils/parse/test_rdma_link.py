"""rdma link (2017 JSON, 2018 text, current text) on real outputs (sources in tests/unit/fixtures/README.md)."""


import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import rdma_link
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError
from paths import fixture_bytes


read = fixture_bytes


def links(found):
    return [(l["device"], l["port"], l["state"], l["physical_state"], l["netdev"]) for l in found]


def test_rdma_link_current_form_ib_and_roce_sriovop635():
    found = rdma_link.parse_rdma_link(read("rdma_link", "ib_subnet_lid_sriovop635.txt"))
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
    assert links(rdma_link.parse_rdma_link(read("rdma_link", name))) == expected


def test_rdma_link_old_form_and_details_iproute2_2018():
    found = rdma_link.parse_rdma_link(read("rdma_link", "old_format_netdev_iproute2_2018.txt"))
    assert links(found) == [("mlx5_3", 1, "ACTIVE", "LinkUp", "ens7")] * 2
    assert (found[0]["ifindex"], found[1]["netdev_index"], found[1]["caps"]) == (4, 7, ["CM", "IP_BASED_GIDS"])
    detailed = rdma_link.parse_rdma_link(read("rdma_link", "old_format_details_caps_iproute2_2018.txt"))[0]
    assert (detailed["state"], detailed["physical_state"], detailed["lid"], detailed["sm_lid"]) == ("ACTIVE", "LinkUp", 2, 2)
    assert detailed["caps"][0] == "SM" and detailed["caps"][-1] == "EXT_INFO" and len(detailed["caps"]) == 15


def test_rdma_link_json_iproute2_2017():
    found = rdma_link.parse_rdma_link(read("rdma_link", "json_pretty_iproute2_2017.txt"))
    assert links(found) == [("mlx5_0", 1, "ACTIVE", "LinkUp", None), ("mlx5_1", 1, "ACTIVE", "LinkUp", None)]
    assert (found[1]["lid"], found[1]["sm_lid"], found[1]["caps"], found[1]["ifindex"]) == (13400, 49151, ["AUTO_MIG"], 2)


def test_rdma_link_json_of_current_iproute2():
    # iproute2 since 2019 prints the device in "ifname" and the port apart (rdma/link.c, print_uint "port").
    found = rdma_link.parse_rdma_link('[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP",'
                                      '"netdev":"ens1f0np0","netdev_index":4}]')
    assert links(found) == [("mlx5_0", 1, "ACTIVE", "LinkUp", "ens1f0np0")] and found[0]["netdev_index"] == 4
    with pytest.raises(ToolTextError, match="rdma -j link output is not valid JSON"):
        rdma_link.parse_rdma_link('[{"ifname": "mlx5_0", ')
    with pytest.raises(ToolTextError, match="rdma -j link item 1 is not an object"):
        rdma_link.parse_rdma_link('[{"ifname": "mlx5_0"}, 5]')
