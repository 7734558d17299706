"""The node health checks' registry (module_utils/node/checks/all.py, issue 54 item 1): a check is one file of
node/checks/ and one line of all.py, declaring its options (with their descriptions), what it reads, its judge, its
findings and its metric families; node_health's argument spec and its options' documentation (the node_checks doc
fragment, computed when Ansible loads it) and the options the monitor takes are built from the table - a check added
as one file and one line appears in all three, and in node_health's checks mapping, with no other edit - and every
list kept beside it - the runner's command_timeout, the troubleshooting page, the metric families, the findings a
check reports, the example in CONTRIBUTING.md - is held equal to it here (the health_monitor role keeps no list:
tests/integration/roles/test_health_check_options.py). One loop runs the checks and says the same way, for all, what a check
could not read (unreadable) and that it could not run (not_run)."""

import ast
import glob
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import types
from unittest import mock

import pytest
import yaml

from ansible_collections.gpufabric.rdma.plugins.doc_fragments import node_checks as fragment
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import monitor
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, node_checks
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import all as registry, check
from ansible_collections.gpufabric.rdma.plugins.module_utils.render import metrics
from ansible_collections.gpufabric.rdma.plugins.modules import node_health
from moduletest import argument_spec
from paths import ROOT

FOLDER = os.path.join(ROOT, "plugins", "module_utils", "node", "checks")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
PREFIX = "ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks"
# What the loop writes for every check run (render/metrics.health_families), whatever the checks.
LOOP_FAMILIES = {"gpufabric_finding", "gpufabric_findings", "gpufabric_health_check_up", "gpufabric_health_check_source_unreadable",
                 "gpufabric_health_check_duration_seconds", "gpufabric_health_check_last_run_timestamp_seconds",
                 "gpufabric_health_check_last_success_timestamp_seconds", "gpufabric_health_check_interval_seconds",
                 "gpufabric_health_state_writable", "gpufabric_remediation_decisions_total"}
_spec = importlib.util.spec_from_file_location("troubleshooting", os.path.join(ROOT, "docs", "site", "troubleshooting.py"))
troubleshooting = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(troubleshooting)


def _registered_lines():
    """The check modules all.py imports, in the order of its lines."""
    with open(os.path.join(FOLDER, "all.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    return [alias.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == PREFIX
            for alias in node.names if alias.name != "check"]


def test_every_check_is_one_file_and_one_line_of_the_registry_in_its_order():
    files = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(FOLDER, "*.py")))
    assert {"check", "all"} <= set(files)
    assert sorted(_registered_lines()) == [f for f in files if f not in ("check", "all")], \
        "a file of node/checks/ is a check: give it its line in all.py"
    assert [c.name for c in registry.CHECKS] == _registered_lines()
    for item in registry.CHECKS:
        assert item.reads and item.findings and callable(item.read) and callable(item.judge), item.name
    declared = [f for c in registry.CHECKS for f in c.findings]
    assert len(declared) == len(set(declared)), "a finding belongs to one check"


def node_health_options():
    """node_health's options as ansible-doc has them: its own DOCUMENTATION's and those of each of the collection's
    fragments it extends, each imported as Ansible imports it (the module's own option wins, as there)."""
    doc = yaml.safe_load(node_health.DOCUMENTATION)
    options = dict(doc["options"])
    for name in doc["extends_documentation_fragment"]:
        module = importlib.import_module("ansible_collections.gpufabric.rdma.plugins.doc_fragments." + name.split(".")[-1])
        for option, documented in yaml.safe_load(module.ModuleDocFragment.DOCUMENTATION)["options"].items():
            options.setdefault(option, documented)
    return options


def _documented():
    return dict((name, {"type": doc.get("type"), "default": doc.get("default"), "elements": doc.get("elements")})
                for name, doc in node_health_options().items())


def _as_documented(spec):
    return dict((name, {"type": s["type"], "default": s.get("default"), "elements": s.get("elements")})
                for name, s in spec.items())


# node_health's own options, not the checks': the node's name and the checks' options in one mapping.
MODULE_OPTIONS = {"node_name": {"type": "str"}, "checks": {"type": "dict", "default": {}}}


def differences():
    """{list: [what it has or lacks that the registry lacks or has]} for each list built from the registry or kept beside
    it: node_health's argument spec and documentation (type, default, elements of each option), the runner's
    command_timeout, the options the monitor's configuration takes (names)."""
    table = _as_documented(dict(registry.argument_spec(), **MODULE_OPTIONS))
    monitor_names = set(monitor.check_config({"checks": {}})["checks"]) - {"rate_rules"} | set(MODULE_OPTIONS)
    lists = {"node_health's argument_spec": _as_documented(argument_spec(node_health)), "node_health's DOCUMENTATION": _documented(),
             "node/commands.ARGUMENT_SPEC": dict(table, **_as_documented(commands.ARGUMENT_SPEC)),
             "the monitor's checks": dict((name, table.get(name)) for name in monitor_names)}
    flat = dict((name, str(spec)) for name, spec in table.items())
    found = {}
    for name, options in lists.items():
        options = dict((option, str(spec)) for option, spec in options.items())
        if options != flat:
            found[name] = sorted(set(flat.items()) ^ set(options.items()))
    return found


def test_node_health_the_runner_and_the_monitor_take_the_registrys_options():
    assert differences() == {}
    checked = monitor.check_config({"checks": {}})["checks"]
    assert dict((k, v) for k, v in checked.items() if k != "rate_rules") == registry.DEFAULTS
    with pytest.raises(monitor.ConfigError, match=r"^checks: unknown check option\(s\): gpu_count \(known: command_timeout, "):
        monitor.check_config({"checks": {"gpu_count": 8}})


def test_a_list_that_differs_from_the_registry_fails():
    extra = check.Option("expected_nvswitches", "int", rules=(check.whole,))
    with mock.patch.dict(registry.OPTIONS, {"expected_nvswitches": extra}):
        found = differences()
    assert sorted(found) == ["node_health's DOCUMENTATION", "the monitor's checks"]
    assert found["node_health's DOCUMENTATION"] == [("expected_nvswitches", str({"type": "int", "default": None, "elements": None}))]
    assert found["the monitor's checks"] == [("expected_nvswitches", str({"type": "int", "default": None, "elements": None}))]


def _descriptions(options):
    return dict((name, doc["description"] if isinstance(doc["description"], list) else [doc["description"]])
                for name, doc in options.items())


def test_node_healths_documentation_of_the_checks_options_is_the_tables():
    """The fragment holds each option as its check declares it - the description too - and only those (command_timeout
    is the command_timeout fragment's, the same for every module that runs commands)."""
    generated = json.loads(fragment.ModuleDocFragment.DOCUMENTATION)["options"]
    assert generated == dict((name, option.doc()) for name, option in registry.OPTIONS.items() if name != "command_timeout")
    assert list(generated) == [o.name for o, owner in registry.options_table() if o.name != "command_timeout"]
    assert yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION) == json.loads(fragment.ModuleDocFragment.DOCUMENTATION)
    own = yaml.safe_load(node_health.DOCUMENTATION)
    assert sorted(own["options"]) == sorted(MODULE_OPTIONS), "a check's option is documented in its check's file"
    assert own["extends_documentation_fragment"] == ["gpufabric.rdma.node_checks", "gpufabric.rdma.command_timeout"]
    with pytest.raises(ValueError, match="option expected_nvswitches has no description"):
        check.Option("expected_nvswitches", "int").doc()


@pytest.mark.skipif(not os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                    reason="needs the collection installed (make unit sets ANSIBLE_COLLECTIONS_PATH)")
def test_ansible_doc_loads_the_computed_fragment():
    proc = subprocess.run(["ansible-doc", "--json", "gpufabric.rdma.node_health"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    options = json.loads(proc.stdout)["gpufabric.rdma.node_health"]["doc"]["options"]
    table = dict((name, option.doc()) for name, option in registry.OPTIONS.items() if name != "command_timeout")
    assert set(options) == set(table) | set(MODULE_OPTIONS) | {"command_timeout"}
    assert dict((k, v) for k, v in _descriptions(options).items() if k in table) == _descriptions(table)
    for name, doc in table.items():
        assert (options[name]["type"], options[name].get("default"), options[name].get("elements")) == \
            (doc["type"], doc.get("default"), doc.get("elements")), name


NVSWITCH = """# -*- coding: utf-8 -*-
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, whole

CHECK = Check("nvswitch", "the NVSwitches the node should have", reads=("sysfs class/nvswitch",), read=None, judge=None,
              options=(Option("expected_nvswitches", "int", rules=(whole,), description="NVSwitches the node should have."),),
              findings=("nvswitch_count",))
"""


def test_a_check_added_as_one_file_and_one_line_is_documented_taken_and_accepted_with_no_other_edit():
    """A new check: its file (a module here) and its one line in all.py - all.py's text run again with the line added.
    node_health's argument spec, its documentation (the fragment, loaded again as Ansible loads it), the options the
    monitor takes and node_health's checks mapping then have its option; nothing else was edited."""
    name = PREFIX + ".nvswitch"
    new = types.ModuleType(name)
    exec(compile(NVSWITCH, "nvswitch.py", "exec"), new.__dict__)
    with open(os.path.join(FOLDER, "all.py"), encoding="utf-8") as handle:
        text = handle.read()
    line = "from %s import dcgm  # noqa: F401\n" % PREFIX
    assert line in text
    text = text.replace(line, line + "from %s import nvswitch  # noqa: F401\n" % PREFIX)
    assert "expected_nvswitches" not in argument_spec(node_health)
    try:
        with mock.patch.dict(sys.modules, {name: new}), mock.patch.dict(registry.__dict__):
            exec(compile(text, registry.__file__, "exec"), registry.__dict__)
            importlib.reload(fragment)
            assert registry.CHECKS[-1] is new.CHECK and [c.name for c in registry.CHECKS][-2] == "dcgm"
            assert argument_spec(node_health)["expected_nvswitches"] == {"type": "int"}
            assert node_health_options()["expected_nvswitches"] == {"type": "int", "description": "NVSwitches the node should have."}
            assert differences() == {}
            assert monitor.check_config({"checks": {"expected_nvswitches": 4}})["checks"]["expected_nvswitches"] == 4
            with pytest.raises(monitor.ConfigError, match="expected_nvswitches must be a whole number"):
                monitor.check_config({"checks": {"expected_nvswitches": 4.5}})
            params = dict((k, v.get("default")) for k, v in argument_spec(node_health).items())
            assert node_health.check_options(dict(params, checks={"expected_nvswitches": "4"}))["expected_nvswitches"] == 4
    finally:
        importlib.reload(fragment)
    assert "expected_nvswitches" not in argument_spec(node_health) and "expected_nvswitches" not in node_health_options()
    assert differences() == {}


def test_options_are_checked_by_their_declared_rules():
    assert registry.check_options({"rate_thresholds": {"symbol_error": 120}})["rate_rules"]["symbol_error"][3] == 120
    for given, message in (({"dcgm_level": 2}, "dcgm_level must be 1 or unset"), ({"ethtool": "yes"}, "ethtool must be true or false"),
                           ({"rate_window": 0}, "rate_window must be at least 1 second, got 0"),
                           ({"link_health": {"max_raw_ber": "high"}}, "link_health max_raw_ber must be a positive number")):
        with pytest.raises(registry.CheckOptionError, match="^" + re.escape(message)):
            registry.check_options(given)
    assert registry.check_options({"link_health": False})["link_health"] is False
    with pytest.raises(ValueError, match="option expected_mtu is declared twice"):
        with mock.patch.object(registry, "CHECKS", registry.CHECKS + (check.Check(
                "again", "x", ("x",), None, None, options=(check.Option("expected_mtu", "int"),)),)):
            registry.options_table()


def test_every_finding_a_check_declares_is_reported_and_explained_and_the_page_lists_the_checks():
    explained = troubleshooting._load_explanations()
    checks = troubleshooting.findings()
    assert troubleshooting.problems(explained, checks, troubleshooting.role_failures()) == []
    with open(os.path.join(ROOT, "docs", "troubleshooting.md"), encoding="utf-8") as handle:
        page = handle.read()
    for item in registry.CHECKS:
        assert "\n| `%s` | %s | " % (item.name, item.summary) in page
        for found in item.findings:
            assert found in explained["findings"]
    assert "Node health check: [`xid`](#node-health-checks) (options `kernel_log`, `xid_ignore`)." in page
    typo = check.Check("xid2", "x", ("x",), None, None, findings=("gpu_xidd",))
    assert troubleshooting.problems(explained, checks, {}, registry=(typo,))[0] == \
        "node health check xid2 declares finding gpu_xidd, which no code reports"


def test_each_checks_metric_families_are_the_ones_it_declares():
    link = {"device": "mlx5_0/1", "effective_ber": 1.5e-15, "raw_ber": 2e-9, "link_down_counter": 1, "effective_errors": 0}
    result = {"findings": [], "complete": True, "unreadable": [],
              "observed": {"links": [link], "history": [{"at": 1, "counters": {"mlx5_0/1|symbol_error": 3, "eth2|carrier_changes": 1}}]}}
    families = metrics.health_families(result, "c", "n1", 10, 1.0, decisions={})
    declared = {}
    for item in registry.CHECKS:
        declared.update(item.metrics)
    assert set(f["name"] for f in families) == LOOP_FAMILIES | set(declared)
    for fam in families:
        if fam["name"] in declared:
            assert fam["samples"], fam["name"]
            for labels, dummy in fam["samples"]:
                assert set(labels) - {"cluster", "Hostname"} <= set(declared[fam["name"]]), fam["name"]


@pytest.fixture
def sick_node(tmp_path):
    """A node whose every check has something to say: the eRDMA sysfs tree, the 8x H200 capture with a V100's inactive
    NVLinks, a kernel log of Xid 79, fatal SXids, NVLink training and a NIC on a limited PCIe link (all real)."""
    sysfs = tmp_path / "sys"
    shutil.copytree(os.path.join(FIXTURES, "sysfs", "erdma"), str(sysfs))
    (sysfs / "class" / "net" / "eth1" / "mtu").write_text("1500\n")
    capture = tmp_path / "capture"
    capture.mkdir()
    shutil.copy(os.path.join(FIXTURES, "nvidia_smi", "q_h200x8.xml"), str(capture / "q.xml"))
    shutil.copy(os.path.join(FIXTURES, "nvlink", "status_v100_inactive_azhpc73.txt"), str(capture / "nvlink_status.txt"))
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "modules").write_text("ib_core 462848 9 - Live 0x0\n")
    log = tmp_path / "kern.log"
    log.write_text("".join(open(os.path.join(FIXTURES, "kernel_log", name)).read() for name in (
        "dmesg_xid_79_sxid_20034_gpud.txt", "dmesg_nvlink_post_rx_detect_gh100_gpud1272.txt",
        "dmesg_mlx5_pcie_limited_l2fwdnv6.txt")))
    (tmp_path / "nccl.conf").write_text("NCCL_IB_HCA=mlx5_1\nNCCL_DEBUG=INFO\n")
    return {"sysfs_root": str(sysfs), "procfs_root": str(proc), "kernel_log": str(log), "command_timeout": 10,
            "nvidia_smi_path": os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi"),
            "expected_gpu_count": 9, "expected_rdma_devices": 2, "expected_mtu": 9000, "require_peermem": True,
            "expected_nccl_env": {"NCCL_IB_HCA": "mlx5"}, "nccl_conf": str(tmp_path / "nccl.conf"),
            "link_health": True, "nic_firmware": {"profiles": ["roce_lossless"]}, "dcgm_level": 1,
            "dcgmi_path": str(tmp_path / "no" / "dcgmi")}, str(capture)


def test_each_check_reports_only_the_findings_it_declares(sick_node, monkeypatch):
    given, capture = sick_node
    monkeypatch.setenv("NVIDIA_SMI_CAPTURE", capture)
    reported = {}

    def recording(item, judge):
        def judged(node, readings):
            found = judge(node, readings)
            reported.setdefault(item.name, set()).update(f["check"] for f in found)
            return found
        return judged
    patches = [mock.patch.object(item, "judge", recording(item, item.judge)) for item in registry.CHECKS]
    for patch in patches:
        patch.start()
    try:
        result = node_checks.check_node(given, commands.Runner(10, path=""), host="n1",
                                        previous_counters={"at": 0, "ports": {}})
    finally:
        for patch in patches:
            patch.stop()
    outside = dict((name, sorted(found - set(c.findings))) for c in registry.CHECKS for name, found in reported.items()
                   if c.name == name and found - set(c.findings))
    assert outside == {}
    assert set(f["check"] for f in result["findings"]) >= {
        "gpu_count", "nvlink_down", "gpu_xid", "nvswitch_sxid", "nvlink_training", "nic_pcie_bandwidth", "rdma_device_count",
        "mtu", "peermem", "nccl_env_drift", "link_unread", "nic_firmware_unread", "dcgm_diag_not_run"}


def test_a_check_that_could_not_run_says_so_the_same_way_for_all(sick_node, tmp_path):
    """not_run: each check asked for whose tool is missing or that had nothing to read, with why; each is unreadable
    too, so the report is incomplete. A check not asked for is neither (dcgm without dcgm_level)."""
    given, dummy = sick_node
    given = dict(given, nvidia_smi_path=str(tmp_path / "no" / "nvidia-smi"), kernel_log=str(tmp_path / "no" / "kern.log"))
    result = node_checks.check_node(given, commands.Runner(10, path=""), host="n1")
    sysfs = given["sysfs_root"]
    assert result["not_run"] == {
        "nvidia_smi": "nvidia-smi not found",
        "xid": "kernel_log %s cannot be read" % given["kernel_log"],
        "nic_firmware": "no NVIDIA (Mellanox) card under %s/class/infiniband and none named in devices: nothing was "
                        "compared" % sysfs,
        "link_health": "no NVIDIA HCA (an mlx4_ or mlx5_ RDMA device) on this node: no link was read",
        "dcgm": result["observed"]["dcgm"]["reason"]}
    assert "not installed" in result["not_run"]["dcgm"]
    assert result["complete"] is False
    for name, why in result["not_run"].items():
        assert [u for u in result["unreadable"] if u.endswith(why)], name
    quiet = node_checks.check_node(dict(given, dcgm_level=None, link_health=None, nic_firmware=None),
                                   commands.Runner(10, path=""), host="n1")
    assert sorted(quiet["not_run"]) == ["nvidia_smi", "xid"] and quiet["observed"]["dcgm"] is None


CONTRIBUTING = os.path.join(ROOT, "CONTRIBUTING.md")


def test_contributing_shows_adding_a_check_with_the_real_file_and_its_line():
    with open(CONTRIBUTING, encoding="utf-8") as handle:
        text = handle.read()
    section = text[text.index("## Adding a node health check"):]
    section = section[:section.index("\n## ", 1)]
    assert "one new file in `plugins/module_utils/node/checks/` and one line in" in " ".join(section.split("\n"))
    for elsewhere in ("vars/main.yml", "tasks/checks.yml", "argument_specs", "`DOCUMENTATION`"):
        assert elsewhere not in section, "adding a check is one file and one line: nothing is edited in %s" % elsewhere
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    with open(os.path.join(FOLDER, "peermem.py"), encoding="utf-8") as handle:
        peermem = handle.read()
    assert blocks[0] == peermem
    line = "from %s import peermem  # noqa: F401\n" % PREFIX
    assert blocks[1] == line and line in open(os.path.join(FOLDER, "all.py"), encoding="utf-8").read()
