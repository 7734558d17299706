"""Validation's multi-node runs judged on what NCCL said it used (NCCL_DEBUG=INFO) and on the bytes each RDMA
port carried: real NCCL logs (tests/unit/fixtures/nccl_debug, cited in the fixtures README) appended to a real
nccl-tests capture, as an mpirun run's output has both; the counter readings are leptonai/gpud's real one."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.nccl_tests import nccl_tests_judge
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import nccl_path, validation

ROCE_HCA = "mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"   # what the slurmv4 log's run set


@pytest.mark.parametrize("env, profile, gdr_ready, expected", [
    ({"NCCL_IB_DISABLE": "1", "NCCL_IB_HCA": "mlx5_0"}, "roce", True, {"rdma": False, "ib_hca": None, "gdr": None}),
    ({"NCCL_NET": "Socket"}, None, None, {"rdma": False, "ib_hca": None, "gdr": None}),
    ({}, "socket", True, {"rdma": False, "ib_hca": None, "gdr": None}),
    ({}, "roce", True, {"rdma": True, "ib_hca": None, "gdr": True}),
    ({"NCCL_IB_HCA": "=mlx5_0:1"}, None, None, {"rdma": True, "ib_hca": "=mlx5_0:1", "gdr": None}),
    ({"NCCL_IB_HCA": "mlx5"}, "socket", True, {"rdma": True, "ib_hca": "mlx5", "gdr": True}),
    ({"NCCL_NET": "IB", "NCCL_NET_GDR_LEVEL": "LOC"}, "infiniband", True, {"rdma": True, "ib_hca": None, "gdr": False}),
    ({}, None, False, {"rdma": None, "ib_hca": None, "gdr": None}),
])
def test_what_a_run_environment_promises(env, profile, gdr_ready, expected):
    assert nccl_path.expected_from_env(env, profile, gdr_ready) == expected


def _mpirun(read_fixture, log, env=None, mode="mpirun"):
    """An mpirun run whose output is a real nccl-tests table with a real NCCL INFO log before it."""
    output = (read_fixture("nccl_debug", log) if log else "") + read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    return {"label": "mpirun %s" % (log or "no log"), "host": "a,b", "mode": mode, "command": "mpirun ...", "rc": 0,
            "output": output, "not_run": None, "env": env or {}}


ROCE = {"env": {"NCCL_IB_HCA": ROCE_HCA}, "profile": "roce", "gdr_ready": True}


def test_roce_with_gdr_over_the_profile_hcas_passes(read_fixture):
    (run,) = validation.judge([_mpirun(read_fixture, "ib_roce_gdrdma_2node_slurmv4.txt")], nccl_debug=ROCE)
    assert run["passed"] is True and run["failures"] == []
    assert run["result"]["rows"][-1]["out_of_place"]["busbw"] == 364.98   # the INFO lines leave the table alone
    used = run["nccl"]
    assert (used["nccl_version"], used["net"], used["gdr"], used["link_types"]) == ("2.27.5", "IB", True, ["RoCE"])
    assert used["net_devices"][0] == "mlx5_0:1" and len(used["net_devices"]) == 8
    assert [(r["check"], r["ok"]) for r in used["reasons"]] == [
        ("transport", True), ("ib_hca", True), ("gdr", True), ("placement", None)]
    assert nccl_path.used_text(used).startswith("NCCL 2.27.5, NET/IB (RoCE) over mlx5_0:1, mlx5_1:1,")
    # the validation report says where the pods' GPUs and NICs landed: GPUDirect RDMA over every NET connection
    assert nccl_path.used_text(used).endswith("GPUDirect RDMA on, 16 coll channels, GPUs and NICs aligned")
    assert used["expected_text"] == "RDMA, NCCL_IB_HCA=%s, GPUDirect RDMA on" % ROCE_HCA


@pytest.mark.parametrize("log, settings, failure, evidence", [
    ("socket_fallback_efa_4node_trainingoneks.txt", {"profile": "roce"},
     "NCCL: inter-node traffic fell back to sockets (NET/Socket) although the profile expects RDMA", "via NET/Socket"),
    ("gdr_disabled_roce_nccl1537.txt", {"profile": "roce", "gdr_ready": True},
     "NCCL: NCCL ran without GPUDirect RDMA although peermem/DMA-BUF is expected", "GPU Direct RDMA Disabled for HCA"),
    ("ib_roce_port_in_use_nccl302.txt", {"env": {"NCCL_IB_HCA": "^=mlx5_2"}},
     "NCCL: NCCL used mlx5_2:1, outside NCCL_IB_HCA=^=mlx5_2", "via NET/IB/2"),
])
def test_a_run_that_went_another_way_fails_saying_why(read_fixture, log, settings, failure, evidence):
    (run,) = validation.judge([_mpirun(read_fixture, log)], nccl_debug=settings)
    assert run["passed"] is False
    assert failure in run["failures"]
    failed = [r for r in run["nccl"]["reasons"] if r["ok"] is False][0]
    assert evidence in failed["evidence"][0]
    markdown = validation.summary_markdown([run])
    assert "## What NCCL used" in markdown and "**FAIL**" in markdown.split("## What NCCL used")[1]
    assert "  - FAIL %s: %s" % (failed["check"], failed["reason"]) in markdown


def test_a_run_own_env_is_added_to_the_role_env(read_fixture):
    # NCCL_IB_DISABLE=1 for this run only: sockets are then what it promises, and the EKS log passes
    (run,) = validation.judge([_mpirun(read_fixture, "socket_fallback_efa_4node_trainingoneks.txt", {"NCCL_IB_DISABLE": "1"})],
                              nccl_debug={"env": {"NCCL_IB_HCA": "mlx5"}, "profile": "roce"})
    assert run["nccl"]["expected"]["rdma"] is False and run["nccl"]["passed"] is True


def test_figures_without_any_nccl_line_are_not_a_pass(read_fixture):
    (run,) = validation.judge([_mpirun(read_fixture, None)], nccl_debug=ROCE)
    assert run["passed"] is False and run["nccl"] is None
    assert run["failures"] == ["NCCL printed no INFO line although the run set NCCL_DEBUG=INFO: which network, HCAs "
                               "and GPUDirect RDMA it used are unknown"]


def test_single_node_runs_and_runs_without_the_setting_are_not_read(read_fixture):
    single = dict(_mpirun(read_fixture, "socket_fallback_efa_4node_trainingoneks.txt"), mode="single")
    multi = _mpirun(read_fixture, "socket_fallback_efa_4node_trainingoneks.txt")
    first, second = validation.judge([single, multi], nccl_debug=ROCE)
    assert "nccl" not in first and first["passed"] is True and second["passed"] is False
    (plain,) = validation.judge([multi])
    assert "nccl" not in plain and plain["passed"] is True


@pytest.mark.parametrize("settings, message", [
    ({"env": {}, "hca": "x"}, "nccl_debug has unknown keys hca"),
    ({"env": ["NCCL_IB_HCA"]}, "nccl_debug: env must map NCCL variable names to values, got list"),
    ({"gdr_ready": "yes"}, "nccl_debug: gdr_ready must be true, false or null, got 'yes'"),
])
def test_bad_settings_are_named_by_the_filter(read_fixture, settings, message):
    with pytest.raises(AnsibleFilterError, match=message):
        nccl_tests_judge([_mpirun(read_fixture, None)], nccl_debug=settings)


# ----------------------------------------------------------------------------- bytes per port

# leptonai/gpud's one real reading of an H100 node (components/accelerator/nvidia/infiniband/class/testdata/
# sys-class-infiniband-h100.0): port_xmit_data and port_rcv_data, 32-bit words.
XMIT, RCV = 230442669431839, 230539874932483


def _traffic(moved, replayed=None):
    """Two hosts' readings as rdma_port_counters returns them, 'after' = before + the words each port moved."""
    hosts = {}
    for key, words in moved.items():
        host, port = key.split(":")
        reading = hosts.setdefault(host, {"before": {}, "after": {}, "gpu_nics": {}})
        reading["before"][port] = {"port_xmit_data": XMIT, "port_rcv_data": RCV}
        reading["after"][port] = {"port_xmit_data": XMIT + words, "port_rcv_data": RCV + words}
    hosts["a"]["gpu_nics"] = {"GPU0": ["mlx5_0"], "GPU1": ["mlx5_1"], "GPU10": ["mlx5_1"], "GPU2": ["mlx5_1"]}
    hosts["b"]["gpu_nics"] = {"GPU1": "mlx5_1"}
    return {"hosts": hosts, "replayed": replayed}


MOVED = {"a:mlx5_0/1": 2500000000, "a:mlx5_1/1": 2500000000, "b:mlx5_0/1": 2500000000, "b:mlx5_1/1": 0}


@pytest.mark.parametrize("hca, failed", [("=mlx5_0,mlx5_1", True), ("=mlx5_0", False), (None, False)])
def test_a_rail_that_carried_nothing(read_fixture, hca, failed):
    run = dict(_mpirun(read_fixture, "ib_roce_gdrdma_2node_slurmv4.txt"), traffic=_traffic(MOVED))
    settings = {"env": {"NCCL_IB_HCA": hca} if hca else {}, "profile": "roce"}
    (judged,) = validation.judge([run], nccl_debug=settings)
    assert [(p["port"], p["bytes"]) for p in judged["traffic"]["ports"]] == [
        ("a:mlx5_0/1", 2 * 10 ** 10), ("a:mlx5_1/1", 2 * 10 ** 10), ("b:mlx5_0/1", 2 * 10 ** 10), ("b:mlx5_1/1", 0)]
    assert judged["traffic"]["flagged"] == ["b:mlx5_1/1"]
    said = "port b:mlx5_1/1 (closest to GPU1) carried no bytes while 3 port(s) carried traffic"
    if failed:
        assert said + " although NCCL_IB_HCA=%s lets NCCL use it: a rail down or unused" % hca in judged["failures"]
    else:
        assert not any("b:mlx5_1/1" in f for f in judged["failures"])
        assert [n for n in judged["notes"] if n.startswith(said)]


def test_the_port_table_in_both_summaries_and_rdma_off(read_fixture):
    run = dict(_mpirun(read_fixture, "socket_fallback_efa_4node_trainingoneks.txt"),
               traffic=_traffic(MOVED, replayed="counters advanced by the lab's stand-in"))
    (judged,) = validation.judge([run], nccl_debug={"env": {"NCCL_IB_DISABLE": "1"}})
    assert judged["traffic"]["flagged"] == [] and judged["passed"] is True
    assert "RDMA is off in the run's environment: the ports' bytes are not NCCL's and no port is judged" in judged["notes"]
    text = validation.summary_text([judged])
    assert "bytes per RDMA port during the run - REPLAYED: counters advanced by the lab's stand-in" in text
    rows = [line.split() for line in text.splitlines() if line.startswith(("a:mlx5_0/1", "a:mlx5_1/1", "b:mlx5_1/1"))]
    assert rows == [["a:mlx5_0/1", "GPU0", "10000000000", "10000000000", "20000000000", "-"],
                    ["a:mlx5_1/1", "GPU1,GPU2,GPU10", "10000000000", "10000000000", "20000000000", "-"],
                    ["b:mlx5_1/1", "GPU1", "0", "0", "0", "-"]]
    markdown = validation.summary_markdown([judged])
    assert "| a:mlx5_0/1 | GPU0 | 10000000000 | 10000000000 | 20000000000 |  |" in markdown
    assert "| b:mlx5_1/1 | GPU1 | 0 | 0 | 0 |  |" in markdown


def test_no_counter_readable_is_said(read_fixture):
    run = dict(_mpirun(read_fixture, "ib_roce_gdrdma_2node_slurmv4.txt"), traffic={"hosts": {"a": {"before": {}, "after": {}}}})
    (judged,) = validation.judge([run], nccl_debug=ROCE)
    assert ("no RDMA port's data counters could be read before and after the run: which ports carried the bytes "
            "is unknown") in judged["notes"]


def test_a_traffic_reading_that_is_not_one_is_named(read_fixture):
    run = dict(_mpirun(read_fixture, "ib_roce_gdrdma_2node_slurmv4.txt"), traffic={"hosts": {"a": {"before": ["x"]}}})
    with pytest.raises(AnsibleFilterError, match="a's before counters must map device/port to counters, got list"):
        nccl_tests_judge([run], nccl_debug=ROCE)
