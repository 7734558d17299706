"""`ansible-galaxy collection build` ships the collection and nothing of the workshop.

The tarball is built from this checkout, checked member by member, installed into an empty
collections path and read back with ansible-doc, as a user's `ansible-galaxy collection
install` would leave it.
"""

import json
import os
import subprocess
import tarfile

import pytest
import yaml
from installing import assert_ansible_doc_lists_everything, install, run_discover

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Nothing from the development machine may reach users: venvs, build trees and the linked
# collection path, Molecule state, caches, VCS metadata, test output, nested tarballs.
FORBIDDEN_TOP = {".venv", "build", "dist", ".git", ".ci", ".cache", ".ansible", ".whl", "vendor-src", "gpufabric-report"}
FORBIDDEN_ANYWHERE = {".molecule", "__pycache__", ".pytest_cache"}


def test_tarball_holds_no_workshop_files(tarball):
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    offenders = [
        n for n in names
        if n.split("/")[0] in FORBIDDEN_TOP
        or FORBIDDEN_ANYWHERE & set(n.split("/"))
        or n.startswith("tests/output")
        or n.endswith((".tar.gz", ".pyc"))
        or n == "playbooks/lab.yml" or n.startswith("inventories/lab")
    ]
    assert offenders == []


def test_tarball_holds_the_collection(tarball, galaxy):
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    for required in ("MANIFEST.json", "FILES.json", "README.md", "meta/runtime.yml",
                     "plugins/module_utils/common/report.py", "plugins/filter/fabric.py",
                     "plugins/modules/rdma_devices.py", "plugins/modules/gpu_facts.py", "plugins/modules/nccl_env.py",
                     "roles/discovery/meta/argument_specs.yml", "playbooks/site.yml"):
        assert required in names, required
    info = manifest["collection_info"]
    assert (info["namespace"], info["name"]) == ("gpufabric", "rdma")
    assert info["dependencies"] == galaxy["dependencies"]


@pytest.fixture(scope="module")
def installed(tarball, tmp_path_factory):
    """The tarball installed into an empty collections path, as `ansible-galaxy collection install`
    leaves it, and the environment that sees only that path."""
    dest = tmp_path_factory.mktemp("collections")
    return dest, install(tarball, dest)


def test_installs_into_a_clean_path_and_documents_itself(installed, tmp_path):
    assert_ansible_doc_lists_everything(installed[1], tmp_path)


def test_the_installed_collection_runs_discover(installed, tmp_path):
    """`ansible-playbook gpufabric.rdma.discover` from the installed tarball, on this machine
    (implicit localhost), as a user would run it first; facts and report go to temporary paths."""
    dest, env = installed
    run_discover(env, tmp_path)
    assert (tmp_path / "report" / "readiness.md").read_text().startswith("#")
    facts = json.loads((tmp_path / "facts" / "facts.json").read_text())
    assert "gpu" in facts and "rdma_devices" in facts
    # The play ran from the installed copy, not from a checkout.
    assert str(dest) in subprocess.run(
        ["ansible-galaxy", "collection", "list", "gpufabric.rdma", "--format", "json"],
        capture_output=True, text=True, env=env, check=True).stdout


def _task_keys(items):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            yield from _task_keys(item.get(key))
        yield from item


def test_the_dependencies_cover_every_collection_the_tarball_uses(tarball, galaxy):
    """Modules and lookups of other collections named in the shipped roles and playbooks, and
    imports of other collections in the shipped plugins, are all declared in galaxy.yml."""
    used = {}
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            name = member.name
            if not member.isfile():
                continue
            text = tar.extractfile(member).read().decode("utf-8", "replace")
            if name.endswith(".yml") and name.startswith(("roles/", "playbooks/")):
                data = yaml.safe_load(text)
                if isinstance(data, list):
                    for key in _task_keys(data):
                        if key.count(".") == 2:
                            used.setdefault(".".join(key.split(".")[:2]), set()).add(name)
            if name.endswith(".py"):
                for line in text.splitlines():
                    if line.lstrip().startswith(("from ansible_collections.", "import ansible_collections.")):
                        parts = line.split()[1].split(".")
                        used.setdefault("%s.%s" % (parts[1], parts[2]), set()).add(name)
    used.pop("ansible.builtin", None)
    used.pop("gpufabric.rdma", None)
    assert {"kubernetes.core", "community.general", "ansible.posix"} <= set(used)
    undeclared = set(used) - set(galaxy["dependencies"])
    assert not undeclared, dict((c, sorted(used[c])) for c in undeclared)
