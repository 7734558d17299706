"""Make `ansible_collections.gpufabric.rdma` importable in unit tests.

`make collection` links this checkout at build/collections/ansible_collections/gpufabric/rdma;
the same import path is what modules and filters use at run time.
"""

import json
import os
import sys

import pytest

# Helpers shared by the tests (paths.py, argspecs.py, moduletest.py, ...), importable by name.
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from paths import COLLECTIONS, fixture_path  # noqa: E402  pylint: disable=wrong-import-position

if not os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections", "gpufabric", "rdma")):
    raise RuntimeError("run `make collection` first: %s has no gpufabric.rdma link" % COLLECTIONS)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


@pytest.fixture
def read_fixture():
    def _read(*parts):
        with open(fixture_path(*parts), encoding="utf-8") as handle:
            return handle.read()
    return _read


@pytest.fixture
def scaled():
    """scaled(text, factor): an nccl-tests capture with every algbw/busbw figure scaled (a slower pair or group)."""
    def _scaled(text, factor):
        out = []
        for line in text.splitlines():
            parts = line.split()
            if parts and parts[0].isdigit() and len(parts) >= 13:
                for index in (6, 7, 10, 11):
                    parts[index] = "%.2f" % (float(parts[index]) * factor)
                line = " ".join(parts)
            out.append(line)
        return "\n".join(out)
    return _scaled


@pytest.fixture
def lab_facts():
    """ansible_facts of a lab node, prefix stripped as Ansible does for `ansible_facts`."""
    with open(fixture_path("ansible_facts", "lab_bookworm_container.json"), encoding="utf-8") as handle:
        raw = json.load(handle)["ansible_facts"]
    return {(k[len("ansible_"):] if k.startswith("ansible_") else k): v for k, v in raw.items()}


@pytest.fixture
def fixture_file():
    """Path of a file or tree under tests/unit/fixtures (for readers that take paths)."""
    return fixture_path


# Kubernetes versions every rendered manifest must validate against (strict: unknown fields fail):
# the oldest ACK still supports and the newest the bundled schemas know.
KUBERNETES_VERSIONS = ("1.28.0", "1.37.0")
# Dynamic Resource Allocation (resource.k8s.io/v1, and a pod's resourceClaims naming their template directly) is
# served from 1.34: its objects validate against the schemas of the versions that serve them.
DRA_VERSIONS = ("1.34.0", "1.37.0")
KUBEFLOW_KINDS = {"PyTorchJob": "pytorchReplicaSpecs", "MPIJob": "mpiReplicaSpecs", "TFJob": "tfReplicaSpecs"}


def validate_manifest(manifest):
    """Validate one manifest with the Kubernetes schemas (kubernetes-validate, offline).

    Core kinds are validated whole. Kubeflow kinds are custom resources the bundled schemas do
    not know: their replica specs are checked for shape and each pod template is validated as a
    core PodTemplate, which is what the operator turns it into.
    """
    import kubernetes_validate

    for version in (DRA_VERSIONS if uses_dra(manifest) else KUBERNETES_VERSIONS):
        if manifest["kind"] not in KUBEFLOW_KINDS:
            kubernetes_validate.validate(manifest, version, strict=True)
            continue
        assert manifest["apiVersion"].startswith("kubeflow.org/")
        replicas = manifest["spec"][KUBEFLOW_KINDS[manifest["kind"]]]
        assert replicas, "no replica specs"
        for role, spec in replicas.items():
            assert set(spec) <= {"replicas", "restartPolicy", "template"}, spec.keys()
            assert isinstance(spec["replicas"], int) and spec["replicas"] >= 1
            kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate",
                                          "metadata": {"name": "%s-%s" % (manifest["metadata"]["name"], role.lower())},
                                          "template": spec["template"]}, version, strict=True)


def uses_dra(manifest):
    """The manifest is a resource.k8s.io object or a workload whose pods claim devices (resourceClaims)."""
    return manifest["apiVersion"].startswith("resource.k8s.io/") or '"resourceClaims"' in json.dumps(manifest)


@pytest.fixture
def kube_validate():
    return validate_manifest
