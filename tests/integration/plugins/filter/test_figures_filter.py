"""The figures_metrics filter as the roles use it: its errors, the .prom entry of each reporting role, and the
report_files role serving the figures through node_exporter's textfile directory on a metrics host (for real:
ansible-playbook, local connection)."""

import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.figures import FilterModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import figures
from paths import ROOT

F = FilterModule().filters()["figures_metrics"]
# The report entry each reporting role adds, by the file that holds its report_files_list.
ROLE_FILES = {
    "roles/nccl_tests/tasks/report.yml": ("nccl_tests", "gpufabric_nccl_tests.prom"),
    "roles/perftest/tasks/report.yml": ("perftest", "gpufabric_perftest.prom"),
    "roles/burnin/tasks/main.yml": ("burnin", "gpufabric_burnin.prom"),
    "roles/nccl_tune/tasks/measure.yml": ("tune", "{{ __nccl_tune_prefix }}-gpufabric_tune.prom"),
    "roles/ddp_benchmark/tasks/main.yml": ("ddp", "{{ inventory_hostname }}-gpufabric_ddp.prom"),
}


def lab_runs():
    with open(os.path.join(ROOT, "tests", "unit", "fixtures", "figures", "nccl_tests_runs_lab.json")) as handle:
        return json.load(handle)


def test_the_run_time_defaults_to_now_and_the_cluster_is_every_series_label():
    before = time.time()
    text = F(lab_runs(), "nccl_tests", cluster="train-a")
    after = time.time()
    stamp = [line for line in text.splitlines() if line.startswith("gpufabric_nccl_tests_run_timestamp_seconds")]
    assert stamp[0].startswith('gpufabric_nccl_tests_run_timestamp_seconds{cluster="train-a"} ')
    assert before <= float(stamp[0].split()[-1]) <= after
    assert all('cluster="train-a"' in line for line in text.splitlines() if not line.startswith("#"))
    assert ('gpufabric_nccl_tests_busbw_gigabytes_per_second{cluster="train-a",collective="all_reduce",'
            'nodes="gpufabric-node[1-2]",placement="in_place",ranks="16",size_bytes="4294967296"} 365.37') in text.splitlines()
    assert F(lab_runs(), "nccl_tests", run_time=1795000000).count('cluster="gpufabric"') > 100


@pytest.mark.parametrize("args, kwargs, message", [
    ((lab_runs(), "nccl"), {}, "kind must be one of nccl_tests, perftest, burnin, tune, ddp, dcgm_diag, readiness, hang, slow, got 'nccl'"),
    ((lab_runs(), ["burnin"]), {}, "kind must be one of nccl_tests, perftest, burnin, tune, ddp, dcgm_diag, readiness, hang, slow, got a list of 1"),
    (({"results": []}, "burnin"), {}, "expects a list of burnin records (wrap one report in a list: [burnin_result]), "
                                      "got a mapping"),
    (("runs.json", "nccl_tests"), {}, "expects a list of nccl_tests records, got a string"),
    (([{}, 3], "perftest"), {}, "item 1 is an integer"),
    (([], "ddp"), {"run_time": "soon"}, "run_time must be a number, got 'soon'"),
    (([], "ddp"), {"cluster": "a\nb"}, "cluster contains a newline"),
    ((lab_runs(), "nccl_tests"), {"nodes": ["n1"]}, "nodes is for tune and ddp, whose records do not name their hosts"),
])
def test_bad_input_fails_naming_the_value(args, kwargs, message):
    with pytest.raises(AnsibleFilterError) as error:
        F(*args, **kwargs)
    assert str(error.value).startswith("gpufabric.rdma.figures_metrics: ")
    assert message in str(error.value)


def _report_entries(path):
    def walk(node):
        if isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            include = node.get("ansible.builtin.include_role", {})
            if (include.get("name"), include.get("tasks_from")) == ("gpufabric.rdma._common", "report_files"):
                yield (node.get("vars") or {})
            for key in ("block", "rescue", "always"):
                yield from walk(node.get(key))
    with open(os.path.join(ROOT, path)) as handle:
        return list(walk(yaml.safe_load(handle)))


@pytest.mark.parametrize("path", sorted(ROLE_FILES))
def test_each_reporting_role_writes_its_figures_beside_its_reports(path):
    """Each role hands its records to the report writer (report_files_figures); no role renders the metrics."""
    kind, name = ROLE_FILES[path]
    (call,) = [v for v in _report_entries(path) if v.get("report_files_figures")]
    figures = call["report_files_figures"]
    if isinstance(figures, str):   # "{{ __x if <measured> else none }}": written only when the run measured (site.yml)
        match = re.match(r"^\{\{ (__\w+) if \w+ else none \}\}$", figures)
        assert match and match.group(1) in call, figures
        figures = call[match.group(1)]
    assert figures["kind"] == kind
    assert figures.get("name", "gpufabric_%s.prom" % kind) == name
    assert ("nodes" in figures) == (kind in ("tune", "ddp"))
    files = call.get("report_files_list") or []
    if isinstance(files, str):   # the same choice for the files: every list the template may pick from
        files = [e for name in re.findall(r"__\w+", files) if isinstance(call.get(name), list) for e in call[name]]
    assert not [e for e in files if str(e.get("name")).endswith(".prom")]


def test_the_report_writer_is_the_one_caller_of_the_metrics_filter():
    """figures_metrics is called in one place of the roles, with the collection's cluster setting."""
    callers = []
    for folder in ("roles", "playbooks"):
        for base, ignored, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(".yml") and "argument_specs" not in name:
                    with open(os.path.join(base, name)) as handle:
                        if "gpufabric.rdma.figures_metrics(" in handle.read():
                            callers.append(os.path.relpath(os.path.join(base, name), ROOT))
    assert callers == ["roles/_common/vars/main.yml"]
    with open(os.path.join(ROOT, callers[0])) as handle:
        assert "cluster=gpufabric_cluster" in handle.read()


def test_the_textfile_names_are_those_node_metrics_removes():
    """node_metrics (state absent) removes exactly gpufabric's files: every name a role writes matches its patterns."""
    import fnmatch
    names = [name for ignored, name in ROLE_FILES.values()]
    with open(os.path.join(ROOT, "roles", "node_metrics", "vars", "main.yml")) as handle:
        ours = yaml.safe_load(handle)["__node_metrics_ours"]
    for name in names + ["gpufabric_health.prom"]:
        written = name.replace("{{ inventory_hostname }}", "gpu-01").replace("{{ __nccl_tune_prefix }}", "cluster")
        assert written.split("-")[-1].startswith("gpufabric_") and written.endswith(".prom"), name
        assert any(fnmatch.fnmatchcase(written, pattern) for pattern in ours), written
    assert not any(fnmatch.fnmatchcase(other, pattern) for pattern in ours
                   for other in ("node_exporter.prom", "dcgm.prom", "gpufabric.prom.tmp"))


PLAY = """
- hosts: nodes
  gather_facts: false
  tasks:
    - name: Write the report and its figures
      ansible.builtin.include_role:
        name: gpufabric.rdma._common
        tasks_from: report_files
      vars:
        report_files_dir: report
        report_files_once: "{{ once }}"
        report_files_list:
          - {name: runs.json, content: "{{ runs | to_nice_json }}"}
          - {name: "{{ inventory_hostname }}-gpufabric_nccl_tests.prom",
             content: "{{ runs | gpufabric.rdma.figures_metrics('nccl_tests', cluster='lab') }}"}
"""


def _play(tmp_path, variables, check=False, hosts=("n1",)):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {"nodes": {"hosts": dict((h, local) for h in hosts)},
                                      "monitoring": {"hosts": {"prom1": local}}}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "runs.json").write_text(json.dumps({"runs": lab_runs()[:1]}))  # one single-node run of the lab
    variables = dict({"once": True}, **variables)
    argv = ["ansible-playbook", "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml"),
            "-e", "@" + str(tmp_path / "runs.json"), "-e", json.dumps(variables), "--diff"] + (["--check"] if check else [])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path),
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_the_figures_are_served_on_the_metrics_host_and_kept_with_the_reports(tmp_path):
    textfile = tmp_path / "node-exporter"
    textfile.mkdir()
    rc, out = _play(tmp_path, {"gpufabric_metrics_host": "prom1", "gpufabric_metrics_textfile_dir": str(textfile)})
    assert rc == 0, out
    report = tmp_path / "report" / "n1-gpufabric_nccl_tests.prom"
    served = textfile / "n1-gpufabric_nccl_tests.prom"
    assert served.read_text() == report.read_text()  # rendered once: the same run time in both
    assert oct(served.stat().st_mode & 0o777) == "0o644"
    assert sorted(os.listdir(str(textfile))) == ["n1-gpufabric_nccl_tests.prom"]  # runs.json is a report only
    assert ('nodes="gpufabric-node1",placement="in_place",ranks="8",size_bytes="4294967296"} 365.37'
            in served.read_text())


def test_per_host_figures_each_reach_the_metrics_host(tmp_path):
    textfile = tmp_path / "node-exporter"
    textfile.mkdir()
    rc, out = _play(tmp_path, {"gpufabric_metrics_host": "prom1", "gpufabric_metrics_textfile_dir": str(textfile),
                               "once": False}, hosts=("n1", "n2"))
    assert rc == 0, out
    assert sorted(os.listdir(str(textfile))) == ["n1-gpufabric_nccl_tests.prom", "n2-gpufabric_nccl_tests.prom"]


def test_check_mode_writes_the_report_but_nothing_on_the_metrics_host(tmp_path):
    textfile = tmp_path / "node-exporter"
    textfile.mkdir()
    rc, out = _play(tmp_path, {"gpufabric_metrics_host": "prom1", "gpufabric_metrics_textfile_dir": str(textfile)},
                    check=True)
    assert rc == 0, out
    assert (tmp_path / "report" / "n1-gpufabric_nccl_tests.prom").exists()
    assert os.listdir(str(textfile)) == []
    assert "+gpufabric_nccl_tests_run_passed" in out.replace("+ ", "+")  # --diff shows what would be written


def test_without_a_metrics_host_only_the_reports_are_written(tmp_path):
    rc, out = _play(tmp_path, {})
    assert rc == 0, out
    assert sorted(os.listdir(str(tmp_path / "report"))) == ["n1-gpufabric_nccl_tests.prom", "runs.json"]


@pytest.mark.parametrize("variables, message", [
    ({"gpufabric_metrics_host": "prometheus9"},
     'report_files_metrics_host (gpufabric_metrics_host) "prometheus9" must be a host of the inventory'),
    ({"gpufabric_metrics_host": "prom1", "gpufabric_metrics_textfile_dir": "node-exporter"},
     'report_files_metrics_dir (gpufabric_metrics_textfile_dir) "node-exporter" an absolute path'),
    ({"gpufabric_metrics_host": "prom1", "gpufabric_metrics_textfile_dir": "/nonexistent/textfile"},
     "/nonexistent/textfile is not a directory on prom1"),
])
def test_a_metrics_host_or_directory_that_cannot_serve_fails_naming_it(tmp_path, variables, message):
    rc, out = _play(tmp_path, variables)
    assert rc != 0
    assert message in out, out


def test_the_filter_is_documented_with_every_kind():
    with open(os.path.join(ROOT, "plugins", "filter", "figures_metrics.yml")) as handle:
        docs = yaml.safe_load(handle)
    assert docs["DOCUMENTATION"]["options"]["kind"]["choices"] == list(figures.KINDS)
