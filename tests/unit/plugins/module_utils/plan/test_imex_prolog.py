"""The Slurm IMEX prolog and epilog (issue 55): nodes_config.cfg written from the job's nodes (each address checked,
one per line, nothing smuggled), the daemon restarted and waited for (bounded) until every node is READY and
connected and the domain UP, the channel device looked for; on failure the decider is told with the matrix and the
prolog exits 1 (it drains nothing itself); the epilog stops the daemon and takes back only the file the prolog wrote.
The daemon's answers are aws-parallelcluster's real `nvidia-imex-ctl -N -j` (UP, unconfigured DOWN) and the AWS
18-node table."""

import json
import os
import stat

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import monitor
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import imex as node_imex
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.nvidia_imex import parse_nvidia_imex_ctl
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import imex_domain
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan.imex_domain import ImexPrologError

from decider_world import node_monitor
from paths import fixture_path

FIXTURES = fixture_path("nvidia_imex")
UP = os.path.join(FIXTURES, "ctl_N_j_2node_gb200_up_pcluster.json")
DOWN = os.path.join(FIXTURES, "ctl_N_j_unconfigured_down_pcluster.json")
UP_NODES = ["192.168.103.159", "192.168.107.187"]


def _text(path):
    with open(path) as handle:
        return handle.read()


def test_the_config_holds_each_checked_address_once_per_line_after_our_marker():
    text = imex_domain.nodes_config_text(UP_NODES + ["fe80::1", "gb200-n03.rack1"], 4711)
    assert text.splitlines() == [imex_domain.MARKER + ": Slurm job 4711; the epilog puts the site's own file back",
                                 "192.168.103.159", "192.168.107.187", "fe80::1", "gb200-n03.rack1"]
    assert imex_domain.ours(text) and not imex_domain.ours("10.0.0.1\n")


@pytest.mark.parametrize("addresses, job, message", [
    (["10.0.0.1\n10.0.0.9"], 1, "must be an IP address or a host name .*got '10.0.0.1 10.0.0.9'"),
    (["10.0.0.1 #x"], 1, "must be an IP address or a host name"),
    (["-n1"], 1, "got '-n1'"),
    (["10.0.0.1", "10.0.0.1"], 1, "two of the job's nodes have the same IMEX address: 10.0.0.1"),
    ([], 1, "the job names no node"),
    (["10.0.0.1"], "1\n2", "the Slurm job ID must be a number, got '1 2'"),
])
def test_nothing_is_smuggled_into_the_config(addresses, job, message):
    with pytest.raises(ImexPrologError, match=message):
        imex_domain.nodes_config_text(addresses, job)


def test_settings_are_checked_naming_the_value():
    assert imex_domain.check_settings({})["wait"] == 120
    for given, message in (({"wait": 0}, "imex wait must be whole seconds from 1 to 3600, got 0"),
                           ({"config_file": "etc/x"}, "imex config_file must be an absolute one-line path, got 'etc/x'"),
                           ({"service": "a b"}, "imex service must be a systemd unit name"),
                           ({"addresses": {"n1": "10.0.0.1\n"}}, r"IMEX address \(node n1\)"),
                           ({"color": 1}, "imex has unknown key")):
        with pytest.raises(ImexPrologError, match=message):
            imex_domain.check_settings(given)
    with pytest.raises(ValueError, match="imex wait"):
        monitor.check_config({"imex": {"wait": 0}})


def test_the_wait_judges_the_real_answers():
    up, down = parse_nvidia_imex_ctl(_text(UP)), parse_nvidia_imex_ctl(_text(DOWN))
    assert imex_domain.verdict(up, UP_NODES) == (True, [])
    ready, found = imex_domain.verdict(up, UP_NODES + ["192.168.1.3"])     # a job node IMEX does not list
    assert not ready and [f["check"] for f in found] == ["imex_node"]
    ready, found = imex_domain.verdict(down, UP_NODES)
    assert not ready and "imex_domain" in [f["check"] for f in found]
    table = parse_nvidia_imex_ctl(_text(os.path.join(FIXTURES, "ctl_N_18node_gb200_570.172_pcluster_docs.txt")))
    shown = imex_domain.matrix(table)
    assert shown.startswith("#0 172.31.48.81 READY: C C C") and shown.endswith("; Domain State UP")
    assert imex_domain.matrix(down) == "#0 0.0.0.0 UNAVAILABLE: I; Domain State DOWN"


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def world(tmp_path):
    """A node: nodes_config.cfg of the site, stand-ins of systemctl (logging) and nvidia-imex-ctl (answering DOWN for
    its first ``down`` calls, then UP)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    _script(bindir / "systemctl", 'echo "systemctl $*" >> %s\n' % log)
    _script(bindir / "nvidia-imex-ctl", 'n=$(cat %s/count 2>/dev/null || echo 0); echo $((n+1)) > %s/count\n'
            'echo "imex-ctl $*" >> %s\nif [ "$n" -lt "$(cat %s/down)" ]; then cat %s; else cat %s; fi\n'
            % (tmp_path, tmp_path, log, tmp_path, DOWN, UP))
    (tmp_path / "down").write_text("2")
    config_file = tmp_path / "nodes_config.cfg"
    config_file.write_text("0.0.0.0\n")
    channel = tmp_path / "channel0"
    channel.write_text("")
    config = monitor.check_config({"host": "n1", "imex": {
        "config_file": str(config_file), "channel": str(channel), "wait": 10, "poll": 1,
        "addresses": {"gb1": UP_NODES[0], "gb2": UP_NODES[1]}}})
    runner = commands.Runner(5, path=str(bindir))
    return tmp_path, config, runner, log


def _prolog(config, runner, nodelist="gb[1-2]", **hooks):
    lines = []
    clock = [0.0]

    def sleep(seconds):
        clock[0] += seconds
    rc = node_monitor.imex_prolog(config, runner, lines.append, clock=lambda: clock[0],
                                  env={"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": nodelist},
                                  sleep=sleep, **hooks)
    return rc, lines, clock[0]


def test_the_prolog_writes_restarts_waits_for_up_and_the_epilog_puts_the_sites_file_back(world):
    tmp_path, config, runner, log = world
    rc, lines, waited = _prolog(config, runner)
    assert rc == 0 and lines == ["gpufabric IMEX prolog: job 77: the IMEX domain of gb[1-2] is UP"]
    assert waited == 2, "asked until UP: two DOWN answers, one second apart"
    assert (tmp_path / "nodes_config.cfg").read_text().splitlines()[1:] == UP_NODES
    assert (tmp_path / "nodes_config.cfg.gpufabric-site").read_text() == "0.0.0.0\n"
    assert log.read_text().splitlines()[0] == "systemctl restart nvidia-imex"
    assert log.read_text().splitlines()[1:] == ["imex-ctl -N -j"] * 3
    assert node_monitor.imex_epilog(config, runner, lines.append) == 0
    assert (tmp_path / "nodes_config.cfg").read_text() == "0.0.0.0\n"
    assert not (tmp_path / "nodes_config.cfg.gpufabric-site").exists()
    assert log.read_text().splitlines()[-1] == "systemctl stop nvidia-imex"
    # A file the prolog did not write is not the epilog's to touch.
    (tmp_path / "nodes_config.cfg").write_text("10.9.9.9\n")
    node_monitor.imex_epilog(config, runner, lines.append)
    assert (tmp_path / "nodes_config.cfg").read_text() == "10.9.9.9\n" and "left as it is" in lines[-1]


def test_without_a_site_file_the_epilog_removes_the_prologs(world):
    tmp_path, config, runner, dummy = world
    (tmp_path / "nodes_config.cfg").unlink()
    assert _prolog(config, runner)[0] == 0
    node_monitor.imex_epilog(config, runner, lambda line: None)
    assert not (tmp_path / "nodes_config.cfg").exists()


def test_a_domain_never_up_fails_the_prolog_after_telling_the_decider_with_the_matrix(world, monkeypatch):
    tmp_path, config, runner, dummy = world
    (tmp_path / "down").write_text("1000")
    told = []
    monkeypatch.setattr(node_monitor, "report", lambda config, result, source, clock: told.append((result, source)) or (
        {"decision": {"why": "drained n1 (imex_node)"}, "text": "drained"}, None))
    config = dict(config, decider={"url": "http://decider", "secret": "x" * 32, "node": "n1", "timeout": 5})
    rc, lines, waited = _prolog(config, runner)
    assert rc == 1 and waited == 10, "waited its bound, no longer"
    assert "within 10 s; matrix #0 0.0.0.0 UNAVAILABLE: I; Domain State DOWN" in lines[0]
    result, source = told[0]
    assert source == "gate" and result["complete"] is False and "matrix #0 0.0.0.0" in result["unreadable"][0]
    assert sorted(set(f["check"] for f in result["findings"])) == ["imex_domain", "imex_node"]
    assert lines[-1] == "gpufabric IMEX prolog: decider: drained"
    assert not [c for c in open(str(dummy)).read().splitlines() if "scontrol" in c], "the prolog drains nothing"


def test_a_missing_channel_device_or_a_bad_node_fails_the_prolog_naming_it(world):
    tmp_path, config, runner, dummy = world
    (tmp_path / "channel0").unlink()
    rc, lines, dummy2 = _prolog(config, runner)
    assert rc == 1 and "channel0 does not exist" in lines[0]

    def unknown(name):
        raise OSError("Name or service not known")
    rc, lines, dummy2 = _prolog(config, runner, nodelist="gb[1-2],nosuch.invalid", resolve=unknown)
    assert rc == 1 and "node nosuch.invalid of the job has no IMEX address" in lines[0]
    rc, lines, dummy2 = _prolog(config, runner, resolve=lambda name: "10.0.0.1\n10.0.0.2", nodelist="gb1,x")
    assert rc == 1 and "must be an IP address or a host name" in lines[0]


def test_the_evidence_bundle_holds_the_imex_matrix_where_a_finding_is_imex(world):
    from ansible_collections.gpufabric.rdma.plugins.module_utils.node import evidence
    import io
    import tarfile
    tmp_path, config, runner, dummy = world
    data, manifest = evidence.collect({"kernel_log": str(tmp_path / "down")}, [{"check": "imex_node"}], runner, 20)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert json.loads(tar.extractfile("nvidia-imex-ctl-N.json").read())["status"] == "DOWN"
    data, manifest = evidence.collect({"kernel_log": str(tmp_path / "down")}, [{"check": "gpu_xid"}], runner, 20)
    assert "nvidia-imex-ctl-N.json" not in [m["name"] for m in manifest]


def test_the_host_part_keeps_a_sites_file_aside_once(tmp_path):
    path = str(tmp_path / "nodes_config.cfg")
    with open(path, "w") as handle:
        handle.write("10.1.1.1\n")
    node_imex.write_config(path, imex_domain.nodes_config_text(["10.0.0.1"], 1))
    node_imex.write_config(path, imex_domain.nodes_config_text(["10.0.0.2"], 2))   # a second prolog, no epilog between
    assert open(node_imex.saved_path(path)).read() == "10.1.1.1\n"
    assert node_imex.restore_config(path) == "the site's %s put back" % path and open(path).read() == "10.1.1.1\n"
