"""The topology role against a real slurmctld (Debian 13, Slurm 24.11): the generated topology.conf is what
`scontrol show topology` lists - tree, then block - a second run changes nothing, and a TopologyPlugin in a
file slurm.conf includes is refused, with nothing written."""

import json
import os
import re
import subprocess

SCENARIO = os.environ.get("MOLECULE_SCENARIO_DIRECTORY", "")
REPORT = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"), "topology")


def _play(*extra, report=None):
    proc = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], os.path.join(SCENARIO, "converge.yml")]
        + (["-e", "topology_report_dir=" + report] if report else []) + list(extra),
        capture_output=True, text=True, timeout=600, check=False)
    return proc, " ".join((proc.stdout + proc.stderr).split())


def _topology(host):
    """`scontrol show topology` as {name: {key: value}} (SwitchName or BlockName lines)."""
    shown = {}
    for line in host.check_output("scontrol show topology").splitlines():
        fields = dict(field.split("=", 1) for field in line.split() if "=" in field)
        name = fields.get("SwitchName") or fields.get("BlockName")
        if name:
            shown[name] = fields
    return shown


def test_tree_is_what_slurm_shows(host):
    conf = host.file("/etc/slurm/topology.conf").content_string
    generated = set(re.match(r"SwitchName=(\S+)", line).group(1) for line in conf.splitlines() if line.startswith("SwitchName="))
    shown = _topology(host)
    assert set(shown) == {"leaf01", "leaf1", "leaf2", "spine1", "top"} and set(shown) == set(generated)
    assert shown["leaf1"]["Nodes"] == "gpu[01-04]" and shown["leaf2"]["Nodes"] == "gpu[05-08]"
    assert shown["spine1"]["Switches"] == "leaf[1-2]"
    # the controller's leaf came from its LLDP neighbours (the first of its two NICs' leaves), the rest from the map
    assert shown["leaf01"]["Nodes"] == "gpufabric-topology-ctl"
    assert shown["top"]["Switches"] == "leaf01,spine1"
    assert "TopologyPlugin=topology/tree # managed by gpufabric.rdma" in host.file("/etc/slurm/slurm.conf").content_string
    assert re.search(r"^TopologyPlugin\s*=\s*topology/tree$", host.check_output("scontrol show config"), re.M)
    labels = json.load(open(os.path.join(REPORT, "node-labels.json")))
    assert labels["gpu05"] == {"gpufabric.io/leaf": "leaf2"}


def test_check_mode_shows_the_block_topology_and_changes_and_waits_for_nothing(host, tmp_path):
    """The README's first topology command: --check --diff shows what would be written, exits 0, waits on no handler."""
    before = host.file("/etc/slurm/topology.conf").content_string
    proc, said = _play("-e", "@" + os.path.join(SCENARIO, "vars", "block.yml"), "--check", "--diff", report=str(tmp_path))
    assert proc.returncode == 0, said[-2000:]
    assert "+BlockName=block1 Nodes=gpu[01-04]" in proc.stdout and "RETRYING" not in proc.stdout
    assert host.file("/etc/slurm/topology.conf").content_string == before
    assert re.search(r"^TopologyPlugin\s*=\s*topology/tree$", host.check_output("scontrol show config"), re.M)


def test_block_then_a_second_run_changes_nothing(host, tmp_path):
    block = os.path.join(SCENARIO, "vars", "block.yml")
    proc, said = _play("-e", "@" + block, report=str(tmp_path))
    assert proc.returncode == 0, said[-2000:]
    shown = _topology(host)
    assert set(k for k in shown if k.startswith("block")) == {"block1", "block2"}
    assert shown["block1"]["Nodes"] == "gpu[01-04]" and shown["block2"]["Nodes"] == "gpu[05-08]"
    assert re.search(r"^TopologyPlugin\s*=\s*topology/block$", host.check_output("scontrol show config"), re.M)
    assert "BlockSizes=2,4" in host.file("/etc/slurm/topology.conf").content_string
    proc, said = _play("-e", "@" + block, report=str(tmp_path))
    assert proc.returncode == 0 and re.search(r"gpufabric-topology-ctl : ok=\d+ changed=0 ", said), said[-2000:]
    labels = json.loads((tmp_path / "node-labels.json").read_text())
    assert labels["gpu08"] == {"gpufabric.io/nvlink-domain": "block2"}


def test_a_topology_plugin_in_an_included_file_is_refused(host, tmp_path):
    before = host.file("/etc/slurm/topology.conf").content_string
    host.run_expect([0], "cp /etc/slurm/slurm.conf /root/slurm.conf.orig")
    host.run_expect([0], "echo TopologyPlugin=topology/tree > /etc/slurm/site-topology.conf && "
                         "echo 'Include /etc/slurm/site-topology.conf' >> /etc/slurm/slurm.conf")
    try:
        proc, said = _play(report=str(tmp_path))
        assert proc.returncode != 0
        assert ("TopologyPlugin=topology/tree in /etc/slurm/site-topology.conf line 1 is set in a file that "
                "/etc/slurm/slurm.conf includes") in said
        assert host.file("/etc/slurm/topology.conf").content_string == before
    finally:
        host.run_expect([0], "cp /root/slurm.conf.orig /etc/slurm/slurm.conf && rm -f /etc/slurm/site-topology.conf")
