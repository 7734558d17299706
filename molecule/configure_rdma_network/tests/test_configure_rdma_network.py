"""rdma_network in a real container: MTU 9000 at runtime and in the configuration of whichever
manager owns each interface (udev rule, ifupdown stanza, systemd-networkd drop-in), QoS skipped with
the reason veth gives, bad input refused before anything changes."""

import functools
import json
import os
import subprocess

import pytest

MTU_RULE = 'ACTION=="add", SUBSYSTEM=="net", ATTR{address}=="%s", ATTR{mtu}="9000"  # eth0'


@pytest.mark.parametrize("ifname", ["eth0", "gfab0", "gfab1"])
def test_mtu_9000_at_runtime(host, ifname):
    assert host.file("/sys/class/net/%s/mtu" % ifname).content_string.strip() == "9000"


def test_eth0_kept_by_a_udev_rule_on_its_mac(host):
    mac = host.file("/sys/class/net/eth0/address").content_string.strip()
    rules = host.file("/etc/udev/rules.d/70-gpufabric-mtu.rules")
    assert rules.mode == 0o644
    assert rules.content_string.splitlines()[1:] == [MTU_RULE % mac]


def test_gfab0_kept_in_its_ifupdown_stanza(host):
    text = host.file("/etc/network/interfaces").content_string
    assert "iface gfab0 inet manual\n    mtu 9000\n\nsource /etc/network/interfaces.d/*\n" in text
    assert "mtu 1500" not in text and text.count("mtu ") == 1


def test_gfab1_kept_in_a_networkd_dropin(host):
    dropin = host.file("/etc/systemd/network/50-gfab1.network.d/60-gpufabric-mtu.conf")
    assert dropin.content_string.endswith("[Link]\nMTUBytes=9000\n")
    # networkd reads it: with the runtime MTU dropped to 1500, reconfiguring gfab1 brings back 9000.
    host.run_expect([0], "ip link set dev gfab1 mtu 1500 && networkctl reload && networkctl reconfigure gfab1")
    host.run_expect([0], "for i in $(seq 50); do grep -qx 9000 /sys/class/net/gfab1/mtu && exit 0; sleep 0.2; done; exit 1")


def test_what_veth_cannot_do_is_reported_with_the_reason(host):
    # One file per platform: the three containers converge at once.
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "network-results-%s.json" % host.backend.get_hostname())
    with open(path) as handle:
        results = json.load(handle)["results"]
    eth0 = [r for r in results if r["name"] == "eth0"][0]
    reasons = dict((item["setting"], item["reason"]) for item in eth0["not_applied"])
    if host.file("/usr/sbin/dcb").exists or host.file("/sbin/dcb").exists:
        # Debian 12 and 13: iproute2's dcb asks the veth, which has no DCB.
        assert reasons["qos"].startswith("eth0 (veth) has no DCB: mlnx_qos is not installed and dcb says:")
    else:
        # Debian 11: iproute2 5.10 has no dcb yet.
        assert reasons["qos"] == "eth0: neither mlnx_qos (MLNX OFED / mlnx-tools) nor iproute2 dcb is installed"
    assert "no ECN controls" in reasons["ecn"]
    assert reasons["rps_cpus"] == "/sys/class/net/eth0/queues/rx-0/rps_cpus is read-only here (a container's sysfs?)"
    assert eth0["mtu"] == {"before": 9000, "after": 9000, "manager": "udev",
                           "persisted_in": "/etc/udev/rules.d/70-gpufabric-mtu.rules"}
    managers = dict((r["name"], r["mtu"]["manager"]) for r in results)
    assert managers == {"eth0": "udev", "gfab0": "ifupdown", "gfab1": "networkd"}
    # Nothing was applicable at boot either, so no boot unit was installed.
    assert eth0["boot_steps"] == []
    assert not host.file("/etc/systemd/system/gpufabric-rdma-network.service").exists


def _play(*extra):
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    playbook = os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "bad_input.yml")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, playbook] + list(extra),
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def _interfaces(items):
    return ["-e", json.dumps({"bad_interfaces": items})]


def _interfaces_files():
    """Each host's /etc/network/interfaces, by inventory name (the containers' names)."""
    listing = subprocess.run(["ansible-inventory", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "--list"],
                             capture_output=True, text=True, timeout=120, check=True)
    names = sorted(json.loads(listing.stdout)["_meta"]["hostvars"])
    return dict((name, subprocess.run(["docker", "exec", name, "cat", "/etc/network/interfaces"], capture_output=True,
                                      text=True, timeout=60, check=True).stdout) for name in names)


BAD_INPUT = {
    "mtu-12000": (_interfaces([{"name": "gfab0", "mtu": 4000}, {"name": "eth0", "mtu": 12000}]),
                  "mtu 12000 is outside 1280-9978"),
    "mtu-jumbo": (["-e", '{"rdma_network_mtu": "jumbo"}'], "jumbo"),
    "pfc-priority-9": (_interfaces([{"name": "gfab0", "mtu": 4000}, {"name": "eth0", "pfc_priorities": [3, 9]}]),
                       "Got no match for: 9"),
    "missing-interface": (_interfaces([{"name": "gfab0", "mtu": 4000}, {"name": "ib7"}]),
                          "interface ib7 does not exist on this host"),
    "unknown-manager": (["-e", "rdma_network_manager=wicked"], "wicked"),
}


@functools.lru_cache(maxsize=None)
def _bad_run(case):
    """One play per bad value against all three hosts (not one per host): every host's file before it, its output."""
    before = _interfaces_files()
    rc, out = _play(*BAD_INPUT[case][0])
    return rc, out, before


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_fails_before_any_change(host, case):
    rc, out, before = _bad_run(case)
    assert rc != 0
    assert BAD_INPUT[case][1] in out
    assert "changed=0" in out
    assert host.file("/sys/class/net/gfab0/mtu").content_string.strip() == "9000"
    assert host.file("/etc/network/interfaces").content_string == before[host.backend.get_hostname()]
