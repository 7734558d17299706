import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rdma.plugins.filter.parsers import FilterModule

FILTERS = FilterModule().filters()


def test_registered_result_or_text(read_fixture):
    text = read_fixture("ibv_devinfo", "erdma_seed002.txt")
    assert FILTERS["parse_ibv_devinfo"]({"stdout": text, "rc": 0}) == FILTERS["parse_ibv_devinfo"](text)
    assert [d["transport"] for d in FILTERS["parse_ibv_devinfo"](text)] == ["eRDMA", "eRDMA"]


def test_topo_filter(read_fixture):
    topo = FILTERS["parse_nvidia_topo"](read_fixture("nvidia_smi", "topo_4gpu_4nic_constructed.txt"))
    assert topo["gpu_nics"]["GPU2"] == ["mlx5_2"]


def test_filter_errors_are_ansible_errors():
    with pytest.raises(AnsibleFilterError, match="parse_nvidia_topo: no matrix header"):
        FILTERS["parse_nvidia_topo"]("garbage")
    with pytest.raises(AnsibleFilterError, match="expects the tool's text"):
        FILTERS["parse_ibv_devinfo"](42)
