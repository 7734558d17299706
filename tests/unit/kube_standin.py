"""The stand-in Kubernetes API server (tests/lab/kube-api-standin/server.py) for the playbook tests whose decider acts
on Kubernetes (remediate.yml, slow.yml): started on an ephemeral port with the Nodes given, a kubeconfig that points
kubectl (tests/stubs/fake_kubectl.py) at it, a playbook run against an inventory and variables in the test's folder,
and what the server saw - the PATCH requests it logged, the Nodes as stored."""

import json
import os
import subprocess
import sys
import time
from paths import ROOT

SERVER = os.path.join(ROOT, "tests", "lab", "kube-api-standin", "server.py")
FAKE_KUBECTL = os.path.join(ROOT, "tests", "stubs", "fake_kubectl.py")


def start(path, nodes):
    """The server over ``nodes`` (a list of Node objects), its requests logged in path/requests.jsonl; writes
    path/kubeconfig. Returns the process (terminate and wait for it when done)."""
    (path / "nodes.json").write_text(json.dumps(nodes))
    portfile = path / "port"
    server = subprocess.Popen([sys.executable, SERVER, str(path / "nodes.json"), str(path / "requests.jsonl"),
                               str(portfile)])
    for attempt in range(100):
        if portfile.exists() and portfile.read_text():
            break
        time.sleep(0.05)
    (path / "kubeconfig").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": "http://127.0.0.1:%s" % portfile.read_text()}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    return server


def kubernetes_settings(path):
    """The decider's kubernetes settings that reach this server."""
    return {"enabled": True, "kubectl": FAKE_KUBECTL, "kubeconfig": str(path / "kubeconfig")}


def decider_vars(path, policy, **more):
    """The variables of a decider on host n1 that acts on this server: enforce mode, ``policy``, limits that let one
    node drain; ``more`` on top."""
    return dict({"remediate_decider_host": "n1", "remediator_state_dir": str(path / "decider"),
                 "remediator_settings": {"mode": "enforce", "policy": policy,
                                         "rate_limit": {"max_nodes": 1, "max_percent": 100},
                                         "circuit_breaker": {"max_percent": 100},
                                         "kubernetes": kubernetes_settings(path)}}, **more)


def run_playbook(path, playbook, *extra):
    """ansible-playbook ``playbook`` with path/inventory.yml, path/vars.yml and reports under path/report, no become;
    its output, asserting it passed."""
    env = dict(os.environ, ANSIBLE_BECOME="false", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(["ansible-playbook", "-i", str(path / "inventory.yml"), "-e", "@" + str(path / "vars.yml"),
                           "-e", "ansible_become=false", "-e", "gpufabric_report_root=%s" % (path / "report"),
                           playbook] + list(extra),
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout


def patches(path):
    """The PATCH requests the server logged, in order."""
    log = path / "requests.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [entry for entry in lines if entry["method"] == "PATCH"]


def nodes(path):
    """The Nodes as the server stores them now, by name."""
    return dict((n["metadata"]["name"], n) for n in json.loads((path / "nodes.json").read_text()))
