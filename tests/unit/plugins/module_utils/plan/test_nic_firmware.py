"""plan/nic_firmware.py on real mlxconfig/mstconfig queries (tests/unit/fixtures/mlxconfig): what each profile would
change on a device, from what to what, the one `mlxconfig set` line, and what the device does not have."""
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import mlxconfig
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nic_firmware as w
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nic_firmware as f
from paths import fixture_path

FIXTURES = fixture_path("mlxconfig")


def device(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return mlxconfig.parse_mlxconfig(handle.read())["devices"][0]


def test_roce_lossless_on_a_connectx4_lx_with_factory_congestion_settings():
    cx4lx = device("mstconfig_q_cx4lx_nextboot_only.txt")
    planned = f.plan(cx4lx, w.desired(["roce_lossless"], {"ecn_priorities": [3]}))
    # ECN, CNP priority 6 and DSCP 48 are already there; congestion control on all 8 priorities is not priority 3 only
    assert planned["changes"] == [{"setting": "ROCE_CC_PRIO_MASK_P1", "now": "255", "wanted": "8"},
                                  {"setting": "ROCE_CC_PRIO_MASK_P2", "now": "255", "wanted": "8"}]
    assert planned["argv"] == ["-y", "-d", "01:00.1", "set", "ROCE_CC_PRIO_MASK_P1=8", "ROCE_CC_PRIO_MASK_P2=8"]
    assert planned["reset_needed"] and planned["missing"] == []


def test_sriov_already_there_ats_and_link_type_missing_on_an_ethernet_only_card():
    cx4lx = device("mstconfig_q_cx4lx_nextboot_only.txt")
    planned = f.plan(cx4lx, w.desired(["sriov", "ats", "ethernet"], {"num_vfs": 8}))
    assert planned["changes"] == [] and planned["argv"] is None and not planned["reset_needed"]
    assert planned["missing"] == ["ATS_ENABLED", "LINK_TYPE_P*"]
    more = f.plan(cx4lx, w.desired(["sriov"], {"num_vfs": 16}))
    assert more["changes"] == [{"setting": "NUM_OF_VFS", "now": "8", "wanted": "16"}]
    text = f.diff_text([planned, more])
    assert "01:00.1 (ConnectX4LX): not shown by this device (no such setting on it): ATS_ENABLED, LINK_TYPE_P*" in text
    assert "01:00.1 (ConnectX4LX): NUM_OF_VFS 8 -> 16" in text


def test_a_set_in_progress_counts_its_new_value_and_a_vpi_card_gets_its_link_type():
    cx4 = device("mlxconfig_set_link_type_dualport_cx4.txt")   # IB(1) -> ETH(2) was just set
    assert f.plan(cx4, w.desired(["ethernet"]))["changes"] == []
    back = f.plan(cx4, w.desired(["infiniband"]))
    assert [c["setting"] for c in back["changes"]] == ["LINK_TYPE_P1", "LINK_TYPE_P2"] and back["changes"][0]["now"] == "ETH(2)"


@pytest.mark.parametrize("profiles, params, extra, message", [
    (["turbo"], None, None, "nic firmware profiles must be a list of roce_lossless, sriov, ats, ethernet, infiniband"),
    (["ethernet", "infiniband"], None, None, "ethernet and infiniband set the same LINK_TYPE"),
    (["roce_lossless"], {"ecn_priorities": [9]}, None, "ecn_priorities must be a list of priorities 0 to 7, got [9]"),
    (["roce_lossless"], {"cnp_dscp": 64}, None, "cnp_dscp must be a whole number from 0 to 63, got 64"),
    (["sriov"], {"vfs": 4}, None, "nic firmware parameters: unknown vfs"),
    ([], None, {"SRIOV_EN=1 NUM_OF_VFS": 1}, "is not an mlxconfig setting name"),
    ([], None, {"NUM_OF_VFS": "8; reboot"}, "the value must be a number, true/false or a word"),
])
def test_bad_profiles_and_values_are_refused_naming_them(profiles, params, extra, message):
    with pytest.raises(w.FirmwareError, match=message.replace("[", r"\[").replace("]", r"\]")):
        w.desired(profiles, params, extra)


def test_a_value_set_for_the_next_boot_while_the_firmware_runs_the_old_one_waits_only_for_a_reset():
    cx5 = device("mlxconfig_q_cx5_default_current_next_asterisk_elided.txt")
    wanted = w.desired([], None, {"ADVANCED_PCI_SETTINGS": True})
    assert f.plan(cx5, wanted)["changes"] == [] and f.plan(cx5, wanted)["pending"] == []   # current and next both True(1)
    waiting = dict(cx5, settings=dict(cx5["settings"], ADVANCED_PCI_SETTINGS=dict(
        cx5["settings"]["ADVANCED_PCI_SETTINGS"], current=mlxconfig.value("False(0)"))))
    planned = f.plan(waiting, wanted)
    assert planned["changes"] == [] and planned["argv"] is None and planned["reset_needed"]
    assert planned["pending"] == [{"setting": "ADVANCED_PCI_SETTINGS", "now": "False(0)", "wanted": "1"}]
    assert "ADVANCED_PCI_SETTINGS False(0) -> 1 at the next firmware reset (set already)" in f.diff_text([planned])


@pytest.mark.parametrize("given, message", [
    ({"profiles": ["roce_lossless"], "tool": "flint"}, "tool must be mlxconfig or mstconfig"),
    ({"profiles": ["sriov"], "devices": ["3b:00.0 ; reboot"]}, "devices must be PCI addresses"),
    ({"profiles": []}, "names no profile and no setting"),
    ({"profile": ["sriov"]}, "unknown key(s) profile"),
    (["sriov"], "must be a mapping"),
])
def test_the_checks_firmware_option_is_refused_naming_what_is_wrong(given, message):
    with pytest.raises(w.FirmwareError, match=message.replace("(", r"\(").replace(")", r"\)")):
        w.check_options(given)
