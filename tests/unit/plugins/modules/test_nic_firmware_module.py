"""The nic_firmware module against the mlxconfig stand-in (tests/lab/mlxconfig-standin) replaying a real ConnectX-4 Lx
query and a real mlxfwreset: without apply nothing is set; check mode with apply shows the per-device diff and sets
nothing; apply sets, resets and reads the card again; a card that cannot be read changes nothing and says why; and
readiness judges the plans discovery keeps."""
import os
import shutil

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import readiness
from ansible_collections.gpufabric.rdma.plugins.modules import nic_firmware
from moduletest import run_module
from paths import fixture_path, ROOT

STANDIN = os.path.join(ROOT, "tests", "lab", "mlxconfig-standin")
FIXTURES = fixture_path("mlxconfig")


def _tools(tmp_path, query="mstconfig_q_cx4lx_nextboot_only.txt"):
    (tmp_path / "capture").mkdir()
    for name in ("mlxconfig", "mlxfwreset", "standin.py"):
        shutil.copy(os.path.join(STANDIN, name), str(tmp_path / name))
    shutil.copy(os.path.join(FIXTURES, query), str(tmp_path / "capture" / "q.txt"))
    shutil.copy(os.path.join(FIXTURES, "mlxfwreset_reset_cx4_level3.txt"), str(tmp_path / "capture" / "reset.txt"))
    return {"profiles": ["roce_lossless"], "params": {"ecn_priorities": [3]}, "tool": str(tmp_path / "mlxconfig"),
            "devices": ["01:00.1"], "timeout": 20}


def _log(tmp_path):
    path = tmp_path / "capture" / "log"
    return path.read_text() if path.exists() else ""


def test_a_plan_a_check_mode_diff_and_a_change_only_with_apply(tmp_path):
    args = _tools(tmp_path)
    plan = run_module(nic_firmware, args)
    assert plan["changed"] is False and plan.get("failed") is not True, plan
    assert plan["text"] == ("01:00.1 (ConnectX4LX): ROCE_CC_PRIO_MASK_P1 255 -> 8\n"
                            "01:00.1 (ConnectX4LX): ROCE_CC_PRIO_MASK_P2 255 -> 8\n")
    checked = run_module(nic_firmware, dict(args, apply=True), check_mode=True, diff=True)
    assert checked["changed"] is True and checked["applied"] == []
    assert checked["diff"]["before"] == "01:00.1 ROCE_CC_PRIO_MASK_P1=255\n01:00.1 ROCE_CC_PRIO_MASK_P2=255\n"
    assert checked["diff"]["after"] == "01:00.1 ROCE_CC_PRIO_MASK_P1=8\n01:00.1 ROCE_CC_PRIO_MASK_P2=8\n"
    assert " set " not in _log(tmp_path)
    done = run_module(nic_firmware, dict(args, apply=True))
    assert done["changed"] is True and done.get("failed") is not True, done
    assert [(a["device"], a["applied"], a["reset_ok"]) for a in done["applied"]] == [("01:00.1", True, True)]
    again = run_module(nic_firmware, dict(args, apply=True))
    assert again["changed"] is False and again["text"] == "01:00.1 (ConnectX4LX): as the profile wants\n"


def test_a_card_that_cannot_be_read_changes_nothing_and_readiness_says_so(tmp_path):
    args = _tools(tmp_path, "mstconfig_q_error_failed_open_permission_denied.txt")
    failed = run_module(nic_firmware, dict(args, apply=True))
    assert failed["failed"] is True and "could not be read, so nothing is changed" in failed["msg"]
    assert "Failed to open the device" in failed["msg"] and " set " not in _log(tmp_path)
    record = {"nic_firmware": {"profiles": ["roce_lossless"], "plans": [], "error": failed["msg"]}}
    found = readiness.node_findings("n1", record)
    assert [(f["check"], f["target"]) for f in found] == [("nic_firmware_unread", "n1/nic-firmware")]


def test_readiness_puts_a_card_that_differs_under_its_sku(tmp_path):
    plan = run_module(nic_firmware, _tools(tmp_path))
    record = {"nic_firmware": {"profiles": ["roce_lossless"], "plans": plan["plans"], "error": None}}
    report = readiness.build_report({"n1": record})
    (found,) = [f for f in report["nodes"]["n1"]["findings"] if f["check"] == "nic_firmware_settings"]
    assert found["target"] == "n1/01:00.1" and "ROCE_CC_PRIO_MASK_P1 255 -> 8" in found["detail"]
    assert "  - warning nic_firmware_settings n1/01:00.1: 01:00.1 (ConnectX4LX)" in readiness.render_markdown(report)


def test_a_node_without_an_nvidia_card_is_not_run_and_readiness_says_so(tmp_path):
    """Issue 52: no NVIDIA card in sysfs and none named used to give an empty plan - nothing to say, READY; it is "not
    run", with its own message, and readiness shows it as nic_firmware_unread."""
    (tmp_path / "class" / "infiniband").mkdir(parents=True)
    result = run_module(nic_firmware, {"profiles": ["roce_lossless"], "sysfs_root": str(tmp_path)})
    assert result.get("failed") is not True and result["changed"] is False, result
    why = "not run: no NVIDIA (Mellanox) card under %s/class/infiniband and none named in devices: nothing was compared" % tmp_path
    assert result["not_run"] == why and result["plans"] == [] and result["text"] == why + "\n"
    record = {"nic_firmware": {"profiles": ["roce_lossless"], "plans": [], "not_run": why, "error": None}}
    (found,) = readiness.build_report({"cpu01": record})["nodes"]["cpu01"]["findings"]
    assert (found["check"], found["target"]) == ("nic_firmware_unread", "cpu01/nic-firmware") and why in found["detail"]
