"""The health_monitor role's Slurm IMEX hooks (issue 55): opt-in (health_monitor_slurm_imex, off by default); on, the
Prolog wrapper runs the gate and then the IMEX prolog - stopping at the first that refuses the job - and the Epilog
wrapper takes IMEX back before the longer check. Check mode writes nothing and shows each wrapper and slurm.conf line
in its diff; the real run writes what the diff showed."""

import json
import os
import subprocess
import sys
from paths import ROOT


def _play(tmp_path, imex, check):
    sbin = tmp_path / "sbin"
    sbin.mkdir(exist_ok=True)
    conf = tmp_path / "slurm.conf"
    if not conf.exists():
        conf.write_text("ClusterName=lab\nSlurmctldHost=ctl\n")
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [{
        "ansible.builtin.include_role": {"name": "gpufabric.rdma.health_monitor", "tasks_from": "slurm.yml"},
        "vars": {"health_monitor_settings": {"decider": {"url": "http://decider"}}, "health_monitor_sbin_dir": str(sbin),
                 "health_monitor_slurm_conf": str(conf), "health_monitor_slurm_prolog": True,
                 "health_monitor_slurm_imex": imex, "health_monitor_python": "/usr/bin/python3",
                 "health_monitor_lib_dir": "/opt/gpufabric-health-monitor",
                 "health_monitor_config_file": "/etc/gpufabric/health-monitor.json"}}]}]
    (tmp_path / "play.yml").write_text(json.dumps(play))
    bindir = tmp_path / "bin"       # the handler's scontrol reconfigure
    bindir.mkdir(exist_ok=True)
    (bindir / "scontrol").write_text("#!/bin/sh\nexit 0\n")
    (bindir / "scontrol").chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="default")
    argv = ["ansible-playbook", "-i", "localhost,", str(tmp_path / "play.yml"), "--diff",
            "-e", "ansible_python_interpreter=%s" % sys.executable] + (["--check"] if check else [])
    done = subprocess.run(argv, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return done.stdout, sbin, conf


def test_the_imex_hooks_are_opt_in_previewed_in_check_mode_and_written_as_shown(tmp_path):
    out, sbin, conf = _play(tmp_path, True, check=True)
    assert os.listdir(str(sbin)) == [] and "Epilog" not in conf.read_text(), "check mode writes nothing"
    assert "monitor.py --config /etc/gpufabric/health-monitor.json --gate || exit $?" in out
    assert "exec /usr/bin/python3 /opt/gpufabric-health-monitor/monitor.py --config /etc/gpufabric/health-monitor.json " \
           "--imex-prolog" in out
    assert "+Epilog=%s/gpufabric-epilog" % sbin in out
    _play(tmp_path, True, check=False)
    prolog = (sbin / "gpufabric-prolog").read_text().splitlines()
    assert prolog[-2:] == [
        "/usr/bin/python3 /opt/gpufabric-health-monitor/monitor.py --config /etc/gpufabric/health-monitor.json --gate || exit $?",
        "exec /usr/bin/python3 /opt/gpufabric-health-monitor/monitor.py --config /etc/gpufabric/health-monitor.json --imex-prolog"]
    epilog = (sbin / "gpufabric-epilog").read_text().splitlines()
    assert epilog[-1].endswith("--imex-epilog") and not [line for line in epilog if line.endswith("--epilog")]
    assert "Epilog=%s/gpufabric-epilog" % sbin in conf.read_text()


def test_off_by_default_the_prolog_is_the_gate_alone(tmp_path):
    dummy, sbin, conf = _play(tmp_path, False, check=False)
    assert (sbin / "gpufabric-prolog").read_text().splitlines()[-1].endswith("--config /etc/gpufabric/health-monitor.json --gate")
    assert sorted(os.listdir(str(sbin))) == ["gpufabric-prolog"] and "Epilog" not in conf.read_text()
