"""Where the tests find the repository, its collection link and their fixtures: one place, whatever folder a test
file sits in (tests/unit/..., tests/integration/...). conftest.py puts this folder on sys.path: `from paths import ROOT`."""

import os

UNIT = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(UNIT))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
FIXTURES = os.path.join(UNIT, "fixtures")


def fixture_path(*parts):
    """Path of a file or folder under tests/unit/fixtures."""
    return os.path.join(FIXTURES, *parts)


def fixture_text(*parts):
    """The text of a fixture (UTF-8)."""
    with open(fixture_path(*parts), encoding="utf-8") as handle:
        return handle.read()


def fixture_bytes(*parts):
    """The bytes of a fixture, as a tool's output reaches a reader."""
    with open(fixture_path(*parts), "rb") as handle:
        return handle.read()
