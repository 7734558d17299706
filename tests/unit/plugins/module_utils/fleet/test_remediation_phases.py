"""The decider's plan as a pipeline of named pure phases (remediation_counts, _triage, _drains, _resumes), each tested
alone here on the inputs it takes; test_remediation.py, test_certificate.py and the decider's tests drive the whole
plan (issue 54)."""
import copy

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate, protocol
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation as r
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_counts as counts_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_drains as drains_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_racks as racks_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_resumes as resumes_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation_triage as triage_
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import empty_ledger
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import check_config, drain_reason

NOW = 1795526184
XID = {"check": "gpu_xid", "severity": "critical", "target": "n1/GPU 0", "detail": "Xid 79", "fix_hint": "-"}
MTU = {"check": "mtu", "severity": "warning", "target": "n1:eth2", "detail": "1500", "fix_hint": "-"}
FIRMWARE = {"check": "nic_firmware_settings", "severity": "warning", "target": "n1/mlx5_0", "detail": "ROCE_CC", "fix_hint": "-"}
OURS = drain_reason([XID], "p", "timer")
DCGM = {"host": "n1", "status": "pass", "level": 2, "failures": [], "reason": None, "dcgm_version": "4.2.3",
        "driver_version": "570.124.06"}
RUN = {"label": "n1: all_reduce_perf -g 8", "host": "n1", "mode": "single", "passed": True, "failures": [],
       "figure": {"size": 536870912, "busbw": 361.24}, "expected_busbw": 450.0, "result": {"nccl_version": "2.28.3"}}


def ctx(mode="enforce", **over):
    config = {"mode": mode, "policy": [{"severity": "critical", "action": "drain"}],
              "rate_limit": {"max_nodes": 2, "max_percent": 50, "interval": 3600, "max_resumes": 2},
              "circuit_breaker": {"max_percent": 60, "window": 300}, "escalation": {"max_remediations": 2, "days": 7},
              "slurm": {"enabled": True}}
    config.update(over)
    return counts_.context(check_config(config), NOW, "d1")


def report(node, findings=(), complete=True, unreadable=()):
    return protocol.check_report({"node": node, "findings": [dict(f, target=f["target"].replace("n1", node)) for f in findings],
                                  "complete": complete, "unreadable": list(unreadable), "source": "timer"})


def node(parts=("gpu",), reason=None, at=None, **extra):
    return dict({"partitions": list(parts), "drained": reason is not None, "reason": reason, "reason_time": at}, **extra)


def cert(measured_at=NOW - 60):
    return certificate.check_certificate(certificate.from_results(DCGM, [RUN], measured_at=measured_at), "n1")


def test_context_takes_the_settings_apart_once_at_the_schedulers_clock():
    c = ctx("shadow", escalation={"max_remediations": 3, "days": 2})
    assert (c.now, c.decider, c.shadow, c.interval, c.window) == (NOW, "d1", True, 3600, 300)
    assert c.history_from == NOW - 2 * 86400 and c.escalation["max_remediations"] == 3
    assert c.policy.startswith("policy-") and c.rules[0]["action"] == "drain" and not ctx().shadow


def test_phase_settle_intents_works_on_a_copy_and_settles_what_the_scheduler_took():
    given = empty_ledger()
    given["nodes"]["n1"] = {"drains": [{"at": NOW - 10, "findings": [], "reason": OURS, "pending": True}], "resumes": []}
    given["nodes"]["n2"] = {"drains": [{"at": NOW - 10, "findings": [], "reason": OURS, "pending": True}], "resumes": []}
    kept = copy.deepcopy(given)
    ledger, reconciled = counts_.settle_intents(given, {"n1": node(reason=OURS), "n2": node()})
    assert given == kept   # the caller's ledger is not changed
    assert [(e["node"], e["action"]) for e in reconciled["confirmed"]] == [("n1", "drain")]
    assert [(e["node"], e["action"]) for e in reconciled["dropped"]] == [("n2", "drain")]
    assert "pending" not in ledger["nodes"]["n1"]["drains"][-1] and ledger["nodes"]["n2"]["drains"] == []
    assert counts_.settle_intents(None, {}) == (empty_ledger(), {"confirmed": [], "dropped": []})


def test_phase_rebuilt_holds_hold_drains_and_resumes_until_their_times_then_the_mark_goes():
    ledger = dict(empty_ledger(), rebuilt={"at": NOW - 100, "drains_from": NOW + 50, "resumes_from": NOW + 200, "why": "lost"})
    holds = counts_.rebuilt_holds(ledger, NOW)
    assert (holds.drains_from, holds.resumes_from, holds.rebuilt["why"]) == (NOW + 50, NOW + 200, "lost")
    assert "rebuilt" in ledger
    # Without drains_from, a drain is held no longer than the rebuild's time.
    ledger["rebuilt"]["drains_from"] = None
    assert counts_.rebuilt_holds(ledger, NOW).drains_from == NOW - 100
    # Once both times have passed the mark goes, and nothing is held.
    holds = counts_.rebuilt_holds(ledger, NOW + 200)
    assert holds.rebuilt is None and "rebuilt" not in ledger and holds.resumes_from <= NOW + 200
    assert counts_.rebuilt_holds(empty_ledger(), NOW) == counts_.Holds(NOW, NOW, None)


def test_phase_drain_causes_are_what_the_policy_drains_for_and_mark_the_schedulers_nodes_unhealthy():
    ledger = empty_ledger()
    causes = counts_.drain_causes({"n1": report("n1", [MTU, XID]), "n2": report("n2", [MTU]), "ghost": report("ghost", [XID])},
                                  {"n1": node(), "n2": node()}, ledger, ctx())
    assert [f["check"] for f in causes["n1"]] == ["gpu_xid"] and causes["n2"] == [] and len(causes["ghost"]) == 1
    assert ledger["nodes"] == {"n1": {"drains": [], "resumes": [], "unhealthy_at": NOW}}   # not n2, not a node it does not know


def test_phase_count_fleet_counts_each_partition_once_per_node():
    ledger = empty_ledger()
    ledger["nodes"] = {
        "n2": {"drains": [{"at": NOW - 600, "findings": [], "reason": "x"}], "resumes": [{"at": NOW - 300}]},   # resumed
        "n3": {"drains": [], "resumes": [], "unhealthy_at": NOW - 100},                                         # sick
        "n5": {"drains": [{"at": NOW - 60, "findings": [], "reason": OURS, "shadow": True}], "resumes": []}}
    fleet = {"n1": node(("gpu", "all"), OURS, NOW - 9000), "n2": node(), "n3": node(), "n4": node((), "admin"), "n5": node()}
    counted = counts_.count_fleet(fleet, ledger, ctx())
    assert counted.size == {"gpu": 4, "all": 1, "(no partition)": 1}
    assert counted.in_effect == {"gpu": 1, "all": 1}                  # n1 only: n4 is someone else's, n5's is a shadow
    assert counted.recent == {"gpu": 1}                               # n2: drained and resumed within the interval
    assert counted.unhealthy == {"gpu": 2, "all": 1}                  # n1 drained by us, n3 within the window
    assert counted.effective["n1"] == (True, True, NOW - 9000, OURS) and counted.effective["n4"][:2] == (True, False)
    # In shadow mode the shadow drain is a drain of ours, in effect and recent.
    shadow = counts_.count_fleet(fleet, ledger, ctx("shadow"))
    assert shadow.effective["n5"] == (True, True, NOW - 60, OURS) and shadow.in_effect["gpu"] == 2
    assert shadow.recent == {"gpu": 2}


def test_phase_take_certificates_records_only_on_nodes_gpufabric_drained():
    ledger = empty_ledger()
    states = {"n1": (True, True, NOW - 900, OURS), "n2": (True, False, NOW, "admin")}
    taken = counts_.take_certificates({"n1": cert(), "n2": cert(), "n3": cert()}, states, ledger, ctx())
    assert taken == {"n1": "recorded", "n2": "ignored: n2 is not drained by gpufabric",
                     "n3": "ignored: n3 is not drained by gpufabric"}
    stored = ledger["nodes"]["n1"]["certificate"]
    assert stored["at"] == NOW and stored["passed"] and list(ledger["nodes"]) == ["n1"]
    assert counts_.take_certificates(None, states, ledger, ctx()) == {}


def test_phase_recent_resumes_counts_within_the_interval_shadow_ones_only_in_shadow_mode():
    ledger = empty_ledger()
    ledger["nodes"] = {"n1": {"drains": [], "resumes": [{"at": NOW - 10, "pending": True}, {"at": NOW - 4000}]},
                       "n2": {"drains": [], "resumes": [{"at": NOW - 20, "shadow": True}]}, "n3": {"drains": []}}
    assert counts_.recent_resumes(ledger, ctx()) == 1
    assert counts_.recent_resumes(ledger, ctx("shadow")) == 2


def test_phase_trip_breaker_opens_over_the_share_keeps_its_time_and_says_what_changed():
    counted = counts_.Counts({}, {"a": 4, "b": 2, "c": 5}, {}, {}, {"a": 3, "b": 1})
    ledger = dict(empty_ledger(), breaker={"open": ["a", "c"], "since": NOW - 500})
    breaker = counts_.trip_breaker(counted, ledger, ctx())
    assert breaker == {"open": ["a"], "opened": [], "closed": ["c"], "shares": {"a": 75.0, "b": 50.0, "c": 0.0}}
    assert ledger["breaker"] == {"open": ["a"], "since": NOW - 500, "shares": {"a": 75.0}}
    fresh = dict(empty_ledger())
    assert counts_.trip_breaker(counted, fresh, ctx())["opened"] == ["a"] and fresh["breaker"]["since"] == NOW
    calm = counts_.Counts({}, {"a": 4}, {}, {}, {})
    assert counts_.trip_breaker(calm, fresh, ctx())["closed"] == ["a"] and fresh["breaker"]["since"] is None


@pytest.mark.parametrize("findings, entry, state, where, why", [
    ([XID], node(), (False, False, None, None), "drain", ""),
    ([XID], node(reason=OURS), (True, True, NOW, OURS), None, "already drained by gpufabric (%s)" % OURS),
    ([], node(reason="bad dimm"), (True, False, NOW, "bad dimm"), None,
     "drained by someone else (bad dimm): gpufabric leaves it as it is"),
    ([], node(reason=OURS, record_missing=True), (True, True, NOW, OURS), None, "stays drained: the record of gpufabric's drain"),
    ([], node(reason=OURS), (True, True, NOW, OURS), "resume", ""),
    ([MTU], node(), (False, False, None, None), None, "in service, nothing asks for a drain"),
])
def test_phase_triage_sends_each_node_to_the_drains_the_resumes_or_decides_it_there(findings, entry, state, where, why):
    reports = {"n1": report("n1", findings)}
    c = ctx()
    causes = counts_.drain_causes(reports, {}, empty_ledger(), c)
    decisions, drains, resumes = triage_.triage(reports, {"n1": entry}, causes, {"n1": state}, empty_ledger(), c)
    assert decisions[0]["why"].startswith(why) and decisions[0]["action"] == "none"
    assert [d["node"] for d, dummy in drains] == (["n1"] if where == "drain" else [])
    assert [(d["node"], reason) for d, _rec, _entry, reason in resumes] == ([("n1", OURS)] if where == "resume" else [])
    assert decisions[0]["healthy"] is False   # a warning is not healthy, and no other case is in service


def test_phase_triage_says_a_node_it_does_not_know_an_incomplete_check_and_a_healthy_one():
    reports = {"ghost": report("ghost"), "n1": report("n1", complete=False, unreadable=["dcgmi"]), "n2": report("n2")}
    decisions, drains, resumes = triage_.triage(reports, {"n1": node(), "n2": node()}, {"ghost": [], "n1": [], "n2": []},
                                                {"n1": (False, False, None, None), "n2": (False, False, None, None)},
                                                empty_ledger(), ctx())
    assert [(d["node"], d["why"], d["healthy"]) for d in decisions] == [
        ("ghost", "the scheduler does not know this node", False),
        ("n1", "in service; the check was incomplete (dcgmi)", False), ("n2", "in service, nothing asks for a drain", True)]
    assert drains == [] and resumes == []


def test_maintenance_is_carried_out_on_an_idle_node_waited_for_on_a_busy_one_and_only_said_in_shadow_mode():
    keys = {"nic_firmware_settings|n1/mlx5_0"}
    assert triage_.maintenance(keys, {"idle": True}, False)["maintain"] == ["nic_firmware_settings|n1/mlx5_0"]
    assert triage_.maintenance(keys, {}, False) == {
        "why": "stays drained: the NIC firmware settings (n1/mlx5_0) wait for the jobs still on it to end"}
    assert triage_.maintenance(keys, {"idle": True}, True)["why"].startswith("shadow mode: would change")
    assert triage_.maintenance(keys | {"gpu_xid|n1/GPU 0"}, {"idle": True}, False) is None
    assert triage_.maintenance(set(), {"idle": True}, False) is None


def test_phase_drain_hold_the_breaker_then_the_rate_limits_then_a_rebuilds_hold():
    c = ctx()
    size, none = {"gpu": 10}, counts_.Holds(NOW, NOW, None)
    shut = {"open": ["gpu"], "shares": {"gpu": 70.0}}
    assert drains_.drain_hold(["gpu"], {}, {}, size, shut, none, c).startswith(
        "circuit breaker open: 70.0% of partition gpu unhealthy (more than 60%)")
    calm = {"open": [], "shares": {}}
    assert drains_.drain_hold(["gpu"], {"gpu": 2}, {}, size, calm, none, c) == (
        "rate limit: 2 node(s) of partition gpu already drained by gpufabric in the last 3600 s, at most 2")
    assert drains_.drain_hold(["gpu"], {}, {"gpu": 5}, size, calm, none, c) == (
        "rate limit: 5 of the 10 node(s) of partition gpu are drained by gpufabric, at most 50% (5)")
    rebuilt = counts_.Holds(NOW + 30, NOW, {"at": NOW - 10, "drains_from": NOW + 30, "why": "history lost"})
    assert drains_.drain_hold(["gpu"], {}, {}, size, calm, rebuilt, c).startswith(
        "drain budget unknown: the decider's decision history could not be rebuilt (history lost)")
    assert drains_.drain_hold(["gpu"], {"gpu": 1}, {"gpu": 4}, size, calm, none, c) is None
    assert [drains_.allowed(n, p) for n, p in ((3, 10), (10, 50), (10, 0))] == [1, 5, 0]


def test_phase_escalation_counts_the_drains_within_its_days_shadow_ones_only_in_shadow_mode():
    record = {"drains": [{"at": NOW - 9 * 86400}, {"at": NOW - 86400}, {"at": NOW - 60, "shadow": True}]}
    assert drains_.escalation(record, ctx()) == (False, None)                       # 1 counted + this one = 2
    assert drains_.escalation(record, ctx("shadow")) == (True, "3 drains in 7 d")
    assert drains_.escalation({"drains": [{"at": NOW - 60}]}, ctx(escalation={"max_remediations": 1, "days": 1})) == (
        True, "2 drains in 1 d")


def test_phase_plan_drains_worst_first_counts_its_own_drains_and_records_open_intents():
    c = ctx(evidence={"enabled": True})
    fleet = dict(("n%d" % i, node()) for i in range(1, 5))
    two = report("n3", [XID, dict(XID, target="n3/GPU 1")])
    decisions = dict((n, triage_.new_decision(n, report(n), [], c)) for n in fleet)
    candidates = [(decisions["n1"], [XID]), (decisions["n2"], [MTU]), (decisions["n3"], two["findings"])]
    counted = counts_.Counts({}, {"gpu": 4}, {}, {}, {})
    ledger = empty_ledger()
    drains_.plan_drains(candidates, fleet, counted, {"open": [], "shares": {}}, counts_.Holds(NOW, NOW, None), ledger, c)
    assert [(n, decisions[n]["action"], decisions[n]["held"]) for n in ("n3", "n1", "n2")] == [
        ("n3", "drain", False), ("n1", "drain", False), ("n2", "none", True)]   # 2 of 4 at most: n2 comes last
    assert decisions["n2"]["why"].startswith("rate limit: 2 node(s) of partition gpu already drained")
    assert counted.recent == {} and counted.in_effect == {}   # counted on copies
    entry = ledger["nodes"]["n3"]["drains"][-1]
    assert entry["pending"] and entry["by"] == "d1" and entry["at"] == NOW and entry["reason"] == decisions["n3"]["reason"]
    assert entry["evidence"] == decisions["n3"]["evidence"] and "(+1 more)" in entry["reason"]
    shadow = empty_ledger()
    drains_.plan_drains([(triage_.new_decision("n1", report("n1"), [XID], ctx("shadow")), [XID])], fleet, counted,
                        {"open": [], "shares": {}}, counts_.Holds(NOW, NOW, None), shadow, ctx("shadow"))
    assert shadow["nodes"]["n1"]["drains"][-1]["shadow"] and "pending" not in shadow["nodes"]["n1"]["drains"][-1]


def test_phase_drain_in_effect_from_the_ledger_or_else_the_schedulers_reason():
    record = {"drains": [{"at": NOW - 500, "findings": ["gpu_xid|n1/GPU 0"], "reason": OURS, "escalated": False}]}
    known = resumes_.drain_in_effect(record, node(reason=OURS, at=NOW - 400), OURS, False)
    assert (known.recorded, known.known, known.escalated, known.at) == (["gpu_xid|n1/GPU 0"], True, False, NOW - 500)
    more = drain_reason([XID, MTU], "p", "timer")
    guessed = resumes_.drain_in_effect({}, node(reason=more, at=NOW - 400), more, False)
    assert (guessed.current, guessed.recorded, guessed.known, guessed.at) == (None, ["gpu_xid|n1/GPU 0"], False, NOW - 400)


@pytest.mark.parametrize("findings, complete, unreadable, escalated, known, refused, why", [
    ([], True, [], True, True, None, "escalated (%s): it stays drained until a human resumes it" % OURS),
    ([], False, ["dcgmi"], False, True, None, "stays drained: the check could not read dcgmi, and unknown is not healthy"),
    ([], False, [], False, True, None, "stays drained: the check was incomplete"),
    ([XID], True, [], False, True, None, "stays drained: finding recorded at the drain still reported (gpu_xid|n1/GPU 0)"),
    ([MTU], True, [], False, False, None, "stays drained: the findings recorded at the drain are not all known"),
    ([], True, [], False, True, "no certificate", "stays drained: no certificate"),
    ([MTU], True, [], False, True, None, None),
])
def test_phase_why_it_stays_fails_closed_in_order(findings, complete, unreadable, escalated, known, refused, why):
    drain = resumes_.Drain(None, ["gpu_xid|n1/GPU 0"], known, escalated, NOW - 600)
    said = resumes_.why_it_stays(report("n1", findings, complete, unreadable), node(reason=OURS), OURS, drain, refused,
                                 ctx(certification={"required": True}))
    assert (said or {}).get("why", "").startswith(why or "") and (said is None) == (why is None)
    assert bool((said or {}).get("certify")) == (refused is not None)


def test_phase_why_it_stays_lets_a_certificate_pass_when_none_is_required_and_says_a_change_to_carry_out():
    drain = resumes_.Drain(None, ["nic_firmware_settings|n1/mlx5_0"], True, False, NOW - 600)
    assert resumes_.why_it_stays(report("n1"), node(), OURS, drain, "no certificate", ctx(certification={"required": False})) is None
    said = resumes_.why_it_stays(report("n1", [FIRMWARE]), node(idle=True), OURS, drain, None, ctx())
    assert said["maintain"] == ["nic_firmware_settings|n1/mlx5_0"]


def test_phase_resume_hold_the_breaker_then_a_rebuilds_hold_then_max_resumes():
    c, calm, none = ctx(), {"open": [], "shares": {}}, counts_.Holds(NOW, NOW, None)
    assert resumes_.resume_hold(["gpu"], {"open": ["gpu"], "shares": {}}, none, 0, c) == (
        "circuit breaker open in partition gpu: no resume until a human looks")
    rebuilt = counts_.Holds(NOW, NOW + 90, {"at": NOW - 30})
    assert resumes_.resume_hold(["gpu"], calm, rebuilt, 0, c).startswith(
        "resume budget unknown: the decider's state was rebuilt from the scheduler 30 s ago")
    assert resumes_.resume_hold(["gpu"], calm, none, 2, c) == "rate limit: 2 node(s) resumed by gpufabric in the last 3600 s, at most 2"
    assert resumes_.resume_hold(["gpu"], calm, none, 1, c) is None


def test_phase_plan_resumes_spends_the_certificate_keeps_it_with_the_open_intent_and_counts_each_resume():
    c = ctx(certification={"required": True, "checks": ["dcgm", "nccl"]})
    ledger = empty_ledger()
    drained = {"at": NOW - 900, "findings": ["gpu_xid|n1/GPU 0"], "reason": OURS}
    for name in ("n1", "n2", "n3"):
        ledger["nodes"][name] = {"drains": [dict(drained)], "resumes": []}
    ledger["nodes"]["n1"]["certificate"] = ledger["nodes"]["n3"]["certificate"] = certificate.record(
        cert(), c.certification, NOW - 30)
    entries = dict((n, node(reason=OURS, at=NOW - 900)) for n in ("n1", "n2", "n3"))
    decisions = dict((n, triage_.new_decision(n, report(n), [], c)) for n in entries)
    candidates = [(decisions[n], ledger["nodes"][n], entries[n], OURS) for n in sorted(entries)]
    reports = dict((n, report(n)) for n in entries)
    count = resumes_.plan_resumes(candidates, reports, {"open": [], "shares": {}}, counts_.Holds(NOW, NOW, None), 1,
                                  ledger, c)
    assert count == 2 and decisions["n1"]["action"] == "resume" and decisions["n1"]["mttr"] == 900
    assert decisions["n2"]["certify"] and decisions["n2"]["why"].startswith("stays drained: no return-to-service certificate")
    assert decisions["n3"]["held"] and decisions["n3"]["why"].startswith("rate limit: 2 node(s) resumed")
    resumed = ledger["nodes"]["n1"]["resumes"][-1]
    assert resumed["pending"] and resumed["certificate_kept"]["at"] == NOW - 30 and resumed["drained_at"] == NOW - 900
    assert "certificate" not in ledger["nodes"]["n1"] and "certificate" in ledger["nodes"]["n3"]   # spent once, n3's kept


def test_phase_mark_held_tells_a_cause_once_and_forgets_it_when_it_is_gone():
    ledger = empty_ledger()
    held = {"node": "n1", "held": True, "why": "rate limit: 2 node(s) ..."}
    counts_.mark_held([held], ledger)
    assert held["newly_held"] and ledger["nodes"]["n1"]["held"] == "rate limit"
    again = dict(held)
    counts_.mark_held([again], ledger)
    assert again["newly_held"] is False
    free = {"node": "n1", "held": False, "why": "in service, nothing asks for a drain"}
    counts_.mark_held([free, {"node": "n2", "held": False, "why": "x"}], ledger)
    assert free["newly_held"] is False and ledger["nodes"]["n1"]["held"] is None and "n2" not in ledger["nodes"]


def test_phase_forget_old_keeps_the_window_and_at_most_history_entries_and_forgets_empty_nodes():
    c = ctx(escalation={"max_remediations": 2, "days": 1})
    ledger = empty_ledger()
    ledger["nodes"] = {
        "n1": {"drains": [{"at": NOW - 2 * 86400}] + [{"at": NOW - i} for i in range(30, 0, -1)], "resumes": []},
        "n2": {"drains": [{"at": NOW - 2 * 86400}], "resumes": []},
        "n3": {"drains": [], "resumes": [], "unhealthy_at": NOW - 100},
        "n4": {"drains": [], "resumes": [], "unhealthy_at": NOW - 400},
        "n5": {"drains": [], "held": "rate limit"}}
    counts_.forget_old(ledger, c)
    assert len(ledger["nodes"]["n1"]["drains"]) == counts_.HISTORY and ledger["nodes"]["n1"]["drains"][-1]["at"] == NOW - 1
    assert sorted(ledger["nodes"]) == ["n1", "n3", "n5"] and ledger["nodes"]["n5"]["resumes"] == []


def test_the_plan_is_its_phases_in_order():
    """remediation.plan composed of the phases: a drain, a certified resume, a held node, a breaker that stays
    closed, on one fleet; the same result as the phases called by hand."""
    c = ctx(rate_limit={"max_nodes": 1, "max_percent": 50, "interval": 3600, "max_resumes": 2},
            circuit_breaker={"max_percent": 80, "window": 300})
    settings = check_config({"mode": "enforce", "policy": [{"severity": "critical", "action": "drain"}],
                             "rate_limit": {"max_nodes": 1, "max_percent": 50, "interval": 3600, "max_resumes": 2},
                             "circuit_breaker": {"max_percent": 80, "window": 300},
                             "escalation": {"max_remediations": 2, "days": 7}, "slurm": {"enabled": True}})
    fleet = {"n1": node(), "n2": node(), "n3": node(reason=OURS, at=NOW - 5000), "n4": node()}
    reports = {"n1": report("n1", [XID]), "n2": report("n2", [XID]), "n3": report("n3")}
    ledger = empty_ledger()
    ledger["nodes"]["n3"] = {"drains": [{"at": NOW - 5000, "findings": ["gpu_xid|n3/GPU 0"], "reason": OURS}], "resumes": []}
    result = r.plan(reports, fleet, ledger, settings, NOW, "d1", {"n3": cert()})
    assert [(d["node"], d["action"], d["held"]) for d in result["decisions"]] == [
        ("n1", "drain", False), ("n2", "none", True), ("n3", "resume", False)]
    assert result["breaker"]["open"] == [] and result["breaker"]["shares"] == {"gpu": 75.0}
    own, reconciled = counts_.settle_intents(ledger, fleet)
    holds = counts_.rebuilt_holds(own, NOW)
    causes = counts_.drain_causes(reports, fleet, own, c)
    view = racks_.rack_view(reports, fleet, causes, own, c)   # no node tells a rack here: test_remediation_racks' subject
    counted = counts_.count_fleet(fleet, own, c, view.units)
    taken = counts_.take_certificates({"n3": cert()}, counted.effective, own, c)
    recent = counts_.recent_resumes(own, c)
    breaker = counts_.trip_breaker(counted, own, c)
    decisions, drains, resumes = triage_.triage(reports, fleet, causes, counted.effective, own, c)
    drains, resumes = racks_.gather(decisions, drains, resumes, fleet, view, counted.effective, own, c)
    drains_.plan_drains(drains, fleet, counted, breaker, holds, own, c)
    resumes_.plan_resumes(resumes, reports, breaker, holds, recent, own, c)
    counts_.mark_held(decisions, own)
    counts_.forget_old(own, c)
    assert result == {"decisions": decisions, "ledger": own, "breaker": breaker, "certificates": taken,
                      "reconciled": reconciled}
