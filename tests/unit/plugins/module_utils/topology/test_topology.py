"""module_utils/topology/ and its readers (parse/ibnetdiscover.py, parse/lldp.py, parse/nvidia_smi_fabric.py)
against real captures: the X5 cluster's ibnetdiscover (PSMN, 2020), lldpcli from a Cumulus switch and from
our own lldpd 1.0.16 lab, nvidia-smi -q from an H100 and the project's H200s, GB200 Fabric excerpts posted
in public issues (fixture sources: /tmp/helper-topology-fixtures.md, to go into
tests/unit/fixtures/README.md). The rails are in test_rails.py."""

import os
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_jobs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.ibnetdiscover import normalize_guid, parse_ibnetdiscover, parse_node_name_map
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.ibnetdiscover import switch_own_name
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.lldp import parse_lldp_neighbors
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import _ZERO_UUID, parse_nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError, sanitize_name
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.tree import fabric_tree, switch_names
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.host_leaf import host_leaf_map, lldp_host_leaves
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.nvlink import nvlink_domains
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.slurm_conf import slurm_topology_conf
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.cabling import cabling_check, observed_attachment
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import compress_hostlist
from paths import COLLECTIONS, fixture_text


read = fixture_text


X5 = read("ibnetdiscover", "x5_psmn_qdr_hpc_toolset.txt")
X5_MAP = read("ibnetdiscover", "x5_psmn_node_name_map.txt")


@pytest.fixture(scope="module")
def x5():
    return parse_ibnetdiscover(X5, node_name_map=X5_MAP)


@pytest.fixture(scope="module")
def x5_tree(x5):
    return fabric_tree(x5)


def read_conf(text):
    """topology.conf -> ({switch: nodes}, {switch: child switches}), read the way slurmctld reads it:
    comments dropped, Key=Value words, Nodes=/Switches= as hostlists."""
    nodes, children = {}, {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = dict(word.split("=", 1) for word in line.split())
        name = fields["SwitchName"] if "SwitchName" in fields else fields.get("BlockName")
        assert name and name not in nodes and name not in children, "defined twice: %s" % line
        if "Nodes" in fields:
            nodes[name] = slurm_jobs.expand_hostlist(fields["Nodes"])
        if "Switches" in fields:
            children[name] = slurm_jobs.expand_hostlist(fields["Switches"])
    return nodes, children


def reach(name, nodes, children):
    if name in nodes:
        return set(nodes[name])
    found = set()
    for child in children[name]:
        found |= reach(child, nodes, children)
    return found


# --- ibnetdiscover -------------------------------------------------------------------------------

def test_x5_without_a_name_map_names_no_host_and_says_why():
    parsed = parse_ibnetdiscover(X5)
    assert parsed["counts"] == {"switches": 11, "cas": 89, "hosts": 0, "links": 159}
    assert len(parsed["unnamed_cas"]) == 89
    assert "MT25408 ConnectX Mellanox Technologies" in parsed["warnings"][0]
    assert "node_name_map" in parsed["warnings"][0]


def test_x5_switches_keep_their_own_names_and_links(x5):
    assert x5["counts"] == {"switches": 11, "cas": 89, "hosts": 86, "links": 159}
    switches = dict((s["guid"], s) for s in x5["switches"])
    edge = switches["0x0008f105002036b4"]
    assert edge["name"] == "hoibp0013"                        # "Voltaire 4036 # hoibp0013"
    assert edge["description"] == "Voltaire 4036 # hoibp0013"
    assert (edge["lid"], edge["port_count"], edge["enhanced"]) == (10, 36, True)
    port7 = [p for p in edge["ports"] if p["port"] == 7][0]
    assert (port7["remote_type"], port7["remote_name"], port7["remote_port"]) == ("ca", "sl390lin107", 1)
    assert (port7["width"], port7["speed"], port7["remote_lid"]) == ("4x", "QDR", 29)
    mellanox = switches["0x0002c90200417670"]
    assert mellanox["name"] is None and mellanox["enhanced"] is False     # base port 0, no name of its own
    assert mellanox["vendid"] == "0x2c9" and mellanox["devid"] == "0xbd36"
    assert [p["speed"] for p in switches["0x0008f10500200b50"]["ports"] if p["port"] == 4] == ["DDR"]


def test_x5_hosts_hang_off_their_leaf(x5):
    assert x5["hosts"]["r510gluster1"]["switch"] == "0x0008f10500108bba"
    assert x5["hosts"]["r510gluster1"]["hcas"][0]["switch_port"] == 27
    assert x5["hosts"]["r422node2"]["hcas"][0]["speed"] == "DDR"
    assert sorted(c["guid"] for c in x5["unnamed_cas"]) == [
        "0x003048c749450000", "0x003048c74ae20000", "0x78e7d1030024535c"]   # not in X5.map


def test_x5_tree_two_spine_levels_and_the_admins_spine_list(x5_tree):
    assert x5_tree["levels"] == 3
    leaves = dict((leaf["name"], len(leaf["hosts"])) for leaf in x5_tree["leaves"].values())
    assert leaves == {"4036-8BBA": 6, "4036-369C": 4, "hoibp0013": 24, "ib-0002c902004827b0": 9,
                      "ib-0002c90200417670": 24, "ib-0008f10500200b50": 19}
    # X5.spine is the cluster admin's own list of the switches that only link switches.
    spines_file = [line for line in read("ibnetdiscover", "x5_psmn_spines.txt").split() if line.startswith("S-")]
    assert sorted(x5_tree["spines"]) == sorted(normalize_guid(g) for g in spines_file)
    core = x5_tree["spines"]["0x0008f105001086a2"]
    assert (core["name"], core["level"]) == ("4036-86A2", 3)
    assert [x5_tree["switch_names"][g] for g in core["children"]] == ["ib-0008f1050010851e", "ib-0008f10500108530"]
    assert x5_tree["leaf_spines"]["ib-0008f10500200b50"] == ["4036-8C5C", "ib-0008f10500108098"]
    assert x5_tree["roots"] == ["4036-8C5C", "4036-86A2", "ib-0008f10500108098"]
    assert x5_tree["host_leaf"]["sl390lin22"] == "4036-369C"


def test_x5_leaves_hold_the_nodes_the_clusters_own_topology_conf_lists(x5_tree):
    """X5.topology.conf was written from the same ibnetdiscover by the cluster's own tool (ibmap2slurm.py);
    its leaves name unmapped CAs by GUID (H-...), which this module leaves out."""
    theirs, ignored = read_conf(read("ibnetdiscover", "x5_psmn_topology_conf_hpc_toolset.conf"))
    ours = dict((guid, set(leaf["hosts"])) for guid, leaf in x5_tree["leaves"].items())
    assert len(theirs) == len(ours) == 6
    for name, hosts in theirs.items():
        assert ours[normalize_guid(name)] == set(h for h in hosts if not h.startswith("H-")), name


def test_x5_topology_conf_is_connected_and_lists_every_node_once(x5_tree):
    text = slurm_topology_conf(x5_tree)
    assert "SwitchName=hoibp0013 Nodes=sl390lin[101-124]\n" in text
    assert "SwitchName=ib-0008f10500200b50 Nodes=r422node[1-2,5-8,15-16,35-36,39-40,57,65-66,69-70,103-104]\n" in text
    assert '# 0x0008f105002036b4 "Voltaire 4036 # hoibp0013"\n' in text
    assert "SwitchName=4036-86A2 Switches=ib-0008f1050010851e,ib-0008f10500108530\n" in text
    assert text.rstrip().endswith("SwitchName=top Switches=4036-86A2,4036-8C5C,ib-0008f10500108098")
    nodes, children = read_conf(text)
    listed = [host for hosts in nodes.values() for host in hosts]
    assert len(listed) == len(set(listed)) == 86
    assert reach("top", nodes, children) == set(listed)
    for parent, kids in children.items():
        assert all(k in nodes or k in children for k in kids), parent
    assert all(len(name) <= 64 for name in list(nodes) + list(children))


def test_mf0_descriptions_give_the_switch_names_and_a_link_printed_once_counts():
    parsed = parse_ibnetdiscover(read("ibnetdiscover", "mf0_quantum_lines_topograph_ib_test.txt"))
    names = dict((s["guid"], s["name"]) for s in parsed["switches"])
    assert names["0xb8cef603008032b8"] == "SJC3-A04-IB-ComputeLeaf-007"
    assert names["0x08c0eb03008cc87c"] == "IB-ComputeSpine-03"
    spine3 = [s for s in parsed["switches"] if s["guid"] == "0x08c0eb03008cc87c"][0]
    cut = [p for p in spine3["ports"] if p["port"] == 2][0]
    assert (cut["remote_lid"], cut["width"], cut["speed"]) == (383, None, None)     # "lid 383 " and no speed
    # Leaf-007's port 23 goes to Spine-03 port 39; Spine-03's block does not print it, the link is kept.
    assert [p["remote_name"] for p in spine3["ports"] if p["port"] == 39] == ["SJC3-A04-IB-ComputeLeaf-007"]
    assert any("only the switch side prints the link" in w for w in parsed["warnings"])
    tree = fabric_tree(parsed)
    assert tree["leaves"] == {} and len(tree["unreached"]) == 6
    with pytest.raises(TopologyError, match="no host is attached"):
        slurm_topology_conf(tree)


def _fat_tree_text(pods=2, leaves=2, hosts=2, pod_spines=2, cores=2):
    """An ibnetdiscover topology of a three-level fat tree, in the layout of the X5 capture."""
    blocks = []
    guid = [0x1000]

    def new():
        guid[0] += 1
        return "%016x" % guid[0]
    core_ids = [new() for c in range(cores)]
    spine_ids, leaf_ids, host_ids = {}, {}, {}
    for p in range(pods):
        spine_ids[p] = [new() for s in range(pod_spines)]
        leaf_ids[p] = [new() for l in range(leaves)]
        for l in range(leaves):
            host_ids[(p, l)] = [new() for h in range(hosts)]

    def switch(sid, name, ports):
        lines = ['Switch\t36 "S-%s"\t\t# "MF0;%s:MQM9700/U1" enhanced port 0 lid 1 lmc 0' % (sid, name)]
        for number, (kind, rid, rport, rdesc) in enumerate(ports, 1):
            lines.append('[%d]\t"%s-%s"[%d]\t\t# "%s" lid 2 4xNDR' % (number, kind, rid, rport, rdesc))
        return "\n".join(lines)
    for c, cid in enumerate(core_ids):
        ports = [("S", spine_ids[p][s], 10 + c, "MF0;pod%d-spine%d:x" % (p + 1, s + 1))
                 for p in range(pods) for s in range(pod_spines)]
        blocks.append(switch(cid, "core%d" % (c + 1), ports))
    for p in range(pods):
        for s, sid in enumerate(spine_ids[p]):
            ports = [("S", leaf_ids[p][l], 20 + s, "MF0;pod%d-leaf%d:x" % (p + 1, l + 1)) for l in range(leaves)]
            ports += [("S", core_ids[c], 1, "MF0;core%d:x" % (c + 1)) for c in range(cores)]
            blocks.append(switch(sid, "pod%d-spine%d" % (p + 1, s + 1), ports))
        for l, lid in enumerate(leaf_ids[p]):
            ports = [("H", hid, 1, "p%dl%dn%d mlx5_0" % (p + 1, l + 1, h + 1)) for h, hid in enumerate(host_ids[(p, l)])]
            ports += [("S", spine_ids[p][s], 1, "MF0;pod%d-spine%d:x" % (p + 1, s + 1)) for s in range(pod_spines)]
            blocks.append(switch(lid, "pod%d-leaf%d" % (p + 1, l + 1), ports))
    return "\n\n".join(blocks) + "\n"


def test_three_level_fat_tree_gets_cores_above_the_pod_spines():
    tree = fabric_tree(parse_ibnetdiscover(_fat_tree_text()))
    assert tree["levels"] == 3
    assert sorted(tree["leaf_hosts"]) == ["pod1-leaf1", "pod1-leaf2", "pod2-leaf1", "pod2-leaf2"]
    assert tree["leaf_spines"]["pod2-leaf1"] == ["pod2-spine1", "pod2-spine2"]
    assert tree["roots"] == ["core1", "core2"]
    text = slurm_topology_conf(tree)
    assert "SwitchName=pod1-leaf1 Nodes=p1l1n[1-2]\n" in text
    assert "SwitchName=pod1-spine1 Switches=pod1-leaf[1-2]\n" in text
    assert "SwitchName=core1 Switches=pod1-spine[1-2],pod2-spine[1-2]\n" in text
    assert text.endswith("SwitchName=top Switches=core[1-2]\n")
    nodes, children = read_conf(text)
    assert len(reach("top", nodes, children)) == 8


def test_a_service_node_on_a_spine_does_not_make_the_spine_a_leaf():
    """A subnet manager or UFM host cabled to a spine: the spine still sits above the leaves, the host is
    left out of the tree and named."""
    lines = ['Switch\t36 "S-00000000000000a0"\t\t# "MF0;spine1:MQM8700/U1" enhanced port 0 lid 1 lmc 0',
             '[1]\t"S-00000000000000b1"[9]\t\t# "MF0;leaf1:MQM8700/U1" lid 2 4xHDR',
             '[2]\t"S-00000000000000b2"[9]\t\t# "MF0;leaf2:MQM8700/U1" lid 3 4xHDR',
             '[40]\t"H-00000000000000f0"[1](f0)\t\t# "ufm01 mlx5_0" lid 50 4xHDR', ""]
    for leaf in (1, 2):
        lines.append('Switch\t36 "S-00000000000000b%d"\t\t# "MF0;leaf%d:MQM8700/U1" enhanced port 0 lid %d lmc 0' % (leaf, leaf, leaf + 1))
        lines += ['[%d]\t"H-0000000000000%d%02d"[1](%d%02d)\t\t# "node%d%02d mlx5_0" lid %d 4xHDR' % (n, leaf, n, leaf, n, leaf, n, 10 * leaf + n)
                  for n in range(1, 4)]
        lines += ['[9]\t"S-00000000000000a0"[%d]\t\t# "MF0;spine1:MQM8700/U1" lid 1 4xHDR' % leaf, ""]
    tree = fabric_tree(parse_ibnetdiscover("\n".join(lines)))
    assert sorted(tree["leaf_hosts"]) == ["leaf1", "leaf2"]
    assert [s["name"] for s in tree["spines"].values()] == ["spine1"]
    assert tree["off_tree_hosts"] == {"ufm01": ["spine1"]}
    assert "ufm01 on spine1" in tree["warnings"][0]
    text = slurm_topology_conf(tree)
    assert "SwitchName=spine1 Switches=leaf[1-2]\n" in text and "ufm01" not in text


def test_rail_leaves_with_the_same_hosts_become_one_switch():
    """A rail-optimized unit: every host has one NIC on each of two leaves; Slurm warns on a node under two
    leaves, so the two rails are written as one switch."""
    lines = []
    for rail in (1, 2):
        lines.append('Switch\t36 "S-%016x"\t\t# "MF0;su1-rail%d:MQM9700/U1" enhanced port 0 lid %d lmc 0' % (rail, rail, rail))
        for h in range(1, 5):
            lines.append('[%d]\t"H-%016x"[1](%x)\t\t# "gpu%02d mlx5_%d" lid %d 4xNDR' % (h, 100 * rail + h, 100 * rail + h, h, rail - 1, 10 * rail + h))
        lines.append("")
    tree = fabric_tree(parse_ibnetdiscover("\n".join(lines)))
    assert tree["rail_groups"] == [{"leaves": ["su1-rail1", "su1-rail2"], "hosts": ["gpu01", "gpu02", "gpu03", "gpu04"]}]
    assert tree["host_leaves"]["gpu03"] == ["su1-rail1", "su1-rail2"]
    text = slurm_topology_conf(tree)
    assert "SwitchName=su1-rail1 Nodes=gpu[01-04]\n" in text and "su1-rail2 Nodes" not in text
    assert "same nodes as su1-rail2" in text


def test_a_cut_off_ibnetdiscover_keeps_what_it_can_and_says_so():
    cut = X5[:X5.index("[20]\t\"S-0008f10500108098\"[11]")] + "[20]\t\"S-0008f1050"
    parsed = parse_ibnetdiscover(cut, node_name_map=X5_MAP)
    assert parsed["counts"]["switches"] >= 1
    assert any("could not be read" in w for w in parsed["warnings"])
    crlf = parse_ibnetdiscover(X5.replace("\n", "\r\n"), node_name_map=X5_MAP)
    assert crlf["counts"] == {"switches": 11, "cas": 89, "hosts": 86, "links": 159}
    ansi = parse_ibnetdiscover("\x1b[1m" + X5.replace("Switch\t", "\x1b[32mSwitch\x1b[0m\t"), node_name_map=X5_MAP)
    assert ansi["counts"]["switches"] == 11
    with pytest.raises(TopologyError, match="no Switch or Ca block"):
        parse_ibnetdiscover("ibwarn: [1234] mad_rpc_open_port: can't open UMAD port ((null):0)\n")


def test_node_name_map_file_format_and_bad_guids():
    names = parse_node_name_map('# ibnetdiscover --node-name-map\n0x0002c9030004823c "r815lin106"\nS-0008f105002036b4 edge-13\n')
    assert names == {"0x0002c9030004823c": "r815lin106", "0x0008f105002036b4": "edge-13"}
    with pytest.raises(TopologyError, match="line 1: 'node7' is not a GUID"):
        parse_node_name_map("node7 gpu07\n")


# --- names and hostlists -------------------------------------------------------------------------

@pytest.mark.parametrize("names, expected", [
    (["node01", "node02", "node03", "node10"], "node[01-03,10]"),
    (["node9", "node10", "node11"], "node[9-11]"),
    (["gpu-a08", "gpu-a09", "gpu-a10", "login"], "gpu-a[08-10],login"),
    (["leaf1", "leaf2", "leaf3", "leaf4"], "leaf[1-4]"),
    (["rack1-n2"], "rack1-n2"),
    (["ib-0008f10500108098", "ib-0008f10500200b50"], "ib-0008f10500200b50,ib-0008f10500108098"),
])
def test_compress_hostlist_folds_like_slurm_and_expands_back(names, expected):
    assert compress_hostlist(names) == expected
    assert sorted(slurm_jobs.expand_hostlist(expected)) == sorted(names)


@pytest.mark.parametrize("bad, message", [
    ("leaf 1", "a space"), ("leaf=1", "'='"), ("a,b", "','"), ("sw#1", "'#'"), ("n[1]", "'\\['"),
    ("leaf1\nSwitchName=evil", "a newline"), ("-leaf", "'-'"), ("x" * 65, "65 characters"),
])
def test_bad_switch_names_are_refused_naming_the_value(bad, message):
    with pytest.raises(TopologyError, match=message):
        slurm_topology_conf({"node01": bad})


def test_a_bad_node_name_from_a_map_is_named():
    with pytest.raises(TopologyError, match=r"node name \(under leaf leaf1\) 'gpu 07' holds a space"):
        slurm_topology_conf({"gpu 07": "leaf1"})


def test_descriptions_become_names_the_same_way_every_time():
    assert switch_own_name("MF0;PG21A-R10-IB:Q3400_RA/U2") == "PG21A-R10-IB"
    assert switch_own_name("SwitchIB Mellanox Technologies") is None
    assert sanitize_name("Rack 12 / Leaf #3") == "Rack-12-Leaf-3"
    parsed = {"switches": [{"guid": "0x0000000000000a01", "name": "leaf 1"}, {"guid": "0x0000000000000a02", "name": "leaf-1"},
                           {"guid": "0x0000000000000a03", "name": None}]}
    assert switch_names(parsed) == {"0x0000000000000a01": "leaf-1-0a01", "0x0000000000000a02": "leaf-1-0a02",
                                    "0x0000000000000a03": "ib-0000000000000a03"}


def test_map_input_gets_spines_and_a_top_switch():
    mapping = dict(("node%02d" % n, "leaf%d" % ((n - 1) // 16 + 1)) for n in range(1, 65))
    spines = dict(("leaf%d" % l, ["spine1", "spine2"]) for l in range(1, 5))
    text = slurm_topology_conf(mapping, leaf_spines=spines)
    assert "SwitchName=leaf1 Nodes=node[01-16]\n" in text
    assert "SwitchName=spine1 Switches=leaf[1-4]\n" in text
    assert text.endswith("SwitchName=top Switches=spine[1-2]\n")
    with pytest.raises(TopologyError, match="top_switch 'spine1' is already"):
        slurm_topology_conf(mapping, leaf_spines=spines, top_switch="spine1")
    single = slurm_topology_conf({"node01": "leaf1", "node02": "leaf1"})
    assert "SwitchName=top" not in single


def test_one_thousand_nodes_render_to_a_connected_tree():
    mapping = dict(("gpu%04d" % n, "leaf%02d" % ((n - 1) // 32 + 1)) for n in range(1, 1001))
    spines = dict(("leaf%02d" % l, ["spine%d" % s for s in range(1, 9)]) for l in range(1, 33))
    text = slurm_topology_conf(mapping, leaf_spines=spines)
    nodes, children = read_conf(text)
    assert len(nodes) == 32 and len(children) == 9
    assert nodes["leaf01"] == ["gpu%04d" % n for n in range(1, 33)]
    assert nodes["leaf32"] == ["gpu%04d" % n for n in range(993, 1001)]
    assert "SwitchName=leaf32 Nodes=gpu[0993-1000]\n" in text
    assert children["spine3"] == ["leaf%02d" % l for l in range(1, 33)]
    assert reach("top", nodes, children) == set(mapping)
    assert text == slurm_topology_conf(dict(reversed(list(mapping.items()))), leaf_spines=spines)   # order-free


# --- LLDP ----------------------------------------------------------------------------------------

LAB = dict((host, dict((form, read("lldp", "lldpcli_neighbors_%s_lab.%s" % (host, form))) for form in ("txt", "json", "keyvalue")))
           for host in ("gpunode07", "gpunode08"))


def test_cumulus_switch_neighbours_in_the_text_form():
    parsed = parse_lldp_neighbors(read("lldp", "lldpcli_neighbors_cumulus_switch_docs.txt"))
    assert parsed["format"] == "text"
    assert sorted(parsed["interfaces"]) == ["eth0", "swp1", "swp2", "swp3", "swp4", "swp49s0", "swp49s1"]
    eth0 = parsed["interfaces"]["eth0"]
    assert (eth0["chassis_name"], eth0["chassis_id"], eth0["port_id"], eth0["port_description"]) == (
        "PIONEERMS22", "08:9e:01:e9:66:5a", "swp47", "swp47")
    assert parsed["interfaces"]["swp49s1"]["chassis_name"] == "TORC-1-2"
    assert parsed["interfaces"]["swp3"]["port_id_type"] == "ifname"


@pytest.mark.parametrize("form", ["txt", "json", "keyvalue"])
def test_lab_neighbours_read_the_same_in_every_form(form):
    parsed = parse_lldp_neighbors(LAB["gpunode08"][form])
    got = dict((ifname, (n["chassis_name"], n["chassis_id"], n["port_id"])) for ifname, n in parsed["interfaces"].items())
    assert got == {"ens1np0": ("leaf02", "ea:54:c0:ca:9c:9b", "swp8"), "ens2np0": ("leaf01", "52:84:0d:36:d4:c8", "swp8")}


def test_one_interface_json_and_json0():
    one = parse_lldp_neighbors(read("lldp", "lldpcli_neighbors_gpunode07_one_port_lab.json"))
    assert list(one["interfaces"]) == ["ens1np0"] and one["interfaces"]["ens1np0"]["chassis_name"] == "leaf01"
    zero = parse_lldp_neighbors(read("lldp", "lldpcli_neighbors_gpunode07_lab.json0"))
    assert zero["interfaces"]["ens2np0"]["chassis_name"] == "leaf02"
    assert zero["interfaces"]["ens2np0"]["port_id"] == "swp7"


def test_a_switch_without_a_system_name_is_named_by_its_chassis_id():
    parsed = parse_lldp_neighbors(read("lldp", "lldpcli_neighbors_no_sysname_lldpd372.txt"))
    nic = parsed["interfaces"]["ens3f0"]
    assert (nic["chassis_name"], nic["chassis_id"], nic["port_id_type"], nic["port_id"]) == (None, "a4:8c:db:6a:09:00", "local", "34")
    assert "sends no system name" in parsed["warnings"][0]
    leaves = lldp_host_leaves({"controller-3": read("lldp", "lldpcli_neighbors_no_sysname_lldpd372.txt")})
    assert leaves["controller-3"]["leaf"] == "a4:8c:db:6a:09:00"


def test_keyvalue_interface_names_with_dots():
    text = "lldp.eth0.100.via=LLDP\nlldp.eth0.100.chassis.mac=00:01:00:00:09:00\nlldp.eth0.100.chassis.name=MSP-1\n" \
           "lldp.eth0.100.port.ifname=swp1\nlldp.eth0.via=LLDP\nlldp.eth0.chassis.name=tor1\nlldp.eth0.port.local=34\n"
    parsed = parse_lldp_neighbors(text)
    assert parsed["format"] == "keyvalue"
    assert (parsed["interfaces"]["eth0.100"]["chassis_name"], parsed["interfaces"]["eth0.100"]["port_id"]) == ("MSP-1", "swp1")
    assert (parsed["interfaces"]["eth0"]["port_id_type"], parsed["interfaces"]["eth0"]["port_id"]) == ("local", "34")


def test_truncated_json_and_junk_are_named():
    with pytest.raises(TopologyError, match="not JSON"):
        parse_lldp_neighbors(LAB["gpunode07"]["json"][:300])
    with pytest.raises(TopologyError, match="not lldpcli output"):
        parse_lldp_neighbors("Unable to connect to lldpd daemon (running?)\n")


def test_host_leaf_map_takes_sources_in_order_and_says_which():
    lldp = dict((host, LAB[host]["txt"]) for host in LAB)
    result = host_leaf_map(ibnetdiscover=parse_ibnetdiscover(X5, X5_MAP), lldp=lldp,
                           user_map="sl390lin1 leafZ\ngpunode09 leaf03\n")
    hosts = result["hosts"]
    assert hosts["sl390lin1"] == {"leaf": "ib-0002c90200417670", "leaves": ["ib-0002c90200417670"], "source": "ibnetdiscover"}
    assert hosts["gpunode07"]["source"] == "lldp" and hosts["gpunode07"]["leaves"] == ["leaf01", "leaf02"]
    assert hosts["gpunode09"] == {"leaf": "leaf03", "leaves": ["leaf03"], "source": "user_map"}
    assert result["by_source"] == {"ibnetdiscover": 86, "lldp": 2, "user_map": 1}
    assert result["conflicts"] == ["sl390lin1: ibnetdiscover says ib-0002c90200417670, user_map says leafZ (ibnetdiscover kept)"]
    assert result["leaf_spines"]["hoibp0013"] == ["4036-8C5C", "ib-0008f1050010851e", "ib-0008f10500108098",
                                                  "ib-0008f10500108530"]
    text = slurm_topology_conf(result)
    assert "SwitchName=leaf03 Nodes=gpunode09\n" in text
    assert "SwitchName=leaf01 Nodes=gpunode[07-08]\n" in text


# --- NVLink domains ------------------------------------------------------------------------------

def test_h200_and_h100_report_completed_but_have_no_multi_node_domain():
    h200 = parse_nvidia_smi_fabric(read("nvidia_smi", "q_h200x8.xml"))
    assert h200["domain"] is None and len(h200["gpus"]) == 8
    assert h200["gpus"][0]["state"] == "Completed" and h200["gpus"][0]["cluster_uuid"] == _ZERO_UUID
    assert h200["reason"].startswith("all 8 GPUs: ClusterUUID is all zeros")
    h100 = parse_nvidia_smi_fabric(read("nvidia_smi_fabric", "q_h100_della_jdh4.txt"))
    assert (h100["gpus"][0]["name"], h100["gpus"][0]["bus_id"]) == ("NVIDIA H100 80GB HBM3", "00000000:DB:00.0")
    assert h100["domain"] is None and "all zeros" in h100["reason"]


def test_gb200_excerpts_give_the_domain_or_the_reason():
    healthy = parse_nvidia_smi_fabric(read("nvidia_smi_fabric", "q_gb200_fabric_grep_dra626.txt"))
    assert healthy["domain"] == {"cluster_uuid": "dc6e40c4-d722-4357-9ba6-5291dd461278", "clique_id": 2}
    assert healthy["warnings"] == ["GPU 0: fabric health is Unhealthy"]
    starved = parse_nvidia_smi_fabric(read("nvidia_smi_fabric", "q_gb200_insufficient_resources_azhpc506.txt"))
    assert starved["domain"] is None and starved["reason"] == "GPU 0: fabric Status is Insufficient Resources"


def test_gb200_text_and_xml_and_gpus_that_disagree():
    text = read("nvidia_smi_fabric", "q_gb200x4_constructed.txt")
    parsed = parse_nvidia_smi_fabric(text)
    assert parsed["domain"] == {"cluster_uuid": "6a130f54-faaa-4b8f-847f-be44ab70f917", "clique_id": 32766}
    assert [g["bus_id"] for g in parsed["gpus"]] == ["00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]
    xml = parse_nvidia_smi_fabric(read("nvidia_smi_fabric", "q_gb200x4_constructed.xml"))
    assert xml["domain"] == {"cluster_uuid": "9c6f5af3-53bf-49b5-a436-b66766c413c3", "clique_id": 4026}
    split = parse_nvidia_smi_fabric(text.replace(": 32766", ": 32767", 1))
    assert split["domain"] is None and "different NVLink domains" in split["reason"]
    waiting = parse_nvidia_smi_fabric(text.replace(": Completed", ": In Progress"))
    assert waiting["reason"] == "all 4 GPUs: fabric registration is In Progress, not Completed"


def test_nvl72_domains_become_blocks():
    tray = read("nvidia_smi_fabric", "q_gb200x4_constructed.txt")
    per_host = dict(("gb-r1n%02d" % n, tray) for n in range(1, 19))
    per_host.update(("gb-r2n%02d" % n, tray.replace(": 32766", ": 32700")) for n in range(1, 18))
    per_host["h200-01"] = read("nvidia_smi", "q_h200x8.xml")
    domains = nvlink_domains(per_host)
    assert [len(d["hosts"]) for d in domains["domains"]] == [18, 17]
    assert domains["host_domain"]["gb-r2n05"] == "6a130f54-faaa-4b8f-847f-be44ab70f917/32700"
    assert list(domains["no_domain"]) == ["h200-01"]
    text = slurm_topology_conf(domains, block_sizes=[18, 72])
    assert "BlockName=block1 Nodes=gb-r1n[01-18]\n" in text
    assert "BlockName=block2 Nodes=gb-r2n[01-17]\n" in text
    assert "# block2 has 17 nodes, fewer than the base block size 18" in text
    assert "# note: h200-01: no NVLink domain (all 8 GPUs: ClusterUUID is all zeros" in text
    assert text.endswith("BlockSizes=18,72\n")
    with pytest.raises(TopologyError, match="54 after 18"):
        slurm_topology_conf(domains, block_sizes=[18, 54])   # 54/18 = 3 is not a power of two
    with pytest.raises(TopologyError, match="36 after 36"):
        slurm_topology_conf(domains, block_sizes=[18, 36, 36])
    with pytest.raises(TopologyError, match="'x18' is not a whole number"):
        slurm_topology_conf(domains, block_sizes=["x18"])


# --- cabling -------------------------------------------------------------------------------------

def test_lab_node_cabled_crosswise_is_named_port_by_port():
    observed = observed_attachment(lldp=dict((h, LAB[h]["json"]) for h in LAB))
    check = cabling_check(observed, rail_nics=["ens1np0", "ens2np0"], rail_leaves=["leaf01", "leaf02"])
    assert check["checked"] == 4 and check["correct"] == 2
    assert check["miscabled"] == [
        {"host": "gpunode08", "nic": "ens1np0", "port": "swp8", "observed": "leaf02", "expected": "leaf01"},
        {"host": "gpunode08", "nic": "ens2np0", "port": "swp8", "observed": "leaf01", "expected": "leaf02"}]
    assert check["messages"][0] == "gpunode08 ens1np0 (switch port swp8): on leaf02, expected on leaf01"


def test_the_inferred_plan_needs_a_majority():
    observed = observed_attachment(lldp=dict((h, LAB[h]["txt"]) for h in LAB))
    tie = cabling_check(observed, rail_nics=["ens1np0", "ens2np0"])
    assert tie["checked"] == 0 and "no leaf holds most hosts" in tie["warnings"][0]
    observed["gpunode09"] = {"ens1np0": "leaf01", "ens2np0": "leaf02"}
    plan = cabling_check(observed, rail_nics="=ens1np0,ens2np0".lstrip("=").split(","))
    assert [(m["host"], m["nic"]) for m in plan["miscabled"]] == [("gpunode08", "ens1np0"), ("gpunode08", "ens2np0")]
    assert plan["warnings"][0] == "rail 0 (ens1np0): planned on leaf01, the leaf 2 of 3 host(s) use"


def test_x5_cabling_matches_the_clusters_own_plan_and_a_moved_host_is_caught(x5):
    theirs, ignored = read_conf(read("ibnetdiscover", "x5_psmn_topology_conf_hpc_toolset.conf"))
    names = switch_names(x5)
    plan = dict((host, names[normalize_guid(switch)]) for switch, hosts in theirs.items()
                for host in hosts if not host.startswith("H-"))
    observed = observed_attachment(x5)
    clean = cabling_check(observed, expected=plan)
    assert (clean["checked"], clean["correct"], clean["miscabled"], clean["missing"]) == (86, 86, [], [])
    plan["sl390lin22"] = "hoibp0013"
    plan["ghost01"] = "hoibp0013"
    moved = cabling_check(observed, expected=plan)
    assert moved["messages"][0] == "ghost01 (any NIC): not seen on the fabric, expected on hoibp0013"
    assert moved["miscabled"] == [{"host": "sl390lin22", "nic": "0x78e7d1030022773c", "port": 36,
                                   "observed": "4036-369C", "expected": "hoibp0013"}]


# --- linear time ---------------------------------------------------------------------------------

N = 100000
SHAPES = {
    "spaces": "a" + " " * N + "b",
    "quotes": '"' * N,
    "brackets": "[" * N,
    "hashes": "#" * N,
    "colons": "  ChassisID:" + " " * N + "x",
    "digits": "1" * N + "x",
    "tabs": "\t" * N + "#",
}
CALLS = {
    "parse_ibnetdiscover": ("parse_ibnetdiscover('Switch 36 \"S-0002c90200417670\" # \"x\" base port 0 lid 1 lmc 0\\n'"
                            " + '[1]\\t\"S-0002c90200417671\"[2] # ' + t)", ""),
    "parse_ibnetdiscover header": ('parse_ibnetdiscover(\'Switch 36 "S-0002c90200417670" # \' + t + "\\n[1]\\t\\"S-01\\"[1]")', ""),
    "parse_lldp_neighbors": ('parse_lldp_neighbors("Interface:    eth0, via: LLDP\\n  Chassis:\\n" + t)', ""),
    "parse_lldp_neighbors keyvalue": ('parse_lldp_neighbors("lldp.eth0.via=LLDP\\nlldp.eth0." + t)', ""),
    "parse_lldp_neighbors keyvalue dots": ('parse_lldp_neighbors("lldp.eth0.via=LLDP\\nlldp." + ".via" * (N // 4) + t)', ""),
    "parse_nvidia_smi_fabric": ('parse_nvidia_smi_fabric("GPU 00000000:DB:00.0\\n    Fabric\\n        State " + t)', ""),
    "compress_hostlist": ('compress_hostlist([t.replace(" ", "x")[:N], "n" + "0" * 5 + "1"])', ""),
    "natural_key": ("natural_key(t)", ""),
    "check_slurm_name": ("check_slurm_name(t, 'x', 10 ** 6)", ""),
}

# What the calls above use, imported again in the child process.
CHILD_IMPORTS = "\n".join("from ansible_collections.gpufabric.rdma.plugins.module_utils.%s import %s" % pair for pair in (
    ("parse.ibnetdiscover", "parse_ibnetdiscover"), ("parse.lldp", "parse_lldp_neighbors"),
    ("parse.nvidia_smi_fabric", "parse_nvidia_smi_fabric"), ("common.hostlist", "compress_hostlist, natural_key"),
    ("common.topology_names", "check_slurm_name")))


@pytest.mark.parametrize("call", sorted(CALLS))
def test_no_parser_backtracks_on_a_long_line(call):
    """Each parser gets 100,000-character lines of the shapes that make overlapping repetitions quadratic,
    in its own process with a 20 s limit: linear code needs well under a second."""
    code = "\n".join([CHILD_IMPORTS,
                      "N = %d" % N,
                      "for t in %r.values():" % SHAPES,
                      "    try:",
                      "        %s" % CALLS[call][0],
                      "    except ValueError:",
                      "        pass"])
    result = subprocess.run([sys.executable, "-"], input=code, env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False,
                            timeout=20, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
