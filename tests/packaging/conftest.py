"""The collection tarball, built once per test session from this checkout."""

import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The install steps the tests share (installing.py).
if os.path.dirname(__file__) not in sys.path:
    sys.path.insert(0, os.path.dirname(__file__))


def galaxy_metadata():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="session")
def galaxy():
    """galaxy.yml as a mapping."""
    return galaxy_metadata()


@pytest.fixture(scope="session")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        ["ansible-galaxy", "collection", "build", "--output-path", str(out), ROOT],
        check=True, capture_output=True, text=True,
    )
    meta = galaxy_metadata()
    path = out / ("%s-%s-%s.tar.gz" % (meta["namespace"], meta["name"], meta["version"]))
    assert path.is_file()
    return path
