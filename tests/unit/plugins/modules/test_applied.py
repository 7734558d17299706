"""applied: a configuration phase is skipped only while its record and the node agree.

The record keeps the fingerprint of the phase's inputs and its evidence as observed right after it ran; a later
check observes the same evidence again. A file edited by hand, a package removed (a real dpkg status file of a
Debian 12 lab node after `apt-get remove rdma-core`), an interface whose MTU moved (read through a stub `ip` that
replays a real `ip -d -j link` capture), a changed setting or a damaged record makes the phase run, saying why;
anything unobservable counts as a difference. Check mode writes no record."""

import json
import os
import resource
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import applied as applied_utils
from ansible_collections.gpufabric.rdma.plugins.modules import applied
from moduletest import run_module, stub_bin, stub_path
from paths import COLLECTIONS, FIXTURES, UNIT

DPKG = os.path.join(FIXTURES, "dpkg", "status_bookworm_rdma_core_removed.txt")
FP1, FP2 = "1" * 64, "2" * 64
MPI = {"name": "mpi", "fingerprint": FP1, "observes": ["files"],
       "publishes": {"openmpi_mpirun": "path", "openmpi_home": "path"}}


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
    phase = dict(MPI, observes=["links"])
    facts = {"openmpi_mpirun": "/usr/bin/mpirun", "openmpi_home": "/usr/lib/x86_64-linux-gnu/openmpi"}
    _record(state, [dict(phase, evidence={"links": [str(link)]}, facts=facts)])
    held = _check(state, phase)
    assert held["facts"] == facts and held["phases"] == [{"name": "mpi", "fingerprint": FP1, "observes": ["links"],
                                                          "publishes": MPI["publishes"]}]
    link.unlink()
    drifted = _check(state, phase)
    assert drifted["facts"] == {} and drifted["run"]["mpi"] == (
        "drift since it was applied: link %s: /lib/systemd/system/ssh.service -> absent" % link)


@pytest.mark.parametrize("phase, message", [
    ({"name": "Net work", "fingerprint": FP1}, "phase name 'Net work' must be lowercase letters"),
    ({"name": "network", "fingerprint": "abc"}, "phase network: fingerprint 'abc' must be 64 hex digits"),
    ({"name": "network", "fingerprint": FP1, "evidence": {"files": ["etc/x"]}}, "files entry 'etc/x' must be an absolute"),
    ({"name": "network", "fingerprint": FP1, "evidence": {"files": ["/etc/x\n/etc/y"]}}, "files entry"),
    ({"name": "network", "fingerprint": FP1, "evidence": {"sockets": []}}, "evidence must be a dict of files, links"),
    ({"name": "mpi", "fingerprint": FP1, "facts": {"ansible_user": "x"}}, "fact ansible_user is not one phase mpi publishes (none)"),
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


def _edit(path, change):
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


@pytest.mark.parametrize("name, value", [
    ("inventory_hostname", "node9"), ("group_names", ["gpu"]), ("hostvars", {}), ("omit", "x"),
    ("playbook_dir", "/tmp"), ("gpufabric_report_root", "/tmp/reports"), ("remediator_settings", {"dry_run": False}),
    ("openmpi_mpirun", {"path": "/usr/bin/mpirun"}), ("openmpi_home", "relative/openmpi"), ("openmpi_home", 7),
])
def test_a_record_gives_back_only_what_its_phase_publishes_with_their_types(tmp_path, name, value):
    state, mpirun = tmp_path / "applied", tmp_path / "mpirun"
    mpirun.write_text("#!/bin/sh\n")
    facts = {"openmpi_mpirun": str(mpirun), "openmpi_home": str(tmp_path)}
    assert _record(state, [dict(MPI, evidence={"files": [str(mpirun)]}, facts=facts)])["recorded"] == ["mpi"]
    assert _check(state, MPI)["facts"] == facts
    # A hand edit: a variable the play or another role owns, or a published one of another type. The record is not
    # trusted: nothing is given back and the phase runs, saying which record and why.
    _edit(state / "mpi.json", lambda record: record["facts"].update({name: value}))
    checked = _check(state, MPI)
    assert checked["facts"] == {} and checked["unchanged"] == []
    assert checked["run"]["mpi"].startswith("its record cannot be used: %s: fact %s " % (state / "mpi.json", name))


def test_a_phase_records_only_the_facts_it_declares(tmp_path):
    state = tmp_path / "applied"
    result = _record(state, [dict(MPI, evidence={"files": ["/usr/bin/mpirun"]}, facts={"gpufabric_report_root": "/x"})])
    assert result["failed"] and "fact gpufabric_report_root is not one phase mpi publishes (openmpi_home, " \
        "openmpi_mpirun)" in result["msg"] and not state.exists()
    # What a phase declares it publishes is checked too: never a variable of the play, of another type than known.
    for publishes, message in (({"inventory_hostname": "str"}, "inventory_hostname is a name Ansible owns"),
                               ({"openmpi_home": "pathname"}, "type 'pathname' must be one of")):
        result = _check(state, dict(MPI, publishes=publishes))
        assert result["failed"] and message in result["msg"], result["msg"]


def test_what_a_phase_must_observe_comes_from_the_phase_not_its_record(tmp_path):
    state, conf = tmp_path / "applied", tmp_path / "nccl.conf"
    conf.write_text("NCCL_IB_HCA=mlx5\n")
    phase = {"name": "nccl_env", "fingerprint": FP1, "observes": ["files"]}
    _record(state, [dict(phase, evidence={"files": [str(conf)]})])
    assert _check(state, phase)["unchanged"] == ["nccl_env"]
    # The record edited to observe nothing, then /etc/nccl.conf edited by hand: the phase runs.
    _edit(state / "nccl_env.json", lambda record: record.update(evidence={}, observed={}))
    conf.write_text("NCCL_IB_HCA=mlx5\nNCCL_DEBUG=INFO\n")
    assert _check(state, phase)["run"] == {"nccl_env": "its record cannot be used: %s: it observes no files, which "
                                                       "phase nccl_env must observe" % (state / "nccl_env.json")}
    # A phase that declares nothing must still observe something; one that declares it may observe nothing may.
    assert "it observes nothing" in _check(state, {"name": "nccl_env", "fingerprint": FP1})["run"]["nccl_env"]
    assert _check(state, dict(phase, observes=[]))["unchanged"] == ["nccl_env"]
    # A file named in the evidence but not in what was observed is not taken as absent-then-absent.
    _record(state, [dict(phase, evidence={"files": [str(conf)]})])
    _edit(state / "nccl_env.json", lambda record: record.update(observed={}))
    conf.unlink()
    assert _check(state, phase)["run"]["nccl_env"] == (
        "its record cannot be used: %s: file %s is named in its evidence but was not observed"
        % (state / "nccl_env.json", conf))
    # A phase that applied less than it must observe is not recorded (it runs again, saying why), nothing fails.
    recorded = _record(state, [dict(phase, name="peermem", evidence={"modules": ["nvidia_peermem"]})])
    assert recorded["recorded"] == [] and recorded["not_recorded"] == {
        "peermem": "it observes no files, which phase peermem must observe: it runs again next time"}
    assert not (state / "peermem.json").exists() and recorded["warnings"] == [
        "phase peermem is not recorded: " + recorded["not_recorded"]["peermem"]]
    # An older record of it goes too (check mode only says so): it no longer says what the phase applied.
    _record(state, [dict(phase, name="peermem", evidence={"files": [str(conf)]})])
    assert _record(state, [dict(phase, name="peermem", evidence={"modules": ["nvidia_peermem"]})], check_mode=True)[
        "changed"] and (state / "peermem.json").exists()
    assert _record(state, [dict(phase, name="peermem", evidence={"modules": ["nvidia_peermem"]})])["changed"]
    assert not (state / "peermem.json").exists()


BOUNDED = ("import json, sys\n"
           "from moduletest import run_module\n"
           "from ansible_collections.gpufabric.rdma.plugins.modules import applied\n"
           "print('RESULT ' + json.dumps(run_module(applied, json.loads(sys.argv[1]))))\n")


def _check_bounded(directory, phase, seconds=30, memory=1 << 30):
    """The check in a child process with a deadline and a memory ceiling: a record that blocks (a FIFO) or never ends
    (/dev/zero) fails the test instead of hanging it or taking the machine's memory."""
    def ceiling():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    run = subprocess.run([sys.executable, "-c", BOUNDED, json.dumps({"dir": str(directory), "phases": [phase]})],
                         capture_output=True, text=True, timeout=seconds, preexec_fn=ceiling, check=False,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([COLLECTIONS, UNIT])))
    assert "RESULT " in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    return json.loads(run.stdout.split("RESULT ", 1)[1])


@pytest.mark.parametrize("odd, why", [
    ("fifo", "it is a FIFO, not a regular file"),
    ("link to /dev/zero", "it is a symbolic link (to /dev/zero)"),
    ("link to a good record", "it is a symbolic link (to "),
    ("directory", "it is a directory, not a regular file"),
    ("too large", "it is larger than 1048576 bytes"),
])
def test_an_odd_record_is_drift_naming_its_path_never_a_hang(tmp_path, odd, why):
    state, conf = tmp_path / "applied", tmp_path / "nccl.conf"
    conf.write_text("NCCL_IB_HCA=mlx5\n")
    phase = {"name": "nccl_env", "fingerprint": FP1, "observes": ["files"]}
    _record(state, [dict(phase, evidence={"files": [str(conf)]})])
    path = state / "nccl_env.json"
    good = path.read_text()
    path.unlink()
    if odd == "fifo":
        os.mkfifo(str(path))
    elif odd == "link to /dev/zero":
        os.symlink("/dev/zero", str(path))
    elif odd == "link to a good record":
        (tmp_path / "elsewhere.json").write_text(good)
        os.symlink(str(tmp_path / "elsewhere.json"), str(path))
    elif odd == "directory":
        path.mkdir()
    else:
        path.write_text(good[:-1] + " " * (1 << 20) + "}")
    result = _check_bounded(state, phase)
    assert result["unchanged"] == [] and result["run"]["nccl_env"].startswith(
        "its record cannot be used: %s: %s" % (path, why)), result
    # The record is left for a person: a check changes nothing.
    assert os.path.lexists(str(path)) and not [p for p in os.listdir(str(state)) if ".damaged-" in p]
    # The phase's next record takes its place (a link is replaced, never written through); a directory stops it.
    again = _record(state, [dict(phase, evidence={"files": [str(conf)]})])
    if odd == "directory":
        assert again["failed"] and again["msg"].startswith("recording phase nccl_env: could not save %s: " % path)
    else:
        assert again["recorded"] == ["nccl_env"] and path.is_file() and not path.is_symlink()
        assert _check(state, phase)["unchanged"] == ["nccl_env"]
    if odd == "link to a good record":
        assert (tmp_path / "elsewhere.json").read_text() == good


@pytest.mark.parametrize("odd", ["fifo", "/dev/zero"])
def test_evidence_that_is_not_a_regular_file_is_unknown_never_a_hang(tmp_path, odd):
    state = tmp_path / "applied"
    target = str(tmp_path / "fifo") if odd == "fifo" else odd
    if odd == "fifo":
        os.mkfifo(target)
    phase = {"name": "nccl_env", "fingerprint": FP1, "observes": ["files"]}
    _record(state, [dict(phase, evidence={"files": [str(tmp_path / "x")]})])
    _edit(state / "nccl_env.json",
          lambda record: record.update(evidence={"files": [target]}, observed={"files": {target: "absent"}}))
    result = _check_bounded(state, phase)
    kind = "a FIFO" if odd == "fifo" else "a character device"
    assert result["run"] == {"nccl_env": "drift since it was applied: file %s: unknown (it is %s, not a regular file)"
                             % (target, kind)}


def test_a_marker_that_is_not_a_file_refuses_the_directory_without_a_hang(tmp_path):
    state = tmp_path / "applied"
    state.mkdir()
    os.mkfifo(str(state / ".gpufabric-owner"))
    result = _check_bounded(state, {"name": "nccl_env", "fingerprint": FP1})
    assert result["failed"] and "is not gpufabric's record of applied phases (it has no marker)" in result["msg"]
