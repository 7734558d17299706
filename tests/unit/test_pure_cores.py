"""module_utils is two kinds of code, and this test keeps them apart:

- host access (HOST): what reads the node or runs commands - the command runner, file reading and
  atomic writes, the sysfs readers, and node_checks, which runs a node's checks through them;
- pure cores: everything else. Parsers, planners and renderers take text or data and return data:
  no subprocess, no file or network I/O, no clock. They run the same on a managed node, on the
  controller in a filter, and in a unit test with a captured output.

A pure module that imports what reaches the world (os, subprocess, socket, time, ...), calls open(),
or imports a host module fails here, naming the module and the line.
"""

import ast
import glob
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
HOST = {"node/applied", "node/commands", "node/dcgmi", "node/evidence", "node/nic_firmware",
        "node/files", "node/nccl_inspector", "node/nccl_ras", "node/sysfs", "node/node_checks", "node/netdev_host", "node/webhook", "node/statefile",
        "node/imex", "fleet/delivery", "fleet/decider", "fleet/service"}
FORBIDDEN = {"os", "subprocess", "socket", "time", "tempfile", "glob", "shutil", "select", "signal", "pwd",
             "urllib.request", "urllib2", "http", "http.client", "requests", "random", "multiprocessing", "threading"}
# Names as paths under module_utils without .py: "text", "fleet/decider".
NAMES = sorted(os.path.relpath(p, MODULE_UTILS)[:-3] for p in glob.glob(os.path.join(MODULE_UTILS, "**", "*.py"), recursive=True)
               if not p.endswith("__init__.py"))
PURE = [name for name in NAMES if name not in HOST]


def _problems(name):
    with open(os.path.join(MODULE_UTILS, name + ".py")) as handle:
        tree = ast.parse(handle.read())
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
            if "plugins.module_utils" in (node.module or ""):
                modules += [node.module.split("plugins.")[-1] + "." + alias.name for alias in node.names]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            problems.append("line %d calls open()" % node.lineno)
            continue
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            if module in FORBIDDEN or top in FORBIDDEN:
                problems.append("line %d imports %s" % (node.lineno, module))
            tail = module.split("module_utils.")[-1] if "module_utils." in module else None
            if tail and any(tail == h.replace("/", ".") or tail.startswith(h.replace("/", ".") + ".") for h in HOST):
                problems.append("line %d imports the host module %s" % (node.lineno, tail))
    return problems


def test_every_host_module_exists_and_the_parsers_are_pure():
    assert HOST <= set(NAMES)
    assert {"parse/nccl_tests", "parse/rdma", "judge/health", "fleet/monitor", "plan/netconf", "plan/netdev_plan", "parse/gpu",
            "common/text"} <= set(PURE)


@pytest.mark.parametrize("name", PURE)
def test_a_pure_core_reaches_nothing_outside(name):
    assert _problems(name) == [], "module_utils/%s.py is listed as pure" % name


def test_the_check_can_fail():
    assert _problems("node/commands") and _problems("node/sysfs") and _problems("fleet/decider")
