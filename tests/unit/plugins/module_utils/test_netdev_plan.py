"""rdma_netdev's planners on host snapshots: what each decides to run, write, skip and replay at boot.
No host is read: a snapshot is a plain dict, as netdev_host.snapshot() returns it."""

import copy

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils import netdev_plan
from ansible_collections.gpufabric.rdma.plugins.module_utils.netdev_plan import Plan, PlanError

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
    from ansible_collections.gpufabric.rdma.plugins.module_utils import netconf
    text = "network:\n  version: 2\n  ethernets:\n    ens1f0np0:\n      dhcp4: true\n    eth0:  # uplink\n      dhcp4: true\n"
    assert netconf.netplan_mentions(text, "ens1f0np0") and netconf.netplan_mentions(text, "eth0")
    assert not netconf.netplan_mentions(text, "ens1f0") and not netconf.netplan_mentions("", "eth0")
