# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""IMEX on this node: `nvidia-imex-ctl -N -j` run and read (the imex health check and the Slurm IMEX prolog), and the
prolog's and epilog's work - nodes_config.cfg written from the job's nodes (the site's own file kept aside and put
back), the daemon restarted and waited for, the channel device looked for. Every command runs under a
commands.Runner (killed with its children at its limit); the waiting is bounded. Host access, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import time

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import statefile
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import nvidia_imex
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import imex_domain

SOURCE = "nvidia-imex-ctl -N -j"


def read_ctl(run, ctl):
    """(parse_nvidia_imex_ctl's result, None), or (None, why it could not be read): hung, failed, or printed no IMEX
    node table (foreign output)."""
    result = run([ctl, "-N", "-j"])
    if not result.ok:
        return None, result.describe()
    try:
        return nvidia_imex.parse_nvidia_imex_ctl(result.stdout), None
    except ValueError as exc:   # ToolTextError, TextError
        return None, "%s printed no IMEX node table: %s" % (SOURCE, str(exc)[:200])


def find_ctl(which, path):
    """The nvidia-imex-ctl to run (``path``, else the one on PATH), or None when there is none."""
    ctl = path or which("nvidia-imex-ctl")
    return ctl if ctl and os.path.exists(ctl) else None


def _read(path):
    try:
        with open(path) as handle:
            return handle.read(1024 * 1024)
    except (IOError, OSError, UnicodeDecodeError):
        return None


def saved_path(config_file):
    """Where the prolog keeps the site's own nodes_config.cfg while a job holds the domain."""
    return config_file + ".gpufabric-site"


def write_config(config_file, text):
    """Write the job's nodes_config.cfg; the site's own file (one the prolog did not write) is kept aside first, once."""
    current = _read(config_file)
    if current is not None and not imex_domain.ours(current) and not os.path.exists(saved_path(config_file)):
        os.rename(config_file, saved_path(config_file))
    statefile.save_bytes(config_file, text.encode("utf-8"), mode=0o644)


def restore_config(config_file):
    """The epilog: take back only the file the prolog wrote - the site's own put back, else ours removed. Returns what
    was done, in words."""
    if not imex_domain.ours(_read(config_file)):
        return "%s is not the prolog's: left as it is" % config_file
    if os.path.exists(saved_path(config_file)):
        os.rename(saved_path(config_file), config_file)
        return "the site's %s put back" % config_file
    os.unlink(config_file)
    return "the prolog's %s removed" % config_file


def job_addresses(nodes, addresses, resolve=socket.gethostbyname):
    """Each of the job's nodes' IMEX address: the settings' ``addresses`` where it names the node, else its name
    resolved; ImexPrologError naming a node that cannot be resolved."""
    found = []
    for node in nodes:
        if node in addresses:
            found.append(addresses[node])
            continue
        try:
            found.append(resolve(node))
        except (OSError, UnicodeError) as exc:
            raise imex_domain.ImexPrologError("node %s of the job has no IMEX address: %s is not in imex addresses and "
                                              "does not resolve (%s)" % (node, node, exc))
    return found


def wait_ready(run, ctl, addresses, wait, poll, clock=time.time, sleep=time.sleep):
    """Ask the daemon every ``poll`` seconds until the job's domain is ready or ``wait`` seconds pass:
    (ready, findings, parsed or None, why the last answer could not be read or None)."""
    deadline = clock() + wait
    while True:
        parsed, why = read_ctl(run, ctl)
        ready, found = imex_domain.verdict(parsed, addresses) if parsed else (False, [])
        if ready or clock() + poll > deadline:
            return ready, found, parsed, why
        sleep(poll)


def _systemctl(runner):
    return runner.which("systemctl") or "systemctl"


def prolog(settings, job, nodes, runner, resolve=socket.gethostbyname, clock=time.time, sleep=time.sleep, exists=os.path.exists):
    """The IMEX prolog's work: {ok, why, findings, matrix}. Writes nodes_config.cfg, restarts the daemon, waits
    (bounded) for every node READY and connected and the domain UP, and looks for the channel device."""
    addresses = job_addresses(nodes, settings["addresses"], resolve)
    text = imex_domain.nodes_config_text(addresses, job)
    write_config(settings["config_file"], text)
    restarted = runner.run([_systemctl(runner), "restart", settings["service"]])
    if not restarted.ok:
        return {"ok": False, "why": "systemctl restart %s: %s" % (settings["service"], restarted.describe()),
                "findings": [], "matrix": None}
    ctl = find_ctl(runner.which, settings["ctl"])
    if not ctl:
        return {"ok": False, "why": "nvidia-imex-ctl is not installed: the domain cannot be checked", "findings": [],
                "matrix": None}
    ready, found, parsed, why = wait_ready(runner.run, ctl, addresses, settings["wait"], settings["poll"], clock, sleep)
    shown = imex_domain.matrix(parsed) if parsed else None
    if not ready:
        return {"ok": False, "findings": found, "matrix": shown,
                "why": "the IMEX domain of %d node(s) was not UP with every node READY and connected within %d s%s" % (
                    len(addresses), settings["wait"], ": %s" % why if why else "")}
    if not exists(settings["channel"]):
        return {"ok": False, "findings": [], "matrix": shown,
                "why": "the IMEX domain is UP but %s does not exist (nvidia-modprobe -i 0:1, or NVreg_CreateImexChannel0=1)"
                       % settings["channel"]}
    return {"ok": True, "why": None, "findings": found, "matrix": shown}


def epilog(settings, runner):
    """The IMEX epilog's work: the daemon stopped and nodes_config.cfg taken back; [what was done, in words]."""
    stopped = runner.run([_systemctl(runner), "stop", settings["service"]])
    done = ["systemctl stop %s: %s" % (settings["service"], "done" if stopped.ok else stopped.describe())]
    try:
        done.append(restore_config(settings["config_file"]))
    except OSError as exc:
        done.append("%s could not be taken back: %s" % (settings["config_file"], exc.strerror))
    return done
