"""The fingerprint a configuration phase is compared by (plugin_utils.phases, filters phase_fingerprint, phase_entry,
phases_applied, phases_text; lookups phase_inputs, code_fingerprint): the same settings give the same fingerprint
whatever their order, any changed setting or code gives another, and only the phases that named what they applied
are recorded."""

import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.rdma.plugins.filter.phases import (
    phase_entry, phase_fingerprint, phases_applied, phases_text)
from ansible_collections.gpufabric.rdma.plugins.plugin_utils import phases
from paths import ROOT

CODE = "c" * 64


def test_a_fingerprint_follows_the_settings_not_their_order():
    one = phase_fingerprint({"rdma_network_mtu": 9000, "rdma_network_interfaces": [{"name": "eth2"}]}, "network", CODE)
    assert one == phase_fingerprint({"rdma_network_interfaces": [{"name": "eth2"}], "rdma_network_mtu": 9000}, "network", CODE)
    assert len(one) == 64 and int(one, 16) >= 0
    assert one != phase_fingerprint({"rdma_network_mtu": 4200, "rdma_network_interfaces": [{"name": "eth2"}]}, "network", CODE)
    assert one != phase_fingerprint({"rdma_network_mtu": 9000, "rdma_network_interfaces": [{"name": "eth2"}]}, "network", "d" * 64)
    assert one != phase_fingerprint({"rdma_network_mtu": 9000, "rdma_network_interfaces": [{"name": "eth2"}]}, "peermem", CODE)
    assert phase_entry({"key": "network", "value": {"rdma_network_mtu": 9000}}, CODE) == {
        "name": "network", "fingerprint": phase_fingerprint({"rdma_network_mtu": 9000}, "network", CODE)}


def test_code_fingerprint_is_the_manifest_when_installed_else_the_files(tmp_path):
    (tmp_path / "roles" / "r").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "main.yml").write_text("a\n")
    checkout = phases.code_fingerprint(str(tmp_path))
    (tmp_path / "roles" / "r" / "main.yml").write_text("b\n")
    assert phases.code_fingerprint(str(tmp_path)) != checkout
    (tmp_path / "MANIFEST.json").write_text('{"collection_info": {"version": "1.0.0"}}')
    installed = phases.code_fingerprint(str(tmp_path))
    (tmp_path / "roles" / "r" / "main.yml").write_text("c\n")  # FILES.json's checksum speaks for an installed tree
    assert phases.code_fingerprint(str(tmp_path)) == installed != checkout


def test_an_entry_carries_what_its_phase_must_observe_and_publishes():
    declared = {"mpi": {"observes": ["files"], "publishes": {"openmpi_mpirun": "path"}}, "network": {"observes": []},
                "drivers": None}
    item = {"key": "mpi", "value": {"openmpi_provider": "packages"}}
    assert phase_entry(item, CODE, declared) == dict(phase_entry(item, CODE), observes=["files"],
                                                     publishes={"openmpi_mpirun": "path"})
    assert phase_entry({"key": "network", "value": {}}, CODE, declared)["observes"] == []
    assert "observes" not in phase_entry({"key": "drivers", "value": {}}, CODE, declared)  # nothing declared
    # The record step gets the declaration back from the check and passes it on with what the phase applied.
    entry = phase_entry(item, CODE, declared)
    assert phases_applied([entry], {"mpi": {"files": ["/usr/bin/mpirun"], "facts": {"openmpi_mpirun": "/usr/bin/mpirun"}}}) \
        == [dict(entry, evidence={"files": ["/usr/bin/mpirun"]}, facts={"openmpi_mpirun": "/usr/bin/mpirun"})]


def test_only_phases_that_named_what_they_applied_are_recorded():
    entries = [{"name": "drivers", "fingerprint": "1" * 64}, {"name": "network", "fingerprint": "2" * 64}]
    evidence = {"drivers": None, "network": {"netdev": [{"name": "eth2"}], "files": [], "facts": {"x": 1}}}
    assert phases_applied(entries, evidence) == [{"name": "network", "fingerprint": "2" * 64,
                                                  "evidence": {"netdev": [{"name": "eth2"}]}, "facts": {"x": 1}}]
    assert phases_text({"network": "no record of it on this node"}) == ["network runs: no record of it on this node"]


@pytest.mark.parametrize("call, message", [
    (lambda: phase_fingerprint({}, "Net work", CODE), "the phase name must be lowercase"),
    (lambda: phases_applied([{"name": "network"}], {"network": "eth2"}), "phase network: what it applied must be a dict"),
    (lambda: phase_entry(["network"], CODE), "expects an item of dict2items"),
    (lambda: phase_entry({"key": "mpi", "value": {}}, CODE, {"network": {}}), "phase mpi has no declaration of what it "
                                                                              r"observes and publishes \(declared: network\)"),
    (lambda: phase_entry({"key": "mpi", "value": {}}, CODE, {"mpi": {"facts": []}}), "its declaration must be"),
    (lambda: phase_entry({"key": "mpi", "value": {}}, CODE, {"mpi": {"observes": "files"}}), "observes: a list"),
])
def test_bad_input_is_a_filter_error_naming_it(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    rdma_network_mtu: 9000
    rdma_network_interfaces: [{name: "{{ nic }}"}]
    rdma_network_broken: "{{ no_such_variable }}"
    rdma_networks_other: 1
    peermem_module: auto
  tasks:
    - name: Show what the network phase reads
      ansible.builtin.debug:
        msg: "INPUTS {{ lookup('gpufabric.rdma.phase_inputs', 'rdma_network_') | to_json }}"
    - name: Show the code fingerprint
      ansible.builtin.debug:
        msg: "CODE {{ lookup('gpufabric.rdma.code_fingerprint') }}"
"""


def test_phase_inputs_are_the_templated_settings_with_the_prefix(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    run = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play), "-e", "nic=eth2",
                          "-e", "ansible_python_interpreter=%s" % sys.executable],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ, ANSIBLE_NOCOLOR="1"), check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    shown = run.stdout.split('"msg": "INPUTS ', 1)[1].split('"\n', 1)[0].replace('\\"', '"')
    # Templated (eth2 from the extra var), only rdma_network_*, and an untemplatable value kept as its text.
    assert shown == ('{"rdma_network_broken": "{{ no_such_variable }}", "rdma_network_interfaces": [{"name": "eth2"}], '
                     '"rdma_network_mtu": 9000}')
    code = run.stdout.split('"msg": "CODE ', 1)[1][:64]
    assert code == phases.code_fingerprint()


PLAYBOOKS = os.path.join(ROOT, "playbooks")
ROLES = os.path.join(PLAYBOOKS, "..", "roles")


def _applied_by_role():
    """{phase: (role, {kind or 'facts': its Jinja text})} from configure_phases.yml's evidence and the roles' tasks."""
    with open(os.path.join(PLAYBOOKS, "tasks", "configure_phases.yml")) as handle:
        record = [task for task in yaml.safe_load(handle) if "gpufabric.rdma.applied" in task][0]
    out = {}
    for phase, text in record["vars"]["__configure_evidence"].items():
        fact = re.match(r"\{\{ (\w+)_applied \| default\(none\) \}\}", text).group(1) + "_applied"
        role = fact[:-len("_applied")]
        with open(os.path.join(ROLES, role, "tasks", "main.yml")) as handle:
            named = [task["ansible.builtin.set_fact"][fact] for task in yaml.safe_load(handle)
                     if fact in (task.get("ansible.builtin.set_fact") or {})]
        assert len(named) == 1, (phase, fact)
        out[phase] = (role, named[0])
    return out


def test_what_configure_declares_of_each_phase_is_what_its_role_names():
    """configure.yml's declaration and the roles' <role>_applied facts are two places; this holds them equal: each
    kind a phase must observe is one its role names, each fact it publishes is one its role publishes (and no other),
    and each role default the declaration falls back on is the role's own."""
    with open(os.path.join(PLAYBOOKS, "configure.yml")) as handle:   # the play after the preflight
        play = next(play for play in yaml.safe_load(handle) if play["name"] == "Configure the nodes")
    declared, inputs = play["vars"]["__configure_declared"], play["vars"]["__configure_inputs"]
    applied = _applied_by_role()
    assert sorted(declared) == sorted(inputs) == sorted(applied)
    for phase, own in declared.items():
        role, named = applied[phase]
        observes = own.get("observes")
        kinds = observes if isinstance(observes, list) else re.findall(r"\['(\w+)'\]", observes)
        assert kinds and set(kinds) <= set(named) - {"facts"}, (phase, kinds, sorted(named))
        facts = set(re.findall(r"'(\w+)': ", named.get("facts", "")))
        assert facts == set(own.get("publishes") or {}), (phase, facts, own.get("publishes"))
        with open(os.path.join(ROLES, role, "defaults", "main.yml")) as handle:
            defaults = yaml.safe_load(handle)
        for variable, default in re.findall(r"(\w+) \| default\(([^)]*)\)", observes if isinstance(observes, str) else ""):
            assert variable in defaults and defaults[variable] == yaml.safe_load(default), (phase, variable, default)
