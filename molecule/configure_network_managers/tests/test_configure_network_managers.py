"""The rdma_network role against each network manager for real (one container each): MTU 9000 set at
runtime and persisted in the manager's own configuration; a restart of the manager and of the container
keep it; check mode changes nothing; an interface claimed by two managers is refused before any change;
netplan rejecting the configuration leaves the previous one in place."""

import os
import subprocess
import time

import pytest
import testinfra

testinfra_hosts = ["gpufabric-nm-networkd", "gpufabric-nm-ifupdown", "gpufabric-nm-networkmanager", "gpufabric-nm-netplan"]
SCENARIO = os.environ.get("MOLECULE_SCENARIO_DIRECTORY", os.path.dirname(os.path.dirname(__file__)))
RESTART = {"gpufabric-nm-networkd": "systemctl restart systemd-networkd",
           "gpufabric-nm-ifupdown": "systemctl restart networking",
           "gpufabric-nm-networkmanager": "systemctl restart NetworkManager && sleep 3 && nmcli connection up gfab0",
           "gpufabric-nm-netplan": "netplan generate && systemctl restart systemd-networkd"}
PERSISTED = {"gpufabric-nm-networkd": ("/etc/systemd/network/20-gfab0.network.d/60-gpufabric-mtu.conf", "MTUBytes=9000"),
             "gpufabric-nm-ifupdown": ("/etc/network/interfaces", "    mtu 9000"),
             "gpufabric-nm-networkmanager": (None, None),
             "gpufabric-nm-netplan": ("/etc/netplan/60-gpufabric-gfab0.yaml", "mtu: 9000")}


def name(host):
    return host.backend.get_hostname()


def mtu(host):
    return int(host.file("/sys/class/net/gfab0/mtu").content_string.strip())


def settle(host, want=9000, seconds=30):
    for attempt in range(seconds):
        if host.file("/sys/class/net/gfab0").exists and mtu(host) == want:
            return True
        time.sleep(1)
    return False


def playbook(host, *extra, check=False, vars_=None):
    inventory = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "inventory")
    argv = ["ansible-playbook", "-i", inventory, "--limit", name(host), os.path.join(SCENARIO, "converge.yml")]
    if check:
        argv += ["--check", "--diff"]
    for key, value in (vars_ or {}).items():
        argv += ["-e", "%s=%s" % (key, value)]
    return subprocess.run(argv + list(extra), capture_output=True, text=True, check=False, timeout=300)


def flat(proc):
    """The playbook's output on one line (the callback wraps long messages)."""
    return " ".join((proc.stdout + proc.stderr).split())


def test_mtu_is_set_and_persisted_in_the_managers_own_configuration(host):
    assert mtu(host) == 9000
    path, line = PERSISTED[name(host)]
    if path:
        assert line in host.file(path).content_string
    else:
        assert host.check_output("nmcli -g 802-3-ethernet.mtu connection show gfab0") == "9000"


def test_restarting_the_manager_keeps_9000(host):
    assert host.run(RESTART[name(host)]).rc == 0
    assert settle(host), "MTU after restarting the manager: %s" % mtu(host)


def test_restarting_the_container_keeps_9000(host):
    subprocess.run(["docker", "restart", name(host)], check=True, capture_output=True, timeout=120)
    fresh = testinfra.get_host("docker://" + name(host))
    for attempt in range(60):
        if fresh.run("systemctl is-system-running --wait").rc in (0, 1):
            break
        time.sleep(1)
    assert settle(fresh, seconds=60), "MTU after the container restarted: %s" % (
        mtu(fresh) if fresh.file("/sys/class/net/gfab0").exists else "no gfab0")


def test_check_mode_reports_a_change_and_makes_none(host):
    before = host.file(PERSISTED[name(host)][0]).content_string if PERSISTED[name(host)][0] else None
    proc = playbook(host, check=True, vars_={"rdma_network_mtu": "8000"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "changed=1" in proc.stdout or "changed=2" in proc.stdout
    assert "mtu 9000" in proc.stdout and "mtu 8000" in proc.stdout  # the diff
    assert mtu(host) == 9000
    if before is not None:
        assert host.file(PERSISTED[name(host)][0]).content_string == before


def test_an_interface_claimed_by_two_managers_is_refused_before_any_change(host):
    if name(host) != "gpufabric-nm-networkd":
        pytest.skip("shown once: networkd's container gets an ifupdown stanza for gfab0 too")
    host.run("mkdir -p /etc/network && printf 'auto gfab0\\niface gfab0 inet manual\\n' > /etc/network/interfaces")
    try:
        proc = playbook(host, vars_={"rdma_network_mtu": "8000"})
        assert proc.returncode != 0
        assert ("gfab0 is claimed by systemd-networkd (/etc/systemd/network/20-gfab0.network) and ifupdown "
                "(/etc/network/interfaces)") in flat(proc)
        assert mtu(host) == 9000
        assert "MTUBytes=9000" in host.file(PERSISTED[name(host)][0]).content_string
    finally:
        host.run("rm -f /etc/network/interfaces")


def test_netplan_rejecting_the_configuration_leaves_the_previous_one(host):
    if name(host) != "gpufabric-nm-netplan":
        pytest.skip("netplan checks its configuration (netplan generate)")
    path = "/etc/netplan/60-gpufabric-gfab0.yaml"
    before = host.file(path).content_string
    # A broken neighbour file makes netplan generate fail, whatever the role writes.
    host.run("printf 'network:\\n  version: 2\\n  ethernets: [broken\\n' > /etc/netplan/70-broken.yaml && chmod 600 /etc/netplan/70-broken.yaml")
    try:
        proc = playbook(host, vars_={"rdma_network_mtu": "8000"})
        assert proc.returncode != 0
        assert "netplan rejected the configuration for gfab0" in flat(proc)
        assert "the previous configuration is back in place and nothing else was changed" in flat(proc)
        assert host.file(path).content_string == before  # put back
        assert mtu(host) == 9000  # and the runtime MTU never changed
    finally:
        host.run("rm -f /etc/netplan/70-broken.yaml")
