"""certificate.py with remediation.plan: a drained node returns to service only on an active check made after its drain,
young enough, in which every check the policy names passed; the certificate is made from the real records the
dcgm_diag role and validation's judge produce. Issue 53's faults run against a real decider over HTTP with the
stand-in slurmctld (tests/unit/decider_world.py) where the scheduler's clock matters, and on real DCGM outputs."""
import os
import re
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import certificate as c
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider, protocol
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import dcgm_diag
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, dcgmi
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import remediation as r
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.ledger import check_ledger, check_record, empty_ledger
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet.policy import PolicyError, check_config
from ansible_collections.gpufabric.rdma.plugins.filter.diagnostics import FilterModule
from ansible.errors import AnsibleFilterError

XID = {"check": "gpu_xid", "severity": "critical", "target": "n1/GPU 0000:18:00", "detail": "Xid 79", "fix_hint": "-"}
NOW = 1795526184
return_certificate = FilterModule().filters()["return_certificate"]
DCGM_PASS = {"host": "n1", "status": "pass", "level": 2, "failures": [], "reason": None, "dcgm_version": "4.2.3",
             "driver_version": "570.124.06"}
DCGM_FAIL = dict(DCGM_PASS, status="fail", failures=[
    {"test": "Memory", "gpu": 1, "message": "GPU 1: Memory test failed (page retirement pending)"}])
RUN = {"label": "n1: all_reduce_perf -g 8", "host": "n1", "mode": "single", "passed": True, "failures": [],
       "figure": {"size": 536870912, "busbw": 361.24}, "expected_busbw": 450.0, "result": {"nccl_version": "2.28.3"}}


def settings(mode="enforce", **certification):
    return check_config({"mode": mode, "policy": [{"severity": "critical", "action": "drain"}],
                         "rate_limit": {"max_nodes": 1, "max_percent": 100, "interval": 3600, "max_resumes": 5},
                         "circuit_breaker": {"max_percent": 100}, "slurm": {"enabled": True},
                         "certification": certification})


def report(findings=()):
    return protocol.check_report({"node": "n1", "findings": list(findings), "complete": True, "unreadable": [],
                                  "source": "awx"})


def drained(settings_, at=NOW - 600):
    """n1 drained by gpufabric for an Xid at ``at``, as a plan made it (a real drain in enforce mode)."""
    before = {"n1": {"partitions": ["gpu"], "drained": False, "reason": None, "reason_time": None},
              "n2": {"partitions": ["gpu"], "drained": False}}
    result = r.plan({"n1": report([XID])}, before, empty_ledger(), settings_, at)
    reason = result["decisions"][0]["reason"]
    result["ledger"]["nodes"]["n1"]["drains"][-1].pop("pending", None)
    fleet = {"n1": {"partitions": ["gpu"], "drained": True, "reason": reason, "reason_time": at},
             "n2": {"partitions": ["gpu"], "drained": False}}
    return result["ledger"], fleet


def certify(dcgm=None, nccl=(RUN,)):
    dcgm = DCGM_PASS if dcgm is None else dcgm
    return c.check_certificate(c.from_results(dcgm, list(nccl) if nccl is not None else None, measured_at=NOW), "n1")


@pytest.mark.parametrize("given, message", [
    ({"dcgm_level": 5}, "certification dcgm_level must be 1, 2, 3 or 4, got 5"),
    ({"checks": ["dcgm", "memtest"]}, "checks must be a list of distinct names from dcgm, nccl, pairwise"),
    ({"checks": []}, "checks must be a list of distinct names"),
    ({"max_age": 10}, "max_age must be whole seconds from 60 to 2592000, got 10"),
    ({"required": "yes"}, "certification required must be true or false, got 'yes'"),
    ({"level": 2}, "unknown remediation certification key(s) level (known: checks, dcgm_level, max_age, required)"),
])
def test_bad_certification_settings_are_refused_naming_the_value(given, message):
    with pytest.raises(PolicyError) as err:
        settings(**given)
    assert message in str(err.value)


def test_defaults_ask_for_dcgm_level_2_and_nccl_within_six_hours():
    assert settings()["certification"] == {"required": True, "dcgm_level": 2, "checks": ["dcgm", "nccl"], "max_age": 21600}
    assert settings(dcgm_level="3")["certification"]["dcgm_level"] == 3


def test_a_cleared_node_stays_drained_until_a_passing_certificate_and_then_resumes_once():
    s = settings()
    ledger, fleet = drained(s)
    first = r.plan({"n1": report()}, fleet, ledger, s, NOW)
    decision = first["decisions"][0]
    assert decision["action"] == "none" and decision["certify"] and not decision["held"]
    assert decision["why"] == ("stays drained: no return-to-service certificate: an active check (dcgm level 2, nccl) "
                               "must pass after the drain")
    failing = r.plan({"n1": report()}, fleet, first["ledger"], s, NOW + 60, certificates={"n1": certify(DCGM_FAIL)})
    assert failing["certificates"] == {"n1": "recorded"}
    assert failing["decisions"][0]["action"] == "none" and failing["decisions"][0]["why"] == (
        "stays drained: the certificate measured at 2026-11-24T13:16:24Z does not certify: dcgm fail: Memory GPU 1: "
        "GPU 1: Memory test failed (page retirement pending)")
    passing = r.plan({"n1": report()}, fleet, failing["ledger"], s, NOW + 120, certificates={"n1": certify()})
    decision = passing["decisions"][0]
    assert decision["action"] == "resume" and decision["mttr"] == 720
    assert decision["why"] == ("a fresh, complete check: every finding recorded at the drain has cleared "
                               "(gpu_xid|n1/GPU 0000:18:00); certified 2026-11-24T13:16:24Z: dcgm level 2 pass, "
                               "nccl pass 361.2 GB/s of 450 expected; DCGM 4.2.3, driver 570.124.06, NCCL 2.28.3")
    resume = passing["ledger"]["nodes"]["n1"]["resumes"][-1]
    assert resume["drained_at"] == NOW - 600 and resume["certificate"]["at"] == NOW + 120
    assert resume["certificate"]["cleared"] == ["gpu_xid|n1/GPU 0000:18:00"]   # the drain's findings it cleared
    assert "certificate" not in passing["ledger"]["nodes"]["n1"]
    check_ledger(failing["ledger"])   # a stored certificate reads back; one without its time does not
    for at in (None, float("nan"), 1e13):
        broken = dict(failing["ledger"]["nodes"]["n1"], certificate=dict(failing["ledger"]["nodes"]["n1"]["certificate"], at=at))
        with pytest.raises(ValueError, match="the certificate needs a time 'at'"):
            check_record(broken, "n1")


def test_a_certificate_older_than_the_drain_or_than_max_age_or_missing_a_check_does_not_certify():
    s = settings(max_age=600)
    ledger, fleet = drained(s, at=NOW)
    ledger["nodes"]["n1"]["certificate"] = c.record(certify(), s["certification"], NOW - 30)   # handed in before
    assert "is older than the drain (2026-11-24T13:16:24Z)" in r.plan({"n1": report()}, fleet, ledger, s, NOW + 5)[
        "decisions"][0]["why"]
    ledger["nodes"]["n1"]["certificate"] = c.record(certify(), s["certification"], NOW + 10)
    old = r.plan({"n1": report()}, fleet, ledger, s, NOW + 700)   # its age counts from its check, not its hand-in
    assert "measured at 2026-11-24T13:16:24Z is 700 s old, older than max_age 600 s: a new check must pass" in old[
        "decisions"][0]["why"]
    no_nccl = r.plan({"n1": report()}, fleet, ledger, s, NOW + 10, certificates={"n1": certify(nccl=None)})
    assert no_nccl["decisions"][0]["why"].endswith("does not certify: nccl was not run")
    warned = r.plan({"n1": report()}, fleet, ledger, s, NOW + 10,
                    certificates={"n1": certify(dict(DCGM_PASS, status="warn", reason="Pcie warned"))})
    assert warned["decisions"][0]["why"].endswith("does not certify: dcgm warn: Pcie warned")


def test_a_finding_still_reported_is_said_before_the_certificate_and_other_nodes_ignore_theirs():
    s = settings()
    ledger, fleet = drained(s)
    result = r.plan({"n1": report([XID]), "n2": report()}, fleet, ledger, s, NOW, certificates={"n2": certify()})
    decision = r.plan({"n1": report([XID])}, fleet, ledger, s, NOW)["decisions"][0]
    assert not decision["certify"] and decision["why"].startswith("already drained by gpufabric")
    assert result["certificates"] == {"n2": "ignored: n2 is not drained by gpufabric"}


def test_shadow_mode_says_it_would_stay_drained_and_changes_nothing():
    s = settings(mode="shadow")
    ledger, fleet = drained(s)
    fleet["n1"].update(drained=False, reason=None)   # the shadow drain exists only in the ledger
    ledger["nodes"]["n1"]["drains"][-1]["shadow"] = True
    decision = r.plan({"n1": report()}, fleet, ledger, s, NOW)["decisions"][0]
    assert decision["shadow"] and decision["certify"] and decision["why"].startswith(
        "would stay drained: no return-to-service certificate")


def test_without_required_the_passive_check_resumes_and_a_good_certificate_is_still_named():
    s = settings(required=False)
    ledger, fleet = drained(s)
    assert r.plan({"n1": report()}, fleet, ledger, s, NOW)["decisions"][0]["action"] == "resume"
    named = r.plan({"n1": report()}, fleet, ledger, s, NOW, certificates={"n1": certify()})["decisions"][0]
    assert named["action"] == "resume" and "certified" in named["why"]


def test_the_certificate_is_made_from_the_roles_records():
    made = return_certificate(DCGM_PASS, [RUN, dict(RUN, label="n1: all_reduce_perf -b 8", figure={"size": 8, "busbw": 1.5},
                                                    expected_busbw=None)], measured_at=NOW)
    assert made["checks"] == [
        {"name": "dcgm", "status": "pass", "detail": "", "level": 2},
        {"name": "nccl", "status": "pass", "detail": "n1: all_reduce_perf -b 8", "busbw": 1.5, "size": 8}]
    assert made["versions"] == {"dcgm": "4.2.3", "driver": "570.124.06", "nccl": "2.28.3"}
    failed = c.from_results(None, [dict(RUN, passed=False, failures=["busbw 22.6 GB/s is 5 % of what the hardware carries"])])
    assert failed["checks"] == [{"name": "nccl", "status": "fail", "busbw": 361.24, "size": 536870912, "expected": 450.0,
                                 "detail": "n1: all_reduce_perf -g 8: busbw 22.6 GB/s is 5 % of what the hardware carries"}]
    missed = c.from_results(None, [dict(RUN, passed=False, not_run="the command timed out", figure={})])
    assert missed["checks"][0]["status"] == "not run" and "timed out" in missed["checks"][0]["detail"]
    assert c.from_results(None, [])["checks"][0] == {"name": "nccl", "status": "not run", "detail": "no nccl run"}
    with pytest.raises(AnsibleFilterError, match="return_certificate"):
        return_certificate(DCGM_PASS, nccl="n1")
    with pytest.raises(AnsibleFilterError, match="peer"):
        return_certificate(DCGM_PASS, pairwise=[RUN], peer="n2\nDrain")


def test_a_policy_that_names_pairwise_needs_a_run_with_a_healthy_peer():
    s = settings(checks=["dcgm", "nccl", "pairwise"])
    ledger, fleet = drained(s)
    pair = dict(RUN, label="pairwise all_reduce_perf", mode="mpirun", host="n1,n2", figure={"size": 536870912, "busbw": 48.2},
                expected_busbw=None)
    with_peer = c.check_certificate(return_certificate(DCGM_PASS, nccl=[RUN], pairwise=[pair], peer="n2", measured_at=NOW),
                                    "n1")
    assert with_peer["checks"][2] == {"name": "pairwise", "status": "pass", "busbw": 48.2, "size": 536870912,
                                      "detail": "pairwise all_reduce_perf", "peer": "n2"}
    resumed = r.plan({"n1": report()}, fleet, ledger, s, NOW + 60, certificates={"n1": with_peer})["decisions"][0]
    assert resumed["action"] == "resume" and "pairwise pass 48.2 GB/s with n2" in resumed["why"]
    alone = c.check_certificate(return_certificate(DCGM_PASS, nccl=[RUN], pairwise=[
        {"label": "pairwise", "passed": False, "not_run": "no healthy node in service to pair with"}], measured_at=NOW), "n1")
    kept = r.plan({"n1": report()}, fleet, ledger, s, NOW + 60, certificates={"n1": alone})["decisions"][0]
    assert kept["action"] == "none" and kept["why"].endswith(
        "does not certify: pairwise not run: pairwise: no healthy node in service to pair with")


def test_the_plan_names_the_healthy_peers_and_the_messages_name_the_certificate():
    s = settings()
    ledger, fleet = drained(s)
    warned = dict(XID, check="mtu", severity="warning", target="n2:eth2")
    result = r.plan({"n1": report(), "n2": protocol.check_report({"node": "n2", "findings": [], "complete": True})},
                    fleet, ledger, s, NOW, certificates={"n1": certify()})
    by = dict((d["node"], d) for d in result["decisions"])
    assert by["n2"]["healthy"] and not by["n1"]["healthy"]
    told = r.messages(result, "slurm")
    assert [m["status"] for m in told] == ["resumed"] and "certified 2026-11-24T13:16:24Z: dcgm level 2 pass" in told[0]["detail"]
    unwell = r.plan({"n2": protocol.check_report({"node": "n2", "findings": [warned], "complete": True})}, fleet, ledger, s, NOW)
    assert not unwell["decisions"][0]["healthy"]


# --- issue 53: the certificate means what it says ------------------------------------------------------------------


def _hand(world, cert):
    """remediate.yml's last step: the decider (the same code, lock and ledger as the service) gets the certificate."""
    report = protocol.check_report({"node": "n01", "findings": [], "complete": True, "source": "awx"})
    decided = decider.decide({"n01": report}, world.config, time.time, world.lines.append,
                             certificates={"n01": c.check_certificate(cert, "n01")})
    return decided["decisions"][0]


def _at(world, when):
    os.environ["STUB_SLURM_CLOCK"] = str(int(when))   # slurmctld's clock, which the decider reads (sdiag)


def test_only_a_certificate_measured_after_this_drain_not_in_the_future_resumes_over_http(cluster):
    """A real decider over HTTP and the stand-in slurmctld (issue 53, age): a passing certificate measured three days
    before the drain, one dated 2100, and later the same passing certificate replayed after a new drain all leave
    the node drained; only the one measured after the drain resumes it."""
    world = cluster(["n01", "n02"], certification={"required": True, "checks": ["dcgm"]},
                    rate_limit={"max_nodes": 5, "max_percent": 100, "interval": 60})
    _at(world, NOW)
    world.fault("n01")
    world.run("n01")
    assert world.drained() == ["n01"]
    world.fault("n01", False)
    _at(world, NOW + 600)
    passing = {"checks": [{"name": "dcgm", "status": "pass", "level": 2}], "versions": {"dcgm": "4.2.3"}}
    stale = _hand(world, dict(passing, measured_at=NOW - 3 * 86400))
    assert stale["action"] == "none" and stale["why"] == (
        "stays drained: the certificate measured at 2026-11-21T13:16:24Z is older than the drain "
        "(2026-11-24T13:16:24Z): a new check must pass")
    assert any("stays drained: the certificate measured at 2026-11-21" in line for line in world.run("n01"))
    future = _hand(world, dict(passing, measured_at=4102444800))
    assert future["action"] == "none" and future["why"] == (
        "stays drained: the certificate says its check was measured at 2100-01-01T00:00:00Z, after now "
        "(2026-11-24T13:26:24Z) by the scheduler's clock: a new check must pass")
    assert world.drained() == ["n01"]
    good = dict(passing, measured_at=NOW + 300)
    resumed = _hand(world, good)
    assert resumed["done"] and world.drained() == [] and "certified 2026-11-24T13:21:24Z: dcgm level 2 pass" in resumed["why"]
    # Drained again an hour later; the same certificate handed in again does not answer this drain.
    _at(world, NOW + 4000)
    world.fault("n01")
    world.run("n01")
    assert world.drained() == ["n01"]
    world.fault("n01", False)
    _at(world, NOW + 4300)
    replayed = _hand(world, good)
    assert replayed["action"] == "none" and replayed["why"] == (
        "stays drained: the certificate measured at 2026-11-24T13:21:24Z is older than the drain "
        "(2026-11-24T14:23:04Z): a new check must pass")
    assert world.drained() == ["n01"]


def test_a_failing_entry_of_a_check_fails_it_whatever_the_next_entry_says(cluster):
    """Two DCGM entries, fail then pass (issue 53, contradictions): the node stays drained, naming the failure."""
    world = cluster(["n01", "n02"], certification={"required": True, "checks": ["dcgm"]})
    _at(world, NOW)
    world.fault("n01")
    world.run("n01")
    world.fault("n01", False)
    _at(world, NOW + 600)
    both = {"checks": [{"name": "dcgm", "status": "fail", "level": 2, "detail": "Memory GPU 1: page retirement pending"},
                       {"name": "dcgm", "status": "pass", "level": 2}], "measured_at": NOW + 300}
    decision = _hand(world, both)
    assert decision["action"] == "none" and decision["why"] == (
        "stays drained: the certificate measured at 2026-11-24T13:21:24Z does not certify: dcgm fail: Memory GPU 1: "
        "page retirement pending")
    assert world.drained() == ["n01"]
    s = settings(checks=["dcgm", "nccl"])
    assert c.problems({"checks": [{"name": "nccl", "status": "pass"}, {"name": "nccl", "status": "warn"},
                                  {"name": "dcgm", "status": "pass", "level": 1},
                                  {"name": "dcgm", "status": "pass", "level": 2}]},
                      s["certification"]) == ["nccl warn"]


def test_a_certificate_counts_once_even_where_the_drain_time_is_unknown():
    """Resumed on a certificate, the node is drained again by a drain the ledger has no entry for and the scheduler
    no time (issue 53, once): the same certificate, handed in again, does not resume it."""
    s = settings()
    ledger, fleet = drained(s)
    first = r.plan({"n1": report()}, fleet, ledger, s, NOW + 60, certificates={"n1": certify()})
    assert first["decisions"][0]["action"] == "resume"
    again = dict(fleet, n1=dict(fleet["n1"], reason=fleet["n1"]["reason"].replace("via awx", "via alert"), reason_time=None))
    replayed = r.plan({"n1": report()}, again, first["ledger"], s, NOW + 120, certificates={"n1": certify()})
    assert replayed["decisions"][0]["action"] == "none" and replayed["decisions"][0]["why"] == (
        "stays drained: the certificate measured at 2026-11-24T13:16:24Z is not newer than the node's last resume "
        "(2026-11-24T13:17:24Z): a certificate counts once: a new check must pass")
    assert first["ledger"]["nodes"]["n1"]["resumes"][-1]["certificate"]["measured_at"] == NOW   # what was spent
    fresh = c.check_certificate(c.from_results(DCGM_PASS, [RUN], measured_at=NOW + 90), "n1")
    assert r.plan({"n1": report()}, again, first["ledger"], s, NOW + 120,
                  certificates={"n1": fresh})["decisions"][0]["action"] == "resume"
    # A certificate that says not when it was measured does not count; one dated past any clock is refused outright.
    undated = r.plan({"n1": report()}, again, first["ledger"], s, NOW + 120,
                     certificates={"n1": c.check_certificate(c.from_results(DCGM_PASS, [RUN]), "n1")})
    assert undated["decisions"][0]["why"].endswith("does not say when its check was measured: a new check must pass")
    with pytest.raises(c.CertificateError, match="measured_at must be epoch seconds"):
        c.check_certificate(dict(c.from_results(DCGM_PASS, [RUN]), measured_at=1e15), "n1")


def _record(parsed, not_run, level=2, expected_gpus=None):
    """The dcgm_diag role's record of one node, as the module and dcgm_diag_records make it."""
    judged = dcgm_diag.verdict(parsed, level, not_run, **({"expected_gpus": expected_gpus} if expected_gpus else {}))
    return dict(judged, host="n1", dcgm_version=(parsed or {}).get("dcgm_version"))


def _status_unreadable(text):
    last = list(re.finditer(r'"status" : "PASS"', text))[-1]
    return text[:last.start()] + '"status" : ""' + text[last.end():]


@pytest.mark.parametrize("fixture, rc, change, expected_gpus, gap", [
    ("dcgm3_r2_pass_p4de_awsome.txt", 226, None, None, "dcgmi exited 226 after a table in which no test failed: DCGM says "
     "the run did not succeed, so it is not a pass"),
    ("dcgm_repo_testdata_nvvs.txt", 0, _status_unreadable, None, "DCGM's result for Custom/software GPU 7: status '' is "
     "unreadable: that GPU is not certified"),
    ("dcgm4_r3_pass_4gpu_docs_indented.txt", 0, None, 8, "DCGM tested 4 of the node's 8 GPUs (0, 1, 2, 3): a GPU it "
     "did not test is not certified"),
])
def test_a_dcgm_run_that_did_not_cover_the_node_does_not_certify_it(read_fixture, fixture, rc, change, expected_gpus, gap):
    """Real passing DCGM outputs that are no pass for this node (issue 53): an exit status of 226, a GPU whose -j
    status is unreadable, 4 of the node's 8 GPUs. The certificate names the gap and the node stays drained."""
    text = read_fixture("dcgm", fixture)
    text = change(text) if change else text

    def run(argv, timeout):
        return commands.CommandResult(argv, rc, text, "", seconds=90.0, timeout=timeout)
    parsed, not_run, dummy = dcgmi.diagnose("/usr/bin/dcgmi", ["diag", "-r", "2"], 1200, run=run)
    record = _record(parsed, not_run, expected_gpus=expected_gpus)
    cert = c.check_certificate(return_certificate(record, [RUN], measured_at=NOW), "n1")
    assert cert["checks"][0] == {"name": "dcgm", "status": "not run", "level": 2, "detail": gap}
    s = settings()
    ledger, fleet = drained(s)
    decision = r.plan({"n1": report()}, fleet, ledger, s, NOW + 60, certificates={"n1": cert})["decisions"][0]
    assert decision["action"] == "none" and decision["why"].endswith("does not certify: dcgm not run: %s" % gap)
