"""The decider's world for its tests: nodes (kernel logs and state dirs), the stand-in slurmctld
(tests/stubs/fake_slurmctld.py: sinfo, sdiag and scontrol over a nodes file), the remediator service
(roles/remediator/files) over HTTP, the nodes' health monitor, and the real webhook receiver."""

import importlib.util
import json
import os
import threading
import time

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import decider_settings, monitor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STUBS = os.path.join(ROOT, "tests", "stubs")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


service = _load("gpufabric_remediator", os.path.join(ROOT, "roles", "remediator", "files", "gpufabric_remediator.py"))
node_monitor = _load("gpufabric_health_monitor",
                     os.path.join(ROOT, "roles", "health_monitor", "files", "gpufabric_health_monitor.py"))
receiver_module = _load("receiver", os.path.join(ROOT, "tests", "lab", "webhook-receiver", "receiver.py"))

SECRET = "report-secret-0123456789abcdef"
XID_79 = ("2026-11-23T18:00:00+00:00 {node} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
          "GPU has fallen off the bus.\n")


def lose(path, loss):
    """A state file lost: deleted, truncated mid-write, or replaced by another program's file."""
    if loss == "deleted":
        os.unlink(path)
    else:
        with open(path, "w") as handle:
            handle.write('{"ledger": {"version": 1, "no' if loss == "truncated" else '{"hello": "another program"}')


def kill_in_apply(monkeypatch, scheduler, after):
    """The decider dies in ``scheduler.apply`` (decider.Slurm or decider.Kubernetes): ``after`` the scheduler took the
    command (it never hears the answer), else before the command ran (what a SIGKILL leaves: the intent saved).
    Returns the real apply, to put back."""
    real_apply = scheduler.apply

    def killed(self, decision, record, now):
        if after:
            real_apply(self, decision, record, now)
        raise SystemExit("killed")
    monkeypatch.setattr(scheduler, "apply", killed)
    return real_apply


class Cluster(object):
    """Nodes (kernel logs and state dirs), the stand-in slurmctld, the decider service, and the receiver."""

    def __init__(self, tmp_path, names, settings, webhooks=True, clock=None):
        self.tmp = tmp_path
        self.names = names
        bindir = tmp_path / "bin"
        bindir.mkdir()
        for tool in ("sinfo", "sdiag", "scontrol"):
            os.symlink(os.path.join(STUBS, "fake_slurmctld.py"), str(bindir / tool))
        self.nodes_file = tmp_path / "slurm-nodes.json"
        self.nodes_file.write_text(json.dumps(dict((n, {"partitions": ["gpu"], "state": "IDLE", "reason": None,
                                                        "reason_time": None}) for n in names)))
        self.stub_log = tmp_path / "stub.jsonl"
        os.environ.update(STUB_SLURM_NODES=str(self.nodes_file), STUB_LOG=str(self.stub_log))
        self.received = tmp_path / "received.jsonl"
        self.receiver = receiver_module.serve({"bind": "127.0.0.1", "port": 0, "log": str(self.received)})
        threading.Thread(target=self.receiver.serve_forever, daemon=True).start()
        self.base = "http://127.0.0.1:%d" % self.receiver.server_address[1]
        hooks = [{"name": "events", "type": "generic", "url": self.base + "/generic/events"}] if webhooks else []
        remediation = {"mode": "enforce", "policy": [{"severity": "critical", "action": "drain"}],
                       "rate_limit": {"max_nodes": 1, "max_percent": 100, "interval": 3600},
                       # The certificate a resume needs is test_certificate's subject; here the passive check resumes.
                       "certification": {"required": False},
                       "circuit_breaker": {"max_percent": 100}, "slurm": {"enabled": True, "sinfo": str(bindir / "sinfo"),
                                                                          "sdiag": str(bindir / "sdiag"),
                                                                          "scontrol": str(bindir / "scontrol")}}
        remediation.update(settings)
        state_dir = tmp_path / "decider"
        state_dir.mkdir()
        self.config = decider_settings.check_config({
            "cluster": "lab", "name": "decider@ctl", "listen": "127.0.0.1", "port": 0, "secret": SECRET,
            "state_dir": str(state_dir), "remediation": remediation, "webhooks": hooks, "deliver_interval": 0.2,
            "batch_window": 0.2, "command_timeout": 3, "answer_within": 20, "timeout": 3, "deliver_deadline": 5})
        self.lines = []
        self.server, self.stop, ignored = service.serve(self.config, log=self.lines.append, clock=clock or time.time)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        empty_sys = tmp_path / "nosys"
        empty_sys.mkdir()
        for name in names:
            (tmp_path / name).mkdir()
            (tmp_path / name / "kern.log").write_text("")

    def node_config(self, name, **extra):
        config = {"cluster": "lab", "host": name, "state_dir": str(self.tmp / name / "state"),
                  "checks": {"kernel_log": str(self.tmp / name / "kern.log"), "sysfs_root": str(self.tmp / "nosys"),
                             "procfs_root": str(self.tmp / "nosys"), "command_timeout": 5},
                  "webhooks": [], "decider": {"url": self.url, "secret": SECRET, "timeout": 25}}
        config.update(extra)
        os.makedirs(config["state_dir"], exist_ok=True)
        return monitor.check_config(config)

    def fault(self, name, present=True):
        (self.tmp / name / "kern.log").write_text(XID_79.format(node=name) if present else "")

    def run(self, name, mode="healthcheck", **kw):
        lines = []
        node_monitor.run_once(self.node_config(name), log=lines.append, mode=mode, **kw)
        return lines

    def all_at_once(self, names, mode="healthcheck", **kw):
        out = {}
        threads = [threading.Thread(target=lambda n=n: out.__setitem__(n, self.run(n, mode, **kw))) for n in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        return out

    def slurm(self):
        return json.loads(self.nodes_file.read_text())

    def drained(self):
        return sorted(n for n, node in self.slurm().items() if "DRAIN" in node["state"])

    def updates(self):
        if not self.stub_log.exists():
            return []
        calls = [json.loads(line) for line in self.stub_log.read_text().splitlines()]
        return [c for c in calls if c["tool"] == "scontrol" and c["argv"][:1] == ["update"]]

    def messages(self, count=1, wait=5.0):
        """What the receiver got, once it holds at least ``count`` messages (or ``wait`` passed)."""
        deadline = time.time() + wait
        while True:
            got = [json.loads(l)["json"] for l in self.received.read_text().splitlines()] if self.received.exists() else []
            if len(got) >= count or time.time() > deadline:
                return got
            time.sleep(0.1)

    def restart(self):
        """The decider starts again with the same state directory (after close, or after it died)."""
        self.server, self.stop, ignored = service.serve(self.config, log=self.lines.append)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        os.environ.update(STUB_SLURM_NODES=str(self.nodes_file), STUB_LOG=str(self.stub_log))
        port = self.receiver.server_address[1]   # the webhook's URL stays what the decider was configured with
        self.receiver = receiver_module.serve({"bind": "127.0.0.1", "port": port, "log": str(self.received)})
        threading.Thread(target=self.receiver.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.receiver.shutdown()
        self.receiver.server_close()
        for key in ("STUB_SLURM_NODES", "STUB_LOG", "STUB_SLURM_LATENCY", "STUB_SINFO_MODE", "STUB_SDIAG_MODE",
                    "STUB_SCONTROL_MODE", "STUB_SLURM_CLOCK", "STUB_SCONTROL_UPDATE_FAIL"):
            os.environ.pop(key, None)


@pytest.fixture
def cluster(tmp_path):
    made = []

    def make(names=("n01", "n02", "n03", "n04"), **settings):
        made.append(Cluster(tmp_path, list(names), settings, webhooks=settings.pop("webhooks", True)
                            if "webhooks" in settings else True))
        return made[-1]
    yield make
    for c in made:
        c.close()
