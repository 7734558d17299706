"""node_health for real (ansible localhost, the module on this machine) on captured inputs:
the seed 002 eRDMA sysfs tree, a real kernel log, the 8x H200 nvidia-smi capture."""

import json
import os
import shutil
import subprocess

import pytest
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")


def fixture_path(*parts):
    return os.path.join(FIXTURES, *parts)


@pytest.fixture
def node(tmp_path):
    sysfs = tmp_path / "sys"
    shutil.copytree(fixture_path("sysfs", "erdma"), sysfs)
    (sysfs / "class" / "net" / "eth1" / "mtu").write_text("1500\n")
    capture = tmp_path / "capture"
    capture.mkdir()
    shutil.copy(fixture_path("nvidia_smi", "q_h200x8.xml"), capture / "q.xml")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "modules").write_text("nvidia_peermem 16384 0 - Live 0x0000000000000000\nib_core 462848 9 - Live 0x0\n")
    return tmp_path


def _run(node, **args):
    args.setdefault("sysfs_root", str(node / "sys"))
    args.setdefault("procfs_root", str(node / "proc"))
    args.setdefault("nvidia_smi_path", os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi"))
    env = dict(os.environ, NVIDIA_SMI_CAPTURE=str(node / "capture"), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    proc = subprocess.run(["ansible", "localhost", "-m", "gpufabric.rdma.node_health", "-a", json.dumps(args)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return result


def test_healthy_node(node):
    result = _run(node, expected_gpu_count=8, expected_rdma_devices=1, expected_mtu=1500, require_peermem=True,
                  kernel_log=fixture_path("kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"), xid_ignore=[13, 109])
    assert result.get("failed") is not True, result
    assert (result["healthy"], result["findings"], result["changed"]) == (True, [], False)
    assert result["observed"]["gpu_count"] == 8 and result["observed"]["rdma_devices"] == ["erdma_0"]


def test_faulty_node(node):
    (node / "sys" / "class" / "infiniband" / "erdma_0" / "ports" / "1" / "state").write_text("1: DOWN\n")
    result = _run(node, expected_gpu_count=8, expected_rdma_devices=2, expected_mtu=9000,
                  kernel_log=fixture_path("kernel_log", "dmesg_fallen_off_bus_no_xid_nvsentinel155.txt"))
    checks = [(f["severity"], f["check"]) for f in result["findings"]]
    assert checks == [("critical", "gpu_xid"), ("critical", "rdma_device_count"), ("critical", "rdma_port_state"),
                      ("warning", "mtu")]
    assert result["counts"] == {"critical": 3, "warning": 1, "info": 0} and result["healthy"] is False
    assert result["findings"][0]["target"].endswith("/GPU 0000:b3:00")


def test_bad_input_names_the_value(node):
    result = _run(node, counter_interval=-5)
    assert result["failed"] is True
    assert result["msg"] == "counter_interval must not be negative, got -5"


def test_fabric_messages_of_the_kernel_log(node, tmp_path):
    # A GPU off the bus with fatal NVSwitch SXids (HGX), NVLinks that did not come up (GH100), and a NIC on a
    # limited PCIe link: one kernel log, read by the module.
    log = tmp_path / "kern.log"
    log.write_text("".join(open(fixture_path("kernel_log", name)).read() for name in (
        "dmesg_xid_79_sxid_20034_gpud.txt", "dmesg_nvlink_post_rx_detect_gh100_gpud1272.txt",
        "dmesg_mlx5_pcie_limited_l2fwdnv6.txt")))
    result = _run(node, expected_gpu_count=8, expected_rdma_devices=1, expected_mtu=1500, kernel_log=str(log))
    host = result["observed"]["host"]
    found = [(f["severity"], f["check"], f["target"]) for f in result["findings"]]
    assert found == [("critical", "gpu_xid", host + "/GPU 0000:91:00"),
                     ("critical", "nvlink_training", host),
                     ("critical", "nvswitch_sxid", host + "/NVSwitch 0000:05:00.0"),
                     ("critical", "nvswitch_sxid", host + "/NVSwitch 0000:06:00.0"),
                     ("critical", "nvswitch_sxid", host + "/NVSwitch 0000:07:00.0"),
                     ("warning", "nic_pcie_bandwidth", host + "/NIC 0000:b3:00.1")]
    assert result["healthy"] is False and result["counts"]["critical"] == 5
    fabric = result["observed"]["fabric_events"]
    assert [e["sxid"] for e in fabric["sxid"]] == [20034, 20034, 20034]
    assert fabric["nic_pcie"][0]["limited_by"] == {"speed": "8 GT/s", "width": 8}


def test_an_nvlink_down(node):
    # The 8x A100 listing of leptonai/gpud with GPU 3's twelve links edited to '<inactive>' (the shape of an
    # inactive link in Azure/azhpc-diagnostics #73's real listing).
    listing = open(fixture_path("nvlink", "status_a100x8_gpud.txt")).read()
    head, sep, rest = listing.partition("GPU 3:")
    block, sep2, tail = rest.partition("GPU 4:")
    edited = head + sep + "".join(
        line.split(":")[0] + ": <inactive>\n" if line.strip().startswith("Link") else line + "\n"
        for line in block.splitlines()) + sep2 + tail
    (node / "capture" / "nvlink_status.txt").write_text(edited)
    result = _run(node, expected_gpu_count=8, expected_rdma_devices=1, expected_mtu=1500,
                  kernel_log=fixture_path("kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"), xid_ignore=[13, 109])
    host = result["observed"]["host"]
    assert [(f["severity"], f["check"], f["target"]) for f in result["findings"]] == [
        ("critical", "nvlink_down", host + "/GPU 3")]
    assert result["findings"][0]["detail"].startswith("all 12 NVLinks of GPU 3")
    assert result["complete"] is True


def test_an_nvlink_listing_that_hangs_is_not_a_pass(node, tmp_path):
    smi = tmp_path / "nvidia-smi"
    real = os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi")
    smi.write_text('#!/bin/sh\n[ "$1" = nvlink ] && exec sleep 60\nexec %s "$@"\n' % real)
    smi.chmod(0o755)
    result = _run(node, expected_gpu_count=8, expected_rdma_devices=1, expected_mtu=1500, command_timeout=2,
                  nvidia_smi_path=str(smi), kernel_log=fixture_path("kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"),
                  xid_ignore=[13, 109])
    assert result["complete"] is False and result["healthy"] is False
    assert [f["check"] for f in result["findings"]] == ["nvlink_status"]
    assert result["unreadable"][0].startswith("nvidia-smi nvlink --status: ")


def test_the_awx_path_and_the_monitor_name_a_node_alike(node):
    """One node, two names: a node drained for a port DOWN through the AWX path (node_health, named by the OS host
    name gpu-01.cluster.local) was resumed from the monitor's report (named gpu-01) with the port still DOWN, because
    the decider compared findings of two names. node_name gives the targets the scheduler's name on both paths."""
    import importlib.util
    from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import monitor, policy
    (node / "sys" / "class" / "infiniband" / "erdma_0" / "ports" / "1" / "state").write_text("1: DOWN\n")
    checks = {"sysfs_root": str(node / "sys"), "procfs_root": str(node / "proc"), "expected_rdma_devices": 1,
              "nvidia_smi_path": os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi")}
    awx = _run(node, node_name="gpu-01", **checks)
    assert [f["target"] for f in awx["findings"]] == ["gpu-01/erdma_0/1"], awx["findings"]
    spec = importlib.util.spec_from_file_location(
        "gpufabric_health_monitor", os.path.join(ROOT, "roles", "health_monitor", "files", "gpufabric_health_monitor.py"))
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    config = monitor.check_config({"cluster": "lab", "host": "gpu-01.cluster.local", "state_dir": str(node),
                                   "checks": checks, "webhooks": []})
    os.environ["NVIDIA_SMI_CAPTURE"] = str(node / "capture")
    try:
        from ansible_collections.gpufabric.rdma.plugins.module_utils.node import node_checks
        found = node_checks.check_node(config["checks"], host=program.node_name(config))["findings"]
    finally:
        del os.environ["NVIDIA_SMI_CAPTURE"]
    assert program.node_name(config) == "gpu-01"
    assert set(policy.finding_key(f) for f in found) == set(policy.finding_key(f) for f in awx["findings"])


def _dcgmi(tmp_path, text):
    """A dcgmi that prints a real public output (tests/unit/fixtures/dcgm); None: one that never answers."""
    tool = tmp_path / "dcgmi"
    if text is None:
        tool.write_text("#!/bin/sh\nsleep 3600 & sleep 3600\n")
    else:
        tool.write_text("#!/bin/sh\ncat %s\n" % fixture_path("dcgm", text))
    tool.chmod(0o755)
    return str(tool)


def test_dcgm_level_1_in_the_health_check(node, tmp_path):
    """Level 1 on every check (Slurm's HealthCheckProgram runs the monitor): a persistence failure is critical in
    DCGM's words; a passing level adds nothing; a dcgmi that hangs is killed, warned about, and makes the report
    incomplete, so it never returns a node to service; levels 2 and up are refused."""
    base = dict(expected_gpu_count=8, expected_rdma_devices=1, expected_mtu=1500, require_peermem=True,
                kernel_log=fixture_path("kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"), xid_ignore=[13, 109],
                dcgm_level=1)
    failing = _run(node, dcgmi_path=_dcgmi(tmp_path, "dcgm3_r1_fail_persistence_h200.txt"), **base)
    (found,) = failing["findings"]
    assert (found["severity"], found["check"]) == ("critical", "dcgm_diag")
    assert found["detail"].startswith("dcgmi diag -r 1: Deployment/Persistence Mode failed: Persistence mode for GPU 0 "
                                      "is currently disabled.")
    assert failing["observed"]["dcgm"]["status"] == "fail" and failing["complete"] is True
    passing = _run(node, dcgmi_path=_dcgmi(tmp_path, "dcgm3_r2_pass_p4de_awsome.txt"), **base)
    assert (passing["healthy"], passing["findings"], passing["observed"]["dcgm"]["status"]) == (True, [], "pass")
    hung = _run(node, dcgmi_path=_dcgmi(tmp_path, None), command_timeout=2, **base)
    assert [f["check"] for f in hung["findings"]] == ["dcgm_diag_not_run"] and hung["complete"] is False
    assert hung["unreadable"][0].startswith("dcgmi diag -r 1: ") and "did not finish within 2 s and was killed" in hung["unreadable"][0]
    refused = _run(node, dcgm_level=2)
    assert refused["failed"] is True and refused["msg"].startswith("dcgm_level must be 1 or unset")


def _mlxlink(tmp_path, name):
    """An mlxlink that prints a real public output (tests/unit/fixtures/mlxlink) and logs its arguments; None: one
    that is not there."""
    tool = tmp_path / "mlxlink"
    tool.write_text("#!/bin/sh\necho \"$@\" >> %s/mlxlink.calls\ncat %s\n" % (tmp_path, fixture_path("mlxlink", name)))
    tool.chmod(0o755)
    return str(tool)


def test_the_physical_layer_of_each_port_in_the_health_check(node, tmp_path):
    """link_health: mlxlink -d <dev> -p 1 -c per RDMA device; the ConnectX-5 capture whose firmware recommends
    "Cable speed not enabled" is a finding naming host, device and port, and the readings come back as observed;
    a missing mlxlink is link_unread and an incomplete report; a bad option is refused naming it."""
    base = dict(expected_gpu_count=8, expected_rdma_devices=1, expected_mtu=1500, require_peermem=True,
                kernel_log=fixture_path("kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"), xid_ignore=[13, 109])
    tool = _mlxlink(tmp_path, "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt")
    result = _run(node, link_health={"tool": tool, "devices": ["mlx5_0"]}, node_name="gpu07", **base)
    # The capture has no counter section: asked for with -c, no BER came back, so the port is also unread (issue 53).
    assert [(f["check"], f["target"], f["detail"]) for f in result["findings"]] == [
        ("link_recommendation", "gpu07/mlx5_0/1", "mlxlink recommends: Cable speed not enabled (status opcode 25, PHY FW)"),
        ("link_unread", "gpu07/mlx5_0/1",
         "mlxlink printed no BER (no Effective or Raw Physical BER line) though its counters were asked for")]
    assert result["complete"] is False
    assert (tmp_path / "mlxlink.calls").read_text() == "-d mlx5_0 -p 1 -c\n"
    (link,) = result["observed"]["links"]
    assert (link["device"], link["speed"], link["fec"], link["effective_ber"]) == ("mlx5_0/1", "IB-SDR", "No FEC", None)
    healthy = _run(node, link_health={"tool": _mlxlink(tmp_path, "bf3_100g_dac_healthy_m_c_sigcomm26.txt"),
                                      "devices": ["mlx5_0"]}, **base)
    assert healthy["healthy"] is True and healthy["observed"]["links"][0]["raw_errors_per_lane"] == [0, 0, 0, 0]
    missing = _run(node, link_health={"tool": str(tmp_path / "nowhere" / "mlxlink"), "devices": ["mlx5_0"]}, **base)
    assert [f["check"] for f in missing["findings"]] == ["link_unread"] and missing["complete"] is False
    refused = _run(node, link_health={"max_raw_ber": "high"}, **base)
    assert refused["failed"] is True and refused["msg"] == "link_health max_raw_ber must be a positive number (1e-12), got 'high'"


def test_link_and_firmware_checks_on_a_node_without_an_nvidia_hca_are_not_run(node):
    """Issue 52: the healthy eRDMA node (no mlx4_/mlx5_ device) asked for link_health and nic_firmware used to come
    back healthy and complete with nothing read; each check says it did not run, and the report is incomplete."""
    result = _run(node, expected_gpu_count=8, expected_rdma_devices=1, expected_mtu=1500, require_peermem=True,
                  kernel_log=fixture_path("kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"), xid_ignore=[13, 109],
                  link_health=True, nic_firmware={"profiles": ["roce_lossless"]}, node_name="gpu07")
    assert result.get("failed") is not True, result
    found = dict((f["check"], (f["target"], f["detail"])) for f in result["findings"])
    assert found["link_unread"] == ("gpu07", "not run: no NVIDIA HCA (an mlx4_ or mlx5_ RDMA device) on this node: no link was read")
    assert found["nic_firmware_unread"][1].startswith(
        "the firmware settings could not be read: not run: no NVIDIA (Mellanox) card under ")
    assert result["complete"] is False and result["healthy"] is False


HEALTHY = dict(expected_gpu_count=8, expected_rdma_devices=1, expected_mtu=1500, require_peermem=True,
               kernel_log=fixture_path("kernel_log", "dmesg_ctime_xid_13_109_gpud46.txt"), xid_ignore=[13, 109])


def test_the_checks_options_in_one_mapping_are_taken_as_if_given_by_name(node):
    """checks: every check's option in one mapping, as health_monitor_checks holds them (issue 54) - each value converted
    as node_health converts it by name: "8" is 8 GPUs (the 8x H200 capture: healthy), "9" finds one lost, "13" an Xid."""
    given = dict(HEALTHY)
    given.update(expected_gpu_count="8", expected_mtu="1500", xid_ignore=["13", 109])
    by_name = _run(node, **given)
    in_checks = _run(node, checks=given)
    assert in_checks.get("failed") is not True, in_checks
    assert (in_checks["healthy"], in_checks["findings"], in_checks["complete"]) == (True, [], True)
    assert in_checks["observed"] == by_name["observed"]
    lost = _run(node, checks=dict(given, expected_gpu_count="9"))
    assert [(f["check"], f["detail"]) for f in lost["findings"]] == [("gpu_count", "8 of 9 expected GPUs found")]


def test_the_checks_mapping_refuses_what_by_name_would_refuse_and_an_unknown_key_naming_the_known_ones(node):
    unknown = _run(node, checks={"expected_gpus": 8, "expected_mtu": 1500})
    assert unknown["failed"] is True
    assert unknown["msg"].startswith("checks: unknown check option(s): expected_gpus (known: command_timeout, "), unknown["msg"]
    assert "expected_gpu_count" in unknown["msg"] and "link_health" in unknown["msg"]
    by_name = _run(node, expected_gpu_count="eight")
    in_checks = _run(node, checks={"expected_gpu_count": "eight"})
    assert by_name["failed"] is True and in_checks["failed"] is True
    assert "expected_gpu_count" in by_name["msg"] and in_checks["msg"] == "checks: " + by_name["msg"]
    assert _run(node, checks={"counter_interval": -5})["msg"] == "counter_interval must not be negative, got -5"


def test_an_option_given_both_by_name_and_in_the_checks_mapping_is_refused_naming_it(node):
    both = _run(node, expected_mtu=1500, checks={"expected_mtu": 9000, "expected_gpu_count": 8})
    assert both["failed"] is True
    assert both["msg"] == ("expected_mtu is given both by name (1500) and in checks (9000): give it once - "
                           "by name, or in checks"), both["msg"]
    # By name at its default (as a role that passes every option would): the mapping's value is taken.
    default = _run(node, checks=HEALTHY, require_peermem=False)
    assert default.get("failed") is not True and default["healthy"] is True, default
    (node / "proc" / "modules").write_text("ib_core 462848 9 - Live 0x0\n")
    unloaded = _run(node, checks=HEALTHY, require_peermem=False)
    assert [f["check"] for f in unloaded["findings"]] == ["peermem"]
