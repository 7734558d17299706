"""docs/troubleshooting.md is built from the failure messages in the source: it is current, and
a new failure without an explanation (or a stale explanation) stops the build."""

import copy
import importlib.util
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location("troubleshooting", os.path.join(ROOT, "docs", "site", "troubleshooting.py"))
troubleshooting = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(troubleshooting)


def test_the_committed_page_is_current():
    assert troubleshooting.main(["--check"]) == 0


def test_every_kind_of_failure_is_collected():
    checks = troubleshooting.findings()
    assert {"gpu_count", "gpu_xid", "rdma_port_state", "peermem", "nccl_env_drift", "rdma_counter"} <= set(checks)
    assert checks["rdma_port_state"]["severities"] == {"critical", "warning"}
    assert checks["gpu_xid"]["severities"] == {"by catalog"}
    failures = troubleshooting.role_failures()
    assert "nccl_tests: Fail on a failed threshold" in failures
    assert failures["_common: Check the checksum's form"]["source"] == os.path.join("roles", "_common", "tasks", "source_archive.yml")
    assert "playbook lab: Check lab_state" in failures
    modules = troubleshooting.module_failures()
    assert "timeout must be at least 1 second, got <...>" not in modules["slurm_job"]
    assert "timeout must be at least 1 second, got %d" in modules["slurm_job"]


def test_a_missing_or_stale_explanation_is_an_error():
    explained = troubleshooting._load_explanations()
    checks, failures = troubleshooting.findings(), troubleshooting.role_failures()
    assert troubleshooting.problems(explained, checks, failures) == []
    broken = copy.deepcopy(explained)
    del broken["findings"]["gpu_xid"]
    del broken["failures"]["perftest: Fail without a pair, or with a pair outside the play"]
    broken["findings"]["gone_check"] = {"title": "t", "meaning": "m", "fix": "f"}
    errors = troubleshooting.problems(broken, checks, failures)
    assert len(errors) == 3
    assert any(e.startswith("finding gpu_xid ") for e in errors)
    assert any("'perftest: Fail without a pair, or with a pair outside the play' (roles/perftest/tasks/main.yml)" in e
               for e in errors)
    assert any("gone_check, which no code reports" in e for e in errors)


def test_the_page_shows_fix_hints_and_the_xid_catalog():
    with open(os.path.join(ROOT, "docs", "troubleshooting.md"), encoding="utf-8") as handle:
        page = handle.read()
    assert "| 79 | critical | GPU has fallen off the bus |" in page
    assert "### rdma_drivers: Fail without RDMA devices" in page
    assert "[`gpu_count`](#gpu_count)" in page and "\n### gpu_count\n" in page


def test_every_message_of_an_explained_module_is_explained():
    explained, modules = troubleshooting._load_explanations(), troubleshooting.module_failures()
    assert set(explained["modules"]["slurm_conf_settings"]) == set(modules["slurm_conf_settings"])
    broken = copy.deepcopy(explained)
    message = modules["slurm_conf_settings"][0]
    del broken["modules"]["slurm_conf_settings"][message]
    broken["modules"]["slurm_conf_settings"]["a message no module prints"] = {"cause": "c", "fix": "f"}
    errors = [e for e in troubleshooting.problems(broken, troubleshooting.findings(), troubleshooting.role_failures(),
                                                  modules) if "slurm_conf_settings" in e]
    assert errors == [
        "module slurm_conf_settings message %r has no explanation in docs/site/troubleshooting.yml" % message,
        "docs/site/troubleshooting.yml explains module slurm_conf_settings message 'a message no module prints', "
        "which the module no longer prints"]
    page = troubleshooting.render(explained, {}, {}, {"slurm_conf_settings": [message]})
    assert "  **Why.** " + " ".join(explained["modules"]["slurm_conf_settings"][message]["cause"].split()) in page
