"""judge/nvlink_fabric.py: a node's NVLink fabric judged without crying wolf, on real captures - NVIDIA's
nvidia-smi -q -x of GB200 and GB300 trays, H100 and B200 HGX boards, an A100 VM and an L40S (k8s-test-infra), the
stuck GB200 of Azure/azhpc-images#506 (Insufficient Resources, CliqueId 0, zero ClusterUUID), the Unhealthy GB200 of
dra-driver-nvidia-gpu#626, and nvidia-smi nvlink -s / -e of GB200, A100 and H100. Sources:
tests/unit/fixtures/README.md."""


import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge.nvlink_fabric import nvlink_fabric_findings, sku_links
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import parse_nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvlink import parse_nvlink_errors, parse_nvlink_status
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError
from paths import fixture_text


read = fixture_text


def fabric(name):
    return parse_nvidia_smi_fabric(read("nvidia_smi_fabric", name))


def checks(found):
    return [(f["check"], f["severity"], f["target"]) for f in found]


GB300_TEXT = read("nvidia_smi_fabric", "q_gb300x4_constructed.txt")
GB200_LINKS = read("nvlink", "status_gb200_k8stestinfra371.txt")


def test_healthy_gb200_and_gb300_trays_give_nothing():
    assert nvlink_fabric_findings(fabric("qx_gb200x4_k8stestinfra.xml")) == []
    assert nvlink_fabric_findings(fabric("qx_gb300x4_k8stestinfra.xml"), {"domain": True}) == []
    assert nvlink_fabric_findings(fabric("qx_gb200x4_k8stestinfra.xml"), status=parse_nvlink_status(GB200_LINKS)) == []


def test_hgx_boards_with_a_zero_uuid_expect_no_domain():
    """H100 and B200 HGX boards register with the fabric manager (Completed/Success) but their NVLink ends at the node:
    ClusterUUID all zeros, CliqueId 0. The B200 even says 'Switch Connected'; neither names a rack's chassis."""
    assert nvlink_fabric_findings(fabric("qx_h100x8_k8stestinfra.xml")) == []
    assert nvlink_fabric_findings(fabric("qx_b200x8_k8stestinfra.xml")) == []
    assert nvlink_fabric_findings(fabric("q_h100_della_jdh4.txt")) == []
    told = nvlink_fabric_findings(fabric("qx_h100x8_k8stestinfra.xml"), {"domain": True})
    assert checks(told)[0] == ("nvlink_fabric_domain", "critical", "GPU 0 (00000000:53:00.0)") and len(told) == 8
    assert told[0]["detail"] == ("GPU 0 (00000000:53:00.0): ClusterUUID all zeros and CliqueId 0: the GPU is in no "
                                 "NVLink domain where one is expected")


def test_a_gpu_whose_fabric_is_n_a_gives_nothing():
    for name in ("qx_l40s_k8stestinfra.xml", "qx_a100_vm_k8stestinfra.xml"):
        assert nvlink_fabric_findings(fabric(name), {"domain": True}) == [], name


def test_a_tray_stuck_in_registration_is_critical_once():
    stuck = fabric("q_gb200_insufficient_resources_azhpc506.txt")
    for expected in (None, {"domain": True}):
        found = nvlink_fabric_findings(stuck, expected)
        assert checks(found) == [("nvlink_fabric_registration", "critical", "GPU 0")]
        assert found[0]["detail"] == ("GPU 0: fabric registration Completed with Status Insufficient Resources "
                                      "(CliqueId 0, ClusterUUID all zeros)")
    waiting = nvlink_fabric_findings(parse_nvidia_smi_fabric(GB300_TEXT.replace(": Completed", ": In Progress", 1)))
    assert checks(waiting) == [("nvlink_fabric_registration", "warning", "GPU 0 (00000008:06:00.0)")]
    assert "In Progress, not Completed" in waiting[0]["detail"]


def test_a_gb300_tray_out_of_its_domain_is_critical():
    """A tray names its rack's chassis, so it belongs in the rack's NVLink domain: a zero UUID or CliqueId 0 there is
    the fabric not set up for it, even though registration says Completed/Success."""
    lost = GB300_TEXT.replace("CliqueId                                       : 32766",
                              "CliqueId                                       : 0", 1)
    found = nvlink_fabric_findings(parse_nvidia_smi_fabric(lost))
    assert checks(found) == [("nvlink_fabric_domain", "critical", "GPU 0 (00000008:06:00.0)")]
    assert "CliqueId 0" in found[0]["detail"]
    # told that no domain is expected, GPUs of which some are in a domain and one is not still disagree
    assert checks(nvlink_fabric_findings(parse_nvidia_smi_fabric(lost), {"domain": False})) == [
        ("nvlink_fabric_clique", "critical", "GPU 0, 1, 2, 3")]


def test_gpus_of_one_node_in_different_cliques():
    split = parse_nvidia_smi_fabric(GB300_TEXT.replace(": 32766", ": 32767", 2))
    found = nvlink_fabric_findings(split)
    assert checks(found) == [("nvlink_fabric_clique", "critical", "GPU 0, 1, 2, 3")]
    assert found[0]["detail"] == ("the node's GPUs are in different NVLink cliques: "
                                  "00000001-0000-0000-0000-000000000001/32766 (GPU 2, 3), "
                                  "00000001-0000-0000-0000-000000000001/32767 (GPU 0, 1)")


def test_unhealthy_is_critical_and_limited_capacity_a_warning():
    found = nvlink_fabric_findings(fabric("q_gb200_fabric_grep_dra626.txt"))
    assert checks(found) == [("nvlink_fabric_health", "critical", "GPU 0")]
    assert found[0]["detail"] == "GPU 0: fabric health Summary is Unhealthy (Bandwidth Full)"
    limited = GB300_TEXT.replace("Summary                                    : Healthy",
                                 "Summary                                    : Limited Capacity", 1).replace(
        "Bandwidth                                  : Full", "Bandwidth                                  : Degraded", 1)
    found = nvlink_fabric_findings(parse_nvidia_smi_fabric(limited))
    assert checks(found) == [("nvlink_fabric_health", "warning", "GPU 0 (00000008:06:00.0)")]
    assert found[0]["detail"] == "GPU 0 (00000008:06:00.0): fabric health Summary is Limited Capacity (Bandwidth Degraded)"


def test_without_a_summary_row_a_bad_row_is_a_warning():
    older = GB300_TEXT.replace("            Summary                                    : Healthy\n", "").replace(
        "Route Unhealthy                            : False", "Route Unhealthy                            : True", 1)
    found = nvlink_fabric_findings(parse_nvidia_smi_fabric(older))
    assert checks(found) == [("nvlink_fabric_health", "warning", "GPU 0 (00000008:06:00.0)")]
    assert found[0]["detail"] == "GPU 0 (00000008:06:00.0): fabric health Route Unhealthy is True (no Summary row)"


def test_links_below_the_skus_count_and_speed():
    lines = GB200_LINKS.replace("         Link 17: 53.125 GB/s\n", "", 1).replace(
        "Link 4: 53.125 GB/s", "Link 4: <inactive>", 1).replace("Link 9: 53.125 GB/s", "Link 9: 26.562 GB/s", 1)
    found = nvlink_fabric_findings(fabric("qx_gb200x4_k8stestinfra.xml"), status=parse_nvlink_status(lines))
    assert checks(found) == [("nvlink_links", "warning", "GPU 0"), ("nvlink_links", "warning", "GPU 0")]
    assert found[0]["detail"] == "GPU 0 (NVIDIA GB200): 16 of its 18 NVLinks active (link 4 inactive, 1 not listed)"
    assert found[1]["detail"] == "GPU 0 (NVIDIA GB200): link 9 at 26.562 GB/s, 53.125 expected"
    dead = "\n".join(line if not line.strip().startswith("Link") else line.split(":")[0] + ": <inactive>"
                     for line in GB200_LINKS.splitlines()[:20])
    assert checks(nvlink_fabric_findings(fabric("qx_gb200x4_k8stestinfra.xml"), status=parse_nvlink_status(dead))) == [
        ("nvlink_links", "critical", "GPU 0")]


def test_an_h100_pcie_has_twelve_links_and_that_is_normal():
    a100 = read("nvlink", "status_a100x8_gpud.txt")
    assert nvlink_fabric_findings(fabric("qx_a100_vm_k8stestinfra.xml"), status=parse_nvlink_status(a100)) == []
    pcie = parse_nvlink_status(a100.replace("NVIDIA A100-SXM4-80GB", "NVIDIA H100 PCIe"))
    assert nvlink_fabric_findings(fabric("qx_h100x8_k8stestinfra.xml"), status=pcie) == []
    sxm = parse_nvlink_status(a100.replace("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"))
    found = nvlink_fabric_findings(fabric("qx_h100x8_k8stestinfra.xml"), status=sxm)
    assert len(found) == 16 and checks(found)[0] == ("nvlink_links", "warning", "GPU 0")
    assert found[0]["detail"] == "GPU 0 (NVIDIA H100 80GB HBM3): 12 of its 18 NVLinks active (6 not listed)"
    assert found[1]["detail"] == "GPU 0 (NVIDIA H100 80GB HBM3): links 0-11 at 25 GB/s, 26.562 expected"
    assert (sku_links("NVIDIA H100 PCIe"), sku_links("NVIDIA GB300"), sku_links("Tesla T4")) == (
        {"links": 12, "link_gbps": None, "bridged": True}, {"links": 18, "link_gbps": 53.125, "bridged": False}, None)


def test_a_pcie_card_without_its_bridge_and_an_elided_listing_say_nothing():
    unbridged = parse_nvlink_status("GPU 0: NVIDIA H100 PCIe (UUID: GPU-1)\n         Link 0: <inactive>\n")
    assert nvlink_fabric_findings(fabric("qx_l40s_k8stestinfra.xml"), status=unbridged) == []
    elided = parse_nvlink_status(read("nvlink", "status_h100_elided_mlengineering.txt"))
    assert nvlink_fabric_findings(fabric("qx_h100x8_k8stestinfra.xml"), status=elided) == []
    told = nvlink_fabric_findings(fabric("qx_l40s_k8stestinfra.xml"), {"links": 4}, status=unbridged)
    assert checks(told) == [("nvlink_links", "critical", "GPU 0")]


def test_rising_link_error_counters_come_from_the_nvlink_reader():
    before = read("nvlink", "errors_h100_mlengineering.txt")
    after = before.replace("Link 17: Recovery Errors: 0", "Link 17: Recovery Errors: 3")
    found = nvlink_fabric_findings(fabric("qx_h100x8_k8stestinfra.xml"), errors_before=parse_nvlink_errors(before),
                                   errors_after=parse_nvlink_errors(after))
    assert checks(found) == [("nvlink_errors", "critical", "GPU 0 link 17")]
    assert found[0]["detail"] == "recovery errors rose by 3 (0 -> 3)"


@pytest.mark.parametrize("expected, message", [
    ("yes", "expected must be a mapping"),
    ({"domain": "yes"}, "expected.domain must be true, false or null, got 'yes'"),
    ({"links": -1}, "expected.links must be a whole number of 0 or more, got -1"),
    ({"links": True}, "expected.links must be a whole number of 0 or more, got True"),
    ({"link_gbps": float("nan")}, "expected.link_gbps must be a positive finite number, got nan"),
    ({"sku": "GB200"}, "expected has unknown key(s) sku; it takes domain, links, link_gbps"),
])
def test_expected_is_checked_and_names_the_value(expected, message):
    with pytest.raises(ToolTextError) as caught:
        nvlink_fabric_findings(fabric("qx_gb200x4_k8stestinfra.xml"), expected)
    assert message in str(caught.value)
    with pytest.raises(ToolTextError, match="parse_nvidia_smi_fabric's result"):
        nvlink_fabric_findings({"gpus": "x"})
