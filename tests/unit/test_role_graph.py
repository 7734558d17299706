"""The roles depend on each other without a cycle, and the internal role `_common` knows no other role (issue 54,
item 3): it holds the collection's settings and mechanics, as prometheus-community's `_common` does, and includes no
role; a subject's helper lives in its subject's role.

The graph's nodes are the roles' task and handler files. A meta dependency (meta/main.yml) makes the whole
dependency available to every file of the dependent role - its defaults, its vars and each of its task files, which
the dependent then includes by tasks_from - so it joins every file of the one to every file of the other. An
include_role or import_role joins the file that holds it to the file it names (tasks_from, else main), and
include_tasks / import_tasks join the files of one role (a templated name: every file of that role). A cycle is a
file that can reach itself through another role's: a role whose helper runs a role that depends on it again (a
file of one role that includes itself - the burn-in search's next round - is that role's own loop)."""

import glob
import os

import yaml

from moduletest import every_task

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PREFIX = "gpufabric.rdma."
INCLUDE_ROLE = ("include_role", "import_role", "ansible.builtin.include_role", "ansible.builtin.import_role")
INCLUDE_TASKS = ("include_tasks", "import_tasks", "ansible.builtin.include_tasks", "ansible.builtin.import_tasks")


def _files():
    """{(role, file name without .yml, under tasks/ or handlers/): its task list}."""
    files = {}
    for kind in ("tasks", "handlers"):
        for path in glob.glob(os.path.join(ROOT, "roles", "*", kind, "*.yml")):
            role = path.split(os.sep)[-3]
            name = os.path.splitext(os.path.basename(path))[0]
            with open(path, encoding="utf-8") as handle:
                files[(role, name if kind == "tasks" else "handlers/" + name)] = yaml.safe_load(handle) or []
    return files


def _dependencies(role):
    path = os.path.join(ROOT, "roles", role, "meta", "main.yml")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        meta = yaml.safe_load(handle) or {}
    return [_role_name(d["role"] if isinstance(d, dict) else d) for d in meta.get("dependencies") or []]


def _role_name(name):
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def _includes(tasks):
    """(role or None for the file's own role, task file) of every include in a task list."""
    for task in every_task(tasks):
        for key in INCLUDE_ROLE:
            if key in task:
                target = task[key]
                yield _role_name(target["name"]), os.path.splitext(target.get("tasks_from") or "main")[0]
        for key in INCLUDE_TASKS:
            if key in task:
                target = task[key]
                target = target.get("file") if isinstance(target, dict) else target
                yield None, target if "{{" in target else os.path.splitext(os.path.basename(target))[0]


def graph(files=None, dependencies=None):
    """{(role, file): {(role, file), ...}} - what each file can run next."""
    files = _files() if files is None else files
    dependencies = dependencies or _dependencies
    by_role = {}
    for role, name in files:
        by_role.setdefault(role, set()).add((role, name))
    edges = {node: set() for node in files}
    for (role, name), tasks in files.items():
        for target_role, target in _includes(tasks):
            if target_role is None:
                edges[(role, name)] |= by_role[role] if "{{" in target else {(role, target)}
            else:
                edges[(role, name)].add((target_role, target))
        for dependency in dependencies(role):
            edges[(role, name)] |= by_role.get(dependency, set())
    return edges


def _reach(edges, start):
    """Every node start reaches (itself included only through a path back)."""
    seen, todo = set(), list(edges.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return seen


def cycle(edges):
    """The files of one cycle through more than one role, in order, or None. A cycle inside one role is its own
    business (the burn-in's search includes its next round until it is done); one through another role is a helper
    that runs a role depending on it again."""
    for start in sorted(edges):
        back = [n for n in sorted(edges[start]) if n[0] != start[0] and start in _reach(edges, n)]
        if back:
            return [start] + _shortest(edges, back[0], start)
    return None


def _shortest(edges, source, target):
    """The nodes of a shortest path from source to target, both included (breadth first)."""
    before, todo = {source: None}, [source]
    while target not in before:
        node = todo.pop(0)
        for following in sorted(edges.get(node, ())):
            if following not in before:
                before[following] = node
                todo.append(following)
    path = [target]
    while path[-1] != source:
        path.append(before[path[-1]])
    return path[::-1]


def _show(nodes):
    return " -> ".join("%s:%s" % node for node in nodes)


def test_every_include_names_a_file_that_exists():
    edges = graph()
    missing = sorted((source, target) for source, targets in edges.items() for target in targets if target not in edges)
    assert not missing, ["%s includes %s" % (_show([s]), _show([t])) for s, t in missing]


def test_the_role_graph_has_no_cycle():
    found = cycle(graph())
    assert found is None, "the roles include each other in a cycle: " + _show(found)


def test_the_internal_role_includes_no_other_role_and_depends_on_none():
    edges = graph()
    others = sorted("%s includes %s" % (_show([source]), _show([target]))
                    for source, targets in edges.items() if source[0] == "_common"
                    for target in targets if target[0] != "_common")
    assert others == []
    assert _dependencies("_common") == []


def test_the_cycle_check_finds_a_helper_that_runs_a_role_depending_on_it():
    """What issue 54 found: _common's certify_pair ran the nccl_tests role, which depends on _common."""
    files = {("_common", "main"): [], ("_common", "certify_pair"): [{"ansible.builtin.include_role": {"name": PREFIX + "nccl_tests"}}],
             ("nccl_tests", "main"): [{"ansible.builtin.include_role": {"name": PREFIX + "_common", "tasks_from": "report_files"}}],
             ("_common", "report_files"): []}
    depends = {"nccl_tests": ["_common"]}.get
    assert _show(cycle(graph(files, lambda role: depends(role, [])))) == "_common:certify_pair -> nccl_tests:main -> _common:certify_pair"
    # A helper of one role that another includes by tasks_from is no cycle while it runs nothing of the includer.
    files = {("a", "main"): [{"ansible.builtin.include_role": {"name": PREFIX + "b"}}],
             ("a", "report"): [{"ansible.builtin.include_tasks": "write.yml"}], ("a", "write"): [],
             ("b", "main"): [{"block": [{"ansible.builtin.include_role": {"name": PREFIX + "a", "tasks_from": "report"}}]}]}
    assert cycle(graph(files, lambda role: [])) is None
    # A file that includes itself (a search's next round) is its own role's loop.
    files[("a", "write")] = [{"ansible.builtin.include_tasks": "write.yml"}]
    assert cycle(graph(files, lambda role: [])) is None
    files[("a", "write")] = [{"ansible.builtin.include_role": {"name": PREFIX + "b"}}]
    assert _show(cycle(graph(files, lambda role: []))) == "a:write -> b:main -> a:report -> a:write"


def test_the_graph_reads_the_real_includes():
    edges = graph()
    assert ("_common", "report_files") in edges[("burnin", "main")]
    assert ("slurm_jobs", "main") in edges[("nccl_tests", "slurm")]
    assert ("nccl_tests", "slurm") in edges[("nccl_tests", "main")]
    assert ("_common", "settings") in edges[("_common", "main")]
    # A meta dependency reaches every file of the dependency.
    assert {("_common", "main"), ("_common", "preflight")} <= edges[("topology", "main")]
