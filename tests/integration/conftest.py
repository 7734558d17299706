"""Tests that run Ansible itself (ansible-playbook, ansible, ansible-doc, ansible-inventory): the same collection link,
helpers and fixtures as tests/unit's, taken from tests/unit/conftest.py rather than copied. tests/unit is on sys.path ahead of
this folder, so that `conftest` is tests/unit's (with paths.py, moduletest.py, argspecs.py, kube_standin.py, which
unit tests use too); this folder comes last, for helpers of its own."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.join(os.path.dirname(HERE), "unit")
if UNIT not in sys.path:
    sys.path.insert(0, UNIT)
if HERE not in sys.path:
    sys.path.append(HERE)

# The fixtures of tests/unit/conftest.py, registered for this tree too.
from conftest import fixture_file, kube_validate, lab_facts, read_fixture, scaled  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
