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
