"""The fingerprint a configuration phase is compared by (plugin_utils.phases, filters phase_fingerprint, phase_entry,
phases_applied, phases_text; lookups phase_inputs, code_fingerprint): the same settings give the same fingerprint
whatever their order, any changed setting or code gives another, and only the phases that named what they applied
are recorded."""

import os
import subprocess
import sys

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.rdma.plugins.filter.phases import (
    phase_entry, phase_fingerprint, phases_applied, phases_text)
from ansible_collections.gpufabric.rdma.plugins.plugin_utils import phases

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
