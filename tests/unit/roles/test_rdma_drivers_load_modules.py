"""`make lab` printed an empty "Load the new modules before verifying" header once per node (issue 52, point 10): the
rdma_drivers role flushed its handlers with a named meta task for every provider, and a flush prints its header per
host with nothing under it. The providers that install a kernel stack (DOCA-OFED, MLNX_OFED) now load its modules
themselves, right after the install and only when it changed; the others (inbox, erdma: the lab's) print nothing."""

import os

import yaml

TASKS = os.path.join(os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")), "roles", "rdma_drivers", "tasks")


def _tasks(name):
    with open(os.path.join(TASKS, name)) as handle:
        return yaml.safe_load(handle)


def test_no_task_of_the_role_flushes_handlers():
    for name in sorted(os.listdir(TASKS)):
        metas = [t.get("name") for t in _tasks(name) if "ansible.builtin.meta" in t or "meta" in t]
        assert metas == [], (name, metas)
    assert not os.path.exists(os.path.join(os.path.dirname(TASKS), "handlers", "main.yml"))


def test_the_providers_with_a_kernel_stack_load_its_modules_right_after_installing_it():
    for name in ("doca.yml", "mlnx_ofed.yml"):
        tasks = _tasks(name)
        (installs,) = [i for i, t in enumerate(tasks) if t.get("register") == "__rdma_drivers_stack_installed"]
        assert tasks[installs + 1].get("ansible.builtin.import_tasks") == "load_modules.yml", name
    (restart,) = _tasks("load_modules.yml")
    assert restart["ansible.builtin.command"] == "/etc/init.d/openibd restart"
    assert restart["when"] == "__rdma_drivers_stack_installed is changed"
    for name in ("inbox.yml", "erdma.yml", "main.yml", "verify.yml"):
        assert "load_modules.yml" not in open(os.path.join(TASKS, name)).read(), name
