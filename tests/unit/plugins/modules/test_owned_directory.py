"""owned_directory: a role creates, chmods and deletes only a directory it made. The state file in
/var/lib or /tmp (the issue's two cases) is refused, and an existing directory the role did not create
is never chmodded on install nor deleted on removal."""

import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.modules import owned_directory
from moduletest import run_module


@pytest.mark.parametrize("path", ["/var/lib", "/tmp", "/", "/usr/local", "/var/lib/", "/var/tmp"])
def test_system_directories_are_refused_and_left_as_they_are(path):
    before = os.stat(path.rstrip("/") or "/").st_mode
    result = run_module(owned_directory, {"path": path, "owner": "health_monitor", "mode": "0700"})
    assert result["failed"] and "system directory" in result["msg"]
    assert "/var/lib/gpufabric-health-monitor" in result["msg"]
    result = run_module(owned_directory, {"path": path, "owner": "health_monitor", "state": "absent"})
    assert result["failed"] and os.path.isdir(path) and os.stat(path.rstrip("/") or "/").st_mode == before


def test_an_existing_directory_it_did_not_create_is_refused_not_chmodded(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    (theirs / "data").write_text("keep")
    result = run_module(owned_directory, {"path": str(theirs), "owner": "health_monitor", "mode": "0700"})
    assert result["failed"]
    assert result["msg"].startswith("%s exists and was not created by health_monitor (it has no .gpufabric-owner "
                                    "marker)" % theirs)
    assert oct(theirs.stat().st_mode & 0o777) == "0o755"
    result = run_module(owned_directory, {"path": str(theirs), "owner": "health_monitor", "state": "absent"})
    assert not result["changed"] and (theirs / "data").read_text() == "keep"
    assert result["warnings"] == ["%s was not created by health_monitor (it has no .gpufabric-owner marker): "
                                  "left as it is" % theirs]


def test_create_chmod_and_remove_what_it_made_with_check_mode_and_diff(tmp_path):
    path = tmp_path / "gpufabric-health-monitor"
    args = {"path": str(path), "owner": "health_monitor", "mode": "0700"}
    result = run_module(owned_directory, args, check_mode=True, diff=True)
    assert result["changed"] and not path.exists()
    assert result["diff"]["after"] == {"path": str(path), "state": "directory", "mode": "0700", "owner": "health_monitor"}
    assert run_module(owned_directory, args)["changed"]
    assert (path / ".gpufabric-owner").read_text() == "health_monitor\n" and oct(path.stat().st_mode & 0o777) == "0o700"
    assert not run_module(owned_directory, args)["changed"]  # idempotent
    path.chmod(0o755)
    assert run_module(owned_directory, args)["changed"] and oct(path.stat().st_mode & 0o777) == "0o700"
    # Another role's directory is not this one's.
    other = run_module(owned_directory, dict(args, owner="remediator"))
    assert other["failed"] and "its marker names health_monitor" in other["msg"]
    (path / "state.json").write_text("{}")
    assert run_module(owned_directory, dict(args, state="absent"), check_mode=True)["changed"] and path.exists()
    assert run_module(owned_directory, dict(args, state="absent"))["changed"] and not path.exists()
    assert not run_module(owned_directory, dict(args, state="absent"))["changed"]


def test_a_shared_parent_is_created_when_missing_and_otherwise_left_alone(tmp_path):
    shared = tmp_path / "gpufabric"
    shared.mkdir(mode=0o750)
    (shared / "facts.json").write_text("{}")
    args = {"path": str(shared), "owner": "health_monitor", "mode": "0755", "shared": True}
    assert not run_module(owned_directory, args)["changed"] and oct(shared.stat().st_mode & 0o777) == "0o750"
    assert not run_module(owned_directory, dict(args, state="absent"))["changed"] and shared.exists()
    fresh = tmp_path / "fresh"
    assert run_module(owned_directory, dict(args, path=str(fresh)))["changed"]
    (fresh / "other-role.json").write_text("{}")
    assert not run_module(owned_directory, dict(args, path=str(fresh), state="absent"))["changed"] and fresh.exists()
    (fresh / "other-role.json").unlink()
    assert run_module(owned_directory, dict(args, path=str(fresh), state="absent"))["changed"] and not fresh.exists()


def test_bad_input_names_the_value(tmp_path):
    result = run_module(owned_directory, {"path": str(tmp_path / "x"), "owner": "h", "mode": "rwx"})
    assert result["failed"] and result["msg"] == "mode must be an octal string such as 0700, got 'rwx'"
    result = run_module(owned_directory, {"path": str(tmp_path / "a" / ".." / "b"), "owner": "h"})
    assert result["failed"] and "is not a normalised path" in result["msg"]
    afile = tmp_path / "afile"
    afile.write_text("")
    result = run_module(owned_directory, {"path": str(afile), "owner": "h"})
    assert result["failed"] and "exists and is not a directory" in result["msg"]
