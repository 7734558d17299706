"""node/nic_firmware.py against the mlxconfig stand-in (tests/lab/mlxconfig-standin, real processes through
commands.Runner) replaying a real ConnectX-4 Lx query (mstflint, linux-rdma 2019) and a real mlxfwreset run: query,
plan, finding, set, reset, and a device the tool cannot open."""
import os
import shutil

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, nic_firmware as node_fw, node_checks
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nic_firmware as f
from paths import fixture_path, ROOT

STANDIN = os.path.join(ROOT, "tests", "lab", "mlxconfig-standin")
FIXTURES = fixture_path("mlxconfig")
LOSSLESS = {"profiles": ["roce_lossless"], "params": {"ecn_priorities": [3]}, "devices": ["01:00.1"]}


@pytest.fixture
def tools(tmp_path):
    """The stand-in as mlxconfig and mlxfwreset in tmp_path, replaying the CX4 Lx query and the mlxfwreset capture."""
    (tmp_path / "capture").mkdir()
    for name in ("mlxconfig", "mlxfwreset", "standin.py"):
        shutil.copy(os.path.join(STANDIN, name), str(tmp_path / name))
    shutil.copy(os.path.join(FIXTURES, "mstconfig_q_cx4lx_nextboot_only.txt"), str(tmp_path / "capture" / "q.txt"))
    shutil.copy(os.path.join(FIXTURES, "mlxfwreset_reset_cx4_level3.txt"), str(tmp_path / "capture" / "reset.txt"))
    return tmp_path


def test_query_plan_finding_set_and_reset_through_the_tools(tools):
    options = f.check_options(dict(LOSSLESS, tool=str(tools / "mlxconfig")))
    assert options["reset_tool"] == str(tools / "mlxfwreset")
    runner = commands.Runner(20)
    queried = node_fw.query(runner, options["tool"], options["devices"])
    assert queried["problems"] == [] and queried["devices"][0]["queried"] == "01:00.1"
    planned = node_fw.plans(queried["devices"], options["wanted"])
    found = f.findings("n1", planned, options["profiles"])
    assert [(x["check"], x["severity"], x["target"]) for x in found] == [("nic_firmware_settings", "warning", "n1/01:00.1")]
    assert found[0]["detail"] == ("01:00.1 (ConnectX4LX): ROCE_CC_PRIO_MASK_P1 255 -> 8, ROCE_CC_PRIO_MASK_P2 255 -> 8 "
                                  "(roce_lossless)")
    done = node_fw.apply(runner, options["tool"], options["reset_tool"], planned)
    assert [(d["device"], d["applied"], d["reset_ok"], d["error"]) for d in done] == [("01:00.1", True, True, None)]
    assert "FW was loaded successfully" in done[0]["reset_output"]
    log = (tools / "capture" / "log").read_text().splitlines()
    assert log[-2:] == ["mlxconfig -y -d 01:00.1 set ROCE_CC_PRIO_MASK_P1=8 ROCE_CC_PRIO_MASK_P2=8",
                        "mlxfwreset -d 01:00.1 -y reset"]
    again = node_fw.plans(node_fw.query(runner, options["tool"], options["devices"])["devices"], options["wanted"])
    assert f.findings("n1", again, options["profiles"]) == []


def test_a_device_the_tool_cannot_open_is_unknown_not_wrong_and_nothing_is_set(tools):
    shutil.copy(os.path.join(FIXTURES, "mstconfig_q_error_failed_open_permission_denied.txt"), str(tools / "capture" / "q.txt"))
    options = f.check_options(dict(LOSSLESS, tool=str(tools / "mlxconfig")))
    queried = node_fw.query(commands.Runner(20), options["tool"], options["devices"])
    assert queried["devices"] == [] and queried["problems"] == ["mlxconfig -d 01:00.1 q: Failed to open the device"]
    found = f.findings("n1", [], options["profiles"], queried["problems"])
    assert [(x["check"], x["severity"]) for x in found] == [("nic_firmware_unread", "warning")]
    missing = node_fw.query(commands.Runner(20), str(tools / "absent" / "mlxconfig"), ["01:00.1"])
    assert missing["problems"][0].endswith("mlxconfig is not installed")


def test_a_set_the_device_refuses_stops_before_any_reset(tools):
    options = f.check_options({"settings": {"NO_SUCH_SETTING": 1}, "tool": str(tools / "mlxconfig"), "devices": ["01:00.1"]})
    planned = [{"device": "01:00.1", "changes": [{"setting": "NO_SUCH_SETTING", "now": "0", "wanted": "1"}],
                "pending": [], "argv": ["-y", "-d", "01:00.1", "set", "NO_SUCH_SETTING=1"]}]
    done = node_fw.apply(commands.Runner(20), options["tool"], options["reset_tool"], planned)
    assert done[0]["applied"] is False and done[0]["reset_output"] is None
    assert done[0]["error"] == "mlxconfig set on 01:00.1: Unknown Parameter: NO_SUCH_SETTING"
    assert "mlxfwreset" not in (tools / "capture" / "log").read_text()


def test_the_health_check_reads_the_firmware_and_an_unreadable_card_makes_the_report_incomplete(tools):
    empty = tools / "sys"
    empty.mkdir()
    given = {"sysfs_root": str(empty), "kernel_log": str(tools / "capture" / "q.txt"), "nvidia_smi_path": "/nonexistent",
             "nic_firmware": dict(LOSSLESS, tool=str(tools / "mlxconfig"))}
    result = node_checks.check_node(given, host="n1")
    assert [x["target"] for x in result["findings"] if x["check"] == "nic_firmware_settings"] == ["n1/01:00.1"]
    assert result["observed"]["nic_firmware"][0]["changes"][0]["setting"] == "ROCE_CC_PRIO_MASK_P1"
    shutil.copy(os.path.join(FIXTURES, "mstconfig_q_errors_open_identify_cx5.txt"), str(tools / "capture" / "q.txt"))
    result = node_checks.check_node(dict(given, kernel_log=str(tools / "capture" / "reset.txt")), host="n1")
    assert not result["complete"]
    assert any(u.startswith("NIC firmware settings: mlxconfig -d 01:00.1 q: ") for u in result["unreadable"]), result["unreadable"]
