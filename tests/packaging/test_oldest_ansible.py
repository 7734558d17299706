"""meta/runtime.yml promises ansible-core 2.16 and newer; everything else in make test runs on the
pinned 2.19. Here the tarball is installed under the oldest promised release (a venv of its own,
tests/packaging/requirements-oldest.txt): ansible-doc lists every plugin and role, every playbook
passes --syntax-check with an example inventory, and discover runs on this machine."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REQUIREMENTS = os.path.join(os.path.dirname(__file__), "requirements-oldest.txt")


@pytest.fixture(scope="module")
def oldest(tarball, tmp_path_factory):
    base = tmp_path_factory.mktemp("oldest")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", REQUIREMENTS], check=True,
                   capture_output=True, text=True)
    collections = base / "collections"
    env = dict(os.environ, PATH="%s:%s" % (venv / "bin", os.environ["PATH"]), ANSIBLE_COLLECTIONS_PATH=str(collections),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    env.pop("ANSIBLE_CONFIG", None)
    subprocess.run(["ansible-galaxy", "collection", "install", "--no-deps", "-p", str(collections), str(tarball)],
                   check=True, capture_output=True, text=True, env=env)
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
    for kind, directory, suffix in (("module", "modules", ".py"), ("filter", "filter", ".yml")):
        listed = _run(["ansible-doc", "-t", kind, "-l", "gpufabric.rdma", "--json"], env, base)
        assert listed.returncode == 0, listed.stderr
        expected = {"gpufabric.rdma." + n[:-len(suffix)] for n in os.listdir(os.path.join(ROOT, "plugins", directory))
                    if n.endswith(suffix) and not n.startswith("_")}
        assert set(json.loads(listed.stdout)) == expected
    roles = _run(["ansible-doc", "-t", "role", "-l", "gpufabric.rdma", "--json"], env, base)
    assert set(json.loads(roles.stdout)) == {"gpufabric.rdma." + r for r in os.listdir(os.path.join(ROOT, "roles"))}


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
    env = oldest[0]
    run = _run(["ansible-playbook", "gpufabric.rdma.discover", "-e", "ansible_become=false",
                "-e", "discovery_facts_dir=%s" % (tmp_path / "facts"), "-e", "report_dir=%s" % (tmp_path / "report")],
               env, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert list(json.loads((tmp_path / "report" / "readiness.json").read_text())["nodes"]) == ["localhost"]
