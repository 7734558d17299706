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

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Nothing from the development machine may reach users: venvs, build trees and the linked
# collection path, Molecule state, caches, VCS metadata, test output, nested tarballs.
FORBIDDEN_TOP = {".venv", "build", "dist", ".git", ".ci", ".cache", ".ansible", ".whl", "vendor-src", "gpufabric-report"}
FORBIDDEN_ANYWHERE = {".molecule", "__pycache__", ".pytest_cache"}


def _galaxy():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        ["ansible-galaxy", "collection", "build", "--output-path", str(out), ROOT],
        check=True, capture_output=True, text=True,
    )
    meta = _galaxy()
    path = out / ("%s-%s-%s.tar.gz" % (meta["namespace"], meta["name"], meta["version"]))
    assert path.is_file()
    return path


def test_tarball_holds_no_workshop_files(tarball):
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    offenders = [
        n for n in names
        if n.split("/")[0] in FORBIDDEN_TOP
        or FORBIDDEN_ANYWHERE & set(n.split("/"))
        or n.startswith("tests/output")
        or n.endswith((".tar.gz", ".pyc"))
    ]
    assert offenders == []


def test_tarball_holds_the_collection(tarball):
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    for required in ("MANIFEST.json", "FILES.json", "README.md", "meta/runtime.yml",
                     "plugins/module_utils/report.py", "plugins/filter/fabric.py",
                     "plugins/modules/rdma_devices.py", "plugins/modules/gpu_facts.py", "plugins/modules/nccl_env.py",
                     "roles/discovery/meta/argument_specs.yml", "playbooks/site.yml"):
        assert required in names, required
    info = manifest["collection_info"]
    assert (info["namespace"], info["name"]) == ("gpufabric", "rdma")
    assert info["dependencies"] == _galaxy()["dependencies"]


def test_installs_into_a_clean_path_and_documents_itself(tarball, tmp_path):
    dest = tmp_path / "collections"
    # --no-deps: the dependencies come from Galaxy, which CI cannot reach; the ansible
    # package provides them here.
    subprocess.run(
        ["ansible-galaxy", "collection", "install", "--no-deps", "--force", "-p", str(dest), str(tarball)],
        check=True, capture_output=True, text=True, env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(dest)),
    )
    installed = dest / "ansible_collections" / "gpufabric" / "rdma"
    assert (installed / "MANIFEST.json").is_file()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(dest))
    env.pop("ANSIBLE_CONFIG", None)
    listed = subprocess.run(
        ["ansible-doc", "-t", "filter", "-l", "gpufabric.rdma", "--json"],
        check=True, capture_output=True, text=True, env=env, cwd=str(tmp_path),
    )
    # Every filter, module and role of the checkout is documented and listed by the installed collection.
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    filters = {"gpufabric.rdma." + name[:-4] for name in os.listdir(os.path.join(here, "plugins", "filter"))
               if name.endswith(".yml")}
    assert filters and set(json.loads(listed.stdout)) == filters
    modules = subprocess.run(
        ["ansible-doc", "-t", "module", "-l", "gpufabric.rdma", "--json"],
        check=True, capture_output=True, text=True, env=env, cwd=str(tmp_path),
    )
    assert set(json.loads(modules.stdout)) == {"gpufabric.rdma." + name[:-3] for name in
                                               os.listdir(os.path.join(here, "plugins", "modules"))
                                               if name.endswith(".py") and not name.startswith("_")}
    roles = subprocess.run(
        ["ansible-doc", "-t", "role", "-l", "gpufabric.rdma", "--json"],
        check=True, capture_output=True, text=True, env=env, cwd=str(tmp_path),
    )
    assert set(json.loads(roles.stdout)) == {"gpufabric.rdma." + name for name in os.listdir(os.path.join(here, "roles"))}
