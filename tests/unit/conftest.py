"""Make `ansible_collections.gpufabric.rdma` importable in unit tests.

`make collection` links this checkout at build/collections/ansible_collections/gpufabric/rdma;
the same import path is what modules and filters use at run time.
"""

import json
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")

if not os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections", "gpufabric", "rdma")):
    raise RuntimeError("run `make collection` first: %s has no gpufabric.rdma link" % COLLECTIONS)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


def fixture_path(*parts):
    return os.path.join(FIXTURES, *parts)


@pytest.fixture
def read_fixture():
    def _read(*parts):
        with open(fixture_path(*parts), encoding="utf-8") as handle:
            return handle.read()
    return _read


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
