"""peermem and nccl_env roles in a real container: the persistence file is written, the load is
skipped with the reason, and the group's NCCL profile lands in /etc/nccl.conf and the profile script."""

import json
import os


def _decisions(host):
    # One file per platform: the three containers converge at once.
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "node_gpu-%s.json" % host.backend.get_hostname())
    with open(path) as handle:
        return json.load(handle)


def test_peermem_loads_at_boot(host):
    conf = host.file("/etc/modules-load.d/gpufabric-peermem.conf")
    assert conf.mode == 0o644
    assert conf.content_string.splitlines()[-1] == "nvidia_peermem"


def test_peermem_load_skipped_with_the_reason(host):
    plan = _decisions(host)["peermem"]
    assert plan == {"module": "nvidia_peermem", "action": "skip",
                    "reason": "a container: kernel modules belong to the host, load nvidia_peermem there"}
    assert host.run("grep -q nvidia_peermem /proc/modules").rc != 0


def test_nccl_conf_of_acs_type2_with_the_override(host):
    conf = host.file("/etc/nccl.conf").content_string.splitlines()
    assert "NCCL_IB_DISABLE=1" in conf and "NCCL_IB_HCA=" in conf and "NCCL_SOCKET_IFNAME=eth0" in conf
    assert "NCCL_DEBUG=WARN" in conf and "NCCL_DEBUG=INFO" not in conf
    script = host.file("/etc/profile.d/nccl.sh").content_string
    assert "export NCCL_IB_DISABLE=1" in script or "export NCCL_IB_DISABLE='1'" in script


def test_a_login_shell_sees_the_environment(host):
    assert host.check_output("bash -lc 'echo $NCCL_IB_DISABLE:$NCCL_SOCKET_IFNAME:$NCCL_DEBUG'") == "1:eth0:WARN"


def test_nccl_env_reasons_reported(host):
    result = _decisions(host)["nccl_env"]
    assert result["profile"] == "acs_rdma_type2"
    assert any(line.startswith("NCCL_IB_DISABLE=1") for line in result["reasons"])
