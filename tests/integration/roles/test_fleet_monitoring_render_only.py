"""Monitoring without Prometheus on the host: fleet_monitoring_render_only writes the PrometheusRule, the Alertmanager
routes and the dashboard into the report directory and nothing else (what a Prometheus Operator user needs); without
it, a host that has no Prometheus, or settings that give Alertmanager nowhere to send, fail naming the variables."""

import os
import subprocess
import sys

import pytest
import yaml

pytestmark = pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                                reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
WEBHOOKS = ('{"fleet_monitoring_webhooks": [{"name": "ops", "type": "dingtalk", '
            '"url": "https://oapi.dingtalk.com/robot/send?access_token=t", "secret": "SECx"}]}')


def _play(tmp_path, *extra):
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "gpufabric.rdma.monitoring", "-e", "ansible_connection=local",
                           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "ansible_become=false",
                           "-e", "monitoring_hosts=localhost", "-e", "fleet_monitoring_relay_lib_dir=%s" % (tmp_path / "lib"),
                           *extra], capture_output=True, text=True, check=False, timeout=300, cwd=str(tmp_path),
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_render_only_writes_the_three_files_and_nothing_on_the_host(tmp_path):
    rc, out = _play(tmp_path, "-e", "fleet_monitoring_render_only=true", "-e", WEBHOOKS)
    assert rc == 0, out[-3000:]
    report = tmp_path / "gpufabric-report" / "monitoring"
    assert sorted(p.name for p in report.iterdir()) == [
        "gpufabric-alertmanager.yml", "gpufabric-dashboard.json", "gpufabric-prometheusrule.yaml"]
    rule = yaml.safe_load((report / "gpufabric-prometheusrule.yaml").read_text())
    assert rule["kind"] == "PrometheusRule" and rule["spec"]["groups"]
    assert "/v1/alerts/ops" in (report / "gpufabric-alertmanager.yml").read_text()
    assert not (tmp_path / "lib").exists()   # no relay installed


@pytest.mark.parametrize("extra, message", [
    ([], "fleet_monitoring_webhooks is empty and fleet_monitoring_decider_url is not set"),
    (["-e", WEBHOOKS, "-e", "fleet_monitoring_prometheus_config=/nonexistent/prometheus/prometheus.yml"],
     "/nonexistent/prometheus does not exist on localhost: Prometheus is not installed here"),
], ids=["nowhere-to-send", "no-prometheus"])
def test_what_is_missing_is_named_with_the_variable_to_set(tmp_path, extra, message):
    rc, out = _play(tmp_path, *extra)
    assert rc != 0 and message in out, out[-3000:]
    assert "fleet_monitoring_render_only=true" in out or "fleet_monitoring_decider_url" in out
