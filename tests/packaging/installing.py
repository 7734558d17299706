"""What every install test does with the tarball: install it into an empty collections path,
check ansible-doc's listings, run discover."""

import json
import os
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def install(tarball, collections, env=None):
    """Install the tarball into an empty collections path as a user would (--no-deps: Galaxy is
    unreachable from CI) and return the environment that sees only that path."""
    env = dict(env or os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    env.pop("ANSIBLE_CONFIG", None)
    subprocess.run(["ansible-galaxy", "collection", "install", "--no-deps", "--force", "-p", str(collections), str(tarball)],
                   check=True, capture_output=True, text=True, env=env)
    assert (collections / "ansible_collections" / "gpufabric" / "rdma" / "MANIFEST.json").is_file()
    return env


def assert_ansible_doc_lists_everything(env, cwd):
    """ansible-doc -l of the installed collection names every module, filter and role of this checkout."""
    expected = {
        "module": {n[:-3] for n in os.listdir(os.path.join(ROOT, "plugins", "modules")) if n.endswith(".py") and not n.startswith("_")},
        "filter": {n[:-4] for n in os.listdir(os.path.join(ROOT, "plugins", "filter")) if n.endswith(".yml")},
        "role": set(os.listdir(os.path.join(ROOT, "roles"))),
    }
    for kind, names in expected.items():
        assert names, kind
        listed = subprocess.run(["ansible-doc", "-t", kind, "-l", "gpufabric.rdma", "--json"],
                                capture_output=True, text=True, env=env, cwd=str(cwd), check=False)
        assert listed.returncode == 0, listed.stderr
        assert set(json.loads(listed.stdout)) == {"gpufabric.rdma." + n for n in names}, kind


def run_discover(env, tmp_path):
    """`ansible-playbook gpufabric.rdma.discover` on this machine (implicit localhost), facts and
    report under tmp_path; returns the readiness report after checking the run succeeded."""
    run = subprocess.run(
        ["ansible-playbook", "gpufabric.rdma.discover", "-e", "ansible_become=false",
         "-e", "discovery_facts_dir=%s" % (tmp_path / "facts"), "-e", "report_dir=%s" % (tmp_path / "report"),
         "-e", "gpufabric_local_facts_dir=%s" % (tmp_path / "facts.d")],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600, check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    readiness = json.loads((tmp_path / "report" / "readiness.json").read_text())
    assert list(readiness["nodes"]) == ["localhost"]
    return readiness
