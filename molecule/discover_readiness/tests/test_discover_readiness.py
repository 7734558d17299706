"""Discovery in a real container: the record matches the container, the modules read captured
hardware correctly on the managed node, and the readiness report reached the controller."""

import json
import os

CAPTURES = "/srv/gpufabric-captures"


def _record(host):
    facts = host.file("/etc/gpufabric/facts.json")
    assert facts.exists and facts.is_file
    assert facts.user == "root" and facts.group == "root"
    assert facts.mode == 0o644
    return json.loads(facts.content_string)


def test_record_is_sorted_json_with_schema(host):
    content = host.file("/etc/gpufabric/facts.json").content_string
    record = json.loads(content)
    assert record["schema"] == 1
    assert content == json.dumps(record, indent=4, sort_keys=True) + "\n"


def test_record_matches_the_container(host):
    record = _record(host)
    assert record["hostname"] == host.check_output("hostname -s")
    assert record["kernel"] == host.check_output("uname -r")
    assert record["architecture"] == host.check_output("uname -m")
    # Debian 11, 12 or 13 (the scenario runs on all three): the record says which.
    major = host.file("/etc/debian_version").content_string.split(".")[0].strip()
    assert record["os"].startswith("Debian %s" % major)
    assert record["cpus"] == int(host.check_output("nproc"))
    assert record["virtualization"] == "docker/guest"


def test_interfaces_match_sysfs(host):
    record = _record(host)
    names = sorted(host.check_output("ls /sys/class/net").split())
    expected = [n for n in names if n != "lo"]
    assert [i["name"] for i in record["interfaces"]] == expected
    for iface in record["interfaces"]:
        assert iface["mtu"] == int(host.file("/sys/class/net/%s/mtu" % iface["name"]).content_string)
    eth0 = next(i for i in record["interfaces"] if i["name"] == "eth0")
    assert eth0["ipv4"] in host.check_output("ip -4 -o addr show dev eth0")
    assert record["default_interface"] == host.check_output("ip -4 route show default").split()[4]


def test_bare_container_has_no_rdma_no_gpu_and_gets_the_socket_profile(host):
    record = _record(host)
    assert not host.file("/sys/class/infiniband").exists
    assert record["rdma_devices"] == []
    assert record["gpu"]["present"] is False and record["gpu"]["count"] == 0
    assert record["nccl"]["profile"] == "socket"
    assert record["nccl"]["env"] == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": record["default_interface"]}


def test_rdma_devices_on_a_captured_roce_tree(host):
    result = host.ansible("gpufabric.rdma.rdma_devices", "sysfs_root=%s/sysfs/roce_mlx5 use_verbs=false" % CAPTURES)
    devices = result["ansible_facts"]["rdma_devices"]
    assert [d["name"] for d in devices] == ["mlx5_0", "mlx5_1"]
    assert devices[0]["ports"][0]["roce_v2_gid_index"] == 3
    assert devices[0]["ports"][0]["gids"][3]["ipv4"] == "10.110.0.33"
    assert result["ansible_facts"]["rdma_summary"]["active_hcas"] == ["mlx5_0"]


def test_rdma_devices_on_a_captured_erdma_tree(host):
    result = host.ansible("gpufabric.rdma.rdma_devices", "sysfs_root=%s/sysfs/erdma" % CAPTURES)
    (device,) = result["ansible_facts"]["rdma_devices"]
    assert (device["driver"], device["transport"]) == ("erdma", "eRDMA")
    assert result["verbs"] is False     # no ibv_devinfo in the container: nothing to merge


def test_gpu_facts_with_the_nvidia_smi_standin(host):
    result = host.ansible("gpufabric.rdma.gpu_facts", "nvidia_smi_path=%s/nvidia-smi/nvidia-smi" % CAPTURES)
    gpu = result["ansible_facts"]["gpu"]
    assert gpu["present"] is True and gpu["count"] == 8 and gpu["driver_version"] == "580.159.04"
    assert gpu["nvlink"] is True
    assert gpu["topology"]["matrix"]["GPU0"]["GPU7"] == "NV18"
    assert gpu["peermem"] == {"loaded": False, "module": None}


def test_gpu_facts_without_nvidia_smi(host):
    result = host.ansible("gpufabric.rdma.gpu_facts")
    assert result["ansible_facts"]["gpu"]["present"] is False


def test_nccl_env_writes_once_and_respects_check_mode(host):
    args = "sysfs_root=%s/sysfs/erdma dest=/tmp/nccl.conf profile_script=/tmp/nccl.sh" % CAPTURES
    dry = host.ansible("gpufabric.rdma.nccl_env", args, check=True)
    assert dry["changed"] is True and not host.file("/tmp/nccl.conf").exists
    first = host.ansible("gpufabric.rdma.nccl_env", args, check=False, become=True)
    second = host.ansible("gpufabric.rdma.nccl_env", args, check=False, become=True)
    assert first["changed"] is True and second["changed"] is False
    assert first["profile"] == "erdma"
    lines = [l for l in host.file("/tmp/nccl.conf").content_string.splitlines() if not l.startswith("#")]
    assert lines[:3] == ["NCCL_SOCKET_IFNAME=eth0", "NCCL_IB_DISABLE=0", "NCCL_IB_GID_INDEX=1"]
    assert host.file("/tmp/nccl.conf").mode == 0o644
    assert "export NCCL_ALGO=Ring" in host.file("/tmp/nccl.sh").content_string


def test_discovery_keeps_what_mlxlink_read_in_the_record(host):
    """Issue 39: discovery_link_health ran the link_health module through the mlxlink stand-in."""
    links = _record(host)["link_health"]
    assert links["error"] is None and links["not_run"] is None
    assert [(link["device"], link["speed"], link["recommendation"]) for link in links["links"]] == [
        ("mlx5_0/1", "IB-SDR", "Cable speed not enabled")]


def test_readiness_report_reached_the_controller():
    report_dir = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "report")
    with open(os.path.join(report_dir, "readiness.json")) as handle:
        report = json.load(handle)
    assert report["ready"] is True   # a link mlxlink advises on is a warning: ready, and said
    nodes = report["nodes"]
    assert len(nodes) == 3  # one per Debian release
    for name, node in nodes.items():
        assert node["nccl"]["profile"] == "socket"
        # The stand-in's capture has no counter section: mlxlink -c gave no BER, so the port is unread too (issue 53).
        assert [(f["check"], f["target"]) for f in node["findings"]] == [
            ("link_recommendation", name + "/mlx5_0/1"), ("link_unread", name + "/mlx5_0/1")]
        assert "Cable speed not enabled" in node["findings"][0]["detail"]
        assert "mlxlink printed no BER" in node["findings"][1]["detail"]
    with open(os.path.join(report_dir, "readiness.md")) as handle:
        assert handle.read().startswith("# gpufabric.rdma readiness report\n\n**READY**")
