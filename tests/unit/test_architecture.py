"""docs/architecture.md tells the truth: every path it names exists, every module_utils file is on
it, on the side of the split (pure core or host access) that test_pure_cores.py enforces, and the
phase table names every playbook, role, module and Molecule scenario there is."""

import glob
import os
import re

from test_pure_cores import HOST, NAMES

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGE = os.path.join(ROOT, "docs", "architecture.md")
TEXT = open(PAGE).read()
ROOTS = ("plugins/", "roles/", "playbooks/", "molecule/", "tests/", "docs/", ".config/", "inventories/", "changelogs/")
# `molecule/<phase>_<what>/`-style patterns name a kind of path, not one path.
PATHS = sorted({p for p in re.findall(r"`([^`\s]+)`", TEXT) if p.startswith(ROOTS) and "<" not in p})


def _section(start, end):
    return TEXT[TEXT.index(start):TEXT.index(end)]


def test_the_page_names_paths():
    assert len(PATHS) > 60, PATHS


def test_every_path_it_names_exists():
    missing = [p for p in PATHS if not os.path.exists(os.path.join(ROOT, p))]
    assert not missing, "docs/architecture.md names paths that do not exist: %s" % ", ".join(missing)


def _named(section):
    """The module_utils files a section names: each `plugins/module_utils/<path>.py`, and every file of a folder it
    names as `plugins/module_utils/<folder>/` (the node health checks: a new check is one file, no new row here)."""
    files = set(re.findall(r"`plugins/module_utils/([\w/]+)\.py`", section))
    for folder in re.findall(r"`plugins/module_utils/([\w/]+)/`", section):
        files |= set(name for name in NAMES if name.startswith(folder + "/"))
    return files


def test_every_module_utils_file_is_on_the_page_on_its_side_of_the_split():
    pure = _named(_section("| pure core |", "**Host access**"))
    host = _named(_section("**Host access**", "**Thin modules**"))
    assert host == HOST
    assert pure == set(NAMES) - HOST


def test_the_phase_table_names_every_playbook_role_module_and_scenario():
    table = _section("| phase | playbook |", "`playbooks/site.yml` imports")
    internal = _section("Internal roles", "## Layers")
    named = set(re.findall(r"`((?:playbooks|roles|plugins/modules|molecule)/[\w.]+)/?`", table + internal))
    present = {os.path.relpath(p, ROOT).rstrip("/") for pattern in ("roles/*", "plugins/modules/*.py")
               for p in glob.glob(os.path.join(ROOT, pattern))}
    present |= {os.path.relpath(os.path.dirname(p), ROOT) for p in glob.glob(os.path.join(ROOT, "molecule", "*", "molecule.yml"))}
    present |= {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))}
    # site.yml and lab.yml are named under the table: they are not one phase.
    assert present - named == {"playbooks/site.yml", "playbooks/lab.yml"}
    assert "`playbooks/site.yml` imports discover, configure and validate" in TEXT


def test_scenarios_are_named_by_phase():
    phases = ("discover_", "configure_", "validate_", "operate_")
    for path in glob.glob(os.path.join(ROOT, "molecule", "*", "molecule.yml")):
        name = os.path.basename(os.path.dirname(path))
        assert name.startswith(phases), name
        assert re.search(r"^  name: %s$" % name, open(path).read(), re.M), path
