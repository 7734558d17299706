"""MTU checks, each network manager's persistent MTU, RoCE QoS command builders and CPU masks."""

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import netconf


@pytest.mark.parametrize("value, mtu", [(9000, 9000), ("9000", 9000), (" 4200 ", 4200), (1280, 1280), (9978, 9978)])
def test_acceptable_mtus(value, mtu):
    assert netconf.check_mtu(value) == (mtu, None)


@pytest.mark.parametrize("value, message", [
    (12000, "mtu 12000 is outside 1280-9978"),
    ("jumbo", "mtu 'jumbo' is not a number: give bytes, e.g. 9000"),
    (576, "mtu 576 is outside 1280-9978"),
    (True, "mtu True is not a number"),
    ("9000.5", "mtu '9000.5' is not a number: give bytes, e.g. 9000"),
])
def test_bad_mtus_are_named(value, message):
    assert netconf.check_mtu(value) == (None, message)


def test_mtu_above_the_interfaces_max_mtu():
    assert netconf.check_mtu(9000, 4200) == (None, "mtu 9000 is above what the interface accepts (max_mtu 4200)")


def test_ip_link_json_of_a_lab_veth(read_fixture):
    # Captured with `ip -d -j link show dev eth0` in a gpufabric lab container (Debian 12 iproute2 6.1).
    link = netconf.parse_ip_link_json(read_fixture("net", "ip_link_veth.json"))["eth0"]
    assert link["kind"] == "veth" and link["max_mtu"] == 65535 and link["operstate"] == "UP"
    assert link["address"].count(":") == 5 and link["mtu"] in (1500, 9000)


@pytest.mark.parametrize("probes, manager", [
    ((["/etc/netplan/50-cloud-init.yaml"], "Wired connection 1", "/etc/systemd/network/10.network", None), "netplan"),
    (([], "Wired connection 1", None, None), "networkmanager"),
    (([], None, "/etc/systemd/network/10-eth.network", ("/etc/network/interfaces", "")), "networkd"),
    (([], None, None, ("/etc/network/interfaces", "")), "ifupdown"),
    (([], None, None, None), "udev"),
])
def test_the_manager_that_owns_the_interface(probes, manager):
    assert netconf.pick_manager(*probes) == manager


INTERFACES = """# The loopback network interface
auto lo
iface lo inet loopback

auto ens1f0np0
iface ens1f0np0 inet static
    address 10.0.0.2/24
    mtu 1500

iface ens1f0np0 inet6 auto

auto ens1f1np1
iface ens1f1np1 inet dhcp
"""


def test_ifupdown_mtu_replaced_in_every_stanza_of_the_interface():
    out = netconf.ifupdown_set_mtu(INTERFACES, "ens1f0np0", 9000)
    assert out == INTERFACES.replace("    mtu 1500\n", "    mtu 9000\n").replace(
        "iface ens1f0np0 inet6 auto\n", "iface ens1f0np0 inet6 auto\n    mtu 9000\n")
    # Idempotent: a second pass changes nothing.
    assert netconf.ifupdown_set_mtu(out, "ens1f0np0", 9000) == out


def test_ifupdown_mtu_added_to_the_last_stanza_and_none_without_one():
    out = netconf.ifupdown_set_mtu(INTERFACES, "ens1f1np1", 9000)
    assert out.endswith("iface ens1f1np1 inet dhcp\n    mtu 9000\n")
    assert netconf.ifupdown_set_mtu(INTERFACES, "eth9", 9000) is None
    assert netconf.ifupdown_has_stanza(INTERFACES, "ens1f1np1") and not netconf.ifupdown_has_stanza(INTERFACES, "ens1f1")


def test_udev_rule_replaced_per_mac_and_netplan_and_networkd_texts():
    first = netconf.udev_set_mtu(None, "B8:3F:D2:BA:A6:A6", "enp1s0f0np0", 9000)
    both = netconf.udev_set_mtu(first, "b8:3f:d2:ba:a6:a7", "enp1s0f1np1", 9000)
    again = netconf.udev_set_mtu(both, "b8:3f:d2:ba:a6:a6", "enp1s0f0np0", 4200)
    assert first.splitlines()[1] == 'ACTION=="add", SUBSYSTEM=="net", ATTR{address}=="b8:3f:d2:ba:a6:a6", ATTR{mtu}="9000"  # enp1s0f0np0'
    assert len(both.splitlines()) == 3 and len(again.splitlines()) == 3
    assert again.splitlines()[1].endswith('ATTR{mtu}="4200"  # enp1s0f0np0')
    # Re-applying any interface's rule leaves the file as it was (idempotent with several interfaces).
    assert netconf.udev_set_mtu(both, "b8:3f:d2:ba:a6:a6", "enp1s0f0np0", 9000) == both
    assert netconf.render_netplan("ens1f0np0", 9000).endswith("  ethernets:\n    ens1f0np0:\n      mtu: 9000\n")
    assert netconf.render_networkd_dropin(9000).endswith("[Link]\nMTUBytes=9000\n")


@pytest.mark.parametrize("values, expected", [
    ([3], ([3], None)), (["5", 3, 3], ([3, 5], None)), ([], ([], None)), (None, ([], None)),
    ([9], (None, "pfc_priorities: 9 is not a priority (0-7)")),
    (["three"], (None, "pfc_priorities: 'three' is not a priority (0-7)")),
])
def test_priorities(values, expected):
    assert netconf.check_priorities(values, "pfc_priorities") == expected


def test_mlnx_qos_commands_and_ecn_and_rdma_cm():
    steps = netconf.qos_commands("ens1f0np0", "mlnx_qos", [3], "dscp", [3], "mlx5_0", 1, "RoCE v2", 106)
    assert steps[0] == {"argv": ["mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]}
    ecn = [s for s in steps if "/ecn/" in s.get("path", "")]
    assert len(ecn) == 16
    assert {"path": "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3", "value": "1"} in ecn
    assert {"path": "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/2", "value": "0"} in ecn
    assert steps[-2:] == [
        {"path": "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode", "value": "RoCE v2"},
        {"path": "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "value": "106"}]


def test_dcb_commands():
    steps = netconf.qos_commands("ens1f0np0", "dcb", [3, 4], "dscp", None)
    assert steps == [
        {"argv": ["dcb", "pfc", "set", "dev", "ens1f0np0", "prio-pfc",
                  "0:off", "1:off", "2:off", "3:on", "4:on", "5:off", "6:off", "7:off"]},
        {"argv": ["dcb", "apptrust", "set", "dev", "ens1f0np0", "order", "dscp"]}]
    assert netconf.qos_commands("x", "dcb", None, None, None) == []
    with pytest.raises(ValueError):
        netconf.qos_commands("x", "lldptool", [3], None, None)


def test_mlnx_qos_readback(read_fixture):
    # spiderpool's lossless-network guide (`rdma-qos.sh q` on a GPU node) and a PFC how-to's sample.
    assert netconf.parse_mlnx_qos(read_fixture("net", "mlnx_qos_dscp_prio5.txt")) == {"trust": "dscp", "pfc": [5]}
    assert netconf.parse_mlnx_qos(read_fixture("net", "mlnx_qos_pcp_off.txt")) == {"trust": "pcp", "pfc": []}
    assert netconf.parse_mlnx_qos("PFC configuration:  enabled 0 0 0 0 0 1 0 0") == {"trust": None, "pfc": [5]}
    assert netconf.parse_mlnx_qos("") == {"trust": None, "pfc": None}


def test_qos_commands_compared_with_what_was_read_back():
    both = {"argv": ["mlnx_qos", "-i", "x", "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]}
    trust_only = {"argv": ["mlnx_qos", "-i", "x", "--trust", "dscp"]}
    read = {"trust": "dscp", "pfc": [3]}
    assert netconf.qos_step_in_place(both, read, [3], "dscp")
    assert not netconf.qos_step_in_place(both, read, [3, 4], "dscp")
    assert not netconf.qos_step_in_place(both, dict(read, trust="pcp"), [3], "dscp")
    # A trust-only command is in place when the trust matches (it used to run every time).
    assert netconf.qos_step_in_place(trust_only, read, None, "dscp")
    dcb_pfc, dcb_trust = netconf.qos_commands("x", "dcb", [3], "dscp", None)
    assert netconf.qos_step_in_place(dcb_pfc, {"trust": None, "pfc": [3]}, [3], "dscp")
    # dcb's trust is not read back, so apptrust runs.
    assert not netconf.qos_step_in_place(dcb_trust, {"trust": None, "pfc": [3]}, [3], "dscp")
    assert not netconf.qos_step_in_place(dcb_pfc, {"trust": None, "pfc": None}, [], None)


def test_dcb_pfc_json():
    assert netconf.parse_dcb_pfc_json('{"prio_pfc":{"0":false,"1":false,"2":false,"3":true,"4":false,'
                                      '"5":false,"6":false,"7":false}}') == [3]
    assert netconf.parse_dcb_pfc_json("{}") is None


def test_mlx5_irqs_match_what_mlnx_tools_discovered(read_fixture):
    # The "100 GbE Lab" post: set_irq_affinity_cpulist.sh reported
    # "Discovered irqs for enp1s0f0np0: 99 109 110 111 112 113 114 115 116 117 118 119".
    text = read_fixture("net", "proc_interrupts_mlx5.txt")
    assert netconf.device_irqs(text, "0000:01:00.0", "enp1s0f0np0") == [99] + list(range(109, 120))
    assert netconf.device_irqs(text, "0000:01:00.1", "enp1s0f1np1") == [102]
    assert netconf.device_irqs(" 300: 1 2 IR-PCI-MSIX 6-edge eth9-TxRx-0\n 301: 1 2 x eth19-TxRx-0\n", "", "eth9") == [300]


@pytest.mark.parametrize("cpulist, cpus, mask", [
    ("0-3", [0, 1, 2, 3], "0000000f"),
    ("7-11", [7, 8, 9, 10, 11], "00000f80"),
    ("0,33", [0, 33], "00000002,00000001"),
    ("", [], "00000000"),
])
def test_cpulists_and_masks(cpulist, cpus, mask):
    assert netconf.parse_cpulist(cpulist) == cpus
    assert netconf.cpu_mask(cpus) == mask


def test_masks_compare_by_value():
    assert netconf.same_mask("f", "0000000f") and netconf.same_mask("00000000,0000000f", "f")
    assert not netconf.same_mask("f", "1f")


def test_boot_script_quotes_and_counts_failures():
    script = netconf.render_boot_script([
        {"argv": ["mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,0,1,0,0,0,0"]},
        {"mkdir": "/sys/kernel/config/rdma_cm/mlx5_0"},
        {"path": "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode", "value": "RoCE v2"}])
    assert script.splitlines() == [
        "#!/bin/sh", "# Managed by gpufabric.rdma (rdma_network): settings the kernel forgets at reboot.", "status=0",
        "mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0 || status=1",
        "mkdir -p /sys/kernel/config/rdma_cm/mlx5_0 || status=1",
        "echo 'RoCE v2' > /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode || status=1",
        "exit $status"]


def test_mtu_mismatch_names_the_odd_ones_out():
    ok = {"a": [{"name": "eth1", "mtu": {"after": 9000}}], "b": [{"name": "eth1", "mtu": {"after": 9000}}]}
    assert netconf.mtu_mismatch(ok) == ""
    bad = dict(ok, c=[{"name": "eth1", "mtu": {"after": 1500}}, {"name": "eth2"}])
    assert netconf.mtu_mismatch(bad) == "MTU differs across hosts: 9000 on a:eth1, b:eth1; 1500 on c:eth1"
