"""The Slurm epilog's DCGM level 2 between jobs: the monitor runs it within the level's own time limit, reports it to
the decider as the epilog, and the decider alone drains; the wrapper always exits 0 (a failing epilog would make
slurmd drain the node itself). A stand-in dcgmi replays real public captures (tests/unit/fixtures/dcgm)."""

import json
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import monitor
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.settings import ConfigError
from decider_world import ROOT, node_monitor

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "dcgm")


@pytest.fixture
def dcgmi(tmp_path, monkeypatch):
    bindir = tmp_path / "dcgm-bin"
    bindir.mkdir()
    (bindir / "capture").mkdir()
    (bindir / "dcgmi").write_text(open(os.path.join(ROOT, "tests", "lab", "dcgmi-standin", "dcgmi")).read())
    (bindir / "dcgmi").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))

    def replay(name, status=0):
        (bindir / "capture" / "dcgm.txt").write_text(open(os.path.join(FIXTURES, name)).read())
        (bindir / "capture" / "dcgm.rc").write_text(str(status))
        return bindir / "capture" / "asked"
    return replay


def test_a_level_2_failure_in_the_epilog_drains_through_the_decider(cluster, dcgmi):
    c = cluster(["n01", "n02"])
    asked = dcgmi("dcgm4_r2_fail_pcie_b200.txt", 226)
    c.run("n01", mode="timer")   # the timer's check runs no DCGM: nothing to drain
    assert c.drained() == [] and not asked.exists()
    lines = c.run("n01", mode="epilog")
    assert asked.read_text().startswith("diag -r 2")
    assert c.drained() == ["n01"], lines
    reason = c.slurm()["n01"]["reason"]
    assert reason.startswith("gpufabric: dcgm_diag n01") and reason.endswith("; via epilog"), reason
    # The evidence bundle carries the DCGM result the epilog saw.
    sent = [l for l in lines if l.startswith("evidence n01-")]
    assert sent and "dcgm.json ok" in sent[0], lines


def test_the_epilog_wrapper_exits_0_and_a_bad_level_is_refused(tmp_path, cluster, dcgmi):
    c = cluster(["n01", "n02"])
    dcgmi("dcgm4_r2_fail_pcie_b200.txt", 226)
    config = tmp_path / "monitor.json"
    base = c.node_config("n01")
    config.write_text(json.dumps({"cluster": "lab", "host": "n01", "state_dir": base["state_dir"],
                                  "checks": {"kernel_log": base["checks"]["kernel_log"],
                                             "sysfs_root": base["checks"]["sysfs_root"]},
                                  "decider": {"url": c.url, "secret": base["decider"]["secret"]}}))
    assert node_monitor.main(["--config", str(config), "--epilog"]) == 0
    assert c.drained() == ["n01"]
    with pytest.raises(ConfigError, match="epilog_dcgm_level must be 1 or 2 .* got 3"):
        monitor.check_config({"epilog_dcgm_level": 3})
