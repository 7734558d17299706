"""The discovery role's record matches what the container really has."""

import json


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
    assert record["os"].startswith("Debian 12")
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


def test_no_rdma_or_gpu_in_a_container(host):
    record = _record(host)
    assert not host.file("/sys/class/infiniband").exists
    assert record["rdma_devices"] == []
    assert record["gpu_count"] == 0
