"""rdma_devices runs show_gids where installed and cross-checks it against sysfs (the check seed 003 does by hand):
the RDMA-Tutorial listing (tests/unit/fixtures/show_gids/roce_3dev_rdmatutorial.txt, whose mlx5_0 the
sysfs/roce_mlx5 tree was made from) through the stub tool; readiness turns the mismatches into findings."""

import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import readiness
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import report
from ansible_collections.gpufabric.rdma.plugins.modules import rdma_devices
from moduletest import calls, run_module, stub_bin, stub_path
from paths import FIXTURES

SYSFS = os.path.join(FIXTURES, "sysfs", "roce_mlx5")


def test_show_gids_against_sysfs_and_into_readiness(tmp_path, monkeypatch):
    bindir = stub_path(tmp_path, monkeypatch)
    stub_bin(bindir, {"show_gids": "misbehave", "ibv_devinfo": "misbehave"})
    monkeypatch.setenv("STUB_SHOW_GIDS_MODE", "file:" + os.path.join(FIXTURES, "show_gids", "roce_3dev_rdmatutorial.txt"))
    monkeypatch.setenv("STUB_IBV_DEVINFO_MODE", "fail:1:no device")
    result = run_module(rdma_devices, {"sysfs_root": SYSFS}, check_mode=True)
    check = result["ansible_facts"]["rdma_gid_check"]
    assert ("show_gids", []) in list(calls(tmp_path / "calls.jsonl"))
    assert check["tool"] == "show_gids" and check["error"] is None
    by_target = dict((f["target"], f) for f in check["findings"])
    # mlx5_0 agrees GID for GID; the listing's mlx5_1 and mlx5_2 are not this tree's
    assert not [t for t in by_target if t.startswith("mlx5_0/")]
    assert by_target["mlx5_1/1"]["detail"] == "RoCE v2 IPv4 GID index: show_gids gives 3, rdma_devices 1"
    assert by_target["mlx5_2/1 GID 0"]["detail"] == "show_gids lists mlx5_2/1 but rdma_devices has no such port"
    assert len(check["findings"]) == 9
    facts = dict(result["ansible_facts"], hostname="n1", interfaces=[])
    record = report.node_record(facts, facts["rdma_devices"], {"present": False})
    found = [f for f in readiness.node_findings("n1", record) if f["check"].startswith("gid_")]
    assert sorted(f["target"] for f in found) == sorted("n1/" + t for t in by_target)


def test_without_show_gids_or_with_a_broken_one(tmp_path, monkeypatch):
    bindir = stub_path(tmp_path, monkeypatch)
    quiet = run_module(rdma_devices, {"sysfs_root": SYSFS, "use_verbs": False})
    assert quiet["ansible_facts"]["rdma_gid_check"] == {"tool": None, "error": None, "findings": []}
    record = report.node_record(dict(quiet["ansible_facts"], hostname="n1"), quiet["ansible_facts"]["rdma_devices"])
    assert "gid_check" not in record
    stub_bin(bindir, {"show_gids": "misbehave"})
    monkeypatch.setenv("STUB_SHOW_GIDS_MODE", "hang")
    hung = run_module(rdma_devices, {"sysfs_root": SYSFS, "command_timeout": 2})
    assert hung["ansible_facts"]["rdma_gid_check"]["error"].startswith("show_gids: ")
    assert "the GID table is not cross-checked" in hung["warnings"][-1]
