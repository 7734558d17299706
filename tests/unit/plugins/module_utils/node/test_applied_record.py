"""The pure parts of the applied records (module_utils node/applied, node/statefile, node/files): what a record must be
before it is trusted, and reads that never block, never follow a state file's link and never run past a bound.

A record is trusted only when it is the shape its phase writes: the evidence the phase declares it must observe, an
observation for every item it names, and only the facts the phase publishes, with their types. A state file that is
a link, a FIFO, a device or a directory, or larger than its bound, is refused with the reason and the path."""

import contextlib
import hashlib
import os
import signal

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import applied, files, statefile

FP = "1" * 64
MPI = {"name": "mpi", "fingerprint": FP, "observes": ["files"], "publishes": {"openmpi_mpirun": "path", "openmpi_home": "path"}}


class Blocked(Exception):
    """Not an OSError: the code under test must not take it for a read that failed."""


@contextlib.contextmanager
def deadline(seconds=5):
    """A read that blocks (a FIFO opened without O_NONBLOCK) fails the test instead of hanging it."""
    def expired(signum, frame):
        raise Blocked("blocked for %d s" % seconds)
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _record(**change):
    record = {"fingerprint": FP, "evidence": {"files": ["/usr/bin/mpirun"]}, "recorded_at": "2026-12-01T00:00:00Z",
              "observed": {"files": {"/usr/bin/mpirun": "sha256:ab mode:755"}},
              "facts": {"openmpi_mpirun": "/usr/bin/mpirun", "openmpi_home": "/usr"}}
    record.update(change)
    return record


def test_a_record_of_its_phase_is_trusted_and_gives_back_what_it_publishes():
    phase = applied.check_phase(MPI)
    assert applied.check_record(_record(), phase) == _record()
    assert applied.published(_record(), phase) == {"openmpi_mpirun": "/usr/bin/mpirun", "openmpi_home": "/usr"}
    # A phase that publishes nothing gets nothing back, whatever the record holds.
    assert applied.published(_record(), applied.check_phase(dict(MPI, publishes={}))) == {}


@pytest.mark.parametrize("record, message", [
    (_record(facts={"inventory_hostname": "node9"}), "fact inventory_hostname is not one phase mpi publishes"),
    (_record(facts={"gpufabric_report_root": "/tmp"}), "fact gpufabric_report_root is not one phase mpi publishes"),
    (_record(facts={"openmpi_mpirun": ["/usr/bin/mpirun"]}), "fact openmpi_mpirun must be a path, got ['/usr/bin/mpirun']"),
    (_record(facts={"openmpi_home": "usr"}), "fact openmpi_home must be a path, got 'usr'"),
    (_record(facts=["openmpi_home"]), "facts must be a dict"),
    (_record(evidence={}, observed={}), "it observes no files, which phase mpi must observe"),
    (_record(evidence={"files": []}, observed={"files": {}}), "it observes no files, which phase mpi must observe"),
    (_record(observed={}), "file /usr/bin/mpirun is named in its evidence but was not observed"),
    (_record(observed={"files": {"/usr/bin/mpirun": "x", "/etc/x": "absent"}}),
     "file /etc/x was observed but is not named in its evidence"),
    (_record(observed={"files": {"/usr/bin/mpirun": 1}}), "observation of file /usr/bin/mpirun must be text"),
    (_record(evidence={"files": ["/dev/x"], "sockets": ["/run/x"]}), "evidence must be a dict of files, links"),
    (_record(evidence={"packages": ["-q"]}, observed={"packages": {"-q": "absent"}}), "packages entry '-q' must be a name"),
    (_record(fingerprint=None), "fingerprint must be 64 hex digits"),
    ([], "it is a list, not a dict"),
])
def test_a_record_of_another_shape_is_refused_naming_what_is_wrong(record, message):
    with pytest.raises(ValueError) as raised:
        applied.check_record(record, applied.check_phase(MPI))
    assert message in str(raised.value)


def test_what_must_be_observed_is_the_phases_declaration():
    bare = applied.check_phase({"name": "nccl_env", "fingerprint": FP})  # nothing declared: something must be observed
    with pytest.raises(ValueError, match="it observes nothing"):
        applied.check_record(_record(evidence={}, observed={}, facts={}), bare)
    allowed = applied.check_phase({"name": "network", "fingerprint": FP, "observes": []})
    assert applied.check_record(_record(evidence={}, observed={}, facts={}), allowed)["evidence"] == {}
    assert applied.missing_observation(allowed, {}) is None
    assert applied.missing_observation(applied.check_phase(MPI), {"links": ["/x"]}) == (
        "it observes no files, which phase mpi must observe")
    for phase, message in ((dict(MPI, observes=["sockets"]), "observes 'sockets' must be kinds of evidence"),
                           (dict(MPI, publishes={"omit": "str"}), "omit is a name Ansible owns"),
                           (dict(MPI, publishes={"ansible_user": "str"}), "ansible_user is a name Ansible owns"),
                           (dict(MPI, publishes={"x": "pathname"}), "type 'pathname' must be one of bool, dict, int")):
        with pytest.raises(ValueError, match=message):
            applied.check_phase(phase)


def test_a_fact_is_checked_against_its_declared_type():
    for kind, good, bad in (("str", "x", 1), ("path", "/opt/openmpi", "opt/openmpi"), ("int", 3, True),
                            ("bool", False, "false"), ("list", [1], {"a": 1}), ("dict", {"a": 1}, [1])):
        assert applied.fact_problem(good, kind) is None
        assert applied.fact_problem(bad, kind) == "must be a%s %s, got %r" % ("n" if kind == "int" else "", kind, bad)
    assert applied.fact_problem("/opt/x\n/etc/y", "path") is not None


def test_evidence_is_read_bounded_and_never_from_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    regular = tmp_path / "mpirun"
    regular.write_bytes(b"#!/bin/sh\n")
    link = tmp_path / "mpirun-link"
    os.symlink(str(regular), str(link))
    with deadline():
        assert applied.observe({"files": [str(fifo), str(tmp_path), str(link)]}, runner=None)["files"] == {
            str(fifo): "unknown (it is a FIFO, not a regular file)",
            str(tmp_path): "unknown (it is a directory, not a regular file)",
            # Evidence follows links (mpirun is one, through /etc/alternatives): the file it names is observed.
            str(link): "sha256:%s mode:%o" % (hashlib.sha256(b"#!/bin/sh\n").hexdigest(),
                                              os.stat(str(regular)).st_mode & 0o7777)}


def test_files_reads_refuse_fifos_devices_links_and_what_is_too_large(tmp_path):
    fifo, big, text = tmp_path / "fifo", tmp_path / "big", tmp_path / "text"
    os.mkfifo(str(fifo))
    with open(str(big), "wb") as handle:
        handle.truncate(files.MAX_READ + 1)
    text.write_bytes(b"a\r\nb\rc\n\xff")
    os.symlink(str(text), str(tmp_path / "link"))
    with deadline():
        assert files.read_text(str(fifo)) is None and files.read_attr(str(fifo)) is None
        assert files.read_text("/dev/zero") is None and files.read_text(str(big)) is None
        assert files.read_text(os.devnull) == ""   # the one device read, as empty: kernel_log: /dev/null
        # Text as open() in text mode gave it: newlines translated, bytes that are not UTF-8 replaced; links followed.
        assert files.read_text(str(text)) == files.read_text(str(tmp_path / "link")) == "a\nb\nc\n\ufffd"
        for path, follow, why in ((fifo, True, "it is a FIFO, not a regular file"),
                                  ("/dev/zero", True, "it is a character device, not a regular file"),
                                  (tmp_path, True, "it is a directory, not a regular file"),
                                  (tmp_path / "link", False, "it is a symbolic link (to %s)" % text)):
            with pytest.raises(files.Refused, match=why.replace("(", r"\(").replace(")", r"\)")):
                files.read_bytes(str(path), follow=follow)
        with pytest.raises(files.Refused, match="it is larger than 4 bytes"):
            files.read_bytes(str(text), limit=4)
        assert files.read_bytes(str(text), limit=9, follow=False) == b"a\r\nb\rc\n\xff"
        with pytest.raises(OSError):
            files.read_bytes(str(tmp_path / "absent"))


def test_state_files_are_read_without_following_links_or_blocking(tmp_path):
    fifo, link, good, big = (tmp_path / name for name in ("state.json", "linked.json", "good.json", "big.json"))
    os.mkfifo(str(fifo))
    good.write_text('{"a": 1}')
    os.symlink(str(good), str(link))
    big.write_text('{"a": "%s"}' % ("x" * 100))
    with deadline():
        assert statefile.read_json(str(good)) == {"a": 1} and statefile.read_json(str(tmp_path / "absent")) is None
        for path, why in ((fifo, "it is a FIFO"), (link, "it is a symbolic link"), (tmp_path, "it is a directory")):
            with pytest.raises(statefile.Damaged, match=why):
                statefile.read_json(str(path))
        with pytest.raises(statefile.Damaged, match="it is larger than 64 bytes"):
            statefile.read_json(str(big), limit=64)
        with pytest.raises(statefile.Damaged, match="not a state file of ours"):
            statefile.read_json(str(good), check=lambda data: data["b"])
        # load_json (the health monitor's, the decider's state) sets such a file aside, as it does a damaged one.
        data, warning = statefile.load_json(str(fifo))
        assert data is None and "could not be used (it is a FIFO, not a regular file); set aside as" in warning
        assert not os.path.lexists(str(fifo))
        data, warning = statefile.load_json(str(link), set_aside=False)
        assert data is None and "it would be set aside" in warning and os.path.islink(str(link))
        # A marker that is not a file is no marker; the directory is not taken as anybody's.
        os.mkfifo(str(tmp_path / ".gpufabric-owner"))
        assert statefile.owner_of(str(tmp_path)) == ""
