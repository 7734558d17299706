"""Every module, filter and role documents itself for ansible-doc with examples that are real:
the examples parse, call the plugin or role they document, and set only options that exist, with
values of the documented types."""

import ast
import glob
import importlib
import os

import pytest
import yaml

from argspecs import ROLES, entry_point, role_of, validate

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODULES = sorted(p for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))
                 if not os.path.basename(p).startswith("_"))
FILTER_DOCS = sorted(glob.glob(os.path.join(ROOT, "plugins", "filter", "*.yml")))


def _module_docs(path):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    docs = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
                docs[node.targets[0].id] = ast.literal_eval(node.value)
    return docs


def _has_jinja(value):
    return "{{" in yaml.safe_dump(value)


def _fragment_options(name):
    fragment = importlib.import_module("ansible_collections.gpufabric.rdma.plugins.doc_fragments." + name)
    return yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION).get("options") or {}


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_module_examples_call_the_module_with_its_options(path):
    name = os.path.basename(path)[:-3]
    docs = _module_docs(path)
    documentation = yaml.safe_load(docs["DOCUMENTATION"])
    assert documentation["module"] == name
    options = dict(documentation.get("options") or {})
    for fragment in documentation.get("extends_documentation_fragment") or []:
        if fragment.startswith("gpufabric.rdma."):   # the collection's own fragments add options (sysfs_root, ...)
            options.update(_fragment_options(fragment.split(".")[-1]))
    known = set(options)
    for option in options:
        known.update((options[option].get("aliases") or []))
    tasks = yaml.safe_load(docs["EXAMPLES"])
    assert isinstance(tasks, list) and tasks
    calls = [t["gpufabric.rdma." + name] for t in tasks if "gpufabric.rdma." + name in t]
    assert calls, "no example calls gpufabric.rdma.%s by its FQCN" % name
    for args in calls:
        assert set(args or {}) <= known, sorted(set(args or {}) - known)
    assert yaml.safe_load(docs["RETURN"]) is not None


@pytest.mark.parametrize("path", FILTER_DOCS, ids=os.path.basename)
def test_filter_docs_have_examples(path):
    name = os.path.basename(path)[:-4]
    with open(path, encoding="utf-8") as handle:
        docs = yaml.safe_load(handle)
    assert docs["DOCUMENTATION"]["name"] == name
    examples = docs["EXAMPLES"]
    assert ("gpufabric.rdma." + name) in examples
    assert yaml.safe_load(examples)  # parses as YAML
    assert docs.get("RETURN")


@pytest.mark.parametrize("role", [r for r in ROLES if r != "_common"])
def test_role_examples_use_the_role_with_its_options(role):
    spec = entry_point(role)
    assert spec.get("short_description") and spec.get("description")
    plays = yaml.safe_load(spec["examples"])
    assert isinstance(plays, list) and plays
    used = 0
    for play in plays:
        for entry in play.get("roles") or []:
            if entry.get("role") != "gpufabric.rdma." + role:
                continue
            used += 1
            variables = entry.get("vars") or {}
            for name in variables:
                assert role_of(name) == role, "%s is not a variable of role %s" % (name, role)
                assert name in (spec.get("options") or {}), "%s is not an option of role %s" % (name, role)
            literal = dict((k, v) for k, v in variables.items() if not _has_jinja(v))
            assert validate(role, literal) == []
    assert used, "no example uses gpufabric.rdma.%s" % role


def _common_entry_points():
    with open(os.path.join(ROOT, "roles", "_common", "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["argument_specs"]


def test_the_internal_role_has_no_main_and_one_entry_point_per_task_file():
    """_common is not called directly: no main entry point; each task file a role includes is documented (the
    includes of its own task files aside: report_files_metrics, renamed_settings)."""
    tasks = sorted(os.path.splitext(n)[0] for n in os.listdir(os.path.join(ROOT, "roles", "_common", "tasks")))
    assert sorted(_common_entry_points()) == sorted(set(tasks) - {"main", "report_files_metrics", "renamed_settings"})


@pytest.mark.parametrize("name", sorted(_common_entry_points()))
def test_internal_examples_include_the_helper_with_its_options(name):
    spec = _common_entry_points()[name]
    assert spec.get("short_description") and spec.get("description")
    used = 0
    for play in yaml.safe_load(spec["examples"]):
        for task in play.get("tasks") or []:
            include = task.get("ansible.builtin.include_role") or {}
            if include.get("name") != "gpufabric.rdma._common" or include.get("tasks_from") != name:
                continue
            used += 1
            variables = task.get("vars") or {}
            for variable in variables:
                assert variable in (spec.get("options") or {}), "%s is not an option of %s" % (variable, name)
            assert validate("_common", dict((k, v) for k, v in variables.items() if not _has_jinja(v)), name) == []
    assert used, "no example includes gpufabric.rdma._common with tasks_from %s" % name


def test_the_settings_are_documented_with_the_defaults_they_have():
    """Every setting in _common's defaults is documented in its settings entry point, and each literal default is
    the documented one."""
    with open(os.path.join(ROOT, "roles", "_common", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    documented = _common_entry_points()["settings"]["options"]
    settings = sorted(n for n in defaults if n.startswith("gpufabric_"))
    assert settings == sorted(documented)
    for name in settings:
        if not _has_jinja(defaults[name]):
            assert documented[name].get("default") == defaults[name], name


def test_the_role_check_catches_a_bad_value():
    assert validate("rdma_network", {"rdma_network_mtu": "jumbo"})
    assert validate("nccl", {"nccl_provider": "conda"})
    assert validate("nccl", {"nccl_provider": "source"}) == []
