import itertools

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import burnin


@pytest.mark.parametrize("count", range(2, 65))
def test_every_pair_once_in_disjoint_rounds(count):
    hosts = ["gpu-%02d" % i for i in range(count)]
    schedule = burnin.rounds(hosts)
    assert len(schedule) == (count - 1 if count % 2 == 0 else count)  # O(N) rounds
    for pairs in schedule:
        busy = [h for pair in pairs for h in pair]
        assert len(busy) == len(set(busy)), "a host is in two pairs of one round"
        if count % 2 == 0:
            assert sorted(busy) == hosts, "every host is paired in every round when N is even"
        else:
            assert len(busy) == count - 1
    met = [frozenset(pair) for pairs in schedule for pair in pairs]
    assert len(met) == len(set(met)) == count * (count - 1) // 2
    assert set(met) == set(frozenset(p) for p in itertools.combinations(hosts, 2))


def test_odd_count_rests_each_host_once():
    schedule = burnin.rounds(["a", "b", "c"])
    resting = [({"a", "b", "c"} - {h for pair in pairs for h in pair}).pop() for pairs in schedule]
    assert sorted(resting) == ["a", "b", "c"]


@pytest.mark.parametrize("hosts, expected", [([], []), (["solo"], [])])
def test_nothing_to_pair(hosts, expected):
    assert burnin.rounds(hosts) == expected


def test_duplicate_hosts_are_refused():
    with pytest.raises(ValueError, match="hosts must be unique: n1"):
        burnin.rounds(["n1", "n2", "n1"])


def test_rank_names_the_slow_host_and_the_bad_link():
    # Four 8-GPU nodes; n3's NIC is degraded (every pair with it is slow); n1-n2's cable is bad.
    busbw = {("n0", "n1"): 190, ("n0", "n2"): 188, ("n0", "n3"): 95, ("n1", "n2"): 120, ("n1", "n3"): 94,
             ("n2", "n3"): 96}
    results = [{"a": a, "b": b, "busbw": v} for (a, b), v in busbw.items()]
    ranked = burnin.rank(results, tolerance=0.1)
    assert ranked["slow_hosts"] == ["n3"]
    assert ranked["bad_links"] == ["n1-n2"]
    assert [(h["host"], h["median_busbw"]) for h in ranked["hosts"]] == [("n0", 188), ("n1", 120), ("n2", 120), ("n3", 95)]
    assert ranked["links"][0] == {"a": "n1", "b": "n3", "busbw": 94, "bad": False}


def test_rank_with_a_failed_pair():
    ranked = burnin.rank([{"a": "n0", "b": "n1", "busbw": 190}, {"a": "n0", "b": "n2", "busbw": None},
                          {"a": "n1", "b": "n2", "busbw": None}])
    assert ranked["bad_links"] == ["n0-n2", "n1-n2"]
    assert ranked["slow_hosts"] == ["n2"]  # no pair of n2 finished


# --- the burn-in report: real nccl-tests output per pair, one slow host and one bad link ---

def test_burnin_report_names_the_slow_host_and_the_bad_link(read_fixture, scaled):
    from ansible_collections.gpufabric.rdma.plugins.filter.burnin import burnin_report
    capture = read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    hosts = ["n%d" % i for i in range(1, 7)]
    pairs = []
    for number, round_pairs in enumerate(burnin.rounds(hosts)):
        for a, b in round_pairs:
            factor = 0.5 if "n4" in (a, b) else (0.6 if {a, b} == {"n1", "n2"} else 1.0)
            pairs.append({"a": a, "b": b, "round": number, "rc": 0, "output": scaled(capture, factor)})
    pairs[-1] = dict(pairs[-1], rc=1, output="n5: Test NCCL failure common.cu:1030 'unhandled system error'")
    failed = "%s-%s" % (pairs[-1]["a"], pairs[-1]["b"])
    report = burnin_report(pairs, tolerance=0.1)
    assert report["rank"]["slow_hosts"] == ["n4"]
    assert set(report["rank"]["bad_links"]) == {"n1-n2", failed}
    assert report["failures"][0] == "slow host n4"
    top = next(r for r in report["results"] if r["busbw"] is not None and "n4" not in (r["a"], r["b"]) and
               {r["a"], r["b"]} != {"n1", "n2"})
    assert top["largest_size"] == 4294967296 and top["busbw"] > 350
    assert next(r for r in report["results"] if r["busbw"] is None)["error"] == "exited 1"
    md = report["markdown"]
    assert md.startswith("# Burn-in\n\nFAILED: 6 hosts, 15 pairs in 5 rounds;")
    assert "| n4 |" in md and "**yes**" in md and "exited 1" in md
    svg = report["svg"]
    assert svg.startswith("<svg") and svg.count("<title>") == 30 and svg.count('stroke-width="2"') == 4 + 1
    assert "failed</title>" in svg
    import xml.dom.minidom
    xml.dom.minidom.parseString(svg)  # well-formed


def test_burnin_report_floor_and_two_hosts(read_fixture):
    from ansible_collections.gpufabric.rdma.plugins.filter.burnin import burnin_report
    capture = read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    report = burnin_report([{"a": "a", "b": "b", "round": 0, "rc": 0, "output": capture}], min_busbw=1000)
    assert report["rank"]["slow_hosts"] == [] and report["rank"]["bad_links"] == []
    assert report["failures"] == ["pair a-b below 1000 GB/s"]
    assert "- below 1000.0 GB/s: a-b" in report["markdown"]
    assert report["svg"].count("<title>") == 2
