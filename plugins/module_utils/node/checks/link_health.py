# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""link_health: each HCA port's physical layer (`mlxlink -d <dev> -p <port> -c`, parse/mlxlink.py,
judge/link_health.py). A port mlxlink could not read, or whose BER it could not give, makes the report incomplete
(link_unread), never a healthy port; so does a node with no NVIDIA HCA to read or no mlxlink (not run). The
link_health module (discovery) reads the ports the same way (read_links)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import link_health
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks.check import Check, Option, refused_by
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import mlxlink

LINK_FIELDS = ("state", "physical_state", "speed", "width", "fec", "recommendation", "effective_ber", "raw_ber",
               "effective_errors", "link_down_counter", "raw_errors_per_lane")
_OPTION = refused_by(link_health.check_options, link_health.LinkHealthError)


def _port(runner, tool, name, port):
    """(mlxlink's reading of one port or None, why it could not be read or None)."""
    result = runner.run([tool, "-d", name, "-p", str(port), "-c"])
    if not result.ok:
        return None, result.describe()
    try:
        parsed = mlxlink.parse_mlxlink(result.stdout)["devices"]
    except mlxlink.MlxlinkError as exc:
        return None, str(exc)
    return (parsed[0], None) if parsed else (None, "no device in its output")


def read_ports(wanted, runner, devices):
    """Each port of wanted (link_health.check_options' result) read with runner (which, run) -> {read, problems:
    [(device/port, why)], not_run, unread: [(source, why)], links}; devices: the node's RDMA devices (sysfs)."""
    names = wanted["devices"] or [d["name"] for d in devices if d.get("name", "").startswith(("mlx4_", "mlx5_"))]
    tool = runner.which(wanted["tool"])
    not_run = None if names else "no NVIDIA HCA (an mlx4_ or mlx5_ RDMA device) on this node: no link was read"
    unread = [("mlxlink", not_run)] if not_run else []
    if names and not tool:
        not_run = "%s is not installed: no link was read" % wanted["tool"]
    read, problems = [], []
    for name in names:
        label = "%s/%d" % (name, wanted["port"])
        parsed, problem = _port(runner, tool, name, wanted["port"]) if tool else (None, "%s is not installed" % wanted["tool"])
        if parsed is not None:
            parsed["device"] = label
            read.append(parsed)
        if problem:
            problems.append((label, problem))
    unread += [("mlxlink %s" % label, problem) for label, problem in problems]
    unread += [("mlxlink %s" % dev["device"], f["detail"]) for dev in read for f in link_health.ber_unread(dev["device"], dev, True)]
    return {"read": read, "problems": problems, "not_run": not_run, "unread": unread,
            "links": [dict((k, d.get(k)) for k in ("device",) + LINK_FIELDS) for d in read]}


def judge_ports(host, wanted, readings):
    return link_health.unread_findings(host, readings["not_run"], readings["problems"]) + link_health.mlxlink_findings(
        host, readings["read"], wanted["max_effective_ber"], wanted["max_raw_ber"], ber_expected=True)


def read_links(host, option, runner, devices, unreadable):
    """The link_health module's read: {findings, links, not_run}, what could not be read appended to unreadable."""
    wanted = link_health.check_options(option)
    readings = read_ports(wanted, runner, devices)
    unreadable += ["%s: %s" % item for item in readings["unread"]]
    return {"findings": judge_ports(host, wanted, readings), "links": readings["links"], "not_run": readings["not_run"]}


def read(node):
    return read_ports(link_health.check_options(node.opts["link_health"]), node, node.rdma_devices())


def judge(node, readings):
    return judge_ports(node.host, link_health.check_options(node.opts["link_health"]), readings)


CHECK = Check(
    "link_health", "each HCA port's physical layer: state, speed, FEC, BER, the transceiver's recommendation",
    reads=("mlxlink -d <device> -p 1 -c per mlx4/mlx5 device (command_timeout each)",), read=read, judge=judge,
    options=(Option("link_health", "raw", rules=(lambda name, value: value is False or _OPTION(name, value),), description=[
        "Read each HCA port's physical layer with C(mlxlink -d <device> -p <port> -c) (timed) - V(true), or a mapping of "
        "C(tool) (mlxlink or its path), C(devices) (default every mlx4/mlx5 device sysfs shows), C(port) (1), "
        "C(max_effective_ber) (1e-12) and C(max_raw_ber) (1e-5).",
        "Findings C(link_state), C(link_recommendation), C(link_speed), C(link_fec), C(link_ber) name the host, device "
        "and port; a port mlxlink cannot read is C(link_unread) and makes the report incomplete. The readings are in "
        "C(observed.links) and, from the health monitor, metrics C(gpufabric_link_effective_ber), "
        "C(gpufabric_link_raw_ber), C(gpufabric_link_down_events_total) with C(device) and C(port) labels."]),),
    findings=("link_state", "link_recommendation", "link_speed", "link_pcie", "link_fec", "link_ber", "link_unread"),
    observed=("links",),
    metrics={"gpufabric_link_effective_ber": ("device", "port"), "gpufabric_link_raw_ber": ("device", "port"),
             "gpufabric_link_down_events_total": ("device", "port"), "gpufabric_link_effective_errors_total": ("device", "port")},
    asked=lambda node: bool(node.opts["link_health"]))
