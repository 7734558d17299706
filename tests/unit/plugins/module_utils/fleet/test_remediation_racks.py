"""The rack as the decider's unit (issue 55 item 4): the rack's pure phases (remediation_racks: rack_view, gather; with
remediation_drains.drain_rack and remediation_resumes.resume_rack) alone, and the plan over them: a rack whose trays
report NVLink fabric faults within the window drains all its nodes or none, as one action against the rate limit
and the circuit breaker, names the switch side where the trays agree, and returns only when every tray is certified
with IMEX up and an NVLink-domain run. The findings are the real judge's on real nvidia-smi captures (sources:
tests/unit/fixtures/README.md); the HTTP test is test_decider_racks.py."""
import copy
import os
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate, protocol, racks
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation as r
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_counts as counts_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_drains as drains_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_racks as racks_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_resumes as resumes_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_triage as triage_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import check_ledger, empty_ledger
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import PolicyError, check_config
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge.nvlink_fabric import nvlink_fabric_findings
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_smi_fabric import parse_nvidia_smi_fabric
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology.nvlink import node_domain
from paths import fixture_path

NOW = 1795526184
FIX = fixture_path("nvidia_smi_fabric")


def read(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as handle:
        return handle.read()


GB200 = read("qx_gb200x4_k8stestinfra.xml")
TRAY = protocol.report_domain(node_domain(GB200))          # a real GB200 tray: chassis 1820000000001
CHASSIS = TRAY["chassis_serial"]
# The real judge on real captures: dra-driver-nvidia-gpu#626's Unhealthy GB200, azhpc-images#506's tray stuck in
# registration (Insufficient Resources), and GB300's Limited Capacity as test_nvlink_fabric makes it.
UNHEALTHY = nvlink_fabric_findings(parse_nvidia_smi_fabric(read("q_gb200_fabric_grep_dra626.txt")))
STUCK = nvlink_fabric_findings(parse_nvidia_smi_fabric(read("q_gb200_insufficient_resources_azhpc506.txt")))
LIMITED = nvlink_fabric_findings(parse_nvidia_smi_fabric(read("q_gb300x4_constructed.txt").replace(
    "Summary                                    : Healthy", "Summary                                    : Limited Capacity", 1)))
XID = {"check": "gpu_xid", "severity": "critical", "target": "GPU 0", "detail": "Xid 79", "fix_hint": "-"}
DCGM = {"host": "n1", "status": "pass", "level": 2, "failures": [], "reason": None}
RUN = {"label": "all_reduce_perf", "passed": True, "failures": [], "figure": {"size": 1 << 30, "busbw": 812.0},
       "expected_busbw": 750.0}
NAMES = ["t%02d" % i for i in range(1, 5)]


def settings(mode="enforce", **over):
    config = {"mode": mode, "policy": [{"severity": "critical", "action": "drain"}],
              "rate_limit": {"max_nodes": 1, "max_percent": 10, "interval": 3600, "max_resumes": 1},
              "circuit_breaker": {"max_percent": 50, "window": 300}, "slurm": {"enabled": True},
              "rack": {"min_nodes": 2, "window": 120}}
    config.update(over)
    return check_config(config)


def ctx(mode="enforce", **over):
    return counts_.context(settings(mode, **over), NOW, "d1")


def domain(tray, **over):
    return dict(TRAY, slot=tray, tray=tray, **over)


def report(node, findings=(), tray=1, with_domain=True, complete=True, **over):
    return protocol.check_report({"node": node, "findings": list(findings), "complete": complete, "unreadable": [],
                                  "source": "timer", "domain": domain(tray, **over) if with_domain else None})


def fleet_of(names=NAMES, parts=("gpu",), drained=()):
    return dict((n, {"partitions": list(parts), "drained": n in drained, "reason": None, "reason_time": None})
                for n in names)


def learned(names=NAMES, **over):
    """A ledger in which every node told its rack (a healthy report each)."""
    return r.plan(dict((n, report(n, tray=i)) for i, n in enumerate(names, 1)), fleet_of(list(names) + ["n09"]),
                  empty_ledger(), settings(**over), NOW - 1000)["ledger"]


def test_rack_settings_default_and_refuse_naming_the_value():
    assert settings()["rack"]["certify"] == ["imex", "nvlink_domain"]
    assert check_config({})["rack"] == {"enabled": True, "min_nodes": 2, "window": 300, "checks": list(racks.RACK_CHECKS),
                                        "certify": ["imex", "nvlink_domain"], "racks": {}}
    for rack, message in (({"min_nodes": 1}, "min_nodes must be a whole number from 2 to 1000 (one tray alone is decided "
                                             "as a node), got 1"),
                          ({"window": 5}, "rack window must be whole seconds from 10 to 86400, got 5"),
                          ({"certify": ["imex", "memtest"]}, "rack certify must be a list of distinct names from dcgm, "
                                                             "nccl, pairwise, imex, nvlink_domain, got ['imex', 'memtest']"),
                          ({"racks": {"r1": ["a", "b"], "r2": ["b"]}}, "remediation rack racks: b is in both r1 and r2"),
                          ({"racks": {"r1": "a,b"}}, "racks r1 must be a list of distinct plain names, got 'a,b'"),
                          ({"size": 18}, "unknown remediation rack key(s) size")):
        with pytest.raises(PolicyError) as err:
            settings(rack=rack)
        assert message in str(err.value)


def test_the_rack_is_the_chassis_else_the_nvlink_domain():
    assert racks.rack_id(protocol.check_domain(TRAY)) == CHASSIS
    # dra-driver-nvidia-gpu#626's tray prints a domain and no Platform Info: its rack is the domain.
    dra = protocol.report_domain(node_domain(read("q_gb200_fabric_grep_dra626.txt")))
    assert racks.rack_id(protocol.check_domain(dra)) == "dc6e40c4-d722-4357-9ba6-5291dd461278/2"
    # azhpc-images#506's stuck tray names neither: no rack from this report (the decider remembers the last one).
    assert protocol.report_domain(node_domain(read("q_gb200_insufficient_resources_azhpc506.txt"))) is None


def test_the_switch_side_is_named_only_where_every_trays_findings_agree():
    assert racks.signs(UNHEALTHY) == ["fabric health Unhealthy"]
    assert racks.signs(STUCK) == ["registration Insufficient Resources"]
    side = racks.switch_side({"t01": racks.signs(STUCK), "t02": racks.signs(STUCK), "t03": racks.signs(STUCK + UNHEALTHY)})
    assert side.startswith("the NVLink fabric manager (NVLink Management on the switch trays: nmx-c, NMX-M) refused or did "
                           "not finish every tray's registration: registration Insufficient Resources (all 3 trays)")
    links = [{"check": "nvlink_links", "severity": "critical", "target": "GPU 0",
              "detail": "GPU 0 (NVIDIA GB200): 16 of its 18 NVLinks active (links 4-5 inactive)"}]
    assert racks.switch_side({"t01": racks.signs(links + UNHEALTHY), "t02": racks.signs(links)}) == (
        "the NVSwitch tray (or the cable cartridge) every tray's links 4-5 down reaches (all 2 trays)")
    # One tray's own fault and another's different one: nothing shared, nothing named.
    assert racks.switch_side({"t01": racks.signs(UNHEALTHY), "t02": racks.signs(STUCK)}) is None
    assert racks.switch_side({"t01": racks.signs([XID])}) == (
        "the NVLink switch trays or their fabric manager: every tray reports gpu_xid (all 1 trays)")


def test_phase_rack_view_remembers_racks_keeps_faults_for_the_window_and_finds_events():
    c = ctx()
    ledger = empty_ledger()
    fleet = fleet_of(NAMES + ["n09"])
    reports = {"t01": report("t01", UNHEALTHY, 1), "t02": report("t02", tray=2), "n09": report("n09", with_domain=False)}
    causes = dict((n, [f for f in rep["findings"] if f["severity"] == "critical"]) for n, rep in reports.items())
    view = racks_.rack_view(reports, fleet, causes, ledger, c)
    assert view.rack_of == {"t01": CHASSIS, "t02": CHASSIS} and view.events == {} and view.units == {}
    assert ledger["racks"]["nodes"]["t01"]["fault"] == {"at": NOW, "findings": ["nvlink_fabric_health|GPU 0"],
                                                        "signs": ["fabric health Unhealthy"]}
    # A second tray within the window: an event; the stuck tray's report names no rack, the remembered one holds.
    later = counts_.context(settings(), NOW + 60, "d1")
    reports = {"t02": report("t02", STUCK, with_domain=False)}
    view = racks_.rack_view(reports, fleet, {"t02": STUCK}, ledger, later)
    event = view.events[CHASSIS]
    assert event.faulted == ["t01", "t02"] and event.side is None and event.disagree is None
    assert view.units == {"t01": ("rack", CHASSIS), "t02": ("rack", CHASSIS)}
    # Past the window t01's fault is stale: no event; a complete clean report clears t02's, an incomplete one does not.
    stale = counts_.context(settings(), NOW + 200, "d1")
    assert racks_.rack_view({"t02": report("t02", complete=False, with_domain=False)}, fleet, {"t02": []}, ledger,
                            stale).events == {}
    assert "fault" in ledger["racks"]["nodes"]["t02"]
    racks_.rack_view({"t02": report("t02", with_domain=False)}, fleet, {"t02": []}, ledger, stale)
    assert "fault" not in ledger["racks"]["nodes"]["t02"]
    # A node the scheduler no longer lists is forgotten.
    racks_.rack_view({}, fleet_of(["t02"]), {}, ledger, stale)
    assert sorted(ledger["racks"]["nodes"]) == ["t02"]
    check_ledger(ledger)


def test_phase_rack_view_configured_racks_decide_membership_and_a_disagreement_is_said():
    c = ctx(rack={"min_nodes": 2, "window": 120, "racks": {"rack-a": ["t01", "t02", "t03"]}})
    ledger = empty_ledger()
    reports = {"t01": report("t01", UNHEALTHY, 1), "t02": report("t02", UNHEALTHY, 2, chassis_serial="1820000000777"),
               "t03": report("t03", with_domain=False)}
    view = racks_.rack_view(reports, fleet_of(), dict((n, list(rep["findings"])) for n, rep in reports.items()), ledger, c)
    assert view.members == {"rack-a": ["t01", "t02", "t03"]}
    assert view.events["rack-a"].disagree == ("the configuration puts t01, t02, t03 in rack rack-a, and they report 2 "
                                              "chassis: 1820000000001 (t01); 1820000000777 (t02)")


def test_phase_count_fleet_counts_a_rack_in_an_event_once():
    c = ctx()
    fleet = fleet_of(NAMES + ["n09"])
    ledger = empty_ledger()
    for n in NAMES:
        ledger["nodes"][n] = {"drains": [], "resumes": [], "unhealthy_at": NOW}
    alone = counts_.count_fleet(fleet, ledger, c)
    units = dict((n, ("rack", CHASSIS)) for n in NAMES)
    as_rack = counts_.count_fleet(fleet, ledger, c, units)
    assert alone.unhealthy == {"gpu": 4} and as_rack.unhealthy == {"gpu": 1} and as_rack.size == {"gpu": 5}
    # The breaker sees 4 of 5 unhealthy node by node (open), one rack of 5 nodes as one (20 %: closed).
    assert counts_.trip_breaker(alone, empty_ledger(), c)["open"] == ["gpu"]
    assert counts_.trip_breaker(as_rack, empty_ledger(), c)["open"] == []


def test_phase_gather_makes_one_item_of_a_racks_nodes_and_decides_for_those_that_did_not_report():
    c = ctx()
    ledger = learned()
    fleet = fleet_of(NAMES + ["n09"], drained=("t04",))
    fleet["t04"]["reason"] = "maintenance by a human"
    reports = {"t01": report("t01", UNHEALTHY, 1), "t02": report("t02", UNHEALTHY, 2),
               "n09": report("n09", [XID], with_domain=False)}
    causes = dict((n, list(rep["findings"])) for n, rep in reports.items())
    view = racks_.rack_view(reports, fleet, causes, ledger, c)
    counted = counts_.count_fleet(fleet, ledger, c, view.units)
    decisions, drains, resumes = r.triage(reports, fleet, causes, counted.effective, ledger, c)
    drains, resumes = racks_.gather(decisions, drains, resumes, fleet, view, counted.effective, ledger, c)
    rack = [item for item in drains if isinstance(item, racks_.RackDrain)]
    assert len(rack) == 1 and [d["node"] for d, ignored in rack[0].members] == ["t01", "t02", "t03"]
    assert rack[0].joined == [] and resumes == []
    # t03 did not report: it has a decision now, in name order; t04 (an admin's drain) is left as it is.
    assert [d["node"] for d in decisions] == ["n09", "t01", "t02", "t03"] and decisions[3]["via"] == "rack"
    assert [item[0]["node"] for item in drains if not isinstance(item, racks_.RackDrain)] == ["n09"]


def _plan(reports, fleet, ledger, at, mode="enforce", certificates=None, **over):
    return r.plan(reports, fleet, ledger, settings(mode, **over), at, "d1", certificates)


def _taken(result, fleet, at):
    """The scheduler took every drain and resume of the plan (the stand-in for slurmctld)."""
    for d in result["decisions"]:
        if d["action"] == "drain" and not d["shadow"]:
            fleet[d["node"]] = dict(fleet[d["node"]], drained=True, reason=d["reason"], reason_time=at)
        if d["action"] == "resume" and not d["shadow"]:
            fleet[d["node"]] = dict(fleet[d["node"]], drained=False, reason=None, reason_time=None)
    return result["ledger"]


@pytest.mark.parametrize("mode", ["enforce", "shadow"])
def test_a_limited_capacity_warning_drains_nothing_then_four_trays_at_once_are_one_rack_decision(mode):
    """Item 6's scene at the plan: one tray turns Limited Capacity (a warning: no drain), then all four report a fabric
    fault in the same moment: one rack decision within max_nodes 1, one ledger entry, one message, shadow or not."""
    fleet = fleet_of(NAMES + ["n09"])
    ledger = learned()
    warned = _plan({"t01": report("t01", LIMITED, 1)}, fleet, ledger, NOW, mode)
    assert [d["action"] for d in warned["decisions"]] == ["none"] and r.messages(warned, "slurm") == []
    assert "fault" not in warned["ledger"]["racks"]["nodes"]["t01"]
    result = _plan(dict((n, report(n, UNHEALTHY, i)) for i, n in enumerate(NAMES, 1)), fleet, warned["ledger"], NOW + 5, mode)
    assert [(d["node"], d["action"], d["held"], d["rack"]) for d in result["decisions"]] == [
        (n, "drain", False, CHASSIS) for n in NAMES]
    assert result["decisions"][0]["why"].startswith(
        "rack %s: 4 trays reported NVLink fabric faults within 120 s (t01, t02, t03, t04); switch side: the NVLink switch "
        "trays or their fabric manager: every tray reports fabric health Unhealthy (all 4 trays); its 4 node(s) in service "
        "drain together (a partial NVLink domain cannot run a multi-node job)" % CHASSIS)
    assert result["decisions"][0]["reason"] == (
        "gpufabric: nvlink_rack rack %s (+1 more); policy %s; via timer" % (CHASSIS, result["decisions"][0]["policy"]))
    decision = result["ledger"]["racks"]["decisions"]
    assert list(decision) == [CHASSIS] and decision[CHASSIS]["nodes"] == NAMES and decision[CHASSIS]["shadow"] == (mode == "shadow")
    entries = [result["ledger"]["nodes"][n]["drains"][-1] for n in NAMES]
    assert all(e["rack"] == CHASSIS and bool(e.get("shadow")) == (mode == "shadow") for e in entries)
    told = r.messages(result, "slurm")
    assert [(m["node"], m["status"], m["target"]) for m in told] == [
        ("rack %s" % CHASSIS, "shadow" if mode == "shadow" else "drained", "rack %s: t01, t02, t03, t04" % CHASSIS)]
    assert told[0]["action"].startswith("Slurm: %s t01, t02, t03, t04 together" % (
        "shadow mode, would have drained" if mode == "shadow" else "drained"))
    check_ledger(result["ledger"])


def test_the_rack_drain_is_held_as_a_whole_by_the_rate_limit_and_counts_once():
    """max_nodes 1: one node drained on its own within the interval holds the whole rack back - none of its nodes
    drains; without it the rack's four nodes are one drain, and a further node's drain is held."""
    fleet = fleet_of(NAMES + ["n09", "n10"])
    ledger = learned()
    first = _plan({"n09": report("n09", [XID], with_domain=False)}, fleet, ledger, NOW)
    ledger = _taken(first, fleet, NOW)
    held = _plan(dict((n, report(n, UNHEALTHY, i)) for i, n in enumerate(NAMES, 1)), fleet, ledger, NOW + 5)
    assert set((d["action"], d["held"]) for d in held["decisions"]) == {("none", True)}
    assert held["decisions"][0]["why"].startswith("rate limit: 1 node(s) of partition gpu already drained by gpufabric")
    assert held["decisions"][0]["why"].endswith("; rack %s: its 4 node(s) drain together or not at all" % CHASSIS)
    assert [m["status"] for m in r.messages(held, "slurm")] == ["held"]
    # An hour later the rack drains as one; n10's drain in the same plan is held: the rack took max_nodes.
    fleet["n09"]["reason_time"] = NOW - 4000
    ledger["nodes"]["n09"]["drains"][-1]["at"] = NOW - 4000
    at = NOW + 10
    reports = dict((n, report(n, UNHEALTHY, i)) for i, n in enumerate(NAMES, 1))
    reports["n10"] = report("n10", [XID, XID], with_domain=False)
    result = _plan(reports, fleet, ledger, at, rate_limit={"max_nodes": 1, "max_percent": 100, "interval": 3600})
    assert [(d["node"], d["action"], d["held"]) for d in result["decisions"]] == [
        ("n10", "none", True)] + [(n, "drain", False) for n in NAMES]


def test_the_first_tray_drains_alone_at_once_and_the_rack_joins_its_drain_as_one_action():
    """Unsynchronised timers: t01 reports first and drains on its own; t02-t04 report within the window and drain
    with it as the rack's one action (max_nodes 1 still allows it: t01's drain was that action)."""
    fleet = fleet_of(NAMES + ["n09"])
    alone = _plan({"t01": report("t01", UNHEALTHY, 1)}, fleet, learned(), NOW)
    assert [(d["node"], d["action"], d["rack"]) for d in alone["decisions"]] == [("t01", "drain", None)]
    ledger = _taken(alone, fleet, NOW)
    result = _plan(dict((n, report(n, UNHEALTHY, i)) for i, n in enumerate(NAMES[1:], 2)), fleet, ledger, NOW + 40)
    assert [(d["node"], d["action"], d["held"]) for d in result["decisions"]] == [(n, "drain", False) for n in NAMES[1:]]
    assert "; t01 drained for it already: one action with them" in result["decisions"][0]["why"]
    assert result["ledger"]["nodes"]["t01"]["drains"][-1]["rack"] == CHASSIS
    assert result["ledger"]["racks"]["decisions"][CHASSIS]["nodes"] == NAMES
    # Counted once: the four drains are one unit in max_nodes' window.
    later = counts_.context(settings(), NOW + 60, "d1")
    view = racks_.rack_view({}, fleet, {}, result["ledger"], later)
    assert counts_.count_fleet(fleet, result["ledger"], later, view.units).recent == {"gpu": 1}


def test_a_tray_alone_or_racks_turned_off_decide_node_by_node():
    """One tray alone is a node's drain. With rack.enabled false the same four trays are four nodes: 4 of 5 unhealthy
    opens the circuit breaker and nothing drains - what the rack, counted once, avoids."""
    fleet = fleet_of(NAMES + ["n09"])
    one = _plan({"t01": report("t01", UNHEALTHY, 1)}, fleet, learned(), NOW)
    assert [(d["action"], d["rack"]) for d in one["decisions"]] == [("drain", None)]
    off = _plan(dict((n, report(n, UNHEALTHY, i)) for i, n in enumerate(NAMES, 1)), fleet, learned(), NOW,
                rack={"enabled": False})
    assert [(d["action"], d["held"], d["rack"]) for d in off["decisions"]] == [("none", True, None)] * 4
    assert off["decisions"][0]["why"].startswith("circuit breaker open: 80.0% of partition gpu unhealthy")
    assert not off["ledger"]["racks"]["decisions"]


def _drained_rack(mode="enforce"):
    fleet = fleet_of(NAMES + ["n09"])
    result = _plan(dict((n, report(n, UNHEALTHY, i)) for i, n in enumerate(NAMES, 1)), fleet, learned(), NOW, mode)
    return _taken(result, fleet, NOW), fleet


def cert(at, imex=True, domain_run=True):
    return certificate.check_certificate(certificate.from_results(
        DCGM, [RUN], measured_at=at, imex={"domain_state": "UP", "findings": []} if imex else None,
        nvlink_domain=[RUN] if domain_run else None, rack=CHASSIS), "t")


def test_the_rack_returns_only_when_every_tray_is_certified_with_imex_up_and_a_domain_run():
    ledger, fleet = _drained_rack()
    clean = dict((n, report(n, tray=i)) for i, n in enumerate(NAMES, 1))
    waiting = _plan(clean, fleet, ledger, NOW + 600)
    assert [(d["action"], d["certify"]) for d in waiting["decisions"]] == [("none", True)] * 4
    assert waiting["decisions"][0]["why"] == ("stays drained: no return-to-service certificate: an active check (dcgm "
                                              "level 2, nccl, imex, nvlink_domain) must pass after the drain")
    # Three trays certified, the fourth's certificate lacks the IMEX check: none returns.
    certs = dict((n, cert(NOW + 700)) for n in NAMES[:3])
    certs["t04"] = cert(NOW + 700, imex=False)
    partial = _plan(clean, fleet, waiting["ledger"], NOW + 800, certificates=certs)
    assert [d["action"] for d in partial["decisions"]] == ["none"] * 4
    assert partial["decisions"][0]["why"] == (
        "stays drained: rack %s returns together, and 1 of its node(s) may not yet (t04: the certificate measured at "
        "2026-11-24T13:28:04Z does not certify: imex was not run)" % CHASSIS)
    assert partial["decisions"][3]["certify"] and not partial["decisions"][0]["certify"]
    # IMEX down on the fourth: still none.
    down = certificate.from_results(DCGM, [RUN], measured_at=NOW + 700, nvlink_domain=[RUN], imex={
        "domain_state": "DOWN", "findings": [{"check": "imex_node", "severity": "critical", "detail": "t04 is not READY"}]})
    assert certificate.check_certificate(down, "t04")["checks"][-1] == {
        "name": "imex", "status": "fail", "detail": "domain DOWN: t04 is not READY"}
    # Only t04 reports now, with a full certificate: the others are ready from their reports within the window, so
    # all four return together, as one resume within max_resumes 1.
    result = _plan({"t04": clean["t04"]}, fleet, partial["ledger"], NOW + 860, certificates={"t04": cert(NOW + 840)})
    assert [(d["node"], d["action"], d["via"]) for d in result["decisions"]] == [
        ("t01", "resume", "rack"), ("t02", "resume", "rack"), ("t03", "resume", "rack"), ("t04", "resume", "timer")]
    assert result["decisions"][0]["why"].startswith("rack %s returns together (4 node(s), every one certified with imex, "
                                                    "nvlink_domain): a fresh, complete check" % CHASSIS)
    assert "nvlink_domain pass 812.0 GB/s of 750 expected with rack %s, imex pass" % CHASSIS in result["decisions"][0]["why"]
    told = r.messages(result, "slurm")
    assert [(m["node"], m["status"]) for m in told] == [("rack %s" % CHASSIS, "resumed")]
    assert counts_.recent_resumes(result["ledger"], counts_.context(settings(), NOW + 900, "d1")) == 1
    check_ledger(result["ledger"])


def test_a_tray_ready_longer_ago_than_the_window_or_not_certified_keeps_the_rack_out():
    ledger, fleet = _drained_rack()
    clean = dict((n, report(n, tray=i)) for i, n in enumerate(NAMES, 1))
    certs = dict((n, cert(NOW + 700)) for n in NAMES)
    first = _plan(dict((n, clean[n]) for n in NAMES[:3]), fleet, ledger, NOW + 800, certificates=certs)
    assert [d["action"] for d in first["decisions"]] == ["none"] * 3
    assert "t04: no report within 120 s that it may return" in first["decisions"][0]["why"]
    # t04 reports 200 s later: t01-t03's readiness is older than the window.
    late = _plan({"t04": clean["t04"]}, fleet, first["ledger"], NOW + 1000)
    assert late["decisions"][0]["action"] == "none" and "t01: no report within 120 s that it may return" in late["decisions"][0]["why"]


def test_phase_resume_rack_is_held_as_a_whole_by_the_breaker_and_max_resumes():
    ledger, fleet = _drained_rack()
    c = counts_.context(settings(), NOW + 800, "d1")
    clean = dict((n, report(n, tray=i)) for i, n in enumerate(NAMES, 1))
    for n in NAMES:
        ledger["nodes"][n]["certificate"] = certificate.record(cert(NOW + 700), c.certification, NOW + 700)
    reports = clean
    view = racks_.rack_view(reports, fleet, dict((n, []) for n in NAMES), ledger, c)
    counted = counts_.count_fleet(fleet, ledger, c, view.units)
    decisions, drains, resumes = r.triage(reports, fleet, dict((n, []) for n in NAMES), counted.effective, ledger, c)
    drains, resumes = racks_.gather(decisions, drains, resumes, fleet, view, counted.effective, ledger, c)
    assert len(resumes) == 1 and isinstance(resumes[0], racks_.RackResume)
    spent = copy.deepcopy(ledger)
    assert resumes_.resume_rack(resumes[0], reports, {"open": [], "shares": {}}, counts_.Holds(0, 0, None), 1, spent, c) == 1
    assert set((d["action"], d["held"]) for d in decisions) == {("none", True)}
    assert decisions[0]["why"] == ("rate limit: 1 node(s) resumed by gpufabric in the last 3600 s, at most 1; rack %s "
                                   "returns together" % CHASSIS)
    opened = resumes_.resume_rack(resumes[0], reports, {"open": ["gpu"], "shares": {"gpu": 80.0}},
                                  counts_.Holds(0, 0, None), 0, copy.deepcopy(ledger), c)
    assert opened == 0 and decisions[0]["why"].startswith("circuit breaker open in partition gpu")
    assert resumes_.resume_rack(resumes[0], reports, {"open": [], "shares": {}}, counts_.Holds(0, 0, None), 0, ledger, c) == 1
    assert [d["action"] for d in decisions] == ["resume"] * 4


def test_phase_drain_rack_in_the_breakers_open_partition_drains_none():
    c = ctx()
    event = racks_.Event(CHASSIS, NAMES, {}, None, None)
    decisions = [triage_.new_decision(n, {"source": "timer"}, [], c) for n in NAMES]
    item = racks_.RackDrain(CHASSIS, event, [(d, []) for d in decisions], [])
    counted = counts_.Counts({}, {"gpu": 5}, {}, {}, {})
    recent, in_effect, ledger = {}, {}, empty_ledger()
    drains_.drain_rack(item, fleet_of(NAMES + ["n09"]), counted, recent, in_effect, {"open": ["gpu"], "shares": {"gpu": 60.0}},
                       counts_.Holds(0, 0, None), ledger, c)
    assert [(d["action"], d["held"]) for d in decisions] == [("none", True)] * 4 and recent == {} and ledger["nodes"] == {}
    drains_.drain_rack(item, fleet_of(NAMES + ["n09"]), counted, recent, in_effect, {"open": [], "shares": {}},
                       counts_.Holds(0, 0, None), ledger, c)
    assert [d["action"] for d in decisions] == ["drain"] * 4 and recent == {"gpu": 1} and in_effect == {"gpu": 1}


def test_the_plan_with_racks_is_its_phases_in_order():
    fleet = fleet_of(NAMES + ["n09"])
    ledger = learned()
    reports = dict((n, report(n, UNHEALTHY, i)) for i, n in enumerate(NAMES[:3], 1))
    whole = _plan(reports, fleet, ledger, NOW)
    c = counts_.context(settings(), NOW, "d1")
    mine, reconciled = counts_.settle_intents(ledger, fleet)
    holds = counts_.rebuilt_holds(mine, NOW)
    causes = counts_.drain_causes(reports, fleet, mine, c)
    view = racks_.rack_view(reports, fleet, causes, mine, c)
    counted = counts_.count_fleet(fleet, mine, c, view.units)
    counts_.take_certificates(None, counted.effective, mine, c)
    recent = counts_.recent_resumes(mine, c)
    breaker = counts_.trip_breaker(counted, mine, c)
    decisions, drains, resumes = r.triage(reports, fleet, causes, counted.effective, mine, c)
    drains, resumes = racks_.gather(decisions, drains, resumes, fleet, view, counted.effective, mine, c)
    drains_.plan_drains(drains, fleet, counted, breaker, holds, mine, c)
    resumes_.plan_resumes(resumes, reports, breaker, holds, recent, mine, c)
    counts_.mark_held(decisions, mine)
    counts_.forget_old(mine, c)
    assert (decisions, mine) == (whole["decisions"], whole["ledger"]) and len(decisions) == 4


def _fleet_of_racks(count):
    names, reports, fleet = [], {}, {}
    for rack in range(count):
        for tray in range(18):
            name = "r%03dt%02d" % (rack, tray)
            fleet[name] = {"partitions": ["gpu"], "drained": False, "reason": None, "reason_time": None}
            reports[name] = report(name, UNHEALTHY, tray, chassis_serial="18200000%05d" % rack)
    return reports, fleet


def _best(reports, fleet, repeat=3):
    best = None
    for ignored in range(repeat):
        started = time.process_time()
        result = _plan(reports, fleet, empty_ledger(), NOW, rate_limit={"max_nodes": 1, "max_percent": 100, "interval": 3600})
        best = min(best or 1e9, time.process_time() - started)
    return best, result


def test_a_thousand_nodes_of_56_racks_reporting_in_the_same_second_stay_linear():
    """1,008 trays (56 racks of 18) report a fabric fault in one batch: one rack drains (max_nodes 1), the other 55 are
    held, told in one message; twice the fleet costs about twice the time (a quadratic step would cost four)."""
    reports, fleet = _fleet_of_racks(56)
    small, result = _best(reports, fleet)
    drained = [d for d in result["decisions"] if d["action"] == "drain"]
    assert len(drained) == 18 and len(set(d["rack"] for d in drained)) == 1
    assert [m["status"] for m in r.messages(result, "slurm")] == ["drained", "held"]
    big, ignored = _best(*_fleet_of_racks(112))
    assert small < 2.0 and big / small < 3.2, (small, big)


def test_without_the_ledgers_record_the_drain_reason_keeps_a_racks_nodes_together():
    """The ledger and its history copy lost (and the rebuild's hold over): slurmctld still holds each node's reason,
    'gpufabric: nvlink_rack rack <id> ...', so one certified tray does not return alone."""
    ledger, fleet = _drained_rack()
    assert fleet["t01"]["reason"].startswith("gpufabric: nvlink_rack rack %s" % CHASSIS)
    lost = empty_ledger()
    result = _plan({"t01": report("t01", tray=1)}, fleet, lost, NOW + 900, certificates={"t01": cert(NOW + 850)})
    assert [(d["node"], d["action"], d["rack"]) for d in result["decisions"]] == [("t01", "none", CHASSIS)]
    assert result["decisions"][0]["why"].startswith("stays drained: rack %s returns together, and 3 of its node(s) may "
                                                    "not yet (t02: no report within 120 s that it may return" % CHASSIS)


@pytest.mark.parametrize("racks_memory", [
    [], {"nodes": []}, {"nodes": {"t01": {"rack": 7}}}, {"nodes": {"t01": {"fault": {"at": "now", "findings": []}}}},
    {"nodes": {"t01": {"fault": {"at": 1, "findings": "nvlink_links|GPU 0"}}}}, {"nodes": {"t01": {"ready": float("nan")}}},
    {"decisions": {"r1": {"action": "reboot", "at": 1, "nodes": []}}},
    {"decisions": {"r1": {"action": "drain", "at": 1, "nodes": "t01"}}},
])
def test_a_rack_memory_of_another_shape_never_reaches_the_plan(racks_memory):
    with pytest.raises(ValueError):
        check_ledger(dict(empty_ledger(), racks=racks_memory))


def test_a_tray_that_reports_its_fault_again_is_no_longer_ready_whatever_it_said_before():
    """t04 said it may return, then reported the fault again (its drain's finding still there): when the other three
    are ready within the window, the rack stays out - t04's newest report counts, not its older one."""
    ledger, fleet = _drained_rack()
    clean = dict((n, report(n, tray=i)) for i, n in enumerate(NAMES, 1))
    certs = dict((n, cert(NOW + 700)) for n in NAMES)
    ready = _plan({"t04": clean["t04"]}, fleet, ledger, NOW + 800, certificates=certs)
    assert ready["ledger"]["racks"]["nodes"]["t04"]["ready"] == NOW + 800
    again = _plan({"t04": report("t04", UNHEALTHY, 4)}, fleet, ready["ledger"], NOW + 830)
    assert again["decisions"][0]["why"].startswith("already drained by gpufabric")
    rest = _plan(dict((n, clean[n]) for n in NAMES[:3]), fleet, again["ledger"], NOW + 860)
    assert [d["action"] for d in rest["decisions"]] == ["none"] * 3
    assert "t04: no report within 120 s that it may return" in rest["decisions"][0]["why"]
