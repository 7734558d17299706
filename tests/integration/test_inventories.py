"""The example inventories (inventories/examples/*): they parse, site/health/burnin accept them,
and every role variable they set is an option that role documents."""

import glob
import json
import os
import subprocess

import pytest
import yaml

from argspecs import options as role_options, role_of
from paths import ROOT

EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "inventories", "examples", "*", "hosts.yml")))


def test_there_is_one_example_per_fabric():
    assert [os.path.basename(os.path.dirname(p)) for p in EXAMPLES] == ["erdma-alibaba", "infiniband", "roce-baremetal"]


@pytest.mark.parametrize("hosts", EXAMPLES, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_inventory_parses_and_playbooks_accept_it(hosts):
    inventory = os.path.dirname(hosts)
    listed = subprocess.run(["ansible-inventory", "-i", inventory, "--list"], capture_output=True, text=True,
                            timeout=120, check=False)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    nodes = data["gpu_nodes"]["hosts"]
    assert len(nodes) >= 2
    assert data["_meta"]["hostvars"][nodes[0]]["nccl_env_profile"] in ("erdma", "roce", "infiniband")
    for playbook in ("site.yml", "health.yml", "burnin.yml"):
        check = subprocess.run(["ansible-playbook", "-i", inventory, "--syntax-check",
                                os.path.join(ROOT, "playbooks", playbook)],
                               capture_output=True, text=True, timeout=120, check=False)
        assert check.returncode == 0, (playbook, check.stdout[-2000:], check.stderr[-2000:])


@pytest.mark.parametrize("hosts", EXAMPLES, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_every_role_variable_is_documented(hosts):
    checked = 0
    for path in glob.glob(os.path.join(os.path.dirname(hosts), "group_vars", "*.yml")):
        with open(path) as handle:
            variables = yaml.safe_load(handle) or {}
        for name in variables:
            role = role_of(name)
            if role is None:
                continue
            assert name in set(role_options(role)), "%s: %s is not an option of role %s" % (path, name, role)
            checked += 1
    assert checked >= 8


def test_the_check_catches_a_typo():
    assert role_of("rdma_network_mtus") == "rdma_network" and "rdma_network_mtus" not in set(role_options("rdma_network"))
    assert role_of("nccl_tests_min_busbw") == "nccl_tests"  # not "nccl"


def test_the_example_ansible_cfg_sets_what_the_scale_section_says():
    """inventories/examples/ansible.cfg as ansible-config reads it: forks, the fact cache, linear, pipelining and one
    SSH connection per host for the run (README "Running at scale")."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "inventories", "examples", "ansible.cfg"))
    dump = subprocess.run(["ansible-config", "dump", "--only-changed", "--format", "json"], capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    assert dump.returncode == 0, dump.stderr
    changed = dict((item["name"], item["value"]) for item in json.loads(dump.stdout) if "name" in item)
    assert changed["DEFAULT_FORKS"] == 50 and changed["DEFAULT_STRATEGY"] == "linear"
    assert changed["CACHE_PLUGIN"] == "jsonfile" and changed["DEFAULT_GATHERING"] == "smart"
