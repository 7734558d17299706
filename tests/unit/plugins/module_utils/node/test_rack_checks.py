"""The node side of the rack (issue 55): node_health and the health monitor send the node's NVLink domain from the
`nvidia-smi -q -x` the checks read (nvidia-smi is run once); the nvlink_fabric check judges each GPU's fabric; the
imex check reads `nvidia-imex-ctl -N -j` only where a domain is expected, under the command timeout - missing is
"not run" in its own words, hung or foreign output a source that could not be read, never a pass. On real captures:
k8s-test-infra's GB200/H100/L40S XML, azhpc-images#506 (stuck registration), dra-driver#626 (Unhealthy), aws-
parallelcluster's `-N -j` (UP, unconfigured DOWN)."""

import json
import os
import stat
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import protocol
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, node_checks
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import imex as imex_check
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import nvlink_fabric as fabric_check
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import parse_nvidia_smi_fabric
from paths import ROOT

FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
STANDIN = os.path.join(ROOT, "tests", "lab", "nvidia-smi-standin", "nvidia-smi")
GB200 = os.path.join(FIXTURES, "nvidia_smi_fabric", "qx_gb200x4_k8stestinfra.xml")
H100 = os.path.join(FIXTURES, "nvidia_smi_fabric", "qx_h100x8_k8stestinfra.xml")
L40S = os.path.join(FIXTURES, "nvidia_smi_fabric", "qx_l40s_k8stestinfra.xml")
STUCK = os.path.join(FIXTURES, "nvidia_smi_fabric", "q_gb200_insufficient_resources_azhpc506.txt")
UNHEALTHY = os.path.join(FIXTURES, "nvidia_smi_fabric", "q_gb200_fabric_grep_dra626.txt")
IMEX_UP = os.path.join(FIXTURES, "nvidia_imex", "ctl_N_j_2node_gb200_up_pcluster.json")
IMEX_DOWN = os.path.join(FIXTURES, "nvidia_imex", "ctl_N_j_unconfigured_down_pcluster.json")
GB200_DOMAIN = {"cluster_uuid": "00000001-0000-0000-0000-000000000001", "clique": 2, "chassis_serial": "1820000000001",
                "slot": 14, "tray": 4}


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node of stand-ins: nvidia-smi replaying a capture (each call logged), an empty sysfs and kernel log."""
    capture = tmp_path / "capture"
    capture.mkdir()
    monkeypatch.setenv("NVIDIA_SMI_CAPTURE", str(capture))
    log = tmp_path / "smi.log"
    smi = _script(tmp_path / "nvidia-smi", 'echo "$*" >> %s\nexec %s "$@"\n' % (log, STANDIN))
    (tmp_path / "kern.log").write_text("")
    (tmp_path / "sys").mkdir()
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "modules").write_text("")

    def check(xml, **options):
        with open(xml) as handle:
            (capture / "q.xml").write_text(handle.read())
        given = dict({"nvidia_smi_path": smi, "kernel_log": str(tmp_path / "kern.log"), "sysfs_root": str(tmp_path / "sys"),
                      "procfs_root": str(tmp_path / "proc"), "command_timeout": 5,
                      "imex_ctl_path": str(tmp_path / "no" / "nvidia-imex-ctl")}, **options)
        return node_checks.check_node(given, commands.Runner(given["command_timeout"], path=""), host="n1")
    return check, log, tmp_path


def test_the_real_gb200_tray_sends_its_domain_read_from_the_one_nvidia_smi_run(node):
    check, log, dummy = node
    result = check(GB200)
    assert result["domain"] == GB200_DOMAIN
    assert open(str(log)).read().splitlines().count("-q -x") == 1, "nvidia-smi -q -x is read once, by nvidia_smi"
    assert [f for f in result["findings"] if f["check"].startswith("nvlink_fabric")] == []
    body = json.loads(protocol.report_body("n1", result, "timer", "nonce").decode())
    assert body["version"] == 2 and body["report"]["domain"] == GB200_DOMAIN
    assert protocol.check_report(body["report"], body["version"])["domain"] == GB200_DOMAIN


@pytest.mark.parametrize("xml", [H100, L40S])
def test_a_node_in_no_rack_sends_no_domain_and_is_not_asked_about_imex(node, xml):
    """HGX H100 (Completed, zero ClusterUUID) and an L40S (fabric N/A): no domain, no fabric finding, no IMEX read -
    not even "not run" - so a single-node box is complete without nvidia-imex-ctl (NVSentinel#1471)."""
    check, dummy, tmp_path = node
    result = check(xml)
    assert result["domain"] is None and "imex" not in result["not_run"]
    assert not [f for f in result["findings"] if f["check"].startswith(("nvlink_fabric", "imex"))]
    assert not [u for u in result["unreadable"] if "imex" in u]
    assert json.loads(protocol.report_body("n1", result, "timer", "x").decode())["version"] == 1
    # Told the domain has 18 trays, the H100's zero ClusterUUID is a finding on each GPU; told 0, nothing.
    if xml == H100:
        told = check(xml, nvlink_domain_size=18)
        assert [f["check"] for f in told["findings"] if f["check"].startswith("nvlink")] == ["nvlink_fabric_domain"] * 8
        assert told["findings"][0]["target"].startswith("n1/GPU ")
        assert not [f for f in check(xml, nvlink_domain_size=0)["findings"] if f["check"].startswith("nvlink_fabric")]


def test_nvidia_smi_that_cannot_be_read_gives_no_domain_and_no_second_complaint(node, tmp_path):
    check, dummy, dummy2 = node
    result = check(GB200, nvidia_smi_path=_script(tmp_path / "broken-smi", "echo nope >&2; exit 9\n"))
    assert result["domain"] is None and "imex" not in result["not_run"]
    assert [f["check"] for f in result["findings"]] == ["nvidia_smi"]


class _Node(object):
    """The node as a check sees it, holding one fabric reading (a text capture: the stuck and Unhealthy trays)."""

    def __init__(self, fabric, **opts):
        self.host, self.opts = "n1", dict({"nvlink_domain_size": None, "imex_expected": None}, **opts)
        self._fabric = fabric

    def fabric(self):
        return {"parsed": self._fabric, "problem": None}


def _judged(capture, **opts):
    with open(capture) as handle:
        node = _Node(parse_nvidia_smi_fabric(handle.read()), **opts)
    return fabric_check.CHECK.judge(node, fabric_check.CHECK.read(node)), imex_check.CHECK.asked(node)


def test_the_stuck_tray_is_critical_and_the_unhealthy_one_too_where_each_is_in_no_domain_for_imex():
    found, asked = _judged(STUCK)
    assert [(f["check"], f["severity"]) for f in found] == [("nvlink_fabric_registration", "critical")]
    assert "Insufficient Resources" in found[0]["detail"] and found[0]["target"].startswith("n1/GPU 0")
    # Its ClusterUUID is all zeros and its CliqueId 0: no domain to ask IMEX about, unless told.
    assert asked is False and _judged(STUCK, imex_expected=True)[1] is True
    found, asked = _judged(UNHEALTHY)
    assert set((f["check"], f["severity"]) for f in found) == {("nvlink_fabric_health", "critical")}
    assert asked is True and _judged(UNHEALTHY, imex_expected=False)[1] is False


def test_limited_capacity_on_the_real_gb200_xml_is_a_warning(node, tmp_path):
    check, dummy, dummy2 = node
    with open(GB200) as handle:
        limited = handle.read().replace("<summary>Healthy</summary>", "<summary>Limited Capacity</summary>", 1).replace(
            "<bandwidth>Full</bandwidth>", "<bandwidth>Degraded</bandwidth>", 1)
    (tmp_path / "limited.xml").write_text(limited)
    result = check(str(tmp_path / "limited.xml"))
    fabric = [(f["check"], f["severity"]) for f in result["findings"] if f["check"].startswith("nvlink_fabric")]
    assert fabric == [("nvlink_fabric_health", "warning")] and result["domain"] == GB200_DOMAIN


@pytest.mark.parametrize("body, found, unread", [
    ("cat %s\n" % IMEX_UP, [], None),
    ("cat %s\n" % IMEX_DOWN, [("imex_domain", "critical"), ("imex_node", "critical")], None),
    ("echo 'nvidia-imex-ctl: unrecognized option'\n", [], "printed no IMEX node table"),
    ("echo 'failed to connect to the IMEX daemon' >&2; exit 3\n", [], "exited 3"),
])
def test_imex_on_a_tray_of_a_domain_is_judged_or_unread_never_passed(node, tmp_path, body, found, unread):
    check, dummy, dummy2 = node
    result = check(GB200, imex_ctl_path=_script(tmp_path / "nvidia-imex-ctl", body))
    assert sorted((f["check"], f["severity"]) for f in result["findings"] if f["check"].startswith("imex")) == found
    imex_unread = [u for u in result["unreadable"] if u.startswith("nvidia-imex-ctl -N -j")]
    assert (unread in imex_unread[0]) if unread else imex_unread == []
    assert result["complete"] is (unread is None) and "imex" not in result["not_run"]


def test_a_hung_nvidia_imex_ctl_is_killed_with_its_children_and_is_unread(node, tmp_path):
    check, dummy, dummy2 = node
    pids = tmp_path / "pids"
    hung = _script(tmp_path / "nvidia-imex-ctl", "sleep 120 &\necho $! > %s\nwait\n" % pids)
    started = time.time()
    result = check(GB200, imex_ctl_path=hung, command_timeout=1)
    assert time.time() - started < 15
    assert [u for u in result["unreadable"] if u.startswith("nvidia-imex-ctl -N -j") and "1 s" in u], result["unreadable"]
    assert not [f for f in result["findings"] if f["check"].startswith("imex")] and result["complete"] is False
    time.sleep(0.5)
    assert _gone(int(pids.read_text())), "the daemon's child outlived the time limit"


def _gone(pid):
    """The process ended (a zombie left for its new parent to reap counts as ended)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_imex_missing_on_a_tray_of_a_domain_is_not_run_in_its_own_words(node):
    check, dummy, dummy2 = node
    result = check(GB200)
    assert result["not_run"] == {"imex": imex_check.MISSING} and result["complete"] is False
    assert not [f for f in result["findings"] if f["check"].startswith("imex")]
    assert "imex" not in check(GB200, imex_expected=False)["not_run"]
