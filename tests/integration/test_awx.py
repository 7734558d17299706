"""AWX / Automation Controller definitions (awx/): the job templates and their surveys pass AWX's
own survey rules, use only options awx.awx knows, ask only for variables the playbooks read (with
defaults the roles accept), and the project's playbooks run: discover with the survey's answers
hands its verdict to AWX through set_stats."""

import glob
import json
import os
import re
import subprocess

import pytest
import yaml

from argspecs import ROLES, options, role_of, validate
from paths import ROOT

AWX = os.path.join(ROOT, "awx")
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}


def _templates():
    with open(os.path.join(AWX, "vars", "job_templates.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["gpufabric_job_templates"]


TEMPLATES = _templates()


def survey_errors(survey):
    """AWX's checks of a survey spec (api/views survey_spec POST), then of each default as an
    answer at launch (the survey mixin's element validation)."""
    errors = []
    for field, kind in (("name", str), ("description", str), ("spec", list)):
        if not isinstance(survey.get(field), kind):
            errors.append("field %r must be %s" % (field, kind.__name__))
    if errors:
        return errors
    if not survey["spec"]:
        errors.append("'spec' doesn't contain any items")
    seen = set()
    for idx, item in enumerate(survey["spec"]):
        for key in ("type", "question_name", "variable", "required"):
            if key not in item:
                errors.append("%r missing from survey question %d" % (key, idx))
        if item.get("variable") in seen:
            errors.append("'variable' %r duplicated in survey question %d" % (item.get("variable"), idx))
        seen.add(item.get("variable"))
        kind = item.get("type")
        if kind not in SURVEY_TYPES:
            errors.append("question %d: type %r is not one of AWX's" % (idx, kind))
            continue
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(item.get("variable"))):
            errors.append("question %d: variable %r is not a valid variable name" % (idx, item.get("variable")))
        if "default" not in item:
            continue
        default = item["default"]
        if isinstance(default, str) and default.startswith("$encrypted$"):
            errors.append("question %d: $encrypted$ is reserved" % idx)
        if kind in ("text", "textarea", "password"):
            if not isinstance(default, str):
                errors.append("question %d: default %r must be a string" % (idx, default))
            elif default and not (int(item.get("min") or 0) <= len(default) <= int(item.get("max") or 1 << 30)):
                errors.append("question %d: default %r is outside length %s-%s" % (idx, default, item.get("min"), item.get("max")))
        elif kind in ("integer", "float"):
            ok = isinstance(default, int) if kind == "integer" else isinstance(default, (int, float))
            if not ok or isinstance(default, bool):
                errors.append("question %d: default %r is not %s" % (idx, default, kind))
            elif not (item.get("min", default) <= default <= item.get("max", default)):
                errors.append("question %d: default %r is outside %s-%s" % (idx, default, item.get("min"), item.get("max")))
        else:
            choices = item.get("choices")
            if isinstance(choices, str):
                choices = choices.split("\n")
            if not choices:
                errors.append("question %d: %s needs choices" % (idx, kind))
            elif kind == "multiplechoice" and default not in choices:
                errors.append("question %d: default %r is not a choice" % (idx, default))
            elif kind == "multiselect" and not set(default if isinstance(default, list) else default.split("\n")) <= set(choices):
                errors.append("question %d: default %r is not a subset of the choices" % (idx, default))
    return errors


def _answer(item):
    """The value a playbook receives for a question answered with its default; an optional number left blank is not
    passed at all (AWX passes no extra variable for it), which the role reads as unset (null)."""
    return item.get("default")


def _playbook_closure(name, seen=None):
    """Files and roles a collection playbook runs: its imports, the task files it includes (playbooks/tasks/) and the
    roles it names."""
    seen = seen if seen is not None else {"files": [], "roles": set()}
    path = os.path.join(ROOT, "playbooks", name + ".yml")
    if path in seen["files"]:
        return seen
    seen["files"].append(path)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    for ref in re.findall(r"gpufabric\.rdma\.([a-z_0-9]+)", text):
        if os.path.exists(os.path.join(ROOT, "playbooks", ref + ".yml")) and ref not in ROLES:
            _playbook_closure(ref, seen)
        elif ref in ROLES:
            seen["roles"].add(ref)
    for ref in re.findall(r"import_playbook: ([a-z_]+)\.yml", text):
        _playbook_closure(ref, seen)
    for ref in re.findall(r"(?:include|import)_tasks: (tasks/[a-z_]+)\.yml", text):
        _playbook_closure(ref, seen)
    return seen


def _doc_options(module):
    out = subprocess.run(["ansible-doc", "-t", "module", module, "--json"], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout)[module]["doc"]["options"])


def test_there_is_a_template_for_discover_site_validate_burnin_hang_and_slow():
    wanted = ["burnin.yml", "configure.yml", "discover.yml", "hang.yml", "site.yml", "slow.yml", "validate.yml"]
    assert sorted(t["playbook"] for t in TEMPLATES) == wanted


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t["playbook"])
def test_survey_passes_awx_rules(template):
    assert template["survey_enabled"] is True
    assert survey_errors(template["survey_spec"]) == []


def test_the_survey_check_catches_what_awx_refuses():
    spec = {"name": "s", "description": "d", "spec": [
        {"type": "integer", "question_name": "q", "variable": "a", "required": True, "min": 1, "max": 5, "default": 9},
        {"type": "multiplechoice", "question_name": "q", "variable": "a", "required": True, "choices": ["x"], "default": "y"},
        {"type": "boolean", "question_name": "q", "variable": "b", "required": True},
        {"type": "text", "question_name": "q", "variable": "c"},
    ]}
    errors = survey_errors(spec)
    assert any("outside 1-5" in e for e in errors)
    assert any("duplicated" in e for e in errors)
    assert any("not a choice" in e for e in errors)
    assert any("'boolean' is not one of" in e for e in errors)
    assert any("'required' missing from survey question 3" in e for e in errors)
    assert survey_errors({"name": "s", "description": "d", "spec": []}) == ["'spec' doesn't contain any items"]


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t["playbook"])
def test_survey_variables_are_what_the_playbook_reads(template):
    closure = _playbook_closure(template["playbook"][:-4])
    texts = "\n".join(open(p, encoding="utf-8").read() for p in closure["files"])
    for item in template["survey_spec"]["spec"]:
        name = item["variable"]
        role = role_of(name)
        if role is not None and name in options(role):
            assert role in closure["roles"], "%s belongs to role %s, which %s does not run" % (name, role, template["playbook"])
            spec = options(role)[name]
            if item["type"] == "multiplechoice" and spec.get("choices"):
                assert set(item["choices"]) <= set(str(c) for c in spec["choices"]), name
            assert validate(role, {name: _answer(item)}) == [], name
        else:
            # A playbook-level variable: the playbook (or one it imports) must read it.
            assert re.search(r"\b%s\b" % re.escape(name), texts), "%s is read by no play of %s" % (name, template["playbook"])
    for name, value in (template.get("extra_vars") or {}).items():
        role = role_of(name)
        assert role in closure["roles"] and validate(role, {name: value}) == [], name


def test_templates_and_configure_use_only_options_awx_knows():
    known = _doc_options("awx.awx.job_template")
    for template in TEMPLATES:
        assert set(template) <= known, sorted(set(template) - known)
    with open(os.path.join(AWX, "configure.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    used = 0
    for task in plays[0]["tasks"]:
        for key, args in task.items():
            if key.startswith("awx.awx."):
                assert set(args) <= _doc_options(key), (key, sorted(set(args) - _doc_options(key)))
                used += 1
    assert used == 3


def test_project_playbooks_import_the_collection_and_pass_syntax_check(tmp_path):
    for template in TEMPLATES:
        path = os.path.join(AWX, "project", template["playbook"])
        with open(path, encoding="utf-8") as handle:
            plays = yaml.safe_load(handle)
        assert plays[0]["ansible.builtin.import_playbook"] == "gpufabric.rdma." + template["playbook"][:-4]
        answers = dict((i["variable"], _answer(i)) for i in template["survey_spec"]["spec"])
        answers.update(template.get("extra_vars") or {})
        extra = tmp_path / ("%s.json" % template["playbook"])
        extra.write_text(json.dumps(answers))
        for inventory in sorted(glob.glob(os.path.join(ROOT, "inventories", "examples", "*"))):
            run = subprocess.run(["ansible-playbook", "--syntax-check", "-i", inventory, "-e", "@%s" % extra, path],
                                 capture_output=True, text=True, check=False)
            assert run.returncode == 0, (path, inventory, run.stdout[-1500:], run.stderr[-1500:])
    with open(os.path.join(AWX, "project", "collections", "requirements.yml"), encoding="utf-8") as handle:
        assert [c["name"] for c in yaml.safe_load(handle)["collections"]] == ["gpufabric.rdma"]


def test_discover_with_the_survey_answers_hands_its_verdict_to_awx(tmp_path):
    """The discover template's playbook run as AWX runs it (extra vars from the survey), here on
    this machine: no GPU answers, so the verdict is not ready, set_stats says so (AWX shows
    set_stats data as the job's artifacts) and the job fails, which is what a workflow's
    on-failure path gates on."""
    template = next(t for t in TEMPLATES if t["playbook"] == "discover.yml")
    answers = dict((i["variable"], _answer(i)) for i in template["survey_spec"]["spec"])
    answers.update(gpufabric_report_root=str(tmp_path / "report"), discovery_facts_dir=str(tmp_path / "facts"), ansible_become=False,
                   gpufabric_local_facts_dir=str(tmp_path / "facts.d"))
    extra = tmp_path / "answers.json"
    extra.write_text(json.dumps(answers))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_SHOW_CUSTOM_STATS="1",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    run = subprocess.run(["ansible-playbook", "-e", "@%s" % extra, os.path.join(AWX, "project", "discover.yml")],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600, check=False)
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(run.stdout)
    stats = result["global_custom_stats"]
    assert result["stats"]["localhost"]["failures"] == 1
    assert "NOT READY" in json.dumps(result["plays"][-1]["tasks"][-1]), result["plays"][-1]["tasks"][-1]
    assert stats["gpufabric_ready"] is False
    assert stats["gpufabric_findings"]["critical"] >= 1
    readiness = json.loads((tmp_path / "report" / "readiness.json").read_text())
    assert readiness["expected_gpu_count"] == 8
    assert any(f["check"] == "nvidia_smi" and "(8 expected)" in f["detail"] for f in readiness["nodes"]["localhost"]["findings"])


def test_only_node_local_work_is_sliced():
    """A sliced job runs the playbook on each slice apart: the fleet-wide playbooks never are, and the sliced configure
    skips the one fleet-wide step it holds (the OpenMPI SSH mesh, tag mpi)."""
    sliced = [t for t in TEMPLATES if int(t.get("job_slice_count", 1)) > 1]
    assert [t["playbook"] for t in sliced] == ["configure.yml"]
    assert "mpi" in sliced[0]["skip_tags"].split(",")
    text = ""
    for path in _playbook_closure("configure")["files"]:
        with open(path, encoding="utf-8") as handle:
            text += handle.read()
    assert "gpufabric.rdma.openmpi" in text and "tags: [mpi]" in text
