"""site.yml validates what changed (issue 58): the pure parts. What a validation record must be before it is reused
(judge/validation_record.py), who is measured and who is reported from the record, and the partner a pair test needs
(plan/validation.py), and what a measured node's record says (its figures in the runs it took part in)."""

import copy
import json
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation as nccl_validation
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import validation_record as records
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import perftest_runs
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.applied import SETTINGS_CHANGED
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import validation
from paths import FIXTURES

HW, CONF = "a" * 64, "b" * 64
NOW = records.date_seconds("2026-12-07T12:00:00Z")
DAY = 86400


def _record(node="gpu-02", **change):
    record = {"schema": 1, "node": node, "validated_at": "2026-12-06T12:00:00Z", "passed": True, "hardware": HW,
              "configuration": CONF, "failures": [],
              "figures": {"nccl_tests": [{"label": node + ": all_reduce_perf -g 8", "value": 480.1, "unit": "GB/s",
                                          "passed": True}],
                          "perftest": [{"label": "ib_write_bw gpu-01 -> gpu-02 rail 0", "value": 371.2, "unit": "Gb/s",
                                        "passed": True}]}}
    record.update(change)
    return record


UNCHECKED = object()


def _node(name, record=None, ran=None, hardware=HW, configuration=CONF, problem=None):
    return {"name": name, "record": record, "problem": problem, "hardware": hardware, "configuration": configuration,
            "ran": None if ran is UNCHECKED else ran or {}}


def _plan(nodes, **kwargs):
    kwargs.setdefault("now", NOW)
    kwargs.setdefault("settings_changed", SETTINGS_CHANGED)
    return validation.plan(nodes, **kwargs)


# --- the record ------------------------------------------------------------------------------------------------------

def test_a_record_as_site_writes_it_is_accepted_and_says_its_date_and_figures():
    assert records.check_record(_record()) == _record()
    assert records.reused_line("gpu-02", _record()) == (
        "gpu-02: not measured again: last validated 2026-12-06T12:00:00Z, gpu-02: all_reduce_perf -g 8 480.1 GB/s, "
        "ib_write_bw gpu-01 -> gpu-02 rail 0 371.2 Gb/s")


@pytest.mark.parametrize("change, message", [
    ({"schema": 2}, "schema 2 is not 1"),
    ({"schema": True}, "schema True is not 1"),
    ({"node": ""}, "node must be one line of text"),
    ({"node": "gpu-02\nrm -rf /"}, "node must be one line of text"),
    ({"validated_at": "yesterday"}, "validated_at must be a date"),
    ({"validated_at": "2026-13-45T99:00:00Z"}, "does not match format"),
    ({"passed": "yes"}, "passed must be true or false"),
    ({"hardware": "abc"}, "hardware must be a fingerprint"),
    ({"configuration": None}, "configuration must be a fingerprint"),
    ({"figures": []}, "figures must be"),
    ({"figures": {"burnin": []}}, "figures must be"),
    ({"figures": {"nccl_tests": [{"label": "x", "value": float("nan"), "unit": "GB/s", "passed": True}]}},
     "value must be a finite number or null"),
    ({"figures": {"nccl_tests": [{"label": "x", "value": float("inf"), "unit": "GB/s", "passed": True}]}},
     "value must be a finite number or null"),
    ({"figures": {"nccl_tests": [{"label": "x", "value": 1, "unit": "GB/s", "passed": "yes"}]}}, "passed must be true or false"),
    ({"figures": {"nccl_tests": [{"label": "x", "value": 1, "passed": True, "host": "gpu-09"}]}}, "must be {label, value"),
    ({"figures": {"nccl_tests": [], "perftest": []}}, "a passing record names no figure"),
    ({"failures": "none"}, "failures must be a list"),
    ({"inventory_hostname": "gpu-02"}, "unknown inventory_hostname"),
])
def test_a_record_of_another_shape_is_refused_naming_what_is_wrong(change, message):
    with pytest.raises(ValueError) as caught:
        records.check_record(_record(**change))
    assert message in str(caught.value)


def test_a_record_without_a_key_is_refused():
    record = _record()
    del record["hardware"]
    with pytest.raises(ValueError, match="missing hardware"):
        records.check_record(record)


def test_the_hardware_is_what_discovery_recorded_of_the_machine_not_its_addresses_or_nccl_environment():
    with open(os.path.join(FIXTURES, "..", "..", "..", "docs", "benchmarks", "2026-11-22-h200x2-discover", "facts.json")) as handle:
        facts = json.load(handle)
    base = records.fingerprint(records.hardware_view(facts))
    moved = copy.deepcopy(facts)
    moved["nccl"]["env"]["NCCL_SOCKET_IFNAME"] = "eth1"
    moved["interfaces"] = [{"name": "eth0", "mtu": 9000}]
    assert records.fingerprint(records.hardware_view(moved)) == base
    for change in (lambda f: f["gpu"]["gpus"][0].update(uuid="GPU-other"), lambda f: f.update(kernel="6.19.0"),
                   lambda f: f["gpu"].update(driver_version="590.1")):
        other = copy.deepcopy(facts)
        change(other)
        assert records.fingerprint(records.hardware_view(other)) != base
    port = {"port": 1, "state": "ACTIVE", "rate_gbps": 400, "lid": 7, "gids": [{"index": 3, "ipv4": "10.0.0.1"}]}
    with_port = dict(facts, rdma_devices=[{"name": "mlx5_0", "node_guid": "1", "ports": [port]}])
    relabelled = dict(facts, rdma_devices=[{"name": "mlx5_0", "node_guid": "1", "ports": [dict(port, lid=9, gids=[])]}])
    down = dict(facts, rdma_devices=[{"name": "mlx5_0", "node_guid": "1", "ports": [dict(port, state="DOWN")]}])
    assert records.fingerprint(records.hardware_view(with_port)) == records.fingerprint(records.hardware_view(relabelled))
    assert records.fingerprint(records.hardware_view(with_port)) != records.fingerprint(records.hardware_view(down))


# --- who is measured --------------------------------------------------------------------------------------------------

def test_a_node_whose_configuration_phase_ran_is_measured_an_unchanged_one_is_reported_from_its_record():
    nodes = [_node("gpu-01", _record("gpu-01"), ran={"nccl_env": "drift since it was applied: /etc/nccl.conf: content"}),
             _node("gpu-02", _record("gpu-02"))]
    planned = _plan(nodes, pair_tests=False)
    assert planned["measure"] == ["gpu-01"]
    assert planned["why"] == {"gpu-01": ["configuration phase nccl_env ran: drift since it was applied: /etc/nccl.conf: content"]}
    assert planned["reused"] == {"gpu-02": _record("gpu-02")}
    assert planned["fingerprints"] == {"gpu-01": {"hardware": HW, "configuration": CONF}}
    assert planned["lines"][1].startswith("gpu-02: not measured again: last validated 2026-12-06T12:00:00Z, ")


def test_every_node_is_measured_when_asked():
    nodes = [_node("gpu-01", _record("gpu-01")), _node("gpu-02", _record("gpu-02"))]
    planned = _plan(nodes, mode="all")
    assert planned["measure"] == ["gpu-01", "gpu-02"] and planned["reused"] == {}
    assert planned["why"]["gpu-02"] == ["asked for (gpufabric_validate=all)"]


@pytest.mark.parametrize("node, why", [
    (_node("gpu-02"), "no record of a validation on this node"),
    (_node("gpu-02", _record(validated_at="2026-11-20T12:00:00Z")), "its last validation is older than 7 days (2026-11-20T12:00:00Z)"),
    (_node("gpu-02", _record(validated_at="2027-01-01T00:00:00Z")), "its record is dated in the future (2027-01-01T00:00:00Z)"),
    (_node("gpu-02", _record(), hardware="c" * 64), "its hardware, OS, kernel or drivers changed since it was validated"),
    (_node("gpu-02", _record(), configuration="c" * 64), "its configuration, the validation's settings or the collection changed"),
    (_node("gpu-02", _record(), hardware=None), "its hardware was not read in this run"),
    (_node("gpu-02", _record(node="gpu-07")), "its record is gpu-07's, not this node's"),
    (_node("gpu-02", _record(passed=False, failures=["gpu-02: busbw 12 GB/s below 350"])),
     "its last validation failed (gpu-02: busbw 12 GB/s below 350)"),
    (_node("gpu-02", problem="/var/lib/gpufabric-validated/validation.json: it is a FIFO, not a regular file"),
     "its validation record cannot be used: /var/lib/gpufabric-validated/validation.json: it is a FIFO, not a regular file"),
    (_node("gpu-02", _record(figures=[])), "its validation record cannot be used: figures must be"),
    (_node("gpu-02", _record(), ran=UNCHECKED), "configure did not check its phases in this run"),
    (_node("gpu-02", _record(), ran={"network": "no record of it on this node"}), "configuration phase network ran: no record"),
], ids=["new", "stale", "future", "hardware", "configuration", "not-discovered", "another-node", "failed", "damaged",
        "odd-shape", "configure-not-checked", "phase-without-record"])
def test_a_record_that_does_not_prove_the_node_passes_now_is_not_reused(node, why):
    planned = _plan([node, _node("gpu-01", _record("gpu-01"))], pair_tests=False)
    assert "gpu-02" in planned["measure"] and "gpu-02" not in planned["reused"]
    assert any(line.startswith(why) for line in planned["why"]["gpu-02"]), planned["why"]


def test_a_phase_that_ran_for_its_settings_is_judged_by_the_fingerprint():
    """The mpi phase's fingerprint holds the SSH mesh: a node added elsewhere runs it on every node for its settings;
    that alone measures nobody again, while a changed setting changes the configuration fingerprint."""
    same = _plan([_node("gpu-01", _record("gpu-01"), ran={"mpi": SETTINGS_CHANGED})], pair_tests=False)
    assert same["measure"] == [] and list(same["reused"]) == ["gpu-01"]
    changed = _plan([_node("gpu-01", _record("gpu-01"), ran={"mpi": SETTINGS_CHANGED}, configuration="d" * 64)],
                    pair_tests=False)
    assert changed["measure"] == ["gpu-01"]


def test_the_age_allowed_is_the_sites():
    node = _node("gpu-02", _record(validated_at="2026-12-04T12:00:00Z"))
    assert _plan([node], max_age_s=7 * DAY)["measure"] == []
    assert _plan([node], max_age_s=2 * DAY, pair_tests=False)["measure"] == ["gpu-02"]


def test_a_setting_of_the_validation_changes_the_configuration_fingerprint_but_the_ssh_mesh_does_not():
    phases = [{"name": "nccl_env", "fingerprint": "1" * 64}, {"name": "mpi", "fingerprint": "2" * 64}]
    base = validation.configuration_fingerprint(phases, {"nccl_tests_min_busbw": "350"}, "c" * 64)
    mesh = [phases[0], {"name": "mpi", "fingerprint": "3" * 64}]
    assert validation.configuration_fingerprint(mesh, {"nccl_tests_min_busbw": "350"}, "c" * 64) == base
    assert validation.configuration_fingerprint(phases, {"nccl_tests_min_busbw": "400"}, "c" * 64) != base
    assert validation.configuration_fingerprint(phases, {"nccl_tests_min_busbw": "350"}, "d" * 64) != base
    assert validation.configuration_fingerprint([{"name": "nccl_env", "fingerprint": "4" * 64}, phases[1]],
                                                {"nccl_tests_min_busbw": "350"}, "c" * 64) != base


def test_an_unknown_mode_is_refused_naming_it():
    with pytest.raises(ValueError, match="gpufabric_validate must be changed or all, got 'some'"):
        _plan([], mode="some")


# --- the partner ------------------------------------------------------------------------------------------------------

def test_a_node_measured_alone_gets_the_partner_validated_longest_ago():
    nodes = [_node("gpu-01", _record("gpu-01", validated_at="2026-12-06T00:00:00Z")),
             _node("gpu-02", ran={"nccl_env": "drift since it was applied: x"}),
             _node("gpu-03", _record("gpu-03", validated_at="2026-12-03T00:00:00Z")),
             _node("gpu-04", _record("gpu-04", validated_at="2026-12-01T00:00:00Z", passed=False,
                                     failures=["gpu-04: no result"]))]
    planned = _plan(nodes)
    # gpu-04's last validation failed: it is measured itself, so gpu-02 and gpu-04 make a pair and nobody else joins.
    assert planned["measure"] == ["gpu-02", "gpu-04"] and planned["partners"] == {}
    nodes[3] = _node("gpu-04", _record("gpu-04", validated_at="2026-12-05T00:00:00Z"))
    planned = _plan(nodes)
    assert planned["measure"] == ["gpu-02", "gpu-03"] and planned["partners"] == {"gpu-03": "gpu-02"}
    assert "gpu-03: measured as the partner of gpu-02 in the pair tests (its last validation passed)" in planned["lines"]
    assert sorted(planned["reused"]) == ["gpu-01", "gpu-04"]
    assert planned["fingerprints"]["gpu-03"] == {"hardware": HW, "configuration": CONF}


def test_the_odd_one_out_gets_a_partner_and_no_partner_is_needed_without_pair_tests():
    nodes = [_node("gpu-0%d" % i, None if i < 4 else _record("gpu-0%d" % i)) for i in range(1, 6)]
    assert _plan(nodes)["measure"] == ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]
    assert _plan(nodes, pair_tests=False)["measure"] == ["gpu-01", "gpu-02", "gpu-03"]


def test_no_partner_in_service_is_said():
    planned = _plan([_node("gpu-01", ran={"nccl_env": "drift since it was applied: x"}),
                     _node("gpu-02", _record(passed=False, failures=["x"]), ran={"network": "drift since it was applied: y"})][:1])
    assert planned["measure"] == ["gpu-01"]
    assert planned["lines"][-1] == "no partner for the pair tests: no other node in service has a passing validation record"


def test_the_peers_perftest_pairs_name_are_measured_with_a_node():
    nodes = [_node("gpu-0%d" % i, _record("gpu-0%d" % i)) for i in range(1, 5)]
    nodes[0] = _node("gpu-01", ran={"network": "drift since it was applied: mtu"})
    pairs = [{"server": "gpu-03", "client": "gpu-01"}, {"server": "gpu-02", "client": "gpu-04"}]
    planned = _plan(nodes, pairs=pairs)
    assert planned["measure"] == ["gpu-01", "gpu-03"] and planned["partners"] == {"gpu-03": "gpu-01"}


def test_the_plan_is_linear_in_the_fleet():
    nodes = [_node("gpu-%04d" % i, _record("gpu-%04d" % i)) for i in range(3000)]
    nodes[1234] = _node("gpu-1234", ran={"nccl_env": "drift since it was applied: x"})
    pairs = [{"server": "gpu-%04d" % i, "client": "gpu-%04d" % (i + 1)} for i in range(0, 3000, 2)]
    planned = _plan(nodes, pairs=pairs)
    assert planned["measure"] == ["gpu-1234", "gpu-1235"] and len(planned["reused"]) == 2998


# --- what a measured node's record says -------------------------------------------------------------------------------

def _nccl_judged():
    with open(os.path.join(FIXTURES, "nccl_tests", "all_reduce_g8_h200x8.txt")) as handle:
        output = handle.read()
    runs = [{"label": "gpu-01: all_reduce_perf -g 8", "host": "gpu-01", "mode": "single", "command": "all_reduce_perf -g 8",
             "rc": 0, "output": output, "not_run": None},
            {"label": "gpu-02: all_reduce_perf -g 8", "host": "gpu-02", "mode": "single", "command": "all_reduce_perf -g 8",
             "rc": 0, "output": output, "not_run": None},
            {"label": "mpirun x 2 nodes", "host": "gpu-01,gpu-02", "mode": "mpirun", "command": "mpirun ...", "rc": 0,
             "output": output, "not_run": None}]
    return nccl_validation.judge(runs, min_busbw=350)


def _perftest_judged():
    with open(os.path.join(FIXTURES, "perftest", "write_bw_gbits_perftest-273.txt")) as handle:
        output = handle.read()
    return perftest_runs.judge_perftest([
        {"test": "ib_write_bw", "server": "gpu-02", "client": "gpu-01", "rail": None, "stdout": output, "client_rc": 0},
        {"test": "ib_write_bw", "server": "gpu-04", "client": "gpu-03", "rail": None, "stdout": output, "client_rc": 0}])


def test_a_measured_nodes_record_holds_its_figures_in_the_runs_it_took_part_in():
    record = validation.node_record("gpu-01", _nccl_judged(), _perftest_judged(), {"hardware": HW, "configuration": CONF},
                                    "2026-12-07T12:00:00Z")
    assert record["passed"] is True and record["node"] == "gpu-01" and record["hardware"] == HW
    assert [entry["label"] for entry in record["figures"]["nccl_tests"]] == ["gpu-01: all_reduce_perf -g 8", "mpirun x 2 nodes"]
    assert [entry["label"] for entry in record["figures"]["perftest"]] == ["ib_write_bw gpu-01 -> gpu-02"]
    busbw = record["figures"]["nccl_tests"][0]
    assert busbw["unit"] == "GB/s" and busbw["value"] > 350
    assert record["figures"]["perftest"][0]["unit"] == "Gb/sec" and record["figures"]["perftest"][0]["value"] > 0
    assert records.check_record(json.loads(json.dumps(record))) == record


def test_a_node_that_failed_or_took_part_in_nothing_does_not_pass():
    failed = validation.node_record("gpu-02", nccl_validation.judge(
        [{"label": "gpu-02: all_reduce_perf", "host": "gpu-02", "mode": "single", "command": "x", "rc": 0,
          "output": "", "not_run": None}], min_busbw=350), [], {"hardware": HW, "configuration": CONF}, "2026-12-07T12:00:00Z")
    assert failed["passed"] is False and failed["failures"]
    nothing = validation.node_record("gpu-09", _nccl_judged(), _perftest_judged(), {"hardware": HW, "configuration": CONF},
                                     "2026-12-07T12:00:00Z")
    assert nothing["passed"] is False and nothing["figures"] == {"nccl_tests": [], "perftest": []}


def test_the_summary_reports_the_nodes_not_measured_again():
    judged = _nccl_judged()[:1]
    markdown = nccl_validation.summary_markdown(judged, {}, {"gpu-02": _record("gpu-02")})
    assert "1 node(s) not measured again" in markdown
    assert "## Not measured again\n\n- gpu-02: not measured again: last validated 2026-12-06T12:00:00Z, " in markdown
    alone = nccl_validation.summary_markdown([], {}, {"gpu-02": _record("gpu-02")})
    assert alone.startswith("# gpufabric.rdma validation\n\n**PASS**: no run measured: every node's last validation still holds")
    assert nccl_validation.summary_text([], {"gpu-02": _record("gpu-02")}).splitlines()[1].startswith("gpu-02: not measured again")
    with pytest.raises(ValueError):
        nccl_validation.summary_markdown([], {}, {"gpu-02": _record("gpu-02", passed="yes")})
