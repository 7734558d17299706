"""The controller at fleet scale: N systemd containers with sshd, reached over SSH as a site reaches its nodes, and
gpufabric.rdma's discover and site playbooks run on them; the first run, the second runs (nothing to change) and a
drift run are measured.

    python tests/bench/bench_fleet.py [--nodes 8 16 32] [--collections DIR] [--label after] [--json FILE]

For each N a fresh fleet of N containers (no earlier run's record on them), then, each measured:

- ``site first``: site.yml as users run it (validation on), on nodes that never ran it;
- ``discover``: discover.yml again;
- ``site unvalidated``: ``site.yml -e gpufabric_site_validate=false`` again (configuration's steady state);
- ``site``: site.yml as users run it, again, nothing changed (validation on: what it validates and what it
  reports from each node's last validation);
- ``site drift``: ``/etc/nccl.conf`` edited by hand on one node, then site.yml as users run it.

Each prints wall seconds, the controller's CPU seconds (ansible-playbook and every process it waited for: forks,
ssh clients) per node, the nodes' CPU seconds (each container's cpuacct cgroup) per node and the tasks per node
from the recap. The settings are the ones the README's "Running at scale" gives users:
inventories/examples/ansible.cfg (forks 50, pipelining, ControlPersist, fact cache). The nodes take the lab's
settings (inventories/lab/group_vars/gpu_nodes.yml: nccl-tests single and mpirun, perftest per rail) and stand-ins
(playbooks/lab.yml).

The slope of controller CPU against N (least squares over the sizes) is printed per run; the bench fails when a
second run's controller CPU per node at the largest N exceeds the smallest N's by more than 25 % (growth faster
than O(N)), or when the default site.yml second run costs more than 2 s of controller CPU per added node.
--collections runs another checkout's playbooks (e.g. a copy of an earlier commit: the "before" numbers).
--keep leaves the containers; --destroy removes them and exits.
"""

from __future__ import print_function

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
WORK = os.path.join(ROOT, "build", "bench-fleet")
IMAGE = "gpufabric/bookworm-prepared:current"
NETWORK = "gpufabric-fleet"
SUBNET = "172.30.92.0/24"
PREFIX = "gpufabric-fleet-node"
GROWTH_LIMIT = 1.25
# The default site.yml second run (validation on): at most this much controller CPU per added node (issue 58).
SITE_SLOPE_LIMIT = 2.0
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)")


def names(count):
    return ["%s%d" % (PREFIX, i) for i in range(1, count + 1)]


def sh(argv, **kwargs):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=kwargs.pop("timeout", 1800), check=False, **kwargs)
    if proc.returncode:
        raise SystemExit("%s failed (rc %d):\n%s" % (" ".join(argv), proc.returncode, proc.stdout[-3000:]))
    return proc.stdout


def write_inventory(path, hosts, host_vars, group_vars):
    lines = ["---", "all:", "  children:", "    gpu_nodes:", "      hosts:"]
    for host in hosts:
        lines.append("        %s: %s" % (host, json.dumps(host_vars.get(host, {}))))
    lines.append("  vars: %s" % json.dumps(group_vars))
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def environment(collections, fleet=""):
    """The controller's settings; each fleet (a fresh set of containers) its own fact cache and SSH control
    sockets, so nothing of an earlier fleet's containers is read or reused."""
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": collections,
        "ANSIBLE_CONFIG": os.path.join(ROOT, "inventories", "examples", "ansible.cfg"),
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": os.path.join(WORK, "facts" + fleet),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": os.path.join(WORK, "cp" + fleet),
    })
    return env


INOTIFY = "/proc/sys/fs/inotify/max_user_instances"
# Each systemd container holds a few inotify instances of the one user (root) all containers run as; at the kernel's
# default (128) the 20-somethingth container's systemd cannot start and the container exits with 255, saying nothing.
INOTIFY_PER_CONTAINER = 16


def raise_inotify(count):
    with open(INOTIFY) as handle:
        current = int(handle.read())
    wanted = max(1024, count * INOTIFY_PER_CONTAINER)
    if current < wanted:
        print("raising fs.inotify.max_user_instances from %d to %d for %d systemd containers" % (current, wanted, count))
        with open(INOTIFY, "w") as handle:
            handle.write("%d\n" % wanted)


def create(count):
    """Start the fleet's containers (the lab's play, docker connection), their stand-ins, and sshd with our key."""
    os.makedirs(WORK, exist_ok=True)
    raise_inotify(count)
    key = os.path.join(WORK, "id_ed25519")
    if not os.path.exists(key):
        sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
    hosts = names(count)
    inventory = os.path.join(WORK, "docker.yml")
    write_inventory(inventory, hosts, {}, {
        "ansible_connection": "community.docker.docker", "ansible_python_interpreter": "/usr/bin/python3",
        "lab_image": IMAGE, "lab_network": NETWORK, "lab_subnet": SUBNET})
    env = environment(os.path.join(ROOT, "build", "collections"))
    env["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")
    # Many containers booting at once on a small machine: systemd may still be starting when the play asks; once more.
    lab = ["ansible-playbook", "-i", inventory, os.path.join(ROOT, "playbooks", "lab.yml"), "-e", "ansible_forks=8"]
    try:
        sh(lab, env=env, timeout=3600)
    except SystemExit:
        sh(lab, env=env, timeout=3600)
    with open(key + ".pub") as handle:
        public = handle.read().strip()
    script = ("set -e; mkdir -p -m 700 /root/.ssh; grep -qxF '%s' /root/.ssh/authorized_keys 2>/dev/null || "
              "echo '%s' >>/root/.ssh/authorized_keys; chmod 600 /root/.ssh/authorized_keys; "
              "systemctl enable --now ssh >/dev/null 2>&1" % (public, public))
    addresses = {}
    for host in hosts:
        sh(["docker", "exec", host, "sh", "-c", script])
        addresses[host] = sh(["docker", "inspect", "-f",
                              "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", host]).strip()
    return addresses


def ssh_inventory(hosts, addresses):
    path = os.path.join(WORK, "fleet-%d" % len(hosts))
    os.makedirs(os.path.join(path, "group_vars"), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "inventories", "lab", "group_vars", "gpu_nodes.yml"),
                os.path.join(path, "group_vars", "gpu_nodes.yml"))
    write_inventory(os.path.join(path, "hosts.yml"), hosts, dict((h, {"ansible_host": addresses[h]}) for h in hosts), {
        "gpufabric_report_root": os.path.join(path, "reports"),
        "ansible_user": "root", "ansible_python_interpreter": "/usr/bin/python3",
        "ansible_ssh_private_key_file": os.path.join(WORK, "id_ed25519"),
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"})
    return os.path.join(path, "hosts.yml")


def node_cpu(hosts):
    """CPU seconds the containers have used (their cpuacct cgroups, cgroup v1 or v2)."""
    total = 0.0
    for host in hosts:
        cid = sh(["docker", "inspect", "-f", "{{.Id}}", host]).strip()
        v1 = "/sys/fs/cgroup/cpuacct/docker/%s/cpuacct.usage" % cid
        v2 = "/sys/fs/cgroup/system.slice/docker-%s.scope/cpu.stat" % cid
        if os.path.exists(v1):
            with open(v1) as handle:
                total += int(handle.read()) / 1e9
        elif os.path.exists(v2):
            with open(v2) as handle:
                total += int(re.search(r"usage_usec (\d+)", handle.read()).group(1)) / 1e6
        else:
            raise SystemExit("no cpuacct cgroup for container %s" % host)
    return total


def playbook(collections, inventory, name, hosts, extra, log):
    argv = ["ansible-playbook", "-i", inventory, "gpufabric.rdma.%s" % name] + extra
    before, cpu_before, wall = resource.getrusage(resource.RUSAGE_CHILDREN), node_cpu(hosts), time.time()
    proc = subprocess.run(argv, env=environment(collections, "-%d" % len(hosts)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=7200, check=False)
    wall = time.time() - wall
    after, cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN), node_cpu(hosts)
    with open(log, "w") as handle:
        handle.write("$ %s\n%s" % (" ".join(argv), proc.stdout))
    recap = dict((m.group(1), [int(g) for g in m.groups()[1:]]) for m in map(RECAP.match, proc.stdout.splitlines()) if m)
    bad = [h for h in hosts if h not in recap or recap[h][2] or recap[h][3]]
    if proc.returncode or bad:
        raise SystemExit("%s failed (rc %d; hosts %s): see %s" % (name, proc.returncode, ", ".join(bad) or "-", log))
    n = len(hosts)
    controller = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"playbook": name, "nodes": n, "wall_s": round(wall, 1), "controller_cpu_s": round(controller, 1),
            "controller_cpu_per_node_s": round(controller / n, 2), "node_cpu_per_node_s": round((cpu_after - cpu_before) / n, 2),
            "tasks_per_node": round(sum(recap[h][0] + recap[h][4] for h in hosts) / float(n), 1),
            "changed": sum(recap[h][1] for h in hosts)}


def slope(rows):
    xs, ys = [r["nodes"] for r in rows], [r["controller_cpu_s"] for r in rows]
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / float(len(xs)), sum(ys) / float(len(ys))
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def destroy():
    for host in sh(["docker", "ps", "-a", "--format", "{{.Names}}"]).split():
        if host.startswith(PREFIX):
            sh(["docker", "rm", "-f", host])
    subprocess.run(["docker", "network", "rm", NETWORK], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


# The runs measured on each fresh fleet, in order: (name in the table, playbook, extra arguments); None where the
# run is set up by hand first (the drift run: /etc/nccl.conf edited on one node).
UNVALIDATED = ["-e", "gpufabric_site_validate=false"]
RUNS = (("site first", "site", []), ("discover", "discover", []), ("site unvalidated", "site", UNVALIDATED),
        ("site", "site", []), ("site drift", "site", []))
# What a person edits by hand on one node for the drift run: the nccl_env phase's file.
DRIFT = "echo 'NCCL_DEBUG=WARN  # edited by hand' >> /etc/nccl.conf"


def measure(args, n, rows):
    destroy()
    addresses = create(n)
    hosts = names(n)
    inventory = ssh_inventory(hosts, addresses)
    logs = os.path.join(WORK, "logs%s" % ("-" + args.label if args.label else ""))
    os.makedirs(logs, exist_ok=True)
    for run, name, extra in RUNS:
        if run == "site drift":
            sh(["docker", "exec", hosts[0], "sh", "-c", DRIFT])
        row = playbook(args.collections, inventory, name, hosts, extra,
                       os.path.join(logs, "%s-%d.log" % (run.replace(" ", "-"), n)))
        row.update(run=run, label=args.label)
        rows.append(row)
        if args.json:   # after every run: a bench stopped part way keeps what it measured
            with open(args.json, "w") as handle:
                json.dump(rows, handle, indent=1)
        print("%-16s N=%-3d wall %6.1f s  controller %6.1f s (%5.2f s/node)  nodes %5.2f s/node  %5.1f tasks/node  "
              "changed %d" % (run, n, row["wall_s"], row["controller_cpu_s"], row["controller_cpu_per_node_s"],
                              row["node_cpu_per_node_s"], row["tasks_per_node"], row["changed"]), flush=True)


def judge(rows):
    """Print each run's fitted slope; True when a second run grows faster than O(N) or the default second site run
    costs more than SITE_SLOPE_LIMIT per added node."""
    failed = False
    for run, _name, _extra in RUNS:
        mine = [r for r in rows if r["run"] == run]
        fitted = slope(mine)
        if fitted is None:
            continue
        growth = mine[-1]["controller_cpu_per_node_s"] / max(mine[0]["controller_cpu_per_node_s"], 0.01)
        print("%-16s controller CPU slope %.2f s per added node; per node at N=%d is %.2fx N=%d's"
              % (run, fitted, mine[-1]["nodes"], growth, mine[0]["nodes"]))
        if run in ("discover", "site unvalidated", "site") and growth > GROWTH_LIMIT:
            print("FAILED: %s: controller CPU per node grows with the fleet (more than %d %%)" % (run, (GROWTH_LIMIT - 1) * 100))
            failed = True
        if run == "site" and fitted > SITE_SLOPE_LIMIT:
            print("FAILED: a default site.yml second run costs %.2f s of controller CPU per added node (at most %.1f)"
                  % (fitted, SITE_SLOPE_LIMIT))
            failed = True
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--collections", default=os.path.join(ROOT, "build", "collections"))
    parser.add_argument("--label", default="")
    parser.add_argument("--json")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--destroy", action="store_true")
    args = parser.parse_args()
    if args.destroy:
        destroy()
        return 0
    sizes = sorted(set(args.nodes))
    if sizes[0] < 2:
        raise SystemExit("--nodes: each size must be 2 or more, got %d" % sizes[0])
    rows = []
    for n in sizes:
        measure(args, n, rows)
    failed = judge(rows)
    if not args.keep:
        destroy()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
