"""Readers live only in parse/, findings only in judge/ (docs/architecture.md, "module_utils by subject"), and every
``parse_*`` filter in one file; this test walks the code's syntax and keeps it so (issue 54).

- A **finding made in parse/**: a parse/ module that imports ``common.findings`` (the one shape of a finding), calls
  ``finding()``, or defines a judge by its name (``*_findings``, ``check_thresholds``).
- A **tool output read in judge/**: a judge/ module that imports a parser of documents (``xml.*``, ``html.parser``,
  ``csv``), calls ``json.loads``, takes a tool's raw text through ``common.text``'s readers (``clean``,
  ``clean_lines``, ``launcher_lines``: every reader's way in), or defines a reader by its name (``parse_*``).
  Quoting a run's last line of stderr in a message is not reading it; a judge takes a reader's result.
- A **parse filter elsewhere**: a filter named ``parse_*`` registered in a file other than plugins/filter/parsers.py.
"""

import ast
import glob
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
FILTERS = os.path.join(ROOT, "plugins", "filter")
PREFIX = "ansible_collections.gpufabric.rdma.plugins.module_utils."
TEXT_READERS = {"clean", "clean_lines", "launcher_lines"}
DOCUMENT_PARSERS = ("xml", "html.parser", "csv")

# What is still out of place, and who moves it. Each entry names its issue and goes when the code moves; an entry
# that no longer matches anything fails the test, so the list only shrinks.
ALLOWED = {
    # Empty: judge/health.py's readers (the kernel log's Xid and fabric events, GPU memory from nvidia-smi -q -x,
    # nccl.conf) moved to parse/kernel_log.py, parse/gpu.py and parse/nccl_conf.py with the node-check registry
    # (issue 54). A new entry names its issue and who moves it.
}


def _tree(path):
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), path)


def _functions(tree):
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def finding_problems(tree):
    """What makes findings in a module: the finding shape imported, finding() called, a judge defined by name."""
    problems = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = [(node.module or "") + "." + alias.name for alias in node.names] + [node.module or ""]
            if any(name.endswith("common.findings") or ".common.findings." in name for name in names):
                problems.add("imports common.findings")
        elif isinstance(node, ast.Import) and any(alias.name.endswith("common.findings") for alias in node.names):
            problems.add("imports common.findings")
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called == "finding":
                problems.add("calls finding()")
    for function in _functions(tree):
        if function.name.endswith("findings") or function.name == "check_thresholds":
            problems.add("defines the judge %s" % function.name)
    return problems


def _text_aliases(tree):
    """Names bound to module_utils/common/text.py in a module (``from ...common import text as _text``)."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "") == PREFIX + "common":
            aliases.update(alias.asname or alias.name for alias in node.names if alias.name == "text")
        elif isinstance(node, ast.Import):
            aliases.update(alias.asname for alias in node.names if alias.name == PREFIX + "common.text" and alias.asname)
    return aliases


def reading_problems(tree):
    """What reads a tool's output in a module: a document parser, json.loads, common.text's readers, a parse_* def."""
    problems = set()
    aliases = _text_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("xml", "csv") or alias.name == "html.parser":
                    problems.add("imports %s" % alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] in ("xml", "csv") or module == "html.parser" or (module == "html" and any(
                    alias.name == "parser" for alias in node.names)):
                problems.add("imports %s" % module)
            if module == PREFIX + "common.text":
                problems.update("calls common.text.%s" % alias.name for alias in node.names if alias.name in TEXT_READERS)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in aliases and node.func.attr in TEXT_READERS:
                problems.add("calls common.text.%s" % node.func.attr)
            if isinstance(owner, ast.Name) and owner.id == "json" and node.func.attr == "loads":
                problems.add("calls json.loads")
    for function in _functions(tree):
        if function.name.startswith("parse_"):
            problems.add("defines the reader %s" % function.name)
    return problems


def _modules(folder):
    return sorted(os.path.relpath(path, MODULE_UTILS)[:-3] for path in glob.glob(os.path.join(MODULE_UTILS, folder, "*.py"))
                  if not path.endswith("__init__.py"))


def _out_of_place(folder, check):
    found = {}
    for name in _modules(folder):
        problems = check(_tree(os.path.join(MODULE_UTILS, name + ".py")))
        if problems:
            found[name] = problems
    return found


def _unexpected(found):
    return dict((name, sorted(problems - ALLOWED.get(name, set()))) for name, problems in found.items()
                if problems - ALLOWED.get(name, set()))


def test_no_finding_is_made_in_parse():
    assert _unexpected(_out_of_place("parse", finding_problems)) == {}, "findings are judge/'s: move the judge there"


def test_no_tool_output_is_read_in_judge():
    assert _unexpected(_out_of_place("judge", reading_problems)) == {}, "readers are parse/'s: move the reader there"


def test_every_allowance_is_still_needed():
    found = dict(_out_of_place("parse", finding_problems), **_out_of_place("judge", reading_problems))
    stale = dict((name, sorted(allowed - found.get(name, set()))) for name, allowed in ALLOWED.items()
                 if allowed - found.get(name, set()))
    assert stale == {}, "these moved: take them off ALLOWED"


def _registered_filters(path):
    """The filter names a filter file registers: the string keys of the dicts in its FilterModule.filters()."""
    names = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.FunctionDef) and node.name == "filters":
            for inner in ast.walk(node):
                if isinstance(inner, ast.Dict):
                    names.update(key.value for key in inner.keys if isinstance(key, ast.Constant) and isinstance(key.value, str))
    return names


def test_every_parse_filter_is_in_parsers_py():
    elsewhere = dict((os.path.basename(path), sorted(n for n in _registered_filters(path) if n.startswith("parse_")))
                     for path in glob.glob(os.path.join(FILTERS, "*.py")) if not path.endswith("parsers.py"))
    assert dict((k, v) for k, v in elsewhere.items() if v) == {}
    assert len([n for n in _registered_filters(os.path.join(FILTERS, "parsers.py")) if n.startswith("parse_")]) >= 23


def test_the_checks_can_fail():
    judge_in_parse = ast.parse("from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding\n"
                               "def check_thresholds(r):\n    return [finding('x', 'warning', 't', 'd', 'h')]\n"
                               "def link_findings(r):\n    return []\n")
    assert finding_problems(judge_in_parse) == {"imports common.findings", "calls finding()",
                                                "defines the judge check_thresholds", "defines the judge link_findings"}
    reader_in_judge = ast.parse("import json\nimport xml.etree.ElementTree as ET\n"
                                "from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text\n"
                                "from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import launcher_lines\n"
                                "def parse_stats(t):\n    return json.loads(_text.clean(t))\n")
    assert reading_problems(reader_in_judge) == {"imports xml.etree.ElementTree", "calls common.text.launcher_lines",
                                                 "calls common.text.clean", "calls json.loads", "defines the reader parse_stats"}
    assert reading_problems(ast.parse("from xml.etree import ElementTree\n")) == {"imports xml.etree"}
    assert finding_problems(ast.parse("def parse_x(t):\n    return t.split()\n")) == set()
    assert reading_problems(ast.parse("def rate_findings(h):\n    return [l for l in h.splitlines()]\n")) == set()
