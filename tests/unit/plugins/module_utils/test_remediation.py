"""remediation.py: from findings to a drain, a resume or nothing, with the exact scontrol command and
Kubernetes merge-patch body; the policy, the rate limit, and admin drains left alone."""
import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils import remediation as r

XID = {"check": "gpu_xid", "severity": "critical", "target": "n1/GPU 0000:18:00", "detail": "Xid 79", "fix_hint": "-"}
MTU = {"check": "mtu", "severity": "warning", "target": "n1:eth2", "detail": "1500", "fix_hint": "-"}
DRAIN_CRITICAL = r.check_policy([{"severity": "critical", "action": "drain"}])
IN_SERVICE = {"drained": False, "reason": None}
LIMITS = r.check_limits({"max_nodes": 2, "max_percent": 50, "interval": 3600})


def view(**nodes):
    return dict((name, {"partitions": ["gpu"], "ours_since": since}) for name, since in nodes.items())


def test_the_policy_maps_check_and_severity_to_an_action_first_match_wins():
    rules = r.check_policy([{"check": "mtu", "action": "none"}, {"severity": "critical", "action": "drain"},
                            {"check": "*", "severity": "*", "action": "notify"}])
    assert [r.action_for(f, rules) for f in (XID, MTU)] == ["drain", "none"]
    assert r.action_for(MTU, []) == "notify"  # no policy: today's behaviour


@pytest.mark.parametrize("rules, message", [
    ("drain", "must be a list of rules"),
    ([{"action": "reboot"}], "policy rule 1: action must be one of notify, drain, none, got 'reboot'"),
    ([{"action": "drain", "severity": "fatal"}], "policy rule 1: severity must be one of"),
    ([{"action": "drain", "check": "gpu xid\nReason=x"}], "policy rule 1: check must be a check name"),
    ([{"action": "drain", "when": "always"}], "policy rule 1 has unknown key(s) when"),
    (["drain"], "policy rule 1 must be a mapping"),
])
def test_a_bad_policy_names_the_rule_and_the_value(rules, message):
    with pytest.raises(r.PolicyError, match=message.replace("(", r"\(").replace(")", r"\)").replace("|", r"\|")):
        r.check_policy(rules)


@pytest.mark.parametrize("limits, message", [
    ({"max_nodes": -1}, "max_nodes must be a whole number"), ({"interval": 0}, "interval must be a whole number of seconds"),
    ({"max_percent": 101}, "max_percent must be a number from 0 to 100"), ({"burst": 3}, "unknown rate limit key"),
])
def test_bad_limits_are_refused(limits, message):
    with pytest.raises(r.PolicyError, match=message):
        r.check_limits(limits)


def test_a_critical_finding_drains_a_node_in_service_with_our_reason():
    decision = r.decide("n1", [XID, MTU], DRAIN_CRITICAL, IN_SERVICE, view(n1=None, n2=None, n3=None, n4=None), LIMITS, 10000)
    assert decision["action"] == "drain"
    assert decision["reason"] == "gpufabric: gpu_xid n1/GPU 0000:18:00"
    assert decision["findings"] == ["gpu_xid|n1/GPU 0000:18:00"]
    assert r.slurm_argv("n1", decision) == ["scontrol", "update", "NodeName=n1", "State=DRAIN",
                                            "Reason=gpufabric: gpu_xid n1/GPU 0000:18:00"]


def test_nothing_that_asks_for_a_drain_leaves_a_node_in_service():
    decision = r.decide("n1", [MTU], DRAIN_CRITICAL, IN_SERVICE, {}, LIMITS, 0)
    assert (decision["action"], decision["why"]) == ("none", "in service, nothing asks for a drain")
    assert r.slurm_argv("n1", decision) is None


def test_our_drain_is_resumed_when_its_findings_clear_but_an_admin_drain_stays():
    ours = {"drained": True, "reason": "gpufabric: gpu_xid n1/GPU 0000:18:00"}
    decision = r.decide("n1", [MTU], DRAIN_CRITICAL, ours, {}, LIMITS, 0)
    assert decision["action"] == "resume"
    assert r.slurm_argv("n1", decision) == ["scontrol", "update", "NodeName=n1", "State=RESUME"]
    admin = {"drained": True, "reason": "bad dimm"}
    assert r.decide("n1", [], DRAIN_CRITICAL, admin, {}, LIMITS, 0)["action"] == "none"
    held = r.decide("n1", [XID], DRAIN_CRITICAL, admin, {}, LIMITS, 0)
    assert (held["action"], held["why"]) == ("none", "already drained by someone else (bad dimm): left as it is")
    assert r.decide("n1", [XID], DRAIN_CRITICAL, ours, {}, LIMITS, 0)["action"] == "none"  # already ours


def test_the_rate_limit_counts_recent_drains_of_ours_in_the_same_partition():
    now = 100000
    # Two nodes drained by us in the last hour: a third is held back.
    recent = view(n1=None, n2=now - 60, n3=now - 120, n4=None, n5=None, n6=None, n7=None, n8=None)
    held = r.decide("n1", [XID], DRAIN_CRITICAL, IN_SERVICE, recent, LIMITS, now)
    assert held["action"] == "none" and held["limited"]
    assert held["why"].startswith("rate limit: 2 node(s) already drained by gpufabric in the last 3600 s (n2, n3), at most 2")
    # Drains older than the interval, and drains in another partition, do not count.
    old = view(n1=None, n2=now - 7200, n3=None, n4=None)
    assert r.decide("n1", [XID], DRAIN_CRITICAL, IN_SERVICE, old, LIMITS, now)["action"] == "drain"
    other = dict(recent, n2={"partitions": ["cpu"], "ours_since": now - 60})
    assert r.decide("n1", [XID], DRAIN_CRITICAL, IN_SERVICE, other, LIMITS, now)["action"] == "drain"


def test_the_rate_limit_keeps_a_share_of_a_small_partition_in_service():
    now = 100000
    small = view(n1=None, n2=now - 60, n3=None)  # one of three already out: a second would be 67 %
    held = r.decide("n1", [XID], DRAIN_CRITICAL, IN_SERVICE, small, LIMITS, now)
    assert held["limited"] and "takes 67% of its 3 node(s) out" in held["why"]
    nothing = r.check_limits({"max_nodes": 0})
    assert r.decide("n1", [XID], DRAIN_CRITICAL, IN_SERVICE, view(n1=None), nothing, now)["limited"]


def test_reasons_are_one_line_and_bounded():
    evil = dict(XID, target="n1\nState=RESUME " + "x" * 400)
    reason = r.drain_reason([evil, MTU])
    assert "\n" not in reason and len(reason) <= r.MAX_REASON and reason.startswith("gpufabric: gpu_xid n1 State=RESUME")
    with pytest.raises(ValueError, match="not a plain host name"):
        r.slurm_argv("n1 State=RESUME", {"action": "resume"})


# Real Slurm output shapes: `scontrol show node` of Slurm 20.11 (indented, a drain with its stamp) and
# the one-line form (-o) of Slurm 22.05 captured in molecule/operate_slurm_remediation (fixtures/slurm/).
INDENTED = """NodeName=cu201 Arch=x86_64 CoresPerSocket=24
   CPUAlloc=0 CPUTot=48 CPULoad=0.00
   RealMemory=186000 AllocMem=0 FreeMem=186649 Sockets=2 Boards=1
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=regular
   Reason=Low RealMemory [root@2022-05-18T17:20:20]
   Comment=(null)
"""


def test_scontrol_node_states_and_reasons_parse():
    node = r.parse_scontrol_node(INDENTED)
    assert (node["name"], node["state"], node["drained"]) == ("cu201", "IDLE+DRAIN", True)
    assert (node["reason"], node["reason_user"], node["reason_time"]) == ("Low RealMemory", "root", "2022-05-18T17:20:20")
    one = r.parse_scontrol_node("NodeName=n1 Arch=x86_64 State=MIXED+DRAIN ThreadsPerCore=1 Partitions=gpu "
                                "Reason=gpufabric: gpu_xid n1/GPU 0000:18:00 (+1 more) [root@2026-11-23T18:00:00] "
                                "CfgTRES=cpu=2\r\n")
    assert one["reason"] == "gpufabric: gpu_xid n1/GPU 0000:18:00 (+1 more)" and one["drained"]
    idle = r.parse_scontrol_node("NodeName=n2 State=IDLE Partitions=gpu")
    assert (idle["drained"], idle["reason"]) == (False, None)
    with pytest.raises(ValueError, match="no NodeName="):
        r.parse_scontrol_node("slurm_load_node error: Unable to contact slurm controller")


def test_sinfo_nodes_parse_with_partitions_and_reasons():
    text = ("n1|gpu*|2026-11-23T18:00:00|gpufabric: gpu_xid n1|x\n"
            "n1|debug|2026-11-23T18:00:00|gpufabric: gpu_xid n1|x\n"
            "n2|gpu*|Unknown|none\n"
            "garbage line\n")
    nodes = r.parse_sinfo_nodes(text)
    assert nodes["n1"] == {"partitions": ["gpu", "debug"], "reason_time": "2026-11-23T18:00:00",
                           "reason": "gpufabric: gpu_xid n1|x"}
    assert nodes["n2"] == {"partitions": ["gpu"], "reason_time": None, "reason": None}
    assert r.parse_slurm_time("2026-11-23T18:00:00").hour == 18 and r.parse_slurm_time("Unknown") is None


NODE = {"metadata": {"name": "n1", "annotations": {"keep": "me"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}}


def test_kubernetes_cordon_and_taint_is_one_merge_patch_that_keeps_other_taints():
    decision = r.decide("n1", [XID], DRAIN_CRITICAL, r.k8s_state(NODE), view(n1=None, n2=None), LIMITS, 1700000000)
    assert decision["action"] == "drain"
    assert r.k8s_patch(NODE, decision, "gpu_xid", 1700000000) == {
        "spec": {"unschedulable": True, "taints": [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
            {"key": "gpufabric.io/unhealthy", "value": "gpu_xid", "effect": "NoSchedule"}]},
        "metadata": {"annotations": {"gpufabric.io/cordoned-at": "1700000000"}}}


def test_kubernetes_recovery_removes_our_taint_and_uncordons_only_what_we_cordoned():
    ours = {"metadata": {"name": "n1", "annotations": {"gpufabric.io/cordoned-at": "1700000000"}},
            "spec": {"unschedulable": True, "taints": [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "gpufabric.io/unhealthy", "value": "gpu_xid", "effect": "NoSchedule"}]}}
    state = r.k8s_state(ours)
    assert state == {"drained": True, "reason": "gpufabric: gpu_xid"}
    decision = r.decide("n1", [], DRAIN_CRITICAL, state, {}, LIMITS, 0)
    assert r.k8s_patch(ours, decision, None, 0) == {
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], "unschedulable": None},
        "metadata": {"annotations": {"gpufabric.io/cordoned-at": None}}}
    # Cordoned by an admin: not ours, nothing to undo, and a fault adds nothing either.
    admin = {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}}
    assert r.k8s_state(admin) == {"drained": True, "reason": "cordoned by someone else"}
    assert r.decide("n1", [XID], DRAIN_CRITICAL, r.k8s_state(admin), {}, LIMITS, 0)["action"] == "none"


def test_kubernetes_view_and_taint_values():
    nodes = {"items": [{"metadata": {"name": "a", "annotations": {"gpufabric.io/cordoned-at": "50"}}},
                       {"metadata": {"name": "b", "annotations": {"gpufabric.io/cordoned-at": "soon"}}}, {"metadata": {}}]}
    assert r.k8s_view(nodes) == {"a": {"partitions": [], "ours_since": 50}, "b": {"partitions": [], "ours_since": None}}
    assert r.taint_value("gpu_xid") == "gpu_xid" and r.taint_value("a b/c" + "x" * 80) == ("a-b-c" + "x" * 58)


def test_the_configuration_is_checked_with_names():
    config = r.check_config({"policy": [{"severity": "critical", "action": "drain"}], "dry_run": True,
                             "slurm": {"enabled": True}, "kubernetes": {"enabled": True, "kubeconfig": "/etc/k.conf"}})
    assert config["slurm"] == {"enabled": True, "node": None, "scontrol": "scontrol", "sinfo": "sinfo"}
    assert config["rate_limit"] == r.LIMIT_DEFAULTS and config["dry_run"] is True
    for bad, message in (({"slurm": {"node": "n1; reboot"}}, "remediation slurm node must be a plain node name"),
                         ({"kubernetes": {"kubeconfig": "/a\n/b"}}, "remediation kubernetes kubeconfig must be a one-line"),
                         ({"dry_run": "yes"}, "dry_run must be true or false"), ({"act": 1}, "unknown key")):
        with pytest.raises(r.PolicyError, match=message):
            r.check_config(bad)


def test_action_texts_say_what_was_done():
    decision = {"action": "drain", "node": "n1", "reason": "gpufabric: gpu_xid n1", "why": "1 finding(s) ask for a drain"}
    assert r.action_text("slurm", decision, False) == "Slurm: drained n1 (gpufabric: gpu_xid n1)"
    assert r.action_text("kubernetes", decision, True).startswith("Kubernetes: dry run, would have cordoned and tainted n1")
