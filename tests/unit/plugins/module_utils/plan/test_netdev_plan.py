"""rdma_netdev's planners on host snapshots: what each decides to run, write, skip and replay at boot.
No host is read: a snapshot is a plain dict, as netdev_host.snapshot() returns it."""

import copy

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import netdev_plan
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan.netdev_plan import Plan, PlanError

ROOTS = {"sys": "/s", "proc": "/p", "etc": "/e"}
HOST = {
    "ifname": "ens1f0np0",
    "link": {"mtu": 1500, "max_mtu": 9978, "address": "0c:42:a1:00:00:01", "kind": "", "operstate": "UP"},
    "roots": ROOTS,
    "tools": {"ip": "/usr/sbin/ip", "nmcli": None, "networkctl": None, "mlnx_qos": "/usr/bin/mlnx_qos", "dcb": None},
    "managers": {"netplan_files": [], "nm_connection": None, "nm_mtu": None, "networkd_file": None, "ifupdown": None},
    "files": {},
    "qos": {"tool": "mlnx_qos", "current": {"trust": "pcp", "pfc": []}, "error": None},
    "paths": {},
    "sriov": {},
    "numa": {"node": "1", "cpulist": "16-31"},
    "irqs": [],
    "rx_queues": [],
}


def host(**changes):
    snapshot = copy.deepcopy(HOST)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(snapshot.get(key), dict):
            snapshot[key].update(value)
        else:
            snapshot[key] = value
    return snapshot


def writable(value):
    return {"exists": True, "writable": True, "value": value}


@pytest.mark.parametrize("params, message", [
    ({"mtu": "jumbo"}, "mtu 'jumbo' is not a number: give bytes, e.g. 9000"),
    ({"mtu": 12000}, "mtu 12000 is outside 1280-9978"),
    ({"pfc_priorities": [3, 9]}, "pfc_priorities"),
    ({"roce_tos": 300}, "roce_tos 300 is outside 0-255"),
    ({"sriov_numvfs": -1}, "sriov_numvfs -1 is negative"),
    ({"irq_affinity": "all"}, "irq_affinity 'all' is neither 'numa' nor a CPU list such as 0-15,32-47"),
])
def test_inputs_are_refused_before_the_host_is_read(params, message):
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        netdev_plan.check_inputs(params)


def test_inputs_normalized():
    assert netdev_plan.check_inputs({"mtu": "9000", "pfc_priorities": ["3"], "ecn_priorities": [3, 4],
                                     "irq_affinity": "0-15,32-47"}) == {"mtu": 9000, "pfc": [3], "ecn": [3, 4]}


def test_mtu_without_a_manager_goes_to_a_udev_rule():
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(), 9000)
    assert plan.steps == [("mtu 1500 -> 9000", {"argv": ["/usr/sbin/ip", "link", "set", "dev", "ens1f0np0", "mtu", "9000"]})]
    (path, before, after, mode), = plan.files
    assert (path, before, mode) == ("/e/udev/rules.d/70-gpufabric-mtu.rules", None, 0o644)
    assert 'ATTR{address}=="0c:42:a1:00:00:01"' in after and 'ATTR{mtu}="9000"' in after
    assert plan.mtu == {"before": 1500, "after": 9000, "manager": "udev", "persisted_in": path}


def test_mtu_already_right_changes_nothing():
    first = Plan()
    netdev_plan.plan_mtu(first, host(), 9000)
    rule = first.files[0][2]
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(link={"mtu": 9000}, files={"/e/udev/rules.d/70-gpufabric-mtu.rules": rule}), 9000)
    assert plan.steps == [] and plan.files[0][1] == plan.files[0][2]


def test_mtu_netplan_wins_when_netplan_owns_the_host():
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(managers={"netplan_files": ["/e/netplan/50-cloud-init.yaml"]}), 9000)
    (path, before, after, mode), = plan.files
    assert path == "/e/netplan/60-gpufabric-ens1f0np0.yaml" and mode == 0o600 and "mtu: 9000" in after


def test_mtu_networkmanager_modifies_the_connection_only_when_it_differs():
    nm = {"nm_connection": "Wired connection 1", "nm_mtu": "auto"}
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(tools={"nmcli": "/usr/bin/nmcli"}, managers=nm), 9000)
    assert plan.steps[-1] == ("nmcli connection Wired connection 1 802-3-ethernet.mtu auto -> 9000",
                              {"argv": ["/usr/bin/nmcli", "connection", "modify", "Wired connection 1",
                                        "802-3-ethernet.mtu", "9000"]})
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(link={"mtu": 9000}, managers=dict(nm, nm_mtu="9000")), 9000)
    assert plan.steps == [] and plan.mtu["persisted_in"] == "nmcli connection Wired connection 1"


def test_mtu_networkd_dropin_and_ifupdown_stanza():
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(managers={"networkd_file": "/run/systemd/network/10-netplan-ens1f0np0.network"}), 9000)
    assert plan.files[0][0] == "/e/systemd/network/10-netplan-ens1f0np0.network.d/60-gpufabric-mtu.conf"
    assert plan.files[0][2].endswith("[Link]\nMTUBytes=9000\n")
    stanza = "auto ens1f0np0\niface ens1f0np0 inet static\n    address 10.0.0.2/24\n"
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(managers={"ifupdown": ["/e/network/interfaces", stanza]}), 9000)
    assert plan.files[0][2] == stanza + "    mtu 9000\n"


@pytest.mark.parametrize("snapshot, manager, message", [
    ({}, "networkmanager", "manager networkmanager: NetworkManager has no connection on ens1f0np0"),
    ({}, "networkd", "manager networkd: systemd-networkd does not manage ens1f0np0 (no .network file)"),
    ({}, "ifupdown", "manager ifupdown: no 'iface ens1f0np0' stanza in /e/network/interfaces{,.d/*}"),
    ({"link": {"max_mtu": 4200}}, "auto", "ens1f0np0: mtu 9000 is above what the interface accepts (max_mtu 4200)"),
])
def test_mtu_that_cannot_be_kept_fails_naming_why(snapshot, manager, message):
    with pytest.raises(PlanError) as error:
        netdev_plan.plan_mtu(Plan(), host(**snapshot), 9000, manager=manager)
    assert str(error.value) == message


def test_mtu_not_persisted():
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(), 9000, persist=False)
    assert plan.files == [] and plan.mtu["manager"] is None


def test_pfc_and_trust_only_when_they_differ_from_what_was_read_back():
    plan = Plan()
    netdev_plan.plan_qos(plan, host(), pfc=[3], trust="dscp")
    assert plan.steps == [("mlnx_qos on ens1f0np0",
                           {"argv": ["/usr/bin/mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]})]
    assert plan.boot == [plan.steps[0][1]]
    plan = Plan()
    netdev_plan.plan_qos(plan, host(qos={"current": {"trust": "dscp", "pfc": [3]}}), pfc=[3], trust="dscp")
    assert plan.steps == [] and len(plan.boot) == 1


def test_qos_without_dcb_is_reported_not_failed():
    error = "eth0 (veth) has no DCB: mlnx_qos is not installed and dcb says: Attribute read: Operation not supported"
    plan = Plan()
    netdev_plan.plan_qos(plan, host(qos={"tool": "dcb", "error": error}), pfc=[3])
    assert plan.steps == [] and plan.skipped == [{"setting": "qos", "reason": error}]
    plan = Plan()
    netdev_plan.plan_qos(plan, host(qos={"tool": None}), trust="dscp")
    assert plan.skipped[0]["reason"] == "ens1f0np0: neither mlnx_qos (MLNX OFED / mlnx-tools) nor iproute2 dcb is installed"


def test_ecn_written_per_priority_where_the_files_exist():
    base = "/s/class/net/ens1f0np0/ecn"
    paths = dict(("%s/%s/enable/%d" % (base, side, prio), writable("0")) for side in ("roce_np", "roce_rp")
                 for prio in range(8))
    paths["%s/roce_np/enable/4" % base] = writable("0")
    plan = Plan()
    netdev_plan.plan_qos(plan, host(paths=paths), ecn=[3])
    assert [s[0] for s in plan.steps] == ["%s/roce_np/enable/3: 0 -> 1" % base, "%s/roce_rp/enable/3: 0 -> 1" % base]
    assert len(plan.boot) == 16
    plan = Plan()
    netdev_plan.plan_qos(plan, host(), ecn=[3])
    assert plan.steps == [] and plan.skipped == [{"setting": "ecn", "reason": (
        "%s/roce_np/enable/0 does not exist: the interface has no ECN controls (mlx5 interfaces have them)" % base)}]


def test_rdma_cm_item_is_created_before_its_defaults_are_written():
    cm = "/s/kernel/config/rdma_cm"
    plan = Plan()
    netdev_plan.plan_qos(plan, host(paths={cm: writable(None)}), rdma_device="mlx5_0", roce_mode="RoCE v2", roce_tos=106)
    assert [s[1] for s in plan.steps] == [
        {"mkdir": cm + "/mlx5_0"},
        {"path": cm + "/mlx5_0/ports/1/default_roce_mode", "value": "RoCE v2"},
        {"path": cm + "/mlx5_0/ports/1/default_roce_tos", "value": "106"}]
    assert plan.boot[0] == {"mkdir": cm + "/mlx5_0"}
    plan = Plan()
    netdev_plan.plan_qos(plan, host(), rdma_device="mlx5_0", roce_tos=106)
    assert plan.skipped[0]["setting"] == "rdma_cm" and "configfs is not mounted" in plan.skipped[0]["reason"]


def test_sriov_goes_through_zero_and_stops_at_the_limit():
    numvfs = "/s/class/net/ens1f0np0/device/sriov_numvfs"
    plan = Plan()
    netdev_plan.plan_sriov(plan, host(sriov={"total": "16", "current": "4"}, paths={numvfs: writable("4")}), 8)
    assert [s[1] for s in plan.steps] == [{"path": numvfs, "value": "0"}, {"path": numvfs, "value": "8"}]
    with pytest.raises(PlanError, match="sriov_numvfs 32 is above ens1f0np0's sriov_totalvfs 16"):
        netdev_plan.plan_sriov(Plan(), host(sriov={"total": "16", "current": "0"}), 32)
    plan = Plan()
    netdev_plan.plan_sriov(plan, host(), 8)
    assert plan.skipped == [{"setting": "sriov", "reason": "ens1f0np0 has no SR-IOV (no sriov_totalvfs)"}]


def test_read_only_sysfs_is_reported():
    numvfs = "/s/class/net/ens1f0np0/device/sriov_numvfs"
    plan = Plan()
    netdev_plan.plan_sriov(plan, host(sriov={"total": "16", "current": "0"},
                                      paths={numvfs: {"exists": True, "writable": False, "value": "0"}}), 8)
    assert plan.steps == [] and plan.skipped[0]["reason"] == "%s is read-only here (a container's sysfs?)" % numvfs


def test_irq_affinity_to_the_numa_node_compares_cpu_lists():
    paths = {"/p/irq/99/smp_affinity_list": writable("16-31"), "/p/irq/109/smp_affinity_list": writable("0")}
    plan = Plan()
    netdev_plan.plan_irq_affinity(plan, host(irqs=[99, 109], paths=paths), "numa")
    assert plan.steps == [("/p/irq/109/smp_affinity_list: 0 -> " + ",".join(str(c) for c in range(16, 32)),
                           {"path": "/p/irq/109/smp_affinity_list", "value": ",".join(str(c) for c in range(16, 32))})]
    assert len(plan.boot) == 2
    plan = Plan()
    netdev_plan.plan_irq_affinity(plan, host(numa={"node": "-1"}), "numa")
    assert plan.skipped == [{"setting": "irq_affinity", "reason": "ens1f0np0 has no NUMA node (numa_node -1)"}]
    plan = Plan()
    netdev_plan.plan_irq_affinity(plan, host(), "0-3")
    assert plan.skipped == [{"setting": "irq_affinity", "reason": "no interrupts of ens1f0np0 in /proc/interrupts"}]


def test_rps_masks_compare_by_value():
    queue = "/s/class/net/ens1f0np0/queues/rx-0"
    plan = Plan()
    netdev_plan.plan_rps(plan, host(rx_queues=[queue], paths={queue + "/rps_cpus": writable("00000000,ffff0000")}), "numa")
    assert plan.steps == [] and plan.boot == [{"path": queue + "/rps_cpus", "value": "ffff0000"}]


def test_plan_all_runs_the_planners_the_options_ask_for():
    params = {"mtu": 9000, "persist": False, "manager": "auto", "trust": "dscp", "rdma_device": None, "rdma_port": 1}
    plan = netdev_plan.plan_all(host(), params, netdev_plan.check_inputs(params))
    assert [s[0] for s in plan.steps] == ["mtu 1500 -> 9000", "mlnx_qos on ens1f0np0"]


def test_an_interface_claimed_by_two_managers_is_refused_before_any_change():
    both = host(managers={"nm_connection": "Wired connection 1", "ifupdown": ["/e/network/interfaces", "iface ens1f0np0 inet dhcp\n"]})
    with pytest.raises(PlanError, match=r"ens1f0np0 is claimed by NetworkManager \(connection Wired connection 1\) and "
                                        r"ifupdown \(/e/network/interfaces\)"):
        netdev_plan.plan_mtu(Plan(), both, 9000)
    # Naming the manager takes that one.
    plan = Plan()
    netdev_plan.plan_mtu(plan, both, 9000, manager="ifupdown")
    assert plan.mtu["persisted_in"] == "/e/network/interfaces"


def test_netplan_and_its_own_renderings_are_one_claim():
    rendered = host(managers={"netplan_files": ["/e/netplan/50-cloud-init.yaml"], "netplan_mentions": ["/e/netplan/50-cloud-init.yaml"],
                              "networkd_file": "/run/systemd/network/10-netplan-ens1f0np0.network"})
    plan = Plan()
    netdev_plan.plan_mtu(plan, rendered, 9000)
    assert plan.mtu["manager"] == "netplan"


def test_netplan_mentions_reads_the_interface_key():
    from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import netconf
    text = "network:\n  version: 2\n  ethernets:\n    ens1f0np0:\n      dhcp4: true\n    eth0:  # uplink\n      dhcp4: true\n"
    assert netconf.netplan_mentions(text, "ens1f0np0") and netconf.netplan_mentions(text, "eth0")
    assert not netconf.netplan_mentions(text, "ens1f0") and not netconf.netplan_mentions("", "eth0")


# -- NetworkManager installed but not running ---------------------------------------------------------

# Debian 12's /etc/NetworkManager/NetworkManager.conf as the network-manager package installs it.
DEBIAN_NM_CONF = ("/e/NetworkManager/NetworkManager.conf", "[main]\nplugins=ifupdown,keyfile\n\n[ifupdown]\nmanaged=false\n")
NM_STOPPED = {"nm_running": False, "nm_conf": [DEBIAN_NM_CONF]}


def _conf_d(text, name="90-site.conf"):
    return ("/e/NetworkManager/conf.d/%s" % name, text)


def test_udev_mtu_warns_when_a_stopped_networkmanager_would_take_the_interface():
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(tools={"nmcli": "/usr/bin/nmcli"}, managers=NM_STOPPED), 9000)
    assert plan.mtu["manager"] == "udev" and plan.files[0][0] == "/e/udev/rules.d/70-gpufabric-mtu.rules"
    (warning,) = plan.warnings
    assert warning.startswith("ens1f0np0: NetworkManager is installed but not running, and nothing in /e/NetworkManager/ "
                              "leaves ens1f0np0 unmanaged: when NetworkManager starts it manages ens1f0np0")
    assert "the udev rule in /e/udev/rules.d/70-gpufabric-mtu.rules keeps MTU 9000 only until then" in warning
    assert warning.endswith("add unmanaged-devices=interface-name:ens1f0np0 to [keyfile] in a file in "
                            "/e/NetworkManager/conf.d/.")


@pytest.mark.parametrize("managers", [
    {},                                             # no nmcli: NetworkManager is not installed
    {"nm_running": True},                           # running, and no connection on the interface
    {"nm_running": False, "networkd_file": "/e/systemd/network/20-ens1f0np0.network"},
    {"nm_running": False, "ifupdown": ["/e/network/interfaces", "auto ens1f0np0\niface ens1f0np0 inet manual\n"]},
])
def test_no_networkmanager_warning_where_nothing_changed(managers):
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(managers=dict(managers, nm_conf=[DEBIAN_NM_CONF])), 9000)
    assert plan.warnings == []


@pytest.mark.parametrize("conf_d, unmanaged", [
    ("[keyfile]\nunmanaged-devices=interface-name:ens1f0np0\n", True),
    ("[keyfile]\nunmanaged-devices=interface-name:ens1f*;interface-name:eth9\n", True),
    ("[keyfile]\nunmanaged-devices=interface-name:=ens1f0np0\n", True),
    ("[keyfile]\nunmanaged-devices=interface-name:~ens1f?np0\n", True),
    ("[keyfile]\nunmanaged-devices=eth9,ens1f0np0\n", True),                 # bare names, taken literally
    ("[keyfile]\nunmanaged-devices=mac:0C:42:A1:00:00:01\n", True),
    ("[keyfile]\nunmanaged-devices=0c:42:a1:00:00:01\n", True),
    ("[keyfile]\nunmanaged-devices=type:ethernet\n", True),
    # Ubuntu's 10-globally-managed-devices.conf: everything but Wi-Fi and mobile broadband is unmanaged.
    ("[keyfile]\nunmanaged-devices=*,except:type:wifi,except:type:gsm,except:type:cdma\n", True),
    ("[keyfile]\nunmanaged-devices=except:interface-name:eth0\n", True),
    ("[device-rdma]\nmatch-device=interface-name:ens1f0np0\nmanaged=0\n", True),
    ("[keyfile]\nunmanaged-devices=interface-name:eth9\n", False),
    ("[keyfile]\nunmanaged-devices=interface-name:ens1f0\n", False),
    ("[keyfile]\nunmanaged-devices=*,except:interface-name:ens1f0np0\n", False),
    ("[keyfile]\nunmanaged-devices=interface-name:=ens1f*\n", False),
    ("[keyfile]\nunmanaged-devices=type:veth\n", False),
    ("[keyfile]\nunmanaged-devices=interface-name:ENS1F0NP0\n", False),     # case-sensitive
    ("[keyfile]\nunmanaged-devices=ens1f*\n", False),                       # a bare name is no glob
    ("[keyfile]\nunmanaged-devices=interface-name:ens1f[0-9]np0\n", False),  # no ranges
    ("[keyfile]\nunmanaged-devices=driver:mlx5_core\n", False),             # not known here
    ("[device-rdma]\nmatch-device=interface-name:ens1f0np0\nmanaged=1\n", False),
    ("[main]\nunmanaged-devices=interface-name:ens1f0np0\n", False),   # not the [keyfile] section
])
def test_nm_unmanaged_reads_the_device_list_format(conf_d, unmanaged):
    where = netdev_plan.nm_unmanaged([DEBIAN_NM_CONF, _conf_d(conf_d)], "ens1f0np0", "0c:42:a1:00:00:01", "")
    assert bool(where) is unmanaged
    if unmanaged:
        assert where.startswith("/e/NetworkManager/conf.d/90-site.conf: [")
    plan = Plan()
    netdev_plan.plan_mtu(plan, host(managers={"nm_running": False, "nm_conf": [DEBIAN_NM_CONF, _conf_d(conf_d)]}), 9000)
    assert bool(plan.warnings) is not unmanaged


def test_nm_unmanaged_follows_the_order_networkmanager_reads_its_files_in():
    mine = _conf_d("[keyfile]\nunmanaged-devices=interface-name:ens1f0np0\n", "10-rdma.conf")
    assert netdev_plan.nm_unmanaged([DEBIAN_NM_CONF, mine], "ens1f0np0")
    assert not netdev_plan.nm_unmanaged([DEBIAN_NM_CONF, mine, _conf_d("[keyfile]\nunmanaged-devices=\n", "99-x.conf")],
                                        "ens1f0np0")
    assert not netdev_plan.nm_unmanaged([DEBIAN_NM_CONF, mine, _conf_d(
        "[keyfile]\nunmanaged-devices-=interface-name:ens1f0np0\n", "99-x.conf")], "ens1f0np0")
    assert netdev_plan.nm_unmanaged([DEBIAN_NM_CONF, _conf_d("[keyfile]\nunmanaged-devices=interface-name:eth9\n", "10-a.conf"),
                                     _conf_d("[keyfile]\nunmanaged-devices+=interface-name:ens1f0np0\n", "20-b.conf")],
                                    "ens1f0np0") == ("/e/NetworkManager/conf.d/20-b.conf: [keyfile] "
                                                     "unmanaged-devices=interface-name:eth9;interface-name:ens1f0np0")


def test_networkmanager_asked_for_but_stopped_says_so():
    with pytest.raises(PlanError) as error:
        netdev_plan.plan_mtu(Plan(), host(managers=NM_STOPPED), 9000, manager="networkmanager")
    assert str(error.value) == ("manager networkmanager: NetworkManager is installed but not running, so it has no "
                                "connection on ens1f0np0 to keep the MTU in: start it and run this again")
