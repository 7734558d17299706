"""Discovery's link and NIC firmware readings on a node they cannot read (issue 52, "not run looks healthy"):
``discovery_link_health: true`` is taken (the defaults), a node with no NVIDIA HCA or card keeps a "not run" of each
in its record and readiness shows both, and a port an HCA cannot have stops discovery, naming the value."""

import json
import os
import subprocess
import sys

from argspecs import validate
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import readiness

PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    discovery_write_facts: false
    discovery_sysfs_root: {tmp}/sys
    discovery_procfs_root: {tmp}/proc
    discovery_use_verbs: false
    discovery_nccl_profile: socket
    discovery_nccl_socket_ifname: lo
  tasks:
    - name: Discover
      ansible.builtin.include_role:
        name: gpufabric.rdma.discovery
    - name: Show the record's link and firmware readings
      ansible.builtin.debug:
        msg: "RECORD {{{{ {{'link_health': discovery_node.link_health | default(none),
                             'nic_firmware': discovery_node.nic_firmware | default(none)}} | to_json }}}}"
"""


def _play(tmp_path, **extra):
    for name in ("sys/class/infiniband", "proc"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(tmp=tmp_path))
    argv = ["ansible-playbook", "-i", "localhost,", "-c", "local", str(play),
            "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", json.dumps(extra)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))


def test_true_is_a_valid_discovery_link_health():
    assert validate("discovery", {"discovery_link_health": True}) == []
    assert validate("discovery", {"discovery_link_health": {"devices": ["mlx5_0"]}}) == []


def test_a_node_without_an_nvidia_hca_keeps_a_not_run_of_each_and_readiness_shows_them(tmp_path):
    run = _play(tmp_path, discovery_link_health=True, discovery_nic_firmware={"profiles": ["roce_lossless"]})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    line = next(line for line in run.stdout.splitlines() if '"msg": "RECORD ' in line)
    record = json.loads(json.loads(line.split('"msg": ', 1)[1])[len("RECORD "):])
    assert record["link_health"]["not_run"] == "no NVIDIA HCA (an mlx4_ or mlx5_ RDMA device) on this node: no link was read"
    assert record["link_health"]["error"] is None and record["nic_firmware"]["error"] is None
    assert record["nic_firmware"]["not_run"].startswith("not run: no NVIDIA (Mellanox) card under ")
    report = readiness.build_report({"localhost": record})
    assert sorted(f["check"] for f in report["nodes"]["localhost"]["findings"]) == ["link_unread", "nic_firmware_unread"]
    assert readiness.render_text(report).startswith("READY: 0 critical, 2 warning")


def test_a_port_an_hca_cannot_have_stops_discovery_naming_it(tmp_path):
    run = _play(tmp_path, discovery_link_health={"port": 2})
    flat = " ".join(run.stdout.split())
    assert run.returncode != 0 and "RECORD" not in flat
    assert "TASK [gpufabric.rdma.discovery : Read each HCA port with mlxlink] " in flat
    assert "link_health port must be 1, got 2: " in flat
