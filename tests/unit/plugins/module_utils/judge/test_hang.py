"""judge/hang: the RAS status of a hung job (captured on the GPU machine) joined with the health of each suspect's
node - a hardware finding, none (the application), or a check that could not read (unknown, never cleared)."""
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import hang
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nccl_ras

ASKED = [{"node": "gpu01", "answered": False, "stage": "connect", "kind": "refused", "msg": "cannot connect"},
         {"node": "gpu02", "answered": True}]
XID = {"check": "xid", "severity": "critical", "target": "gpu02/GPU1", "detail": "Xid 79 at 10:02 (fallen off the bus)",
       "fix_hint": "drain"}


def _status(read_fixture, name="hang_rank1_stopped_calling_2.28.9.txt"):
    return nccl_ras.parse_nccl_ras(read_fixture("nccl_ras", name))


def test_a_suspect_on_a_node_with_an_xid_is_hardware_and_goes_to_the_decider(read_fixture):
    health = {"gpu02": {"findings": [XID, {"check": "x", "severity": "info", "target": "gpu02", "detail": "d"}],
                        "complete": True}}
    report = hang.hang_report(_status(read_fixture), ASKED, health, {"192.0.2.2": "gpu02"}, job="4242")
    (suspect,) = report["suspects"]
    assert (report["verdict"], suspect["verdict"], suspect["host"], report["answered_by"]) == (
        "suspects", "hardware", "gpu02", "gpu02")
    assert suspect["line"] == ("rank 1 behind on node gpu02, GPU 1 (behind: launched AllReduce up to operation 29, "
                               "others up to 30); node gpu02: xid Xid 79 at 10:02 (fallen off the bus)")
    markdown = hang.render_markdown(report)
    assert markdown.startswith("# gpufabric.rdma hang report - job 4242\n\n**SUSPECTS**: 1 suspect(s): 1 with a hardware")
    assert "- gpu01 did not answer: cannot connect" in markdown


def test_a_suspect_on_a_clean_node_is_the_application_and_is_never_drained(read_fixture):
    report = hang.hang_report(_status(read_fixture), ASKED, {"gpu02": {"findings": [], "complete": True}},
                              {"192.0.2.2": "gpu02"})
    (suspect,) = report["suspects"]
    assert suspect["verdict"] == "application" and suspect["hardware"] == []
    assert suspect["line"].endswith("no hardware finding on gpu02: look at the application")


def test_a_node_not_checked_or_not_fully_read_is_unknown(read_fixture):
    incomplete = {"gpu02": {"findings": [], "complete": False, "unreadable": ["kernel log: permission denied"]}}
    report = hang.hang_report(_status(read_fixture), ASKED, incomplete, {"192.0.2.2": "gpu02"})
    assert report["suspects"][0]["verdict"] == "unknown" and "kernel log: permission denied" in report["suspects"][0]["line"]
    missing = hang.hang_report(_status(read_fixture), ASKED, {}, {})
    assert (missing["suspects"][0]["host"], missing["suspects"][0]["verdict"]) == ("192.0.2.2", "unknown")
    failed = hang.hang_report(_status(read_fixture), ASKED, {"gpu02": {"failed": True, "msg": "nvidia-smi hung"}},
                              {"192.0.2.2": "gpu02"})
    assert failed["suspects"][0]["verdict"] == "unknown" and "nvidia-smi hung" in failed["suspects"][0]["line"]


def test_a_healthy_job_and_a_job_nobody_answered_for(read_fixture):
    healthy = hang.hang_report(_status(read_fixture, "healthy_2rank_h200_2.28.9.txt"), ASKED)
    assert (healthy["verdict"], healthy["suspects"]) == ("healthy", [])
    assert hang.render_markdown(healthy).splitlines()[2].startswith("**HEALTHY**: NCCL sees every communicator")
    nobody = hang.hang_report(None, ASKED[:1], job="7")
    assert nobody["verdict"] == "unknown" and nobody["summary"] == (
        "no node of the job answered on NCCL's RAS port: gpu01 cannot connect")


def test_addresses_map_to_hosts_and_shared_ones_are_left_out():
    hosts = [{"inventory_hostname": "gpu01", "ansible_host": "10.0.0.1",
              "ansible_facts": {"hostname": "gpu01", "all_ipv4_addresses": ["10.0.0.1", "192.0.2.2", "172.17.0.1"]}},
             {"inventory_hostname": "gpu02", "ansible_facts": {"all_ipv4_addresses": ["10.0.0.2", "172.17.0.1", "127.0.0.1"]}},
             {"inventory_hostname": "gpu03", "ansible_facts": {}, "gpufabric_node_addresses": ["10.0.0.3", "fd00::3"]}]
    assert hang.address_map(hosts) == {"10.0.0.1": "gpu01", "10.0.0.2": "gpu02", "10.0.0.3": "gpu03", "192.0.2.2": "gpu01",
                                       "fd00::3": "gpu03", "gpu01": "gpu01", "gpu02": "gpu02", "gpu03": "gpu03"}
