"""A user's clone is all there is: nothing in it may reach outside the checkout (issue 52, point 1).

This project's CI lays a `shared/` folder beside the checkout; a contributor's clone has none, and seven tests that
read `../shared/fixtures` failed `make test`, the README's second command, for everyone else. A capture a test needs
is copied into tests/unit/fixtures with its source; a path on a developer's machine (/work/...) is no place a reader
can follow either. The unit stage also runs this file from a copy of the tracked files alone (tests/run-stages.sh),
so a test that reads a file the clone does not have fails there even when this scan misses how it names it."""

import os
import re
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# `../shared` or `../../shared` and so on, unless it is a folder of the checkout (resolved against the file's folder:
# molecule/<scenario>/ names molecule/shared); os.path.join(..., "..", "shared"); the folder's contents as CI lays
# them (shared/fixtures, shared/seeds); and the developer machine's tree.
RELATIVE = re.compile(r"((?:\.\./)+)shared\b")
OUTSIDE = re.compile(r"""["']\.\.["']\s*,\s*["']shared["']|(?<![\w.-])shared/(?:fixtures|seeds|hooks)\b|(?<![\w.])/work/""")


def tracked_files(root=ROOT):
    """The files a clone has: git's list where there is a repository, else every file but the ignored folders."""
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True, timeout=60).stdout
        return [name for name in listed.decode("utf-8", "replace").split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        found = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in (".git", ".venv", "build", "vendor-src", ".pytest_cache", "__pycache__")]
            found += [os.path.relpath(os.path.join(folder, name), root) for name in files]
        return found


def outside_references(name, text, root=ROOT):
    """(line number, what it names) for each path in ``text`` (the file ``name``, relative to ``root``) that leaves
    the checkout."""
    found = []
    folder = os.path.dirname(os.path.join(root, name))
    for number, line in enumerate(text.splitlines(), 1):
        for match in RELATIVE.finditer(line):
            target = os.path.normpath(os.path.join(folder, match.group(1), "shared"))
            if os.path.relpath(target, root).startswith("..") or not os.path.isdir(target):
                found.append((number, match.group(0)))
        found += [(number, match.group(0)) for match in OUTSIDE.finditer(line)]
    return found


def test_the_scan_finds_what_a_clone_does_not_have():
    assert outside_references("tests/unit/x.py", 'os.path.join(ROOT, "..", "shared")\nopen("../../../shared/fixtures/a")') \
        == [(1, '"..", "shared"'), (2, "../../../shared"), (2, "shared/fixtures")]
    assert outside_references("docs/a.md", "see `../shared/fixtures/h200x8/ar_g8.txt`") == [(1, "../shared"), (1, "shared/fixtures")]
    assert outside_references("docs/a.md", "included: /work/main/playbooks/x.yml") == [(1, "/work/")]
    # molecule/<scenario>/prepare.yml importing ../shared/slurm_cluster.yml stays inside the checkout
    assert outside_references("molecule/validate_slurm_jobs/prepare.yml", "import_playbook: ../shared/slurm_cluster.yml") == []
    assert outside_references("docs/a.md", "a shared/ folder, gpufabric/work/x, ./work/") == []


def test_no_tracked_file_names_a_path_outside_the_checkout():
    problems = []
    for name in tracked_files():
        path = os.path.join(ROOT, name)
        if name == "tests/unit/test_self_contained.py" or not os.path.isfile(path):
            continue
        with open(path, "rb") as handle:
            data = handle.read()
        if b"\0" in data[:8192]:
            continue
        problems += ["%s:%d: %s" % (name, number, what) for number, what in outside_references(name, data.decode("utf-8", "replace"))]
    assert not problems, "paths a clone does not have (copy what is needed into the checkout):\n" + "\n".join(problems)


@pytest.mark.skipif(not os.environ.get("GPUFABRIC_CLONE_CHECK"), reason="the unit stage sets GPUFABRIC_CLONE_CHECK in its copy")
def test_this_run_has_no_shared_folder_beside_it():
    """Where the unit stage runs the suite from a copy of the tracked files, that copy has no shared/ beside it:
    the run proves the suite passes without one."""
    assert not os.path.exists(os.path.join(ROOT, "..", "shared")), os.path.join(ROOT, "..", "shared")
