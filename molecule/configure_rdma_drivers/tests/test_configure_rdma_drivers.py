"""rdma_drivers (inbox) in a real container: Debian's rdma-core stack installed and runnable,
verification reported (a container has no RDMA devices), bad input refused before any change."""

import json
import os
import subprocess

import pytest


@pytest.mark.parametrize("package", ["rdma-core", "ibverbs-utils", "ibverbs-providers", "infiniband-diags",
                                     "perftest", "rdmacm-utils"])
def test_inbox_packages_installed(host, package):
    assert host.package(package).is_installed


@pytest.mark.parametrize("binary", ["ibv_devinfo", "ibv_devices", "ibstat", "ib_write_bw", "ib_read_lat", "rping",
                                    "rdma"])
def test_tools_on_path(host, binary):
    assert host.exists(binary)


def test_ibv_devinfo_runs_and_reports_no_devices(host):
    cmd = host.run("ibv_devinfo")
    # The verbs library loads and asks the kernel, which has no RDMA subsystem here (a kernel with
    # ib_core but no device answers "No IB devices found" instead).
    assert cmd.rc == 255
    assert cmd.stderr.strip() == "Failed to get IB devices list: Function not implemented"


def test_verification_reported_as_skipped_in_a_container(host):
    # One file per platform: the three containers converge at once.
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "drivers-verification-%s.json" % host.backend.get_hostname())
    with open(path) as handle:
        verification = json.load(handle)
    assert verification["provider"] == "inbox"
    assert verification["devices"] == [] and verification["ports_not_active"] == []
    assert verification["in_container"] is True
    assert verification["ibv_devinfo"] == "Failed to get IB devices list: Function not implemented"


@pytest.mark.parametrize("extra, message", [
    (["-e", "rdma_drivers_provider=rocky"], "value of rdma_drivers_provider must be one of: inbox, doca, mlnx_ofed, erdma, got: rocky"),
    (["-e", "rdma_drivers_provider=doca"], "doca needs rdma_drivers_doca_repo_url ending in / (got '')"),
    (["-e", "rdma_drivers_provider=mlnx_ofed"], "mlnx_ofed needs rdma_drivers_ofed_bundle and rdma_drivers_ofed_checksum"),
])
def test_bad_input_fails_before_any_change(extra, message):
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    playbook = os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "bad_input.yml")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, playbook] + extra,
                          capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert message in " ".join(out.split())
    assert "changed=0" in out
