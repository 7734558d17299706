"""The playbooks' preflight (plugins/plugin_utils/inputs.py), called directly: each host's values checked against the
roles' argument specs with ansible-core's validator, phrased with the variable, the value as typed and what it takes,
never the validator's internal class names; a problem of some hosts names them (issue 52 item 6)."""

from ansible_collections.gpufabric.rdma.plugins.plugin_utils import inputs

SPECS = {"nccl_tests": {"nccl_tests_min_busbw": {"type": "float"}, "nccl_tests_max_wrong": {"type": "int"},
                        "nccl_tests_runs": {"type": "list", "elements": "dict"}},
         "dcgm_diag": {"dcgm_diag_gpu_ids": {"type": "list", "elements": "int"}},
         "playbook": {"validate_dcgm_level": {"type": "int", "choices": [1, 2, 3, 4]}}}


class _Tagged(str):
    """A value as Ansible hands it over (a str subclass of its own)."""


def test_a_value_of_the_wrong_type_is_named_as_typed():
    assert inputs.spec_problem("nccl_tests_min_busbw", {"type": "float"}, _Tagged("abc"), "nccl_tests") == (
        'nccl_tests_min_busbw is "abc", expected a number (role gpufabric.rdma.nccl_tests)')
    assert inputs.spec_problem("dcgm_diag_gpu_ids", {"type": "list", "elements": "int"}, ["a"], "dcgm_diag") == (
        'dcgm_diag_gpu_ids is ["a"], expected a list of whole numbers (role gpufabric.rdma.dcgm_diag)')
    assert inputs.spec_problem("validate_dcgm_level", {"type": "int", "choices": [1, 2, 3, 4]}, "5", "playbook") == (
        'validate_dcgm_level is "5", expected one of 1, 2, 3, 4 (an input of this playbook)')
    # what the role would take passes: a number's text, a level's text; '' is unset for a playbook's input
    assert inputs.spec_problem("nccl_tests_min_busbw", {"type": "float"}, "350", "nccl_tests") is None
    assert inputs.spec_problem("validate_dcgm_level", {"type": "int", "choices": [1, 2, 3, 4]}, "2", "playbook") is None
    assert inputs.spec_problem("validate_dcgm_level", {"type": "int", "choices": [1, 2, 3, 4]}, "", "playbook") is None


def test_a_problem_of_some_hosts_names_them_and_one_of_all_does_not():
    values = {"n1": {"nccl_tests_min_busbw": "abc", "nccl_tests_max_wrong": 0},
              "n2": {"nccl_tests_min_busbw": "abc", "nccl_tests_max_wrong": -1}, "n3": {"nccl_tests_min_busbw": "abc"}}
    assert inputs.problems(values, SPECS) == [
        'nccl_tests_min_busbw is "abc", expected a number (role gpufabric.rdma.nccl_tests)']
    values = {"n1": {"nccl_tests_max_wrong": 0}, "n2": {"nccl_tests_max_wrong": -1}}
    assert inputs.problems(values, SPECS) == [
        "nccl_tests_max_wrong must be a whole number of wrong values allowed (0 or more), got -1 (on n2)"]


def test_host_values_reads_what_each_host_has_and_leaves_the_rest():
    from jinja2 import Undefined

    class Broken(object):
        def __contains__(self, name):
            return True

        def __getitem__(self, name):
            raise RuntimeError("'ansible_facts' is undefined")
    hostvars = {"n1": {"nccl_tests_min_busbw": _Tagged("abc"), "nccl_tests_max_wrong": None,
                       "nccl_tests_runs": Undefined()}, "n2": Broken()}
    found = inputs.host_values(hostvars, ["n1", "n2", "gone"],
                               ["nccl_tests_min_busbw", "nccl_tests_max_wrong", "nccl_tests_runs"])
    assert found == {"n1": {"nccl_tests_min_busbw": "abc"}, "n2": {}}
    assert found["n1"]["nccl_tests_min_busbw"].__class__ is str   # a plain str, not one of Ansible's tagged ones
