"""What each installed program ships is computed from its imports (plugins/lookup/program_closure.py), and this
test says what it must never contain: a node program does not ship the decider's planner, the decider and the
relay do not ship the node's checks. Each program runs on its host with the standard library only."""

import ast
import glob
import hashlib
import os
import re

import pytest

from ansible.errors import AnsibleLookupError
from ansible_collections.gpufabric.rdma.plugins.lookup import program_closure
from ansible_collections.gpufabric.rdma.plugins.lookup.program_closure import LookupModule, closure

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MONITOR = "roles/health_monitor/files/gpufabric_health_monitor.py"
DECIDER = "roles/remediator/files/gpufabric_remediator.py"
RELAY = "roles/fleet_monitoring/files/gpufabric_alert_relay.py"
NODE_CHECKS = {"node/node_checks", "judge/health", "parse/gpu", "judge/rates", "parse/rdma", "parse/nvlink", "parse/rdma_common",
               "judge/port_traffic", "node/sysfs", "fleet/monitor", "node/checks/all", "node/checks/check", "parse/kernel_log"}
PLANNER = {"fleet/remediation", "fleet/remediation_counts", "fleet/remediation_triage", "fleet/remediation_drains",
           "fleet/remediation_resumes", "fleet/remediation_racks", "fleet/racks", "fleet/policy", "fleet/ledger", "fleet/decider", "fleet/decider_settings",
           "fleet/slurm_nodes", "fleet/k8s_nodes", "fleet/alerts"}


@pytest.mark.parametrize("program, must, never", [
    (MONITOR, {"fleet/monitor", "fleet/protocol", "node/node_checks", "fleet/delivery", "topology/nvlink",
               "parse/nvidia_smi_fabric", "judge/nvlink_fabric", "judge/imex", "parse/nvidia_imex", "node/imex",
               "common/topology_names"}, PLANNER),
    (DECIDER, {"fleet/decider", "fleet/remediation", "fleet/remediation_counts", "fleet/remediation_triage",
               "fleet/remediation_drains", "fleet/remediation_resumes", "fleet/remediation_racks", "fleet/racks",
               "fleet/protocol", "fleet/slurm_nodes"}, NODE_CHECKS),
    (RELAY, {"fleet/alerts", "fleet/delivery", "fleet/service"}, NODE_CHECKS | PLANNER - {"fleet/alerts"}),
])
def test_each_program_ships_its_closure_and_not_the_others_code(program, must, never):
    shipped = set(closure(program))
    assert must <= shipped
    assert not shipped & never, "%s ships %s" % (program, sorted(shipped & never))


def test_the_monitor_ships_every_node_health_check_of_the_registry():
    checks = set("node/checks/%s" % os.path.basename(p)[:-3]
                 for p in glob.glob(os.path.join(ROOT, "plugins", "module_utils", "node", "checks", "*.py")))
    assert len(checks) > 10 and checks <= set(closure(MONITOR))


@pytest.mark.parametrize("program", [MONITOR, DECIDER, RELAY])
def test_what_a_program_ships_imports_no_ansible(program):
    for name in [program] + ["plugins/module_utils/%s.py" % n for n in closure(program)]:
        tree = ast.parse(open(os.path.join(ROOT, name)).read())
        for node in ast.walk(tree):
            modules = [getattr(node, "module", None) or ""] + [a.name for a in getattr(node, "names", [])] \
                if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            assert not any(m == "ansible" or m.startswith("ansible.") for m in modules), name


def test_the_closure_follows_every_kind_of_import_and_fails_on_a_missing_one(tmp_path, monkeypatch):
    # A module imported by package path, by module path and by name from a subpackage are all found.
    assert {"common/text", "fleet/messages", "fleet/settings", "common/ownership"} <= set(closure("plugins/module_utils/fleet/chat.py"))
    fake = tmp_path / "plugins" / "module_utils"
    fake.mkdir(parents=True)
    (tmp_path / "prog.py").write_text("from ansible_collections.gpufabric.rdma.plugins.module_utils import gone\n")
    monkeypatch.setattr(program_closure, "ROOT", str(tmp_path))
    with pytest.raises(AnsibleLookupError, match="prog.py imports module_utils gone, which does not exist"):
        closure("prog.py")
    (tmp_path / "bad.py").write_text("def (:\n")
    with pytest.raises(AnsibleLookupError, match="cannot read bad.py"):
        closure("bad.py")


def test_the_lookup_takes_only_a_path_inside_the_collection():
    assert LookupModule().run([RELAY]) == closure(RELAY)
    for bad in ("/etc/passwd", "../x.py", None):
        with pytest.raises(AnsibleLookupError, match="relative to the collection"):
            LookupModule().run([bad])


def test_the_files_to_install_name_each_file_with_its_place_size_and_checksum():
    files = LookupModule().run([RELAY], install_as="relay.py", directory="/opt/relay/")
    assert files[0] == dict(program_closure._entry(RELAY, "relay.py", "/opt/relay"), dest="relay.py", path="/opt/relay/relay.py")
    with open(os.path.join(ROOT, RELAY), "rb") as handle:
        data = handle.read()
    assert (files[0]["size"], files[0]["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    assert files[0]["key"] == "/opt/relay/relay.py " + hashlib.sha1(data).hexdigest()   # as find reads it on the node
    assert [f["src"] for f in files[1:]] == ["plugins/module_utils/%s.py" % n for n in closure(RELAY)]
    text = [f for f in files if f["src"] == "plugins/module_utils/common/text.py"][0]
    assert text["dest"] == "ansible_collections/gpufabric/rdma/plugins/module_utils/common/text.py"
    assert text["path"] == "/opt/relay/" + text["dest"]


@pytest.mark.parametrize("options, message", [
    ({"install_as": "relay.py"}, "directory is the program's absolute directory on the node, got None"),
    ({"install_as": "bin/relay.py", "directory": "/opt/relay"}, "install_as is the program's file name in its directory, got 'bin/relay.py'"),
    ({"install_as": "relay.py", "directory": "opt/relay"}, "directory is the program's absolute directory on the node, got 'opt/relay'"),
    ({"install_as": "relay.py", "dir": "/opt/relay"}, "unknown option dir (it takes install_as and directory)"),
])
def test_the_files_to_install_need_a_file_name_and_an_absolute_directory(options, message):
    with pytest.raises(AnsibleLookupError, match=re.escape(message)):
        LookupModule().run([RELAY], **options)
