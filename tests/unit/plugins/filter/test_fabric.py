import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.fabric import FilterModule


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {"node_record", "node_summary", "readiness_report",
                                             "readiness_markdown", "readiness_text", "peermem_plan",
                                             "loaded_modules"}


def test_filter_errors_name_the_filter():
    with pytest.raises(AnsibleFilterError, match="gpufabric.rdma.node_summary: .*mapping"):
        FilterModule().filters()["node_summary"](["not", "a", "mapping"])


def test_readiness_filter_errors_name_the_filter():
    with pytest.raises(AnsibleFilterError, match="gpufabric.rdma.readiness_report: .*mapping"):
        FilterModule().filters()["readiness_report"]([])
    with pytest.raises(AnsibleFilterError, match="gpufabric.rdma.readiness_report: expected_gpu_count must be a whole "
                                                 "number of GPUs per node \\(0 or more\\), got 'eight'"):
        FilterModule().filters()["readiness_report"]({}, "eight")


@pytest.mark.parametrize("value", ["eight", "-1", "8.5", True, " ", "８"])
def test_a_gpu_count_that_is_not_a_whole_number_is_refused_naming_it(value):
    with pytest.raises(AnsibleFilterError, match="expected_gpu_count must be a whole number of GPUs per node"):
        FilterModule().filters()["readiness_report"]({}, value)


def test_a_gpu_count_as_text_or_number_is_taken():
    for value in ("8", 8, " 8 "):
        assert FilterModule().filters()["readiness_report"]({}, value)["expected_gpu_count"] == 8
    assert FilterModule().filters()["readiness_report"]({}, "")["expected_gpu_count"] is None


def test_an_nvlink_domain_size_is_taken_per_host_and_refused_naming_it():
    report = FilterModule().filters()["readiness_report"]
    assert report({}, nvlink_domain_size="18")["nvlink_domain_size"] is None     # no node: nothing kept
    assert report({"gb01": {}}, nvlink_domain_size="18")["nvlink_domain_size"] == 18
    assert report({"gb01": {}, "h01": {}}, nvlink_domain_size={"gb01": 18, "h01": 0})["nvlink_domain_size"] == {
        "gb01": 18, "h01": 0}
    with pytest.raises(AnsibleFilterError, match="readiness_report: gpufabric_nvlink_domain_size of gb01 must be the "
                                                 "number of trays .* got 'NVL72'"):
        report({"gb01": {}}, nvlink_domain_size={"gb01": "NVL72"})
