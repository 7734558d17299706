"""burnin_search.py: adaptive group testing on small model fabrics without noise, where the answer is known."""
import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils import burnin_search as s

HOSTS = ["n%02d" % i for i in range(16)]


def run(hosts, slow=(), bad=(), expected=None, topology=None, figure=100.0):
    state = s.start(hosts, expected=expected, topology=topology)
    rounds = []
    while not state["done"]:
        tests = s.next_round(state)
        if not tests:
            break
        for test in tests:  # every round's tests are disjoint
            assert not any(set(test["hosts"]) & set(other["hosts"]) for other in tests if other is not test)
        rounds.append(tests)
        figures = {}
        for test in tests:
            members = set(test["hosts"])
            factor = 0.6 if members & set(slow) else 1.0
            if any(a in members and b in members for a, b in bad):
                factor = min(factor, 0.5)
            figures[test["id"]] = figure * factor
        s.record(state, figures)
    return state, rounds


def test_a_healthy_cluster_passes_in_two_rounds():
    state, rounds = run(HOSTS)
    found = s.summary(state)
    assert (found["slow_hosts"], found["bad_links"], found["rounds"]) == ([], [], 2)
    assert [len(t["hosts"]) for t in rounds[0]] == [2] * 8 and len(rounds[1][0]["hosts"]) == 16


def test_a_slow_host_is_narrowed_down_and_told_from_its_partner():
    state = run(HOSTS, slow=["n05"])[0]
    found = s.summary(state)
    assert found["slow_hosts"] == ["n05"] and found["bad_links"] == []
    assert any("n05 against a known-good host" in line and "below" in line for line in found["tree_lines"])


def test_a_bad_link_between_two_groups_is_found_by_crossing_halves():
    state, rounds = run(HOSTS, bad=[("n02", "n13")])
    found = s.summary(state)
    assert found["slow_hosts"] == [] and found["bad_links"] == [["n02", "n13"]]
    assert any("link search" in line for line in found["tree_lines"])


def test_a_bad_link_inside_a_first_group_is_told_from_a_slow_host():
    state = run(HOSTS, bad=[("n04", "n05")])[0]
    assert s.summary(state)["bad_links"] == [["n04", "n05"]] and s.summary(state)["slow_hosts"] == []


def test_with_a_baseline_the_whole_cluster_is_one_group_first():
    state, rounds = run(HOSTS, expected=100.0)
    assert len(rounds) == 1 and len(rounds[0]) == 1 and len(rounds[0][0]["hosts"]) == 16
    state, rounds = run(HOSTS, slow=["n11"], expected=100.0)
    assert s.summary(state)["slow_hosts"] == ["n11"]


def test_topology_tests_within_each_leaf_and_across_leaves():
    topology = dict((h, "leaf%d" % (i // 4)) for i, h in enumerate(HOSTS))
    state, rounds = run(HOSTS, topology=topology)
    assert sorted(t["hosts"] for t in rounds[0]) == [HOSTS[0:4], HOSTS[4:8], HOSTS[8:12], HOSTS[12:16]]
    assert sorted(t["hosts"] for t in rounds[1]) == [[HOSTS[i], HOSTS[i + 4], HOSTS[i + 8], HOSTS[i + 12]] for i in range(4)]


def test_two_hosts_are_one_pair():
    state, rounds = run(["a", "b"])
    assert len(rounds) == 1 and s.summary(state)["slow_hosts"] == []


@pytest.mark.parametrize("hosts, kwargs, message", [(["a"], {}, "at least two hosts"), (["a", "b"], {"tolerance": 1.5}, "tolerance")])
def test_bad_starts_are_refused(hosts, kwargs, message):
    with pytest.raises(ValueError, match=message):
        s.start(hosts, **kwargs)
