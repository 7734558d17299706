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
    with pytest.raises(AnsibleFilterError, match="gpufabric.rdma.readiness_report: expected_gpu_count must be a whole number, got 'eight'"):
        FilterModule().filters()["readiness_report"]({}, "eight")
