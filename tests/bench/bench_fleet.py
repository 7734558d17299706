"""The controller at fleet scale: N systemd containers with sshd, reached over SSH as a site reaches its nodes, and
gpufabric.rdma's discover and site playbooks run on them twice; the second run (nothing to change) is measured.

    python tests/bench/bench_fleet.py [--nodes 8 16 32] [--collections DIR] [--label after] [--json FILE]

For each N (the first N containers of one fleet of max(N)): a first site run brings the new nodes up (not
measured), then discover.yml and site.yml run again and each prints wall seconds, the controller's CPU seconds
(ansible-playbook and every process it waited for: forks, ssh clients) per node, the nodes' CPU seconds (each
container's cpuacct cgroup) per node and the tasks per node from the recap. The settings are the ones the README's
"Running at scale" gives users: inventories/examples/ansible.cfg (forks 50, pipelining, ControlPersist, fact cache).
site.yml runs without validation (-e gpufabric_site_validate=false): nccl-tests and perftest measure on every run;
the steady state is what configuration costs when nothing changed. The nodes take the lab's settings
(inventories/lab/group_vars/gpu_nodes.yml) and stand-ins (playbooks/lab.yml).

The slope of controller CPU against N (least squares over the sizes) is printed per playbook; the run fails when
controller CPU per node at the largest N exceeds the smallest N's by more than 25 % (growth faster than O(N)).
--collections runs another checkout's playbooks (e.g. a worktree of an earlier commit: the "before" numbers).
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


def environment(collections):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": collections,
        "ANSIBLE_CONFIG": os.path.join(ROOT, "inventories", "examples", "ansible.cfg"),
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": os.path.join(WORK, "facts"),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": os.path.join(WORK, "cp"),
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
    proc = subprocess.run(argv, env=environment(collections), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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
    addresses = create(sizes[-1])
    rows = []
    site = ["-e", "gpufabric_site_validate=false"]
    for n in sizes:
        hosts = names(n)
        inventory = ssh_inventory(hosts, addresses)
        logs = os.path.join(WORK, "logs%s" % ("-" + args.label if args.label else ""))
        os.makedirs(logs, exist_ok=True)
        playbook(args.collections, inventory, "site", hosts, site, os.path.join(logs, "converge-%d.log" % n))
        for name, extra in (("discover", []), ("site", site)):
            row = playbook(args.collections, inventory, name, hosts, extra, os.path.join(logs, "%s-%d.log" % (name, n)))
            row["label"] = args.label
            rows.append(row)
            print("%-8s N=%-3d wall %6.1f s  controller %6.1f s (%5.2f s/node)  nodes %5.2f s/node  %5.1f tasks/node  "
                  "changed %d" % (name, n, row["wall_s"], row["controller_cpu_s"], row["controller_cpu_per_node_s"],
                                  row["node_cpu_per_node_s"], row["tasks_per_node"], row["changed"]), flush=True)
    failed = False
    for name in ("discover", "site"):
        mine = [r for r in rows if r["playbook"] == name]
        fitted = slope(mine)
        if fitted is not None:
            growth = mine[-1]["controller_cpu_per_node_s"] / max(mine[0]["controller_cpu_per_node_s"], 0.01)
            print("%-8s controller CPU slope %.2f s per added node; per node at N=%d is %.2fx N=%d's"
                  % (name, fitted, mine[-1]["nodes"], growth, mine[0]["nodes"]))
            failed = failed or growth > GROWTH_LIMIT
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    if not args.keep:
        destroy()
    if failed:
        print("FAILED: controller CPU per node grows with the fleet (more than %d %%)" % ((GROWTH_LIMIT - 1) * 100))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
