"""module_utils is cut by subject into folders that stand on each other (docs/architecture.md, "Layers"): a module
imports from its own folder or from one below it, never from above, and no two modules import each other, however
far round. A new module in a new folder must be given its place here."""

import ast
import glob
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PREFIX = "ansible_collections.gpufabric.rdma.plugins.module_utils"
# From the bottom: the common ground, readers per tool, the fabric's topology, judges, planners, renderers of figures
# and metrics, host access on a node, the fleet's programs (monitor, decider, relay).
ORDER = ["common", "parse", "topology", "judge", "plan", "render", "node", "fleet"]


def _graph():
    """{module path: set of module paths it imports}, paths as 'folder/name'."""
    graph = {}
    for path in glob.glob(os.path.join(MODULE_UTILS, "**", "*.py"), recursive=True):
        name = os.path.relpath(path, MODULE_UTILS)[:-3]
        graph[name] = set()
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
                tail = node.module[len(PREFIX):].strip(".").replace(".", "/")
                if os.path.isfile(os.path.join(MODULE_UTILS, tail + ".py")):
                    graph[name].add(tail)
                else:
                    graph[name] |= set("%s/%s" % (tail, alias.name) if tail else alias.name for alias in node.names)
    return graph


def _upward(graph):
    found = []
    for name, imports in sorted(graph.items()):
        for other in sorted(imports):
            if ORDER.index(other.split("/")[0]) > ORDER.index(name.split("/")[0]):
                found.append("%s imports %s" % (name, other))
    return found


def _cycles(graph):
    state, found = {}, []

    def visit(name, path):
        state[name] = "open"
        for other in sorted(graph.get(name, ())):
            if state.get(other) == "open":
                found.append(" -> ".join(path[path.index(other):] + [other]) if other in path else other)
            elif other not in state:
                visit(other, path + [other])
        state[name] = "done"
    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def test_every_module_is_in_a_folder_with_its_place():
    assert not [name for name in _graph() if "/" not in name or name.split("/")[0] not in ORDER]


def test_no_module_imports_from_a_folder_above_its_own():
    assert _upward(_graph()) == []


def test_the_import_graph_has_no_cycle():
    assert _cycles(_graph()) == []


def test_the_checks_can_fail():
    assert _upward({"parse/a": {"fleet/b"}, "fleet/b": set()}) == ["parse/a imports fleet/b"]
    assert _cycles({"judge/a": {"judge/b"}, "judge/b": {"judge/a"}})


PRIVATE = "# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere."


def _unmarked(paths):
    """The files whose fourth line (after the coding, copyright and licence lines) is not the private mark."""
    return [os.path.relpath(path, ROOT) for path in paths if open(path, encoding="utf-8").read().split("\n")[3:4] != [PRIVATE]]


def test_every_module_util_says_it_is_private_to_the_collection():
    """Nothing is released yet: module_utils is the collection's own, and each file says so on one line (as
    community.docker's module_utils do), so that no other collection or playbook takes it for an API."""
    paths = sorted(glob.glob(os.path.join(MODULE_UTILS, "**", "*.py"), recursive=True))
    assert len(paths) > 100
    assert _unmarked(paths) == []
    assert _unmarked([os.path.join(ROOT, "plugins", "modules", "node_health.py")]) == ["plugins/modules/node_health.py"]
