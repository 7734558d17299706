"""gpufabric's Prometheus rules, Alertmanager configuration and dashboard, checked by Prometheus' own tools
(promtool and amtool from Debian's packages: `make prometheus-tools` puts them in build/tools/bin)."""

import json
import os
import re
import subprocess

import pytest
import yaml

from ansible_collections.gpufabric.rdma.plugins.filter import monitor as monitor_filters

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOLS = os.path.join(ROOT, "build", "tools", "bin")
RULES = os.path.join(ROOT, "roles", "fleet_monitoring", "files", "gpufabric-rules.yml")
DASHBOARD = os.path.join(ROOT, "roles", "fleet_monitoring", "files", "gpufabric-dashboard.json")


def tool(name, *args, **kw):
    path = os.path.join(TOOLS, name)
    assert os.access(path, os.X_OK), "%s missing: run `make prometheus-tools` (tests/promtool/fetch-tools.sh)" % name
    result = subprocess.run([path] + list(args), capture_output=True, timeout=120, check=False, **kw)
    return result.returncode, (result.stdout + result.stderr).decode()


def test_every_rule_passes_its_promtool_unit_tests():
    rc, out = tool("promtool", "test", "rules", "gpufabric-rules.test.yml", cwd=os.path.join(ROOT, "tests", "promtool"))
    assert rc == 0, out
    assert "SUCCESS" in out


def test_every_alerting_rule_has_a_unit_test():
    with open(RULES) as handle:
        rules = yaml.safe_load(handle)
    with open(os.path.join(ROOT, "tests", "promtool", "gpufabric-rules.test.yml")) as handle:
        tests = yaml.safe_load(handle)
    alerting = set(r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r)
    recording = set(r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r)
    tested_alerts = set(t["alertname"] for case in tests["tests"] for t in case.get("alert_rule_test", []))
    tested_records = set(re.match(r"[\w:]+", t["expr"]).group(0) for case in tests["tests"]
                         for t in case.get("promql_expr_test", []))
    assert alerting - tested_alerts == set() and recording - tested_records - {"gpufabric:port_events:rate5m"} == set()
    # every alert says what to do, and carries the labels Alertmanager groups and routes by
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                assert set(rule["annotations"]) == {"summary", "description", "fix_hint"}, rule["alert"]
                assert rule["labels"]["source"] == "gpufabric"


def _dashboard_exprs():
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_dashboard_query_is_valid_promql(tmp_path):
    """Each panel's query, with the dashboard's variables at 'all', as a recording rule promtool must accept."""
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": "gpufabric_dashboard:panel_%d" % i, "expr": expr.replace("$cluster", ".*")}
        for i, (title, expr) in enumerate(_dashboard_exprs())]}]}
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules))
    rc, out = tool("promtool", "check", "rules", str(path))
    assert rc == 0, out
    assert "SUCCESS: %d rules found" % len(_dashboard_exprs()) in out


def test_the_prometheusrule_carries_exactly_the_rules_prometheus_loads():
    with open(RULES) as handle:
        text = handle.read()
    manifest = monitor_filters.prometheus_rule_manifest(text, labels={"release": "kube-prometheus-stack"})
    assert manifest["kind"] == "PrometheusRule" and manifest["apiVersion"] == "monitoring.coreos.com/v1"
    assert manifest["metadata"]["labels"] == {"app.kubernetes.io/part-of": "gpufabric", "release": "kube-prometheus-stack"}
    assert manifest["spec"]["groups"] == yaml.safe_load(text)["groups"]
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError) as error:
        monitor_filters.prometheus_rule_manifest(text, namespace="Bad_NS")
    assert "namespace must be a Kubernetes object name (lower case, digits, '-', '.'), got 'Bad_NS'" in str(error.value)


def test_the_alertmanager_configuration_passes_amtool(tmp_path):
    webhooks = [{"name": "dingtalk-ops", "type": "dingtalk", "url": "https://oapi.dingtalk.com/robot/send?access_token=x",
                 "secret": "SECxyz"}, {"name": "slack-gpu", "type": "slack", "url": "https://hooks.slack.com/services/x"}]
    config = monitor_filters.alertmanager_config(webhooks, cluster="c1", decider_url="http://ctl:8740",
                                                 decider_token="alertmanager-token-0123456789")
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    rc, out = tool("amtool", "check-config", str(path))
    assert rc == 0, out
    assert " - 1 inhibit rules" in out and " - 3 receivers" in out
    # The webhook URLs and secrets stay in the relay's configuration; Alertmanager only knows the relay.
    assert "dingtalk.com" not in path.read_text() and "SECxyz" not in path.read_text()
