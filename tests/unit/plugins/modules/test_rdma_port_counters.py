"""rdma_port_counters: each port's data counters from sysfs (a copy of the fixture tree with leptonai/gpud's
real port_xmit_data/port_rcv_data reading written in), and eadm stat for an eRDMA device that has none (the
seed-002 capture, through the stub tool)."""

import os
import shutil

from ansible_collections.gpufabric.rdma.plugins.modules import rdma_port_counters
from moduletest import calls, run_module, stub_bin, stub_path
from paths import FIXTURES


def test_sysfs_words_and_hw_counter_bytes(tmp_path):
    root = tmp_path / "sys"
    shutil.copytree(os.path.join(FIXTURES, "sysfs", "roce_mlx5"), str(root))
    port = root / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    (port / "counters").mkdir()
    (port / "counters" / "port_xmit_data").write_text("230442669431839\n")
    (port / "counters" / "port_rcv_data").write_text("230539874932483\n")
    (port / "counters" / "symbol_error").write_text("0\n")
    (port / "hw_counters").mkdir()
    (port / "hw_counters" / "rx_bytes").write_text("not a number\n")
    result = run_module(rdma_port_counters, {"sysfs_root": str(root)}, check_mode=True)
    assert result["counters"] == {"mlx5_0/1": {"port_xmit_data": 230442669431839, "port_rcv_data": 230539874932483}}
    assert result["changed"] is False and "ansible_facts" not in result


def test_eadm_for_an_erdma_device_and_a_warning_without_it(tmp_path, monkeypatch):
    bindir = stub_path(tmp_path, monkeypatch)
    sysfs = os.path.join(FIXTURES, "sysfs", "erdma")
    args = {"sysfs_root": sysfs}
    missing = run_module(rdma_port_counters, args)
    assert missing["counters"] == {}
    assert missing["warnings"] == ["erdma_0: no data counter in sysfs and eadm is not installed: its bytes stay unknown"]
    stub_bin(bindir, {"eadm": "misbehave"})
    monkeypatch.setenv("STUB_EADM_MODE", "file:" + os.path.join(FIXTURES, "eadm", "stat_live_seed002.txt"))
    result = run_module(rdma_port_counters, args)
    assert calls(tmp_path / "calls.jsonl") == [("eadm", ["stat", "-d", "erdma_0"])]
    # 11.06 GiB and 11.18 GiB as eadm printed them: accurate to those digits
    assert result["counters"] == {"erdma_0/1": {"rx_bytes": 11875584573, "tx_bytes": 12004433592}}
    assert result["warnings"] == []
    monkeypatch.setenv("STUB_EADM_MODE", "hang")
    hung = run_module(rdma_port_counters, dict(args, command_timeout=2))
    assert hung["counters"] == {} and "the bytes of erdma_0 stay unknown" in hung["warnings"][0]
