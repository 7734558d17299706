"""One cluster name (issue 54, item 3): a site that sets gpufabric_cluster alone gets that name as the cluster label
of every figure the reports write, every health message and metric, every decision the decider sends and every
Alertmanager route - Alertmanager groups by that label, so one cluster whose parts carried different names would be
grouped as several. Each place that hands a cluster name to a metric, message or route (a `cluster=` argument or a
`cluster:` key in roles/ and playbooks/) is rendered with the variables it sees: the collection's settings
(_common's defaults), its role's defaults and vars, and the site's inventory that sets only gpufabric_cluster. A play
of a playbook sees the settings only when it reads them (include _common's settings with public: true)."""

import glob
import os
import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from moduletest import every_task

try:  # ansible-core 2.19 templates only what is trusted as a template; earlier releases template any string
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - ansible-core < 2.19
    def trust_as_template(text):
        return text

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SITE = {"gpufabric_cluster": "train-a"}
KEYWORD = re.compile(r"\bcluster\s*=\s*([A-Za-z_]\w*)")
KEY = re.compile(r"^\s*cluster:\s*(\S.*)$", re.M)


def _trusted(value):
    """Variables as Ansible holds a role's defaults and the inventory: their strings are templates."""
    if isinstance(value, dict):
        return dict((k, _trusted(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return trust_as_template(value) if isinstance(value, str) else value


def _load(path):
    return _trusted(DataLoader().load_from_file(path) or {}) if os.path.exists(path) else {}


def _role_variables(role):
    """What a task of the role sees: the settings and its defaults, the inventory over them, its vars over all."""
    variables = dict(_load(os.path.join(ROOT, "roles", "_common", "defaults", "main.yml")))
    variables.update(_load(os.path.join(ROOT, "roles", role, "defaults", "main.yml")))
    variables.update(SITE)
    variables.update(_load(os.path.join(ROOT, "roles", role, "vars", "main.yml")))
    return variables


def _render(expression, variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def _role_sites():
    """(file, expression) of each cluster name a role's tasks or vars hand on."""
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "*", "*.yml"))):
        if path.split(os.sep)[-2] not in ("tasks", "vars", "handlers"):
            continue
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for name in KEYWORD.findall(text):
            yield os.path.relpath(path, ROOT), "{{ %s }}" % name
        for value in KEY.findall(text):
            yield os.path.relpath(path, ROOT), yaml.safe_load(value)


def _reads_the_settings(task):
    for key in ("ansible.builtin.include_role", "include_role", "ansible.builtin.import_role", "import_role"):
        include = task.get(key) or {}
        if include.get("name") == "gpufabric.rdma._common" and include.get("tasks_from") == "settings":
            return key.endswith("import_role") or include.get("public") is True
    return False


def _plays():
    for path in sorted(glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            for play in yaml.safe_load(handle) or []:
                if "tasks" in play or "roles" in play:
                    yield path, play


def _included_after_the_settings(task_file):
    """Whether every play that includes playbooks/tasks/<task_file> read the collection's settings before (a task
    file reads nothing itself: its includer's settings are its own); False where no play includes it."""
    found = []
    for path, play in _plays():
        settings = False
        for task in every_task((play.get("pre_tasks") or []) + (play.get("tasks") or [])):
            settings = settings or _reads_the_settings(task)
            include = task.get("ansible.builtin.include_tasks") or task.get("include_tasks")
            if isinstance(include, str) and os.path.basename(include) == task_file:
                found.append(settings)
    return bool(found) and all(found)


def _playbook_sites():
    """(file, play, whether the play read the settings before, expression) of each module argument cluster."""
    sites = list(_plays())
    sites += [(path, {"tasks": yaml.safe_load(open(path, encoding="utf-8")) or [], "included": True})
              for path in sorted(glob.glob(os.path.join(ROOT, "playbooks", "tasks", "*.yml")))]
    for path, play in sites:
        settings = play.get("included") and _included_after_the_settings(os.path.basename(path))
        for task in every_task((play.get("pre_tasks") or []) + (play.get("tasks") or [])):
            settings = settings or _reads_the_settings(task)
            for arguments in task.values():
                if isinstance(arguments, dict) and "cluster" in arguments:
                    yield os.path.relpath(path, ROOT), play.get("name", ""), bool(settings), arguments["cluster"]


def test_every_place_that_names_the_cluster_is_found():
    roles = sorted({site[0] for site in _role_sites()})
    assert roles == ["roles/_common/vars/main.yml", "roles/fleet_monitoring/tasks/main.yml",
                     "roles/health_monitor/tasks/main.yml", "roles/remediator/tasks/main.yml"]
    found = [(site[0], site[3]) for site in _playbook_sites()]
    written = [(os.path.relpath(p, ROOT), v) for p in glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)
               for v in KEY.findall(open(p, encoding="utf-8").read())]
    assert len(found) == len(written) >= 3, (found, written)


@pytest.mark.parametrize("where, expression", sorted(set(_role_sites())))
def test_a_role_names_the_cluster_gpufabric_cluster_says(where, expression):
    assert _render(expression, _role_variables(where.split("/")[1])) == "train-a", (where, expression)


@pytest.mark.parametrize("where, play, settings, expression", list(_playbook_sites()))
def test_a_playbook_names_the_cluster_gpufabric_cluster_says(where, play, settings, expression):
    assert settings, "%s, play %r: the play names the cluster without reading the collection's settings" % (where, play)
    variables = dict(_load(os.path.join(ROOT, "roles", "_common", "defaults", "main.yml")), **SITE)
    assert _render(expression, variables) == "train-a", (where, play, expression)


def test_a_site_that_sets_nothing_is_gpufabric_everywhere():
    for where, expression in set(_role_sites()):
        variables = _role_variables(where.split("/")[1])
        del variables["gpufabric_cluster"]
        variables.update(_load(os.path.join(ROOT, "roles", "_common", "defaults", "main.yml")))
        assert _render(expression, variables) == "gpufabric", (where, expression)


def test_a_role_setting_still_names_its_own_part():
    """health_monitor_cluster set alone keeps its value for the health monitor (the others say gpufabric_cluster)."""
    variables = dict(_role_variables("health_monitor"), health_monitor_cluster="prod-a")
    assert _render("{{ health_monitor_cluster }}", variables) == "prod-a"
    assert _render("{{ remediator_cluster }}", dict(_role_variables("remediator"), health_monitor_cluster="prod-a")) == "train-a"
