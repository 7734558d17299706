"""applied: a configuration phase is skipped only while its record and the node agree.

The record keeps the fingerprint of the phase's inputs and its evidence as observed right after it ran; a later
check observes the same evidence again. A file edited by hand, a package removed (a real dpkg status file of a
Debian 12 lab node after `apt-get remove rdma-core`), an interface whose MTU moved (read through a stub `ip` that
replays a real `ip -d -j link` capture), a changed setting or a damaged record makes the phase run, saying why;
anything unobservable counts as a difference. Check mode writes no record."""

import json
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import applied as applied_utils
from ansible_collections.gpufabric.rdma.plugins.modules import applied
from moduletest import run_module, stub_bin, stub_path

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
DPKG = os.path.join(FIXTURES, "dpkg", "status_bookworm_rdma_core_removed.txt")
FP1, FP2 = "1" * 64, "2" * 64


def _check(directory, *phases):
    return run_module(applied, {"dir": str(directory), "phases": list(phases)})


def _record(directory, phases, check_mode=False):
    return run_module(applied, {"dir": str(directory), "state": "record", "phases": phases}, check_mode=check_mode,
                      diff=True)


def test_a_phase_runs_until_recorded_then_skips_until_its_file_or_settings_change(tmp_path):
    state, conf = tmp_path / "applied", tmp_path / "nccl.conf"
    conf.write_text("NCCL_IB_HCA=mlx5\n")
    entry = {"name": "nccl_env", "fingerprint": FP1, "evidence": {"files": [str(conf)]}, "facts": {}}
    first = _check(state, {"name": "nccl_env", "fingerprint": FP1})
    assert first["run"] == {"nccl_env": "no record of it on this node"} and first["unchanged"] == []
    # Check mode: the record's diff, nothing written.
    preview = _record(state, [entry], check_mode=True)
    assert preview["changed"] and preview["recorded"] == ["nccl_env"] and not state.exists()
    assert '"fingerprint": "%s"' % FP1 in preview["diff"][0]["after"]
    assert _record(state, [entry])["changed"]
    assert (state / ".gpufabric-owner").read_text() == "applied\n"
    assert oct((state / "nccl_env.json").stat().st_mode & 0o777) == "0o600"
    assert not _record(state, [entry])["changed"]  # the same observation: the record is not rewritten
    held = _check(state, {"name": "nccl_env", "fingerprint": FP1})
    assert held["unchanged"] == ["nccl_env"] and held["run"] == {} and held["changed"] is False
    # Drift: the file edited by hand.
    conf.write_text("NCCL_IB_HCA=mlx5\nNCCL_DEBUG=INFO\n")
    drifted = _check(state, {"name": "nccl_env", "fingerprint": FP1})
    assert drifted["run"]["nccl_env"].startswith("drift since it was applied: file %s: sha256:" % conf)
    # A file removed, and a mode changed, are drift too.
    conf.unlink()
    assert drifted["unchanged"] == [] and _check(state, {"name": "nccl_env", "fingerprint": FP1})["run"]["nccl_env"] \
        .endswith("-> absent")
    # A changed setting (another fingerprint) runs it whatever the node says.
    conf.write_text("NCCL_IB_HCA=mlx5\n")
    assert _check(state, {"name": "nccl_env", "fingerprint": FP2})["run"] == {
        "nccl_env": "its settings or the collection changed since it was applied"}


def test_a_removed_package_is_drift_read_from_dpkg_status(tmp_path, monkeypatch):
    installed = applied_utils.dpkg_versions(open(DPKG).read(), ["rdma-core", "ibverbs-utils", "openmpi-bin", "nosuch"])
    # rdma-core is "deinstall ok config-files": removed, its configuration kept - not installed.
    assert installed == {"rdma-core": "absent", "ibverbs-utils": "44.0-2", "openmpi-bin": "4.1.4-3+b1", "nosuch": "absent"}
    # CRLF, a truncated last stanza: the same answers, no error.
    text = open(DPKG).read()
    assert applied_utils.dpkg_versions(text.replace("\n", "\r\n"), ["ibverbs-utils"]) == {"ibverbs-utils": "44.0-2"}
    assert applied_utils.dpkg_versions(text[: text.index("Package: rdmacm-utils") + 40], ["rdmacm-utils"]) == {
        "rdmacm-utils": "absent"}
    state = tmp_path / "applied"
    before = tmp_path / "status"
    before.write_text(text.replace("Status: deinstall ok config-files", "Status: install ok installed"))
    monkeypatch.setattr(applied_utils, "DPKG_STATUS", str(before))
    entry = {"name": "drivers", "fingerprint": FP1, "evidence": {"packages": ["rdma-core", "ibverbs-utils"]}}
    assert _record(state, [entry])["recorded"] == ["drivers"]
    assert _check(state, {"name": "drivers", "fingerprint": FP1})["unchanged"] == ["drivers"]
    monkeypatch.setattr(applied_utils, "DPKG_STATUS", DPKG)
    assert _check(state, {"name": "drivers", "fingerprint": FP1})["run"] == {
        "drivers": "drift since it was applied: package rdma-core: 44.0-2 -> absent"}


def test_what_cannot_be_observed_never_counts_as_as_applied(tmp_path, monkeypatch):
    state = tmp_path / "applied"
    monkeypatch.setattr(applied_utils, "DPKG_STATUS", str(tmp_path / "no-dpkg"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    entry = {"name": "drivers", "fingerprint": FP1, "evidence": {"packages": ["rdma-core"]}}
    _record(state, [entry])
    # The same "unknown" both times is still not a match: the phase runs and says what could not be read.
    assert _check(state, {"name": "drivers", "fingerprint": FP1})["run"] == {
        "drivers": "drift since it was applied: package rdma-core: unknown (no dpkg status, no rpm)"}
    # A damaged record is never used as a match: the phase runs and the file is left for a person (check).
    (state / "drivers.json").write_text("{not json")
    run = _check(state, {"name": "drivers", "fingerprint": FP1})["run"]["drivers"]
    assert run.startswith("its record cannot be used: ") and (state / "drivers.json").read_text() == "{not json"


def test_an_interface_read_and_planned_again_finds_a_moved_mtu(tmp_path, monkeypatch):
    """netdev evidence is rdma_netdev's own reading: the stub ip replays a real veth capture (MTU 1500)."""
    bindir = stub_path(tmp_path, monkeypatch)
    stub_bin(bindir, {"ip": "misbehave", "nmcli": "misbehave", "networkctl": "misbehave", "mlnx_qos": "misbehave",
                      "dcb": "misbehave"})
    monkeypatch.setenv("STUB_IP_MODE", "file:" + os.path.join(FIXTURES, "net", "ip_link_veth.json"))
    sysfs = tmp_path / "sys"
    (sysfs / "class" / "net" / "eth0").mkdir(parents=True)
    args = {"name": "eth0", "mtu": 1500, "persist": False, "sysfs_root": str(sysfs), "command_timeout": 10}
    state = tmp_path / "applied"
    _record(state, [{"name": "network", "fingerprint": FP1, "evidence": {"netdev": [args]}}])
    assert json.loads((state / "network.json").read_text())["observed"]["netdev"] == {"eth0": "as applied"}
    assert _check(state, {"name": "network", "fingerprint": FP1})["unchanged"] == ["network"]
    # The record says 9000 was applied; the interface now reads 1500.
    _record(state, [{"name": "network", "fingerprint": FP1, "evidence": {"netdev": [dict(args, mtu=9000)]}}])
    assert _check(state, {"name": "network", "fingerprint": FP1})["run"] == {
        "network": "drift since it was applied: interface eth0: would change: mtu 1500 -> 9000"}


def test_facts_of_a_skipped_phase_come_back_and_links_are_evidence(tmp_path):
    state, link = tmp_path / "applied", tmp_path / "ssh.service"
    os.symlink("/lib/systemd/system/ssh.service", str(link))
    entry = {"name": "mpi", "fingerprint": FP1, "evidence": {"links": [str(link)]},
             "facts": {"openmpi_mpirun": "/usr/bin/mpirun", "openmpi_home": "/usr/lib/x86_64-linux-gnu/openmpi"}}
    _record(state, [entry])
    held = _check(state, {"name": "mpi", "fingerprint": FP1})
    assert held["facts"] == entry["facts"] and held["phases"] == [{"name": "mpi", "fingerprint": FP1}]
    # A record edited by hand gives back no variable a phase could not have published.
    record = json.loads((state / "mpi.json").read_text())
    record["facts"]["ansible_become_password"] = "x"
    (state / "mpi.json").write_text(json.dumps(record))
    assert _check(state, {"name": "mpi", "fingerprint": FP1})["facts"] == entry["facts"]
    link.unlink()
    drifted = _check(state, {"name": "mpi", "fingerprint": FP1})
    assert drifted["facts"] == {} and drifted["run"]["mpi"] == (
        "drift since it was applied: link %s: /lib/systemd/system/ssh.service -> absent" % link)


@pytest.mark.parametrize("phase, message", [
    ({"name": "Net work", "fingerprint": FP1}, "phase name 'Net work' must be lowercase letters"),
    ({"name": "network", "fingerprint": "abc"}, "phase network: fingerprint 'abc' must be 64 hex digits"),
    ({"name": "network", "fingerprint": FP1, "evidence": {"files": ["etc/x"]}}, "files entry 'etc/x' must be an absolute"),
    ({"name": "network", "fingerprint": FP1, "evidence": {"files": ["/etc/x\n/etc/y"]}}, "files entry"),
    ({"name": "network", "fingerprint": FP1, "evidence": {"sockets": []}}, "evidence must be a dict of files, links"),
    ({"name": "mpi", "fingerprint": FP1, "facts": {"ansible_user": "x"}}, "facts must map variable names"),
])
def test_bad_input_is_refused_naming_it_and_nothing_is_written(tmp_path, phase, message):
    result = _record(tmp_path / "applied", [phase])
    assert result["failed"] and message in result["msg"] and not (tmp_path / "applied").exists()


def test_a_directory_that_is_not_its_own_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    result = _check(theirs, {"name": "network", "fingerprint": FP1})
    assert result["failed"] and "is not gpufabric's record of applied phases (it has no marker)" in result["msg"]
    assert _check("/var/lib", {"name": "network", "fingerprint": FP1})["msg"].startswith("dir: /var/lib is a system")
