"""Findings and the check's own health as node_exporter textfile metrics; read back by promtool's own parser."""

import math
import os
import shutil
import stat
import subprocess

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import node_checks
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import metrics
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import monitor, settings
from paths import ROOT

PROMTOOL = os.path.join(ROOT, "build", "tools", "bin", "promtool")


def fixture_path(*parts):
    return os.path.join(ROOT, "tests", "unit", "fixtures", *parts)


def promtool_lint(text):
    """promtool check metrics: the exposition parser Prometheus itself uses (exit 0 when it parses; lint notes allowed)."""
    assert os.access(PROMTOOL, os.X_OK), "promtool missing: run `make prometheus-tools` (tests/promtool/fetch-tools.sh)"
    result = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60, check=False)
    return result.returncode, (result.stdout + result.stderr).decode()


def samples(text):
    """{(name, frozenset(labels)): value} of exposition text (the simple subset we write)."""
    found = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, value = line.rsplit(" ", 1)
        name, ignored, labels = head.partition("{")
        pairs = []
        for part in labels.rstrip("}").split('",') if labels else []:
            key, ignored, raw = part.partition('="')
            pairs.append((key, raw.rstrip('"')))
        found[(name, frozenset(pairs))] = float(value)
    return found


def test_label_values_are_escaped_and_failed_measurements_left_out():
    fam = metrics.family("gpufabric_x", "gauge", "a\ntest", [
        ({"target": 'n1/"q"\\\nnext'}, 1), ({"target": "nan"}, float("nan")), ({"target": "inf"}, math.inf),
        ({"target": "ok"}, 2.5)])
    text = metrics.render([fam])
    assert text == ('# HELP gpufabric_x a test\n# TYPE gpufabric_x gauge\ngpufabric_x{target="n1/\\"q\\"\\\\\\nnext"} 1\n'
                    'gpufabric_x{target="ok"} 2.5\n')
    assert promtool_lint(text)[0] == 0


@pytest.mark.parametrize("build, message", [
    (lambda: metrics.family("gpufabric-x", "gauge", ""), "metric name 'gpufabric-x' is not a Prometheus metric name"),
    (lambda: metrics.family("gpufabric_x", "counter", ""), "metric gpufabric_x: a counter's name ends in _total"),
    (lambda: metrics.render([metrics.family("g", "gauge", "", [({"a": 1}, 1), ({"a": "1"}, 2)])]),
     'metric g: two samples with the labels {a="1"}'),
    (lambda: metrics.render([metrics.family("g", "gauge", "", [({"bad-label": 1}, 1)])]),
     "metric g: label name 'bad-label' is not a Prometheus label name"),
])
def test_what_node_exporter_would_refuse_is_refused_here_naming_it(build, message):
    with pytest.raises(metrics.MetricsError) as error:
        build()
    assert str(error.value) == message


def test_finding_targets_become_the_labels_dcgm_exporter_and_node_exporter_use():
    gpus = [{"index": 3, "pci": "00000000:3B:00.0", "uuid": "GPU-6d8a"}]
    assert metrics.finding_labels({"check": "gpu_xid", "severity": "critical", "target": "n1/GPU 0000:3b:00"}, gpus) == {
        "check": "gpu_xid", "severity": "critical", "target": "n1/GPU 0000:3b:00", "pci_bus_id": "00000000:3B:00.0",
        "gpu": 3, "UUID": "GPU-6d8a"}
    assert metrics.finding_labels({"check": "rdma_port_state", "severity": "critical", "target": "n1/mlx5_0/1"}) == {
        "check": "rdma_port_state", "severity": "critical", "target": "n1/mlx5_0/1", "device": "mlx5_0", "port": "1"}
    assert metrics.finding_labels({"check": "pcie_link", "severity": "warning", "target": "n1/eth2"})["device"] == "eth2"
    assert "device" not in metrics.finding_labels({"check": "nccl_env_drift", "severity": "warning",
                                                   "target": "n1:/etc/nccl.conf"})


@pytest.fixture
def node(tmp_path):
    shutil.copytree(fixture_path("sysfs", "erdma"), str(tmp_path / "sys"))
    (tmp_path / "kern.log").write_text("")
    return tmp_path


def test_a_real_check_of_a_node_with_a_port_down_as_metrics(node):
    port_dir = node / "sys" / "class" / "infiniband" / "erdma_0" / "ports" / "1"
    (port_dir / "state").write_text("1: DOWN\n")
    (port_dir / "counters").mkdir(exist_ok=True)
    (port_dir / "counters" / "symbol_error").write_text("3\n")  # the kernel ABI's counter file: digits
    result = node_checks.check_node({"expected_gpu_count": 8, "expected_rdma_devices": 1, "sysfs_root": str(node / "sys"),
                                     "procfs_root": str(node), "kernel_log": str(node / "kern.log"),
                                     "nvidia_smi_path": str(node / "absent-nvidia-smi")}, host="n1", history=[])
    text = metrics.render(metrics.health_families(result, "c1", "n1", 1700000000.0, 0.25, 300, 1690000000.0))
    assert promtool_lint(text)[0] == 0
    found = samples(text)
    base = {("cluster", "c1"), ("Hostname", "n1")}
    port = frozenset(base | {("check", "rdma_port_state"), ("severity", "critical"), ("target", "n1/erdma_0/1"),
                             ("device", "erdma_0"), ("port", "1")})
    assert found[("gpufabric_finding", port)] == 1
    assert found[("gpufabric_findings", frozenset(base | {("severity", "critical")}))] == 2
    # nvidia-smi is missing while 8 GPUs are expected: unknown, so the check is not up
    assert found[("gpufabric_health_check_up", frozenset(base))] == 0
    assert found[("gpufabric_health_check_source_unreadable", frozenset(base | {
        ("source", "nvidia-smi"), ("reason", "nvidia-smi: nvidia-smi not found")}))] == 1
    assert found[("gpufabric_health_check_interval_seconds", frozenset(base))] == 300
    assert found[("gpufabric_health_check_last_success_timestamp_seconds", frozenset(base))] == 1690000000
    assert found[("gpufabric_port_events_total", frozenset(base | {("device", "erdma_0"), ("port", "1"),
                                                                   ("event", "symbol_error")}))] == 3


def test_the_monitor_writes_the_file_atomically_and_counts_the_deciders_answers(node):
    textfile = node / "textfile"
    textfile.mkdir()
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "monitor_program", os.path.join(ROOT, "roles", "health_monitor", "files", "gpufabric_health_monitor.py"))
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    config = monitor.check_config({
        "cluster": "c1", "host": "n1.example", "state_dir": str(node / "state"), "textfile_dir": str(textfile), "interval": 60,
        "checks": {"sysfs_root": str(node / "sys"), "procfs_root": str(node), "kernel_log": str(node / "kern.log"),
                   "nvidia_smi_path": str(node / "absent-nvidia-smi")}})
    os.makedirs(config["state_dir"])
    lines = []
    assert program.run_once(config, log=lines.append, clock=lambda: 1700000000.0) == 0
    path = textfile / "gpufabric_health.prom"
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o644
    assert sorted(os.listdir(str(textfile))) == ["gpufabric_health.prom"]  # no temp file left behind
    found = samples(path.read_text())
    base = frozenset({("cluster", "c1"), ("Hostname", "n1")})
    assert found[("gpufabric_health_check_up", base)] == 1
    assert found[("gpufabric_health_check_last_run_timestamp_seconds", base)] == 1700000000
    assert found[("gpufabric_health_check_last_success_timestamp_seconds", base)] == 1700000000
    assert not [k for k in found if k[0] == "gpufabric_finding"]
    assert metrics.count_decision({"drain": 1}, {"action": "drain", "shadow": True}) == {"drain": 1, "shadow_drain": 1}
    assert metrics.count_decision({}, {"action": "drain", "held": True}) == {"held": 1}


def test_a_textfile_dir_that_cannot_be_written_is_said_and_the_run_goes_on(node):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "monitor_program2", os.path.join(ROOT, "roles", "health_monitor", "files", "gpufabric_health_monitor.py"))
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    config = monitor.check_config({"host": "n1", "state_dir": str(node / "state"), "textfile_dir": str(node / "missing"),
                                   "checks": {"sysfs_root": str(node / "sys"), "procfs_root": str(node),
                                              "kernel_log": str(node / "kern.log"),
                                              "nvidia_smi_path": str(node / "absent-nvidia-smi")}})
    os.makedirs(config["state_dir"])
    lines = []
    assert program.run_once(config, log=lines.append) == 0
    assert [line for line in lines if line.startswith("metrics: could not save %s/gpufabric_health.prom" % (node / "missing"))]


@pytest.mark.parametrize("value", ["relative/dir", "/a\nb", 5])
def test_a_bad_textfile_dir_is_a_configuration_error_naming_it(value):
    with pytest.raises(settings.ConfigError) as error:
        monitor.check_config({"textfile_dir": value})
    assert str(error.value).startswith("textfile_dir must be an absolute one-line path") and repr(value) in str(error.value)


def test_the_physical_layer_of_each_port_as_metrics_promtool_reads():
    """mlxlink's readings (observed["links"]) as gauges and counters labelled device and port like node_exporter's
    infiniband collector; a BER mlxlink could not give is left out, never 0. The finding's own series names the port."""
    from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import link_health
    from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import mlxlink
    with open(fixture_path("mlxlink", "bf3_100g_dac_healthy_m_c_sigcomm26.txt")) as handle:
        (healthy,) = mlxlink.parse_mlxlink(handle.read())["devices"]
    with open(fixture_path("mlxlink", "cx5_ib_sdr_cable_speed_not_enabled_bluebanquise.txt")) as handle:
        (sick,) = mlxlink.parse_mlxlink(handle.read())["devices"]
    healthy["device"], sick["device"] = "mlx5_0/1", "mlx5_1/1"
    result = {"findings": link_health.mlxlink_findings("gpu07", [healthy, sick]), "complete": True,
              "observed": {"links": [healthy, sick]}}
    text = metrics.render(metrics.health_families(result, "c1", "gpu07", 1700000000, 1.5))
    assert promtool_lint(text)[0] == 0, promtool_lint(text)[1]
    found = samples(text)
    base = {("cluster", "c1"), ("Hostname", "gpu07")}
    assert found[("gpufabric_link_effective_ber", frozenset(base | {("device", "mlx5_0"), ("port", "1")}))] == pytest.approx(1.5e-254)
    assert found[("gpufabric_link_down_events_total", frozenset(base | {("device", "mlx5_0"), ("port", "1")}))] == 0
    assert not [k for k in found if k[0] == "gpufabric_link_effective_ber" and ("device", "mlx5_1") in k[1]]
    assert [dict(k[1])["device"] + "/" + dict(k[1])["port"] for k in found if k[0] == "gpufabric_finding"] == ["mlx5_1/1"]
