"""parse/mlxconfig.py on real public mlxconfig and mstconfig outputs (tests/unit/fixtures/mlxconfig, each cited in the
fixtures README): q and set, the older narrow and the newer wide layout, Next Boot only and Default/Current/Next Boot,
the '*' mark, applied or not, and the tool's errors."""
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import mlxconfig as m
from ansible_collections.gpufabric.rdma.plugins.filter.parsers import FilterModule
from ansible.errors import AnsibleFilterError
from paths import fixture_path

FIXTURES = fixture_path("mlxconfig")
parse_filter = FilterModule().filters()["parse_mlxconfig"]


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return m.parse_mlxconfig(handle.read())


def test_a_whole_mstconfig_query_of_a_connectx4_lx():
    (dev,) = read("mstconfig_q_cx4lx_nextboot_only.txt")["devices"]
    assert (dev["device_type"], dev["name"], dev["description"], dev["device"]) == ("ConnectX4LX", None, None, "01:00.1")
    assert dev["columns"] == ["next_boot"] and len(dev["settings"]) == 115 and dev["unparsed"] == []
    assert dev["settings"]["SRIOV_EN"]["next_boot"] == {"text": "True(1)", "label": "True", "number": 1}
    assert dev["settings"]["NUM_OF_VFS"]["next_boot"]["number"] == 8
    assert dev["settings"]["MEMIC_SIZE_LIMIT"]["next_boot"]["label"] == "_256KB"
    assert "CNP_DSCP_P1" in dev["settings"] and "ROCE_CC_PRIO_MASK_P1" in dev["settings"]
    assert dev["applied"] is None and dev["changed"] == []


def test_default_current_next_boot_and_the_changed_mark():
    (dev,) = read("mlxconfig_q_cx5_default_current_next_asterisk_elided.txt")["devices"]
    assert dev["columns"] == ["default", "current", "next_boot"] and dev["name"] == "MCX515A-CCA_Ax_Bx"
    assert dev["device"] == "/dev/mst/mt4119_pciconf0"
    pci = dev["settings"]["ADVANCED_PCI_SETTINGS"]
    assert pci["changed"] and (pci["default"]["number"], pci["current"]["number"], pci["next_boot"]["number"]) == (0, 1, 1)
    assert dev["changed"] == ["ADVANCED_PCI_SETTINGS"] and dev["unparsed"] == []   # the author's '...' lines are skipped


@pytest.mark.parametrize("name, device, settings, new", [
    ("mlxconfig_set_boot_opts_cx6_newfmt.txt", "c2:00.0", 4, ("BOOT_UNDI_NETWORK_WAIT", 30)),
    ("mlxconfig_set_num_of_vfs_cx7_mft4.30.txt", None, 1, ("NUM_OF_VFS", 127)),
    ("mstconfig_set_sriov_cx5.txt", "0000:02:00.0", 2, ("SRIOV_EN", 1)),
    ("mlxconfig_set_link_type_dualport_cx4.txt", None, 2, ("LINK_TYPE_P2", 2)),
    ("mlxconfig_set_link_type_cx4_yes_flag.txt", "0000:04:00.0", 1, ("LINK_TYPE_P1", 1)),
])
def test_a_set_that_applied(name, device, settings, new):
    (dev,) = read(name)["devices"]
    assert dev["columns"] == ["next_boot", "new"] and dev["applied"] is True and dev["reboot_needed"] is True
    assert len(dev["settings"]) == settings and dev["unparsed"] == [] and dev["errors"] == []
    assert dev["settings"][new[0]]["new"]["number"] == new[1]
    assert m.effective(dev["settings"][new[0]])["number"] == new[1]
    if device:
        assert dev["device"] == device


def test_a_set_the_tool_refused_is_not_applied_and_says_why():
    (dev,) = read("mlxconfig_set_error_unknown_param_cx6dx.txt")["devices"]
    assert dev["applied"] is False and dev["errors"] == ["Unknown Parameter: PROG_PARSE_GRAPH"]
    assert dev["device_type"] == "ConnectX6DX" and dev["device"] == "mlx5_0"


@pytest.mark.parametrize("name, where, errors", [
    ("mstconfig_q_errors_open_identify_cx5.txt", "tool_errors", ["Failed to open the device", "Failed to identify the device"]),
    ("mstconfig_q_error_failed_open_permission_denied.txt", "tool_errors", ["Failed to open the device"]),
    ("mlxconfig_q_error_failed_query_cx3.txt", "device", ["Failed to query device current configuration"]),
])
def test_the_tools_errors_are_kept_in_its_words(name, where, errors):
    parsed = read(name)
    got = parsed["tool_errors"] if where == "tool_errors" else parsed["devices"][0]["errors"]
    assert got == errors


def test_an_old_connectx3_query_cut_short():
    (dev,) = read("mlxconfig_q_cx3_oldfmt_partial.txt")["devices"]
    assert dev["device_type"] == "ConnectX3" and dev["name"] is None
    assert dev["settings"]["LEGACY_BOOT_PROTOCOL_P1"]["next_boot"] == {"text": "None(0)", "label": "None", "number": 0}


def test_crlf_colour_and_a_row_that_does_not_fit_are_read_or_set_aside():
    text = ("Device #1:\r\n----------\r\n\r\nDevice type:    ConnectX7\r\nDevice:         05:00.0\r\n\r\n"
            "Configurations:                              Next Boot\r\n\x1b[1m         SRIOV_EN   True(1)\x1b[0m\r\n"
            "         LINK_TYPE_P1   ETH(2) IB(1)\r\n")
    (dev,) = m.parse_mlxconfig(text)["devices"]
    assert dev["settings"]["SRIOV_EN"]["next_boot"]["number"] == 1
    assert dev["unparsed"] == ["LINK_TYPE_P1   ETH(2) IB(1)"]


def test_matches_reads_a_profiles_value_as_a_person_writes_it():
    true = m.value("True(1)")
    assert m.matches(true, True) and m.matches(true, 1) and m.matches(true, "true") and m.matches(true, "True(1)")
    assert m.matches(m.value("ETH(2)"), "ETH") and not m.matches(m.value("ETH(2)"), "IB")
    assert not m.matches(None, 1)


def test_text_that_is_not_the_tools_fails_naming_it():
    with pytest.raises(m.MlxconfigError, match="no 'Device #1:' block"):
        m.parse_mlxconfig("mlxconfig: command not found\n")
    with pytest.raises(AnsibleFilterError, match="parse_mlxconfig"):
        parse_filter(["not", "text"])
    assert parse_filter({"stdout": "-E- Failed to open the device\n"})["tool_errors"] == ["Failed to open the device"]
