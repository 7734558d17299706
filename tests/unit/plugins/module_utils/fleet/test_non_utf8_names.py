"""An RDMA device whose sysfs name holds a byte that is not UTF-8 (b'mlx5_\\xff') crashed the health monitor on every
run (UnicodeEncodeError hashing its event id): its state was never saved and nothing was queued. Names read from the
file system are carried as escaped text (mlx5_\\xff) end to end; paths keep the real name."""

import importlib.util
import json
import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import monitor
from paths import ROOT


def _tree(tmp_path):
    port = os.path.join(str(tmp_path).encode(), b"sys", b"class", b"infiniband", b"mlx5_\xff", b"ports", b"1")
    os.makedirs(os.path.join(port, b"counters"))
    for name, value in ((b"state", "1: DOWN"), (b"phys_state", "3: Disabled"), (b"link_layer", "InfiniBand"),
                        (b"counters/symbol_error", "7")):
        with open(os.path.join(port, name), "w") as handle:
            handle.write(value + "\n")
    return str(tmp_path / "sys")


def test_the_readers_give_the_name_escaped_and_still_read_the_device(tmp_path):
    root = _tree(tmp_path)
    (device,) = sysfs.read_rdma_devices(root)
    assert device["name"] == "mlx5_\\xff" and device["ports"][0]["state"] == "DOWN"
    assert sysfs.read_port_counters(root, ("symbol_error",)) == {"mlx5_\\xff/1": {"symbol_error": 7}}
    json.dumps(device, ensure_ascii=False).encode("utf-8")   # writable as UTF-8: no lone surrogate left


def test_the_monitor_saves_its_state_and_queues_the_finding(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "gpufabric_health_monitor", os.path.join(ROOT, "roles", "health_monitor", "files", "gpufabric_health_monitor.py"))
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    root = _tree(tmp_path)
    (tmp_path / "kern.log").write_text("")
    (tmp_path / "state").mkdir()
    config = monitor.check_config({
        "cluster": "lab", "host": "n1", "state_dir": str(tmp_path / "state"),
        "checks": {"kernel_log": str(tmp_path / "kern.log"), "sysfs_root": root, "procfs_root": root, "command_timeout": 5},
        "webhooks": [{"name": "events", "type": "generic", "url": "http://127.0.0.1:9/events", "insecure_http": True}],
        "timeout": 1})
    lines = []
    program.run_once(config, log=lines.append)
    saved = [name for name in os.listdir(str(tmp_path / "state")) if name.endswith(".json")]
    assert saved, lines
    text = (tmp_path / "state" / saved[0]).read_text(encoding="utf-8")
    assert "n1/mlx5_\\\\xff/1" in text   # the escaped name, as JSON writes a backslash
