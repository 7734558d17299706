"""The link_health module (discovery's reading of each HCA port) with an mlxlink that replays real public captures
(tests/unit/fixtures/mlxlink), and readiness judging what discovery keeps of it."""
import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import readiness
from ansible_collections.gpufabric.rdma.plugins.modules import link_health
from moduletest import run_module

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "fixtures", "mlxlink"))


def _mlxlink(tmp_path, name):
    tool = tmp_path / "mlxlink"
    tool.write_text("#!/bin/sh\necho \"$@\" >> %s/calls\ncat %s\n" % (tmp_path, os.path.join(FIXTURES, name)))
    tool.chmod(0o755)
    return str(tool)


def test_a_port_whose_firmware_advises_is_a_finding_and_readiness_shows_it(tmp_path):
    tool = _mlxlink(tmp_path, "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt")
    result = run_module(link_health, {"link_health": {"tool": tool, "devices": ["mlx5_0", "mlx5_1"]},
                                      "node_name": "gpu07", "sysfs_root": str(tmp_path)})
    assert result.get("failed") is not True, result
    assert (tmp_path / "calls").read_text() == "-d mlx5_0 -p 1 -c\n-d mlx5_1 -p 1 -c\n"
    assert [(f["check"], f["target"]) for f in result["findings"]] == [
        ("link_recommendation", "gpu07/mlx5_0/1"), ("link_recommendation", "gpu07/mlx5_1/1")]
    assert [link["speed"] for link in result["links"]] == ["IB-SDR", "IB-SDR"] and result["unread"] == []
    record = {"link_health": {"findings": result["findings"], "links": result["links"], "error": None}}
    found = [f for f in readiness.node_findings("gpu07", record) if f["check"].startswith("link_")]
    assert [(f["check"], f["target"], f["detail"]) for f in found][0] == (
        "link_recommendation", "gpu07/mlx5_0/1",
        "mlxlink recommends: Cable speed not enabled (status opcode 25, PHY FW)")


def test_a_port_not_read_is_said_and_a_bad_option_is_refused(tmp_path):
    missing = run_module(link_health, {"link_health": {"tool": str(tmp_path / "no" / "mlxlink"), "devices": ["mlx5_0"]},
                                       "node_name": "gpu07"})
    assert [f["check"] for f in missing["findings"]] == ["link_unread"]
    assert missing["unread"] == ["mlxlink mlx5_0/1: %s is not installed" % (tmp_path / "no" / "mlxlink")]
    refused = run_module(link_health, {"link_health": {"port": 3}})
    assert refused["failed"] is True and refused["msg"] == "link_health port must be 1 or 2, got 3"
    record = {"link_health": {"findings": [], "links": [], "error": refused["msg"]}}
    (unread,) = [f for f in readiness.node_findings("gpu07", record) if f["check"].startswith("link_")]
    assert unread["check"] == "link_unread" and refused["msg"] in unread["detail"]
