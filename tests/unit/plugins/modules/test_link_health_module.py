"""The link_health module (discovery's reading of each HCA port) with an mlxlink that replays real public captures
(tests/unit/fixtures/mlxlink), and readiness judging what discovery keeps of it."""
import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import readiness
from ansible_collections.gpufabric.rdma.plugins.modules import link_health
from moduletest import run_module
from paths import fixture_path

FIXTURES = fixture_path("mlxlink")


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
    # The capture is of mlxlink without -c: asked for its counters, it gave no BER, so each port is also unread
    # (issue 53: a link whose BER nobody read is not healthy).
    assert [(f["check"], f["target"]) for f in result["findings"]] == [
        ("link_recommendation", "gpu07/mlx5_0/1"), ("link_unread", "gpu07/mlx5_0/1"),
        ("link_recommendation", "gpu07/mlx5_1/1"), ("link_unread", "gpu07/mlx5_1/1")]
    assert [link["speed"] for link in result["links"]] == ["IB-SDR", "IB-SDR"] and result["not_run"] is None
    assert result["unread"] == ["mlxlink mlx5_%d/1: mlxlink printed no BER (no Effective or Raw Physical BER line) though "
                                "its counters were asked for" % i for i in (0, 1)]
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
    assert missing["not_run"] == "%s is not installed: no link was read" % (tmp_path / "no" / "mlxlink")
    refused = run_module(link_health, {"link_health": {"port": 3}})
    assert refused["failed"] is True and refused["refused"] is True
    assert refused["msg"].startswith("link_health port must be 1, got 3: ")
    record = {"link_health": {"findings": [], "links": [], "error": refused["msg"]}}
    (unread,) = [f for f in readiness.node_findings("gpu07", record) if f["check"].startswith("link_")]
    assert unread["check"] == "link_unread" and refused["msg"] in unread["detail"]


def test_a_node_without_an_nvidia_hca_is_not_run_and_readiness_says_so(tmp_path):
    """Issue 52: no mlx4_/mlx5_ device in sysfs (and none named) used to give empty lists and a READY readiness with no
    finding; it is "not run", with its own message, a finding for the node, and an incomplete reading."""
    (tmp_path / "class" / "infiniband").mkdir(parents=True)
    result = run_module(link_health, {"link_health": True, "node_name": "cpu01", "sysfs_root": str(tmp_path)})
    assert result.get("failed") is not True, result
    why = "no NVIDIA HCA (an mlx4_ or mlx5_ RDMA device) on this node: no link was read"
    assert result["not_run"] == why and result["links"] == []
    assert [(f["check"], f["target"], f["detail"]) for f in result["findings"]] == [("link_unread", "cpu01", "not run: " + why)]
    assert result["unread"] == ["mlxlink: " + why]
    record = {"link_health": {"findings": result["findings"], "links": [], "not_run": why, "error": None}}
    report = readiness.build_report({"cpu01": record})
    assert [(f["check"], f["detail"]) for f in report["nodes"]["cpu01"]["findings"]] == [("link_unread", "not run: " + why)]
    assert "not run: " + why in readiness.render_text(report)
