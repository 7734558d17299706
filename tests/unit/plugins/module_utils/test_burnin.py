import itertools

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils import burnin


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
