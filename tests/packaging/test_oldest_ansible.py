"""meta/runtime.yml promises ansible-core 2.16 and newer; everything else in make test runs on the
pinned 2.19. Here the tarball is installed under the oldest promised release (a venv of its own,
tests/packaging/requirements-oldest.txt): ansible-doc lists every plugin and role, every playbook
passes --syntax-check with an example inventory, and discover runs on this machine."""

import os
import subprocess
import sys

import pytest
from installing import assert_ansible_doc_lists_everything, install, run_discover

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REQUIREMENTS = os.path.join(os.path.dirname(__file__), "requirements-oldest.txt")


@pytest.fixture(scope="module")
def oldest(tarball, tmp_path_factory):
    base = tmp_path_factory.mktemp("oldest")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", REQUIREMENTS], check=True,
                   capture_output=True, text=True)
    env = install(tarball, base / "collections", dict(os.environ, PATH="%s:%s" % (venv / "bin", os.environ["PATH"])))
    return env, base


def _run(args, env, cwd):
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=str(cwd), timeout=600, check=False)


def test_it_is_the_oldest_promised_release(oldest):
    env, base = oldest
    version = _run(["ansible", "--version"], env, base).stdout.splitlines()[0]
    with open(os.path.join(ROOT, "meta", "runtime.yml"), encoding="utf-8") as handle:
        promised = handle.read().split("requires_ansible:")[1].split("\n")[0].strip().strip("'\"").lstrip(">=")
    assert "core %s." % promised.rsplit(".", 1)[0] in version, (version, promised)


def test_ansible_doc_lists_everything(oldest):
    env, base = oldest
    assert_ansible_doc_lists_everything(env, base)


@pytest.mark.parametrize("playbook", ["site", "validate", "burnin", "health", "kubernetes"])
def test_playbooks_pass_syntax_check(oldest, playbook):
    env, base = oldest
    # The ansible package's bundled collections stand in for the declared dependencies.
    import ansible_collections  # pylint: disable=import-outside-toplevel

    bundled = next(os.path.dirname(p) for p in ansible_collections.__path__ if os.path.isdir(os.path.join(p, "kubernetes", "core")))
    env = dict(env, ANSIBLE_COLLECTIONS_PATH="%s:%s" % (env["ANSIBLE_COLLECTIONS_PATH"], bundled))
    inventory = os.path.join(ROOT, "inventories", "examples", "roce-baremetal")
    run = _run(["ansible-playbook", "--syntax-check", "-i", inventory, "gpufabric.rdma." + playbook], env, base)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_discover_runs(oldest, tmp_path):
    run_discover(oldest[0], tmp_path)
