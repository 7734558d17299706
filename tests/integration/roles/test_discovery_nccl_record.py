"""The NCCL environment has one owner (the nccl_env role). When it wrote the environment in this play - site.yml's
configure phase, before discovery refreshes the node's record - discovery does not compute a second recommendation:
the record carries what was written. A later run's discovery recommends from the same settings (unset included), so
the record, and facts.json, stay the same: a second site run changes nothing."""

import json
import os
import subprocess
import sys

PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    nccl_env_profile: socket
    nccl_env_socket_ifname: lo
    nccl_env_unset: [NCCL_DEBUG]
    nccl_env_conf: {tmp}/nccl.conf
    nccl_env_profile_script: {tmp}/nccl.sh
    gpufabric_local_facts_dir: {tmp}/facts.d
    discovery_facts_dir: {tmp}/gpufabric
    discovery_sysfs_root: {tmp}/sys
    discovery_procfs_root: {tmp}/proc
    discovery_use_verbs: false
  tasks:
    - name: Write the NCCL environment first (the configure phase)
      ansible.builtin.include_role:
        name: gpufabric.rdma.nccl_env
      when: write | bool
    - name: Discover
      ansible.builtin.include_role:
        name: gpufabric.rdma.discovery
    - name: Show the record's NCCL environment
      ansible.builtin.debug:
        msg: "RECORD {{{{ discovery_node.nccl.env | to_json }}}} WRITTEN {{{{ (nccl_env_result.env | default(none)) | to_json }}}}"
"""


def _run(tmp_path, write):
    (tmp_path / "sys").mkdir(exist_ok=True)
    (tmp_path / "proc").mkdir(exist_ok=True)
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(tmp=tmp_path))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    run = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play), "-e", "write=%s" % write,
                          "-e", "ansible_python_interpreter=%s" % sys.executable],
                         capture_output=True, text=True, timeout=300, env=env, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


def _shown(out):
    line = next(line for line in out.splitlines() if '"msg": "RECORD ' in line)
    text = json.loads(line.split('"msg": ', 1)[1])
    record, written = text[len("RECORD "):].split(" WRITTEN ")
    return json.loads(record), json.loads(written)


def test_discovery_after_nccl_env_carries_what_was_written_and_computes_nothing(tmp_path):
    out = _run(tmp_path, "true")
    record, written = _shown(out)
    assert written and record == written and "NCCL_DEBUG" not in record
    assert "skipping: [localhost]" in out.split("Recommend the NCCL environment (nccl_env has not written one in this play)")[1].split("TASK [")[0]
    facts = (tmp_path / "gpufabric" / "facts.json").read_text()
    # A later run: discovery alone recommends from the same settings; the record is the same, facts.json unchanged.
    out = _run(tmp_path, "false")
    record_again, ignored = _shown(out)
    assert record_again == record
    assert (tmp_path / "gpufabric" / "facts.json").read_text() == facts
