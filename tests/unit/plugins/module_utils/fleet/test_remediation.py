"""remediation.py (with policy.py and ledger.py): one decider's plan for a whole fleet - the policy, shadow mode, the circuit breaker,
the rate limits over drains and resumes, escalation, fail-closed resumes - and the exact scontrol
commands and Kubernetes JSON patches; Slurm outputs as real Slurm prints them."""
import json
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import k8s_nodes, protocol, slurm_nodes
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation as r
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import (
    LEDGER_ANNOTATION, check_history, check_ledger, check_record, empty_ledger, held_until, history_of, rebuild, reconcile,
    restore, settle)
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import (
    CORDON_ANNOTATION, MAX_REASON, TAINT_KEY, PolicyError, action_for, check_config, check_policy, drain_reason,
    findings_from_reason, is_escalated)
from paths import FIXTURES

XID = {"check": "gpu_xid", "severity": "critical", "target": "n1/GPU 0000:18:00", "detail": "Xid 79", "fix_hint": "-"}
PORT = {"check": "rdma_port_state", "severity": "critical", "target": "n1/mlx5_0/1", "detail": "DOWN", "fix_hint": "-"}
MTU = {"check": "mtu", "severity": "warning", "target": "n1:eth2", "detail": "1500", "fix_hint": "-"}
NOW = 1795526184


def settings(**over):
    config = {"mode": "enforce", "policy": [{"severity": "critical", "action": "drain"}],
              "rate_limit": {"max_nodes": 1, "max_percent": 50, "interval": 3600, "max_resumes": 5},
              "circuit_breaker": {"max_percent": 100, "window": 300}, "slurm": {"enabled": True},
              # The certificate a resume needs is test_certificate's subject; here the passive check resumes.
              "certification": {"required": False}}
    config.update(over)
    return check_config(config)


def report(node, findings=(), complete=True, unreadable=(), source="timer"):
    return protocol.check_report({"node": node, "findings": list(findings), "complete": complete,
                                  "unreadable": list(unreadable), "source": source})


def fleet(*names, **drained):
    """Nodes in partition gpu; drained=name: (reason, reason_time)."""
    out = {}
    for name in names:
        reason, when = drained.get(name, (None, None))
        out[name] = {"partitions": ["gpu"], "drained": reason is not None, "reason": reason, "reason_time": when}
    return out


def by_node(result):
    return dict((d["node"], d) for d in result["decisions"])


def test_the_policy_maps_check_and_severity_to_an_action_first_match_wins():
    rules = check_policy([{"check": "mtu", "action": "none"}, {"severity": "critical", "action": "drain"},
                          {"check": "*", "severity": "*", "action": "notify"}])
    assert [action_for(f, rules) for f in (XID, MTU)] == ["drain", "none"]
    assert action_for(MTU, []) == "notify"


@pytest.mark.parametrize("rules, message", [
    ("drain", "must be a list of rules"),
    ([{"action": "reboot"}], "policy rule 1: action must be one of notify, drain, none, got 'reboot'"),
    ([{"action": "drain", "severity": "fatal"}], "policy rule 1: severity must be one of"),
    ([{"action": "drain", "check": "gpu xid\nReason=x"}], "policy rule 1: check must be a check name"),
    ([{"action": "drain", "when": "always"}], "policy rule 1 has unknown key(s) when"),
])
def test_a_bad_policy_names_the_rule_and_the_value(rules, message):
    with pytest.raises(PolicyError) as error:
        check_policy(rules)
    assert message in str(error.value)


@pytest.mark.parametrize("config, message", [
    ({"rate_limit": {"max_nodes": -1}}, "rate limit max_nodes must be a whole number of at least 0, got -1"),
    ({"rate_limit": {"interval": 0}}, "rate limit interval must be a whole number of at least 1, got 0"),
    ({"rate_limit": {"max_percent": 101}}, "rate limit max_percent must be a number from 0 to 100, got 101"),
    ({"rate_limit": {"burst": 3}}, "unknown rate limit key(s) burst"),
    ({"circuit_breaker": {"max_percent": float("nan")}}, "circuit_breaker max_percent must be a number from 0 to 100"),
    ({"escalation": {"days": 0}}, "escalation days must be a whole number of at least 1, got 0"),
    ({"mode": "dry-run"}, "remediation mode must be shadow (decide and report, act on nothing) or enforce, got 'dry-run'"),
    ({"dry_run": True}, "(dry_run is now mode: shadow)"),
    ({"policy_name": "a b"}, "policy_name must be 1 to 63 of [A-Za-z0-9._-], got 'a b'"),
    ({"slurm": {"enabled": True}, "kubernetes": {"enabled": True}}, "enable slurm or kubernetes, not both"),
    ({"kubernetes": {"kubeconfig": "/a\n/b"}}, "remediation kubernetes kubeconfig must be a one-line string"),
])
def test_bad_settings_are_refused_naming_the_value(config, message):
    with pytest.raises(PolicyError) as error:
        check_config(config)
    assert message in str(error.value)


def test_a_new_install_is_in_shadow_mode_and_names_its_policy():
    config = check_config({"policy": [{"severity": "critical", "action": "drain"}]})
    assert config["mode"] == "shadow"
    assert config["policy_name"].startswith("policy-") and len(config["policy_name"]) == 15
    assert check_config({"policy": [], "policy_name": "site-v2"})["policy_name"] == "site-v2"


def test_a_fleet_wide_alarm_drains_exactly_max_nodes_and_holds_the_rest():
    names = ["n%02d" % i for i in range(1, 17)]
    result = r.plan(dict((n, report(n, [dict(XID, target=n + "/GPU 0")])) for n in names), fleet(*names), None,
                    settings(rate_limit={"max_nodes": 1, "max_percent": 100}), NOW)
    drained = [d for d in result["decisions"] if d["action"] == "drain"]
    assert [d["node"] for d in drained] == ["n01"]
    assert drained[0]["reason"] == "gpufabric: gpu_xid n01/GPU 0; policy %s; via timer" % settings()["policy_name"]
    held = [d for d in result["decisions"] if d["held"]]
    assert len(held) == 15
    assert held[0]["why"] == "rate limit: 1 node(s) of partition gpu already drained by gpufabric in the last 3600 s, at most 1"
    # One message for the fifteen held nodes, not fifteen.
    messages = r.messages(result, "slurm")
    assert [m["status"] for m in messages] == ["drained", "held"]
    assert messages[1]["node"] == "15 nodes" and messages[1]["target"].startswith("n02, n03")


def test_the_limit_counts_the_drains_slurmctld_holds_by_its_own_clock():
    ours = "gpufabric: gpu_xid n2/GPU 0; policy p; via timer"
    # n2 was drained by us 10 minutes ago by slurmctld's clock: the one allowed drain is used.
    result = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3", "n4", n2=(ours, NOW - 600)), None, settings(), NOW)
    assert by_node(result)["n1"]["held"]
    # Two hours ago: outside the interval, n1 may go (and 2 of 4 is within 50 %).
    result = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3", "n4", n2=(ours, NOW - 7200)), None, settings(), NOW)
    assert by_node(result)["n1"]["action"] == "drain"
    # A drain of ours without a time (unknown) counts as recent.
    result = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3", "n4", n2=(ours, None)), None, settings(), NOW)
    assert by_node(result)["n1"]["held"]
    # Drains by someone else do not count.
    result = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3", "n4", n2=("bad dimm", NOW)), None, settings(), NOW)
    assert by_node(result)["n1"]["action"] == "drain"


def test_the_share_limit_keeps_a_partition_in_service_but_allows_one_node():
    ours = "gpufabric: gpu_xid n2/GPU 0"
    config = settings(rate_limit={"max_nodes": 5, "max_percent": 10})
    result = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3", n2=(ours, NOW - 7200)), None, config, NOW)
    assert by_node(result)["n1"]["why"] == ("rate limit: 1 of the 3 node(s) of partition gpu are drained by gpufabric, "
                                            "at most 10% (1)")
    result = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3"), None, config, NOW)
    assert by_node(result)["n1"]["action"] == "drain"  # 10 % of 3 rounds down to 0: one node is still allowed
    nothing = settings(rate_limit={"max_nodes": 0})
    assert by_node(r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2"), None, nothing, NOW))["n1"]["held"]


def test_worst_nodes_are_drained_first():
    worse = report("n2", [dict(XID, target="n2/GPU 0"), dict(PORT, target="n2/mlx5_0/1")])
    result = r.plan({"n1": report("n1", [XID]), "n2": worse}, fleet("n1", "n2", "n3", "n4"), None, settings(), NOW)
    assert [d["node"] for d in result["decisions"] if d["action"] == "drain"] == ["n2"]
    assert "(+1 more)" in by_node(result)["n2"]["reason"]


def test_the_circuit_breaker_stops_all_action_when_too_much_is_unhealthy():
    config = settings(circuit_breaker={"max_percent": 50, "window": 300}, rate_limit={"max_nodes": 10, "max_percent": 100})
    reports = dict((n, report(n, [dict(XID, target=n)])) for n in ("n1", "n2", "n3"))
    result = r.plan(reports, fleet("n1", "n2", "n3", "n4"), None, config, NOW)
    assert [d["action"] for d in result["decisions"]] == ["none"] * 3 and all(d["held"] for d in result["decisions"])
    assert result["breaker"]["opened"] == ["gpu"] and result["breaker"]["shares"]["gpu"] == 75.0
    assert by_node(result)["n1"]["why"].startswith("circuit breaker open: 75.0% of partition gpu unhealthy")
    assert [m["status"] for m in r.messages(result, "slurm")] == ["held", "breaker-open"]
    # Within the window the nodes that reported stay counted; a clean node's resume is held as well.
    ledger = result["ledger"]
    ours = "gpufabric: gpu_xid n4"
    again = r.plan({"n4": report("n4")}, fleet("n1", "n2", "n3", "n4", n4=(ours, NOW - 9000)), ledger, config, NOW + 60)
    assert again["decisions"][0]["held"] and "circuit breaker open in partition gpu" in again["decisions"][0]["why"]
    assert again["breaker"]["opened"] == [] and again["breaker"]["open"] == ["gpu"]
    # After the window the share falls back: the breaker closes and says so once.
    later = r.plan({"n4": report("n4")}, fleet("n1", "n2", "n3", "n4"), again["ledger"], config, NOW + 1000)
    assert later["breaker"]["closed"] == ["gpu"]
    assert [m["status"] for m in r.messages(later, "slurm")] == ["breaker-closed"]


def test_shadow_mode_decides_records_and_holds_like_enforce_but_acts_on_nothing():
    config = settings(mode="shadow")
    result = r.plan({"n1": report("n1", [XID]), "n2": report("n2", [dict(XID, target="n2")])},
                    fleet("n1", "n2", "n3", "n4"), None, config, NOW)
    decisions = by_node(result)
    assert decisions["n1"]["action"] == "drain" and decisions["n1"]["shadow"]
    assert decisions["n2"]["held"]  # the shadow drain counts, as a real one would
    assert r.decision_text("slurm", decisions["n1"]).startswith("Slurm: shadow mode, would have drained n1")
    assert [m["status"] for m in r.messages(result, "slurm")] == ["shadow", "held"]
    # The next report of n1 sees its shadow drain: nothing new; when it clears, a shadow resume.
    again = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3", "n4"), result["ledger"], config, NOW + 60)
    assert by_node(again)["n1"]["why"].startswith("already drained by gpufabric")
    clear = r.plan({"n1": report("n1")}, fleet("n1", "n2", "n3", "n4"), again["ledger"], config, NOW + 120)
    assert by_node(clear)["n1"]["action"] == "resume" and by_node(clear)["n1"]["shadow"]
    # Switching to enforce forgets the shadow: the real fleet is what counts.
    real = r.plan({"n2": report("n2", [dict(XID, target="n2")])}, fleet("n1", "n2", "n3", "n4"), result["ledger"],
                  settings(), NOW + 60)
    assert by_node(real)["n2"]["action"] == "drain" and not by_node(real)["n2"]["shadow"]


def carried_out(result):
    """The plan's ledger as the decider keeps it once the scheduler took every drain and resume (decider._carry_out
    settles each open intent): no open mark left for the next plan to reconcile and tell."""
    ledger = result["ledger"]
    for record in ledger["nodes"].values():
        for key in ("drains", "resumes"):
            if (record.get(key) or [{}])[-1].get("pending"):
                settle(record, key, True)
    return ledger


def _drained(ledger_result, node="n1"):
    decision = by_node(ledger_result)[node]
    return decision["reason"], ledger_result["ledger"]


def test_a_resume_needs_a_complete_check_in_which_every_recorded_finding_cleared():
    config = settings()
    first = r.plan({"n1": report("n1", [XID, PORT])}, fleet("n1", "n2", "n3"), None, config, NOW)
    reason, ledger = _drained(first)
    drained = fleet("n1", "n2", "n3", n1=(reason, NOW))
    recorded = first["ledger"]["nodes"]["n1"]["drains"][-1]["findings"]
    assert recorded == ["gpu_xid|n1/GPU 0000:18:00", "rdma_port_state|n1/mlx5_0/1"]
    # The kernel log cannot be read: no Xid is seen, but unknown is not healthy.
    blind = report("n1", [PORT], complete=False, unreadable=["kernel log: journalctl -k -b did not answer within 30 s"])
    decision = by_node(r.plan({"n1": blind}, drained, ledger, config, NOW + 60))["n1"]
    assert decision["action"] == "none" and decision["why"].startswith("already drained by gpufabric")
    blind = report("n1", [], complete=False, unreadable=["kernel log: dmesg: Operation not permitted"])
    decision = by_node(r.plan({"n1": blind}, drained, ledger, config, NOW + 60))["n1"]
    assert decision["action"] == "none"
    assert decision["why"] == ("stays drained: the check could not read kernel log: dmesg: Operation not permitted, "
                               "and unknown is not healthy")
    # A narrower policy (only gpu_xid drains now): the port finding recorded at the drain still holds it.
    narrow = settings(policy=[{"check": "gpu_xid", "action": "drain"}])
    decision = by_node(r.plan({"n1": report("n1", [PORT])}, drained, ledger, narrow, NOW + 60))["n1"]
    assert decision["action"] == "none"
    assert decision["why"] == "stays drained: finding recorded at the drain still reported (rdma_port_state|n1/mlx5_0/1)"
    # Everything cleared in a complete check: resumed, whatever the policy.
    decision = by_node(r.plan({"n1": report("n1", [MTU])}, drained, ledger, narrow, NOW + 60))["n1"]
    assert decision["action"] == "resume" and decision["why"].startswith("a fresh, complete check: every finding")
    assert slurm_nodes.slurm_argv("n1", decision) == ["scontrol", "update", "NodeName=n1", "State=RESUME"]


FIRMWARE = {"check": "nic_firmware_settings", "severity": "warning", "target": "n1/01:00.1",
            "detail": "01:00.1 (ConnectX4LX): ROCE_CC_PRIO_MASK_P1 255 -> 8 (roce_lossless)", "fix_hint": "-"}


def test_a_firmware_change_is_carried_out_only_on_a_node_drained_for_it_and_idle():
    config = settings(policy=[{"check": "nic_firmware_settings", "action": "drain"},
                              {"severity": "critical", "action": "drain"}])
    first = r.plan({"n1": report("n1", [FIRMWARE])}, fleet("n1", "n2", "n3"), None, config, NOW)
    reason, ledger = _drained(first)
    assert by_node(first)["n1"]["action"] == "drain" and by_node(first)["n1"]["maintain"] == []
    drained = fleet("n1", "n2", "n3", n1=(reason, NOW))
    # Jobs still run on it (draining): the change waits.
    decision = by_node(r.plan({"n1": report("n1", [FIRMWARE])}, drained, ledger, config, NOW + 60))["n1"]
    assert decision["maintain"] == [] and decision["action"] == "none"
    assert decision["why"] == "stays drained: the NIC firmware settings (n1/01:00.1) wait for the jobs still on it to end"
    # Idle: the decision names what to change.
    drained["n1"]["idle"] = True
    decision = by_node(r.plan({"n1": report("n1", [FIRMWARE])}, drained, ledger, config, NOW + 60))["n1"]
    assert decision["maintain"] == ["nic_firmware_settings|n1/01:00.1"] and decision["action"] == "none"
    assert decision["why"].startswith("stays drained: the NIC firmware settings (n1/01:00.1) to change now that no job")
    # Another finding recorded at the drain still there: not a change to carry out, a fault to wait out.
    both = r.plan({"n1": report("n1", [XID, FIRMWARE])}, fleet("n1", "n2"), None, config, NOW)
    reason2, ledger2 = _drained(both)
    again = fleet("n1", "n2", n1=(reason2, NOW))
    again["n1"]["idle"] = True
    decision = by_node(r.plan({"n1": report("n1", [XID, FIRMWARE])}, again, ledger2, config, NOW + 60))["n1"]
    assert decision["maintain"] == [] and decision["why"].startswith("already drained by gpufabric")
    # Changed, its check clean: it resumes like any node (the certificate is test_certificate's subject).
    decision = by_node(r.plan({"n1": report("n1", [])}, drained, ledger, config, NOW + 120))["n1"]
    assert decision["action"] == "resume"
    # Shadow mode changes nothing and says what it would do.
    shadow = settings(mode="shadow", policy=config["policy"])
    seen = r.plan({"n1": report("n1", [FIRMWARE])}, fleet("n1", "n2", "n3"), None, shadow, NOW)
    decision = by_node(r.plan({"n1": report("n1", [FIRMWARE])}, fleet("n1", "n2", "n3"), seen["ledger"], shadow, NOW + 60))["n1"]
    assert decision["maintain"] == [] and decision["why"].startswith("shadow mode: would change the NIC firmware settings")


def test_a_drain_without_a_ledger_record_resumes_only_on_a_clean_check():
    config = settings()
    # Drained by an older gpufabric (AWX) with a reason naming one finding of several: the rest is unknown.
    drained = fleet("n1", "n2", n1=("gpufabric: gpu_xid n1/GPU 0000:18:00 (+2 more)", NOW - 60))
    held = by_node(r.plan({"n1": report("n1", [MTU])}, drained, None, config, NOW))["n1"]
    assert held["action"] == "none" and "are not all known" in held["why"]
    assert by_node(r.plan({"n1": report("n1")}, drained, None, config, NOW))["n1"]["action"] == "resume"
    # One finding named in full: that one must clear.
    one = fleet("n1", "n2", n1=("gpufabric: gpu_xid n1/GPU 0000:18:00", NOW - 60))
    assert by_node(r.plan({"n1": report("n1", [XID])}, one, None, config, NOW))["n1"]["action"] == "none"
    assert by_node(r.plan({"n1": report("n1", [MTU])}, one, None, config, NOW))["n1"]["action"] == "resume"


def test_drain_resume_drain_cannot_pass_the_interval_limit_twice():
    config = settings(rate_limit={"max_nodes": 1, "max_percent": 100, "interval": 3600})
    first = r.plan({"a": report("a", [dict(XID, target="a")])}, fleet("a", "b", "c"), None, config, NOW)
    reason = by_node(first)["a"]["reason"]
    resumed = r.plan({"a": report("a")}, fleet("a", "b", "c", a=(reason, NOW)), first["ledger"], config, NOW + 60)
    assert by_node(resumed)["a"]["action"] == "resume"
    second = r.plan({"b": report("b", [dict(XID, target="b")])}, fleet("a", "b", "c"), resumed["ledger"], config, NOW + 120)
    assert by_node(second)["b"]["held"]  # a's drain 120 s ago counts, although slurmctld no longer holds it
    later = r.plan({"b": report("b", [dict(XID, target="b")])}, fleet("a", "b", "c"), resumed["ledger"], config, NOW + 3700)
    assert by_node(later)["b"]["action"] == "drain"


def test_a_ledger_entry_of_another_shape_is_refused_not_planned_on():
    for bad in ({"drains": [{"at": None}]}, {"drains": [{"at": "x"}]}, {"drains": [{"at": 1, "findings": "x"}]},
                {"resumes": [{"at": float("nan")}]}, {"unhealthy_at": "soon"}, {"held": 5}):
        with pytest.raises(ValueError):
            check_record(bad)
    damaged = {"metadata": {"name": "n1", "annotations": {LEDGER_ANNOTATION: json.dumps({"drains": [{"at": "x"}]})}},
               "spec": {"unschedulable": True, "taints": [{"key": TAINT_KEY, "value": "gpu_xid", "effect": "NoSchedule"}]}}
    fleet_, records, ignored = k8s_nodes.k8s_fleet([damaged])
    assert records == {} and fleet_["n1"]["record_missing"]
    decision = by_node(r.plan({"n1": report("n1")}, fleet_, None, settings(slurm={}, kubernetes={"enabled": True}), NOW))["n1"]
    assert decision["action"] == "none" and "is missing or damaged" in decision["why"] and "a human must resume it" in decision["why"]


def test_resumes_are_rate_limited_too():
    config = settings(rate_limit={"max_nodes": 1, "max_percent": 100, "max_resumes": 2})
    names = ["n%d" % i for i in range(1, 6)]
    drained = fleet(*names, **dict((n, ("gpufabric: gpu_xid %s" % n, NOW - 60)) for n in names))
    result = r.plan(dict((n, report(n)) for n in names), drained, None, config, NOW)
    assert [d["action"] for d in result["decisions"]] == ["resume", "resume", "none", "none", "none"]
    assert result["decisions"][2]["why"] == "rate limit: 2 node(s) resumed by gpufabric in the last 3600 s, at most 2"
    # The ledger remembers them: an hour later two more may go.
    later = r.plan(dict((n, report(n)) for n in names[2:]), drained, result["ledger"], config, NOW + 3601)
    assert [d["action"] for d in later["decisions"]] == ["resume", "resume", "none"]


def test_a_rebuilt_ledger_counts_slurms_drains_and_holds_resumes_for_one_interval():
    """No ledger and no history copy while Slurm shows a drain of ours: the decider ran before and what it did is
    unknown, so every drain and resume waits one interval (a drain a known limit stops says that limit)."""
    config = settings(rate_limit={"max_nodes": 1, "max_percent": 100, "interval": 3600})
    drained = fleet("a", "b", "c", a=("gpufabric: gpu_xid a/GPU 0000:18:00", NOW - 600), c=("memory test", NOW - 60))
    ledger = empty_ledger()
    rebuilt = rebuild(ledger, drained, NOW, 3600, "slurm")
    assert rebuilt == {"at": NOW, "scheduler": "slurm", "source": "slurm", "restored": 0, "drains_in_effect": 1,
                       "recent_drains": 1, "drains_from": NOW + 3600, "resumes_from": NOW + 3600,
                       "why": "no copy of the decision history (decider.history.json) was found, and 1 node(s) drained "
                              "by gpufabric show it ran before"}
    check_ledger(ledger)
    result = r.plan({"a": report("a"), "b": report("b", [dict(XID, target="b")])}, drained, ledger, config, NOW + 60)
    assert by_node(result)["a"]["held"] and by_node(result)["a"]["why"].startswith("resume budget unknown: ")
    assert by_node(result)["b"]["held"] and "rate limit: 1 node(s)" in by_node(result)["b"]["why"]
    later = r.plan({"a": report("a")}, drained, result["ledger"], config, NOW + 3600)
    assert by_node(later)["a"]["action"] == "resume" and "rebuilt" not in later["ledger"]
    # Nothing of ours drained and no file set aside (a first start), or Kubernetes (the Nodes keep the whole
    # record), or the history restored: nothing is held.
    for args in ((fleet("a", "b", b=("memory test", NOW)), NOW, 3600, "slurm"), (drained, NOW, 3600, "kubernetes"),
                 (drained, NOW, 3600, "slurm", 4)):
        assert held_until(rebuild(empty_ledger(), *args)) == {"drain": 0, "resume": 0}, args
    # A history set aside holds, whatever Slurm shows.
    lost = rebuild(empty_ledger(), fleet("a"), NOW, 3600, "slurm", None, "decider.history.json could not be used")
    assert held_until(lost) == {"drain": NOW + 3600, "resume": NOW + 3600} and lost["why"].startswith("decider.history")
    # A drain of ours whose time slurmctld does not show counts as recent: unknown is not old.
    assert rebuild(empty_ledger(), fleet("a", a=("gpufabric: x a", None)), NOW, 3600, "slurm")["recent_drains"] == 1
    with pytest.raises(ValueError):
        check_ledger(dict(empty_ledger(), rebuilt={"at": "yesterday"}))
    with pytest.raises(ValueError):
        check_ledger(dict(empty_ledger(), rebuilt=dict(rebuilt, why=["not", "a", "text"])))


def test_a_history_copy_restores_the_drains_and_resumes_a_lost_ledger_had():
    """The second copy holds every node's drains and resumes (and a hold still running); restored into an empty ledger
    the plan counts a drain already resumed, so max_nodes holds after the ledger is lost."""
    config = settings(rate_limit={"max_nodes": 1, "max_percent": 100, "interval": 3600})
    first = r.plan({"a": report("a", [dict(XID, target="a")])}, fleet("a", "b"), None, config, NOW)
    reason = by_node(first)["a"]["reason"]
    back = r.plan({"a": report("a")}, fleet("a", "b", a=(reason, NOW)), first["ledger"], config, NOW + 60)
    assert by_node(back)["a"]["action"] == "resume"
    copy = json.loads(json.dumps(history_of(back["ledger"], NOW + 60)))
    assert check_history(copy)["nodes"]["a"]["resumes"][0]["at"] == NOW + 60 and "rebuilt" not in copy
    ledger = empty_ledger()
    assert restore(ledger, copy) == 1
    assert held_until(rebuild(ledger, fleet("a", "b"), NOW + 120, 3600, "slurm", 1)) == {"drain": 0, "resume": 0}
    again = r.plan({"b": report("b", [dict(XID, target="b")])}, fleet("a", "b"), ledger, config, NOW + 120)
    assert by_node(again)["b"]["held"] and by_node(again)["b"]["why"].startswith("rate limit: 1 node(s) of partition gpu")
    for foreign in ({"hello": "another program"}, dict(copy, kind="something else"), dict(copy, nodes=[]),
                    dict(copy, nodes={"a": {"drains": [{"at": "noon"}]}}), dict(copy, saved_at=float("nan"))):
        with pytest.raises(ValueError):
            check_history(foreign)


def test_a_thousand_nodes_reporting_in_one_second_after_the_history_is_lost_are_held_in_one_message():
    """Every node of a 1,000-node fleet reports a critical finding in the same second, just after the ledger and its
    history copy were lost: none is drained (the drains of the last interval are unknown), the humans get one message
    for all of them, and the plan stays fast."""
    import time
    names = ["n%04d" % i for i in range(1000)]
    config = settings(rate_limit={"max_nodes": 5, "max_percent": 100, "interval": 3600})
    ledger = empty_ledger()
    rebuild(ledger, fleet(*names), NOW, 3600, "slurm", None, "decider.json could not be used (truncated)")
    started = time.time()
    result = r.plan(dict((n, report(n, [dict(XID, target=n + "/GPU 0")])) for n in names), fleet(*names), ledger,
                    config, NOW + 1)
    seconds = time.time() - started
    assert r.summary(result) == {"drain": 0, "resume": 0, "held": 1000, "none": 0}
    assert by_node(result)["n0000"]["why"] == (
        "drain budget unknown: the decider's decision history could not be rebuilt (decider.json could not be used "
        "(truncated)): the drains gpufabric made in the last 3600 s are unknown, so none is made for 3599 s more")
    told = r.messages(result, "slurm")
    assert [(m["status"], m["node"]) for m in told] == [("held", "1000 nodes")] and seconds < 5, seconds
    # One interval later the ledger holds every drain since: max_nodes of them go.
    later = r.plan(dict((n, report(n, [dict(XID, target=n + "/GPU 0")])) for n in names), fleet(*names),
                   result["ledger"], config, NOW + 3600)
    assert r.summary(later)["drain"] == 5 and "rebuilt" not in later["ledger"]


def test_a_node_remediated_again_and_again_is_escalated_and_stays_out():
    config = settings(escalation={"max_remediations": 2, "days": 7})
    ledger, now = None, NOW
    for round_ in range(3):
        result = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3"), ledger, config, now)
        decision = by_node(result)["n1"]
        assert decision["action"] == "drain"
        reason = decision["reason"]
        resumed = r.plan({"n1": report("n1")}, fleet("n1", "n2", "n3", n1=(reason, now)), result["ledger"], config,
                         now + 600)
        ledger, now = carried_out(resumed), now + 7200
        if round_ < 2:
            assert by_node(resumed)["n1"]["action"] == "resume" and not decision["escalated"]
    assert decision["escalated"] and reason.startswith("gpufabric: ESCALATED 3 drains in 7 d, a human must look: gpu_xid")
    assert by_node(resumed)["n1"]["why"].startswith("escalated (gpufabric: ESCALATED")
    assert [m["status"] for m in r.messages(result, "slurm")] == ["escalated"]
    # Without the ledger the reason alone keeps it out.
    alone = r.plan({"n1": report("n1")}, fleet("n1", "n2", n1=(reason, now)), None, config, now)
    assert by_node(alone)["n1"]["action"] == "none" and is_escalated(reason)
    # Eight days later the history has aged out.
    fresh = r.plan({"n1": report("n1", [XID])}, fleet("n1", "n2", "n3"), ledger, config, now + 8 * 86400)
    assert not by_node(fresh)["n1"]["escalated"]


def test_admin_drains_and_unknown_nodes_are_left_alone():
    config = settings()
    result = r.plan({"n1": report("n1", [XID]), "n2": report("n2"), "ghost": report("ghost", [XID])},
                    fleet("n1", "n2", "n3", n1=("bad dimm", NOW), n2=("memory test", NOW)), None, config, NOW)
    decisions = by_node(result)
    assert decisions["n1"]["why"] == "drained by someone else (bad dimm): gpufabric leaves it as it is"
    assert decisions["n2"]["action"] == "none"
    assert decisions["ghost"]["why"] == "the scheduler does not know this node"


def test_the_ledger_stays_bounded():
    config = settings(rate_limit={"max_nodes": 100, "max_percent": 100})
    names = ["n%d" % i for i in range(50)]
    result = r.plan(dict((n, report(n)) for n in names), fleet(*names), None, config, NOW)
    assert result["ledger"]["nodes"] == {}  # healthy nodes leave nothing behind
    ledger = result["ledger"]
    for i in range(40):  # a flapping node: the history is cut at HISTORY entries
        ledger["nodes"]["n1"] = {"drains": [{"at": NOW - i} for i in range(40)], "resumes": []}
    pruned = r.plan({"n1": report("n1")}, fleet(*names), ledger, config, NOW)["ledger"]
    assert len(pruned["nodes"]["n1"]["drains"]) == r.HISTORY


def test_reports_are_checked():
    for bad, message in (({"node": "n1; rm", "findings": [], "complete": True}, "plain node name"),
                         ({"node": "n1", "findings": "x", "complete": True}, "findings must be a list"),
                         ({"node": "n1", "findings": [{"check": "x"}], "complete": True}, "needs check, severity"),
                         ({"node": "n1", "findings": [], "complete": "yes"}, "complete must be true or false"),
                         ({"node": "n1", "findings": [], "complete": True, "source": "cron"}, "source must be one of")):
        with pytest.raises(ValueError) as error:
            protocol.check_report(bad)
        assert message in str(error.value)
    # A report with an unreadable source is never complete, whatever it says.
    assert protocol.check_report({"node": "n1", "findings": [], "complete": True, "unreadable": ["kernel log: x"]})["complete"] is False


def test_damaged_ledgers_are_refused():
    for bad in ({"version": 0}, {"version": 1, "nodes": [], "breaker": {}},
                {"version": 1, "nodes": {"n1": {"drains": {}}}, "breaker": {}}):
        with pytest.raises(ValueError):
            check_ledger(bad)


def test_reasons_are_one_line_and_bounded():
    evil = dict(XID, target="n1\nState=RESUME " + "x" * 400)
    reason = drain_reason([evil, MTU], "p", "timer")
    assert "\n" not in reason and len(reason) <= MAX_REASON
    assert reason.startswith("gpufabric: gpu_xid n1 State=RESUME") and reason.endswith("; policy p; via timer")
    # Cut: the target is not whole, so the findings behind it are unknown (a resume needs a clean check).
    assert reason.split(";")[0].endswith("...") and findings_from_reason(reason) == ([], False)
    assert findings_from_reason("gpufabric: gpu_xid") == ([], False)  # a taint names no target
    with pytest.raises(ValueError, match="not a plain host name"):
        slurm_nodes.slurm_argv("n1 State=RESUME", {"action": "resume"})


# Real Slurm output: Slurm 22.05.8 (Debian 12) with SLURM_TIME_FORMAT=%s (tests/unit/fixtures/slurm/README.md);
# the indented form of Slurm 20.11.
INDENTED = """NodeName=cu201 Arch=x86_64 CoresPerSocket=24
   CPUAlloc=0 CPUTot=48 CPULoad=0.00
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=regular
   Reason=Low RealMemory [root@2022-05-18T17:20:20]
   Comment=(null)
"""


def slurm_fixture(name):
    with open(os.path.join(FIXTURES, "slurm", name)) as handle:
        return handle.read()


def test_scontrol_node_states_and_reasons_parse():
    node = slurm_nodes.parse_scontrol_node(INDENTED)
    assert (node["name"], node["state"], node["drained"]) == ("cu201", "IDLE+DRAIN", True)
    assert (node["reason"], node["reason_user"], node["reason_time"]) == ("Low RealMemory", "root", "2022-05-18T17:20:20")
    node = slurm_nodes.parse_scontrol_node(slurm_fixture("scontrol_node_drained_epoch.txt"))
    assert node["reason"] == "gpufabric: gpu_xid slurmcap/GPU 0000:18:00 (+1 more); policy site-v2; via healthcheck"
    assert (node["reason_time"], node["drained"], node["state"]) == (1795529907, True, "IDLE+DRAIN")
    assert findings_from_reason(node["reason"]) == (["gpu_xid|slurmcap/GPU 0000:18:00"], False)
    idle = slurm_nodes.parse_scontrol_node("NodeName=n2 State=IDLE Partitions=gpu")
    assert (idle["drained"], idle["reason"]) == (False, None)
    for garbage in ("slurm_load_node error: Unable to contact slurm controller", "NodeName=n1 Arch=x86_64"):
        with pytest.raises(ValueError):
            slurm_nodes.parse_scontrol_node(garbage)


def test_sinfo_fleet_parses_with_partitions_states_and_epoch_times():
    nodes = slurm_nodes.parse_sinfo_fleet(slurm_fixture("sinfo_fleet_epoch.txt"))
    reason = "gpufabric: gpu_xid slurmcap/GPU 0000:18:00 (+1 more); policy site-v2; via healthcheck"
    assert nodes == {
        "slurmcap": {"partitions": ["gpu", "debug"], "drained": True, "idle": True, "reason": reason, "reason_time": 1795529907},
        "gpu-02": {"partitions": ["gpu"], "drained": True, "idle": True, "reason": "memory test | bad dimm",
                   "reason_time": 1795529907},
        "gpu-03": {"partitions": ["gpu"], "drained": False, "idle": False, "reason": None, "reason_time": None}}


def test_sinfo_with_host_names_or_local_times_is_refused():
    """%n prints host names (three nodes share one here) and default times are local: neither can be used."""
    with pytest.raises(ValueError) as error:
        slurm_nodes.parse_sinfo_fleet(slurm_fixture("sinfo_fleet_hostnames_iso.txt"))
    assert "is not epoch seconds (SLURM_TIME_FORMAT=%s)" in str(error.value)
    assert slurm_nodes.SINFO_FORMAT.startswith("%N|")


@pytest.mark.parametrize("text, message", [
    ("", "sinfo listed no node"),
    ("n1|gpu|2026-11-24T13:16:24|drained|gpufabric: x\n", "is not epoch seconds"),
    ("slurm_load_partitions: Unable to contact slurm controller (connect failure)\n", "sinfo line 1 is not"),
    (slurm_fixture("sinfo_fleet_epoch.txt") + "garbage\n", "sinfo line 5 is not"),
])
def test_an_unreadable_fleet_is_an_error_never_a_partial_view(text, message):
    with pytest.raises(ValueError) as error:
        slurm_nodes.parse_sinfo_fleet(text)
    assert message in str(error.value)


def test_sdiag_gives_slurmctlds_clock():
    assert slurm_nodes.parse_sdiag_time(slurm_fixture("sdiag.txt")) == 1795529921
    assert slurm_nodes.parse_sdiag_time("sdiag: error: Access/permission denied\n") is None


OTHER = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def test_kubernetes_drain_is_a_json_patch_that_appends_only_our_taint():
    node = {"metadata": {"name": "n1", "resourceVersion": "41", "annotations": {"keep": "me"}},
            "spec": {"taints": [OTHER]}}
    fleet_, records, objects = k8s_nodes.k8s_fleet({"items": [node, {"metadata": {"name": "n2"}, "spec": {}}]})
    assert fleet_["n1"] == {"partitions": [], "drained": False, "reason": None, "reason_time": None}
    config = settings(slurm={}, kubernetes={"enabled": True}, rate_limit={"max_percent": 100})
    result = r.plan({"n1": report("n1", [XID])}, fleet_, None, config, NOW)
    decision = by_node(result)["n1"]
    record = result["ledger"]["nodes"]["n1"]
    assert record["unhealthy_at"] == NOW  # the decider's own (the breaker's): not written to the Node
    patch = k8s_nodes.k8s_json_patch(objects["n1"], decision, record, NOW)
    assert patch == [
        {"op": "add", "path": "/metadata/annotations/gpufabric.io~1remediation",
         "value": json.dumps({"drains": record["drains"], "resumes": []}, sort_keys=True, separators=(",", ":"))},
        {"op": "add", "path": "/spec/taints/-", "value": {"key": "gpufabric.io/unhealthy", "value": "gpu_xid",
                                                          "effect": "NoSchedule"}},
        {"op": "add", "path": "/spec/unschedulable", "value": True},
        {"op": "add", "path": "/metadata/annotations/gpufabric.io~1cordoned-at", "value": str(NOW)}]
    # A node without a taint list: the list is created only if the node did not change meanwhile.
    bare = {"metadata": {"name": "n2", "resourceVersion": "7"}, "spec": {}}
    patch = k8s_nodes.k8s_json_patch(bare, decision, record, NOW)
    assert patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    taint = {"key": "gpufabric.io/unhealthy", "value": "gpu_xid", "effect": "NoSchedule"}
    assert {"op": "add", "path": "/spec/taints", "value": [taint]} in patch


def test_kubernetes_resume_removes_our_taint_by_index_under_a_test_and_uncordons_what_we_cordoned():
    record = {"drains": [{"at": NOW, "findings": ["gpu_xid|n1/GPU 0000:18:00"], "reason": "gpufabric: gpu_xid n1/GPU 0000:18:00"}],
              "resumes": []}
    taint = {"key": "gpufabric.io/unhealthy", "value": "gpu_xid", "effect": "NoSchedule"}
    node = {"metadata": {"name": "n1", "annotations": {CORDON_ANNOTATION: str(NOW),
                                                       LEDGER_ANNOTATION: json.dumps(record)}},
            "spec": {"unschedulable": True, "taints": [OTHER, taint]}}
    fleet_, records, objects = k8s_nodes.k8s_fleet([node])
    assert fleet_["n1"] == {"partitions": [], "drained": True, "reason": "gpufabric: gpu_xid n1/GPU 0000:18:00",
                            "reason_time": NOW}
    result = r.plan({"n1": report("n1")}, fleet_, {"version": 1, "nodes": records, "breaker": {"open": []}},
                    settings(slurm={}, kubernetes={"enabled": True}), NOW + 60)
    decision = by_node(result)["n1"]
    assert decision["action"] == "resume"
    patch = k8s_nodes.k8s_json_patch(node, decision, result["ledger"]["nodes"]["n1"], NOW + 60)
    assert patch[1:] == [
        {"op": "test", "path": "/spec/taints/1", "value": taint}, {"op": "remove", "path": "/spec/taints/1"},
        {"op": "test", "path": "/metadata/annotations/gpufabric.io~1cordoned-at", "value": str(NOW)},
        {"op": "remove", "path": "/metadata/annotations/gpufabric.io~1cordoned-at"},
        {"op": "replace", "path": "/spec/unschedulable", "value": False}]
    # Cordoned by an admin: not ours.
    admin = k8s_nodes.k8s_fleet([{"metadata": {"name": "n1"}, "spec": {"unschedulable": True}}])[0]["n1"]
    assert admin == {"partitions": [], "drained": True, "reason": "cordoned by someone else", "reason_time": None}


@pytest.mark.parametrize("garbage", [[], {"items": "x"}, {"items": [1]}, {"items": [{"metadata": {"name": 5}}]},
                                     {"items": [{"metadata": {"name": "n1"}, "spec": []}]}])
def test_kubectl_json_of_an_unexpected_shape_is_an_error_not_a_traceback(garbage):
    if garbage == []:
        assert k8s_nodes.k8s_fleet(garbage)[0] == {}
        return
    with pytest.raises(ValueError):
        k8s_nodes.k8s_fleet(garbage)


def test_taint_values():
    assert k8s_nodes.taint_value("gpu_xid") == "gpu_xid" and k8s_nodes.taint_value("a b/c" + "x" * 80) == ("a-b-c" + "x" * 58)


def test_an_intent_the_scheduler_never_took_is_dropped_and_counts_toward_no_limit():
    """A decider killed between recording a drain and scontrol left a phantom drain that held the still-failing node
    back for the whole interval. A drain is now an open intent (pending) until the scheduler took it; the next plan
    drops one the scheduler does not show and confirms one it does."""
    def xid(node):
        return report(node, [dict(XID, target=node + "/GPU 0")])
    first = r.plan({"n01": xid("n01")}, fleet("n01", "n02"), None, settings(), NOW)
    assert by_node(first)["n01"]["action"] == "drain"
    assert first["ledger"]["nodes"]["n01"]["drains"][-1]["pending"] is True
    # slurmctld never took it: n01 is not drained, reports again, and is drained (max_nodes 1 was not spent)
    again = r.plan({"n01": xid("n01")}, fleet("n01", "n02"), first["ledger"], settings(), NOW + 60)
    assert by_node(again)["n01"]["action"] == "drain" and not by_node(again)["n01"]["held"]
    assert len(again["ledger"]["nodes"]["n01"]["drains"]) == 1
    # slurmctld did take it: confirmed, and it counts toward the limit
    reason = by_node(first)["n01"]["reason"]
    taken = r.plan({"n02": xid("n02")}, fleet("n01", "n02", n01=(reason, NOW)), first["ledger"], settings(), NOW + 60)
    assert "pending" not in taken["ledger"]["nodes"]["n01"]["drains"][-1]
    assert by_node(taken)["n02"]["held"] and by_node(taken)["n02"]["action"] == "none"
    done = reconcile(first["ledger"], fleet("n01"))
    assert done["confirmed"] == [] and [(e["node"], e["action"]) for e in done["dropped"]] == [("n01", "drain")]


def _certified(node, at=NOW):
    from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate
    return certificate.check_certificate(certificate.from_results(
        {"host": node, "status": "pass", "level": 2, "failures": []}, measured_at=at), node)


def test_an_open_resume_counts_until_the_scheduler_shows_it_did_not_happen_and_keeps_its_certificate():
    """Issue 53: a resume is an open intent like a drain. Before, it was recorded as done and its certificate spent
    before scontrol ran, so a resume that never happened counted toward max_resumes and the node needed a new active
    check. Now the next plan settles it with the scheduler: still drained with that reason - dropped, the certificate
    back, nothing counted; no longer drained (or gone from the scheduler: not known not to have happened) - it counts
    and is told once; the certificate is spent."""
    config = settings(certification={"required": True, "checks": ["dcgm"]},
                      rate_limit={"max_nodes": 2, "max_percent": 100, "interval": 3600, "max_resumes": 1})
    drained = fleet("n1", "n2", "n3", n1=("gpufabric: gpu_xid n1/GPU 0000:18:00", NOW - 600),
                    n2=("gpufabric: gpu_xid n2/GPU 0000:18:00", NOW - 600))
    first = r.plan({"n1": report("n1")}, drained, None, config, NOW, certificates={"n1": _certified("n1")})
    assert by_node(first)["n1"]["action"] == "resume"
    opened = first["ledger"]["nodes"]["n1"]
    assert opened["resumes"][-1]["pending"] is True and opened["resumes"][-1]["reason"] == drained["n1"]["reason"]
    assert "certificate" not in opened and opened["resumes"][-1]["certificate_kept"]["passed"] is True
    check_ledger(first["ledger"])
    # Still drained: it never happened. n1 resumes on the same certificate, and max_resumes 1 was not spent.
    again = r.plan({"n1": report("n1")}, drained, first["ledger"], config, NOW + 60)
    assert [(e["node"], e["action"]) for e in again["reconciled"]["dropped"]] == [("n1", "resume")]
    assert by_node(again)["n1"]["action"] == "resume" and len(again["ledger"]["nodes"]["n1"]["resumes"]) == 1
    assert r.confirmed_messages(again["reconciled"], "slurm") == []
    # n1 is in service now: confirmed, told once, the certificate spent; it counts, so n2 waits.
    resumed = dict(drained, n1=fleet("n1")["n1"])
    taken = r.plan({"n2": report("n2")}, resumed, again["ledger"], config, NOW + 120, certificates={"n2": _certified("n2")})
    (told,) = r.confirmed_messages(taken["reconciled"], "slurm")
    assert (told["status"], told["node"], told["check"], told["severity"]) == ("resumed", "n1", "gpu_xid", "warning")
    assert told["detail"].startswith("confirmed after the decider restarted: slurmctld resumed n1 (the resume was recorded")
    assert "certified: dcgm level 2 pass" in told["detail"]
    n1 = taken["ledger"]["nodes"]["n1"]
    assert "pending" not in n1["resumes"][-1] and "certificate_kept" not in n1["resumes"][-1] and "certificate" not in n1
    assert by_node(taken)["n2"]["held"] and by_node(taken)["n2"]["why"].startswith("rate limit: 1 node(s) resumed")
    # Gone from the scheduler: not known not to have happened - it counts.
    gone = dict((n, e) for n, e in drained.items() if n != "n1")
    unknown = r.plan({"n2": report("n2")}, gone, again["ledger"], config, NOW + 120, certificates={"n2": _certified("n2")})
    assert [e["node"] for e in unknown["reconciled"]["confirmed"]] == ["n1"] and by_node(unknown)["n2"]["held"]
    assert "no longer lists n1" in r.confirmed_messages(unknown["reconciled"], "slurm")[0]["detail"]


def test_on_kubernetes_an_open_intent_survives_the_merge_with_the_nodes_annotation():
    """The Node's annotation is the real record, the decider's file keeps what the annotation cannot: an open resume
    the annotation holds stays open (confirmed and told, with the certificate it would spend); one it does not hold
    stays open too, for reconcile to drop; one a later decision on the Node overtook goes."""
    intent = {"at": NOW, "by": "d", "via": "timer", "reason": "gpufabric: gpu_xid n1", "pending": True,
              "certificate_kept": {"at": NOW - 5, "checks": [], "passed": True}}
    drain = {"at": NOW - 600, "findings": [], "reason": "gpufabric: gpu_xid n1"}
    mine = {"n1": {"drains": [drain], "resumes": [intent], "held": None}}
    patched = {"n1": {"drains": [drain], "resumes": [dict((k, v) for k, v in intent.items() if k not in ("pending", "certificate_kept"))]}}
    assert k8s_nodes.merge_records(mine, patched)["n1"]["resumes"] == [intent]
    assert k8s_nodes.merge_records(mine, {"n1": {"drains": [drain], "resumes": []}})["n1"]["resumes"] == [intent]
    later = {"at": NOW + 60, "by": "another run", "via": "awx", "reason": "gpufabric: gpu_xid n1"}
    assert k8s_nodes.merge_records(mine, {"n1": {"drains": [drain], "resumes": [later]}})["n1"]["resumes"] == [later]


def test_a_thousand_resumes_left_open_by_a_dead_decider_are_settled_in_one_linear_pass():
    """1,000 nodes resumed in one batch (max_resumes 1000), the decider killed before it heard slurmctld: the next plan
    settles every intent against the fleet in one pass, tells each confirmed resume once, and stays fast."""
    import time
    names = ["n%04d" % i for i in range(1000)]
    config = settings(rate_limit={"max_nodes": 5, "max_percent": 100, "interval": 3600, "max_resumes": 1000})
    drained = fleet(*names, **dict((n, ("gpufabric: gpu_xid %s/GPU 0" % n, NOW - 600)) for n in names))
    first = r.plan(dict((n, report(n)) for n in names), drained, None, config, NOW)
    assert r.summary(first)["resume"] == 1000
    half = dict(drained, **dict((n, fleet(n)[n]) for n in names[::2]))   # slurmctld took every second one
    started = time.time()
    result = r.plan({"n0000": report("n0000")}, half, first["ledger"], config, NOW + 60)
    told = r.confirmed_messages(result["reconciled"], "slurm")
    seconds = time.time() - started
    assert len(result["reconciled"]["confirmed"]) == 500 and len(result["reconciled"]["dropped"]) == 500
    assert len(told) == 500 and seconds < 5, seconds
    # the 500 taken count: max_resumes 1000 leaves 500, so n0001 (dropped) may go again
    again = r.plan({"n0001": report("n0001")}, half, result["ledger"], config, NOW + 120)
    assert by_node(again)["n0001"]["action"] == "resume"
