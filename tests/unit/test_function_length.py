"""No function of the collection's Python runs 80 lines or more (the house style: "a function stays
under 80 lines"): every function and method in plugins/ and in the programs the roles install (roles/*/files), nested
ones too, counted from its ``def`` line to its last line, docstring included. A long function is split into named
steps, each of which can be read and tested alone (issue 54).
"""

import ast
import glob
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIMIT = 80

# Functions still being split elsewhere, each with its issue; an entry whose function got shorter (or went) fails
# the test, so the list only shrinks. {path: {function name: why it is still here}}
ALLOWED = {
}


def python_files():
    paths = glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True)
    paths += glob.glob(os.path.join(ROOT, "roles", "*", "files", "**", "*.py"), recursive=True)
    return sorted(os.path.relpath(path, ROOT) for path in paths)


def long_functions(source, limit=LIMIT):
    """{function name: lines} of every function (nested ones too) of ``limit`` lines or more in the source."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines >= limit:
                found[node.name] = max(lines, found.get(node.name, 0))
    return found


def _all_long():
    found = {}
    for path in python_files():
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            long = long_functions(handle.read())
        if long:
            found[path] = long
    return found


def test_no_function_runs_80_lines_or_more():
    too_long = sorted("%s: %s (%d lines)" % (path, name, lines) for path, functions in _all_long().items()
                      for name, lines in functions.items() if name not in ALLOWED.get(path, {}))
    assert too_long == [], "split these into named steps under %d lines each" % LIMIT


def test_every_allowance_is_still_needed():
    found = _all_long()
    stale = sorted("%s: %s" % (path, name) for path, functions in ALLOWED.items() for name in functions
                   if name not in found.get(path, {}))
    assert stale == [], "these are under %d lines now: take them off ALLOWED" % LIMIT


def test_the_files_are_found_and_the_check_can_fail():
    files = python_files()
    assert "plugins/module_utils/parse/nccl_tests.py" in files and "roles/remediator/files/gpufabric_remediator.py" in files
    body = "".join("    x = %d\n" % i for i in range(77))
    assert long_functions("def short():\n" + body + "    return x\n") == {}                       # 79 lines
    assert long_functions("def long():\n" + body + "    x += 1\n    return x\n") == {"long": 80}
    assert long_functions("class A:\n    def outer(self):\n        def inner():\n" + "".join(
        "            y = %d\n" % i for i in range(80)) + "        return inner\n") == {"outer": 83, "inner": 81}
