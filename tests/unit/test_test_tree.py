"""The test tree mirrors the library (issue 54): a test of plugins/module_utils/<folder>/<name>.py sits in
tests/unit/plugins/module_utils/<folder>/, the modules' tests in tests/unit/plugins/modules/ (ansible-test's layout),
and a test file that runs Ansible itself (ansible-playbook, ansible, ansible-doc, ansible-inventory, ansible-config)
in tests/integration/, at the place it would have under tests/unit/. CONTRIBUTING's "Where a test goes" says the
same in words."""

import glob
import os
import re

from paths import ROOT

UNIT = os.path.join(ROOT, "tests", "unit")
INTEGRATION = os.path.join(ROOT, "tests", "integration")
LIBRARY = os.path.join(ROOT, "plugins", "module_utils")
MU_TESTS = os.path.join(UNIT, "plugins", "module_utils")
RUNS_ANSIBLE = re.compile(r'''\[\s*["'](ansible|ansible-playbook|ansible-doc|ansible-inventory|ansible-config)["']'''
                          r'''|os\.path\.dirname\(sys\.executable\), "ansible"|\brun_playbook\(''')


def _tests(top):
    return sorted(glob.glob(os.path.join(top, "**", "test_*.py"), recursive=True))


def _library():
    """{module name: [its folders under plugins/module_utils]} ('node/checks' for the checks)."""
    found = {}
    for path in glob.glob(os.path.join(LIBRARY, "**", "*.py"), recursive=True):
        found.setdefault(os.path.basename(path)[:-3], []).append(os.path.relpath(os.path.dirname(path), LIBRARY))
    return found


def _misplaced(tests, library, folders):
    """The module_utils tests outside the tree: directly in module_utils/, in a folder the library has not, or named
    for a module of one folder while sitting in another."""
    wrong = []
    for path in tests:
        folder = os.path.relpath(os.path.dirname(path), MU_TESTS)
        named = os.path.basename(path)[len("test_"):-3]
        if folder == "." or folder not in folders:
            wrong.append("%s: not in a folder of plugins/module_utils" % os.path.relpath(path, ROOT))
        elif named in library and folder not in library[named]:
            wrong.append("%s: tests %s, which is in %s" % (os.path.relpath(path, ROOT), named, " and ".join(library[named])))
    return wrong


def _runs_ansible(paths):
    return [os.path.relpath(p, ROOT) for p in paths if RUNS_ANSIBLE.search(open(p, encoding="utf-8").read())]


def test_module_utils_tests_mirror_the_library():
    library = _library()
    folders = set(folder for places in library.values() for folder in places)
    tests = _tests(MU_TESTS)
    assert len(tests) > 90
    assert _misplaced(tests, library, folders) == []
    # the rule can fail: a reader's test among the judges, and one left flat
    assert _misplaced([os.path.join(MU_TESTS, "judge", "test_nccl_debug.py"), os.path.join(MU_TESTS, "test_x.py")],
                      library, folders) == [
        "tests/unit/plugins/module_utils/judge/test_nccl_debug.py: tests nccl_debug, which is in parse",
        "tests/unit/plugins/module_utils/test_x.py: not in a folder of plugins/module_utils"]


def test_modules_tests_are_where_ansible_test_looks():
    assert not os.path.isdir(os.path.join(UNIT, "modules"))
    assert len(_tests(os.path.join(UNIT, "plugins", "modules"))) > 10


def test_tests_that_run_ansible_are_integration_tests_and_the_others_unit_tests():
    assert _runs_ansible(_tests(UNIT)) == []
    integration = _tests(INTEGRATION)
    assert len(integration) > 20
    assert sorted(set(integration) - set(os.path.join(ROOT, p) for p in _runs_ansible(integration))) == []
