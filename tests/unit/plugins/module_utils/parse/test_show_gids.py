"""show_gids on real outputs (sources in tests/unit/fixtures/README.md), the RoCE v2 IPv4 GID index
and show_gids against rdma_devices (sysfs)."""


import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import gid_table
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import show_gids
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError
from paths import fixture_bytes


read = fixture_bytes


TUTORIAL = ("show_gids", "roce_3dev_rdmatutorial.txt")


def test_show_gids_table_rdmatutorial():
    text = read(*TUTORIAL)
    gids = show_gids.parse_show_gids(text)
    assert len(gids) == 12 == show_gids.show_gids_found(text)
    assert gids[3] == {"device": "mlx5_0", "port": 1, "index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a6e:0021",
                       "ipv4": "10.110.0.33", "version": "v2", "netdev": "eth05"}
    assert gids[0]["ipv4"] is None and gids[0]["version"] == "v1"


def test_roce_v2_gid_index_as_seed_003_reads_it_by_hand():
    gids = show_gids.parse_show_gids(read(*TUTORIAL))
    assert show_gids.roce_v2_gid_index(gids) == 3
    assert show_gids.roce_v2_gid_index(gids, netdev="eth02") == 3
    assert show_gids.roce_v2_gid_index(gids, ipv4="26.110.178.29") == 3
    assert show_gids.roce_v2_gid_index(gids, netdev="eth09") is None
    macvlan = show_gids.parse_show_gids(read("show_gids", "macvlan_index4_7_nccl1573.txt"))
    assert show_gids.roce_v2_gid_index(macvlan, netdev="net2") == 7        # index 7 in this pod, not the usual 3
    spaces = show_gids.parse_show_gids(read("show_gids", "spaces_ipv4_at_4_5_nccl1510.txt"))
    assert show_gids.roce_v2_gid_index(spaces, netdev="net1") == 5 and len(spaces) == 4   # the cut-off 5th line is dropped


def test_show_gids_without_ipv4_or_empty():
    ionic = show_gids.parse_show_gids(read("show_gids", "ipv6_only_v2_ionic_mooncake1617.txt"))
    assert len(ionic) == 10 and {g["ipv4"] for g in ionic} == {None}
    assert show_gids.roce_v2_gid_index(ionic) is None   # no IPv4 GID: NCCL needs NCCL_IB_ADDR_FAMILY=AF_INET6 here
    assert ionic[1]["gid"] == "fd93:16d3:59b6:010d:0690:81ff:fe39:e3e8"
    text = read("show_gids", "empty_in_pod_rdmasriov30.txt")
    assert show_gids.parse_show_gids(text) == [] and show_gids.show_gids_found(text) == 0


def test_gid_index_refuses_what_is_not_a_gid_list():
    with pytest.raises(ToolTextError, match="gids must be parse_show_gids' list, got str"):
        show_gids.roce_v2_gid_index("mlx5_0")
    with pytest.raises(ToolTextError, match=r"gids\[0\] must be a mapping, got int"):
        show_gids.roce_v2_gid_index([3])


def test_cross_check_against_the_roce_sysfs_tree(fixture_file):
    # The sysfs fixture took mlx5_0's GIDs from this very listing; its mlx5_1 is another port (eth06, no IPv4)
    # and it has no mlx5_2: every difference is named.
    devices = sysfs.read_rdma_devices(fixture_file("sysfs", "roce_mlx5"))
    found = gid_table.cross_check_gids(show_gids.parse_show_gids(read(*TUTORIAL)), devices)
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
    mlx5_0 = [g for g in show_gids.parse_show_gids(read(*TUTORIAL)) if g["device"] == "mlx5_0"]
    assert gid_table.cross_check_gids(mlx5_0, devices) == []
    assert gid_table.cross_check_gids(mlx5_0[:3], devices) == [{
        "check": "gid_table_mismatch", "severity": "info", "target": "mlx5_0/1 GID 3",
        "detail": "rdma_devices has 0000:0000:0000:0000:0000:ffff:0a6e:0021 (RoCE v2) that show_gids did not list",
        "fix_hint": "show_gids may have been cut off; re-run it"}, {
        "check": "gid_index_mismatch", "severity": "warning", "target": "mlx5_0/1",
        "detail": "RoCE v2 IPv4 GID index: show_gids gives None, rdma_devices 3",
        "fix_hint": "set NCCL_IB_GID_INDEX from sysfs (rdma_devices) after the addresses settle"}]
