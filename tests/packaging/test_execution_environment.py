"""The AWX execution environment: `make ee-context` (ansible-builder create) gives a valid build context
that installs this collection's tarball on top of the collections and packages it lists. Building the
image needs the base image from quay.io and a registry, which this project's CI does not have."""

import os
import subprocess
import tarfile

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONTEXT = os.path.join(ROOT, "build", "ee", "context")


@pytest.fixture(scope="module")
def context():
    proc = subprocess.run(["make", "-s", "ee-context"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return CONTEXT


def _read(*parts):
    with open(os.path.join(*parts), encoding="utf-8") as handle:
        return handle.read()


def test_containerfile_builds_on_the_declared_base_and_installs_the_collection(context):
    definition = yaml.safe_load(_read(ROOT, "execution-environment.yml"))
    assert definition["version"] == 3
    steps = _read(context, "Dockerfile")
    assert 'ARG EE_BASE_IMAGE="%s"' % definition["images"]["base_image"]["name"] in steps
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in steps
    final = steps[steps.index("FROM base AS final"):]
    assert "COPY _build/collections/gpufabric-rdma.tar.gz /tmp/gpufabric-rdma.tar.gz" in final
    assert "ansible-galaxy collection install --no-deps -p /usr/share/ansible/collections /tmp/gpufabric-rdma.tar.gz" in final
    core = definition["dependencies"]["ansible_core"]["package_pip"]
    assert 'ARG ANSIBLE_INSTALL_REFS="%s ansible-runner"' % core in steps


def test_context_carries_the_declared_dependencies(context):
    assert yaml.safe_load(_read(context, "_build", "requirements.yml")) == yaml.safe_load(_read(ROOT, "ee", "requirements.yml"))
    assert _read(context, "_build", "bindep.txt") == _read(ROOT, "ee", "bindep.txt")
    assert _read(context, "_build", "requirements.txt") == _read(ROOT, "ee", "requirements.txt")
    listed = {c["name"] for c in yaml.safe_load(_read(ROOT, "ee", "requirements.yml"))["collections"]}
    galaxy = yaml.safe_load(_read(ROOT, "galaxy.yml"))
    assert set(galaxy["dependencies"]) <= listed  # the collection's own dependencies are in the image


def test_context_carries_this_collection(context):
    with tarfile.open(os.path.join(context, "_build", "collections", "gpufabric-rdma.tar.gz")) as tar:
        names = set(tar.getnames())
    assert {"MANIFEST.json", "roles/health_monitor/meta/argument_specs.yml", "playbooks/burnin.yml",
            "plugins/modules/node_health.py"} <= names
    assert not any(n.startswith(("ee/", "execution-environment.yml", "build/")) for n in names)
