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


def test_nccl_tests_filter_takes_text_result_or_loaded_json(read_fixture):
    import json
    text = read_fixture("nccl_tests", "all_reduce_g8_h200x8.txt")
    document = json.loads(read_fixture("nccl_tests", "all_reduce_g8_h200x8.json"))
    assert FILTERS["parse_nccl_tests"]({"stdout": text})["peak_busbw"] == 365.37
    assert FILTERS["parse_nccl_tests"](document)["format"] == "json"
    with pytest.raises(AnsibleFilterError, match="parse_nccl_tests: no nccl-tests output in the text"):
        FILTERS["parse_nccl_tests"]("bash: all_reduce_perf: command not found")


def test_perftest_filter(read_fixture):
    assert FILTERS["parse_perftest"](read_fixture("perftest", "write_bw_gbits_perftest-273.txt"))["unit"] == "Gb/sec"
    with pytest.raises(AnsibleFilterError, match="parse_perftest"):
        FILTERS["parse_perftest"]("hello")


def test_nvcc_gencode_filter_takes_a_registered_result():
    assert FILTERS["nvcc_gencode"]({"stdout_lines": ["9.0", "9.0"]}) == "-gencode=arch=compute_90,code=sm_90"
    with pytest.raises(AnsibleFilterError, match="nvcc_gencode: expects compute_cap lines"):
        FILTERS["nvcc_gencode"](9.0)
