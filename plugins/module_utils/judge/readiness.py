# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Readiness report: what each node has, what NCCL should use, and the problems found.

Input is a mapping of host name to node record (report.node_record with rdma_devices, gpu and
nccl filled in). Every problem is a finding with the same keys everywhere in the collection:
check, severity (critical, warning, info), target, detail, fix_hint.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import (
    gpudirect, health, known_good_floors, nccl_path, nic_firmware, nvlink_fabric, pcie_path, rack_domains, versions)
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink, rails
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import counts as count_findings, finding, rank
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.report import render_table


def fabric_interfaces(record):
    """Interfaces that carry fabric traffic: RDMA ports' netdevs, else the default-route interface."""
    names = []
    for device in record.get("rdma_devices") or []:
        for port in device.get("ports") or []:
            if port.get("netdev") and port["netdev"] not in names:
                names.append(port["netdev"])
    if not names and record.get("default_interface"):
        names.append(record["default_interface"])
    by_name = dict((i.get("name"), i) for i in record.get("interfaces") or [])
    return [by_name[n] for n in names if n in by_name]


def _driverless_gpus(host, gpu):
    """GPUs on the PCI bus that no driver answers for (gpu_facts' not_answering): critical, naming each and its driver."""
    missing = gpu.get("not_answering") or []
    if not missing:
        return []
    listed = ", ".join("%s (driver %s)" % (g.get("address"), g.get("driver") or "none") for g in missing)
    if gpu.get("present"):
        detail = "%d NVIDIA GPU(s) on the PCI bus that nvidia-smi does not list (it lists %d): %s" % (
            len(missing), gpu.get("count") or 0, listed)
    else:
        detail = "%d NVIDIA GPU(s) on the PCI bus but no NVIDIA driver answers (%s): %s" % (
            len(missing), gpu.get("error") or "nvidia-smi not found", listed)
    return [finding("gpu_driver", "critical", host, detail,
                    "install or load the NVIDIA driver (`modprobe nvidia`; `dmesg | grep -i NVRM` says why it did not "
                    "load); a GPU held by nouveau or vfio-pci needs that driver unbound")]


def nvidia_smi_problem(gpu):
    """(how, detail) when nvidia-smi gave discovery no answer (gpu_facts' nvidia_smi_problem), else None. A record made
    before gpu_facts said how: failed where it kept nvidia-smi's error, else missing."""
    if gpu.get("present"):
        return None
    problem = gpu.get("nvidia_smi_problem")
    if isinstance(problem, dict) and problem.get("how") in health.NVIDIA_SMI_FIXES:
        return problem["how"], str(problem.get("detail") or "nvidia-smi gave no answer")
    return ("failed", str(gpu["error"])) if gpu.get("error") else ("missing", "nvidia-smi not found")


def _gpu_findings(host, gpu, expected_gpu_count):
    """The GPUs: fewer than expected (gpu_count) where nvidia-smi answered; where it did not, the health check's own rule
    (judge/health.nvidia_smi_findings: hung or failed, or missing where GPUs are expected - the count, or NVIDIA GPUs
    on the PCI bus); GPUs on the bus no driver answers for, each named with its driver (gpu_driver)."""
    found = []
    problem = nvidia_smi_problem(gpu)
    driverless = _driverless_gpus(host, gpu)
    if problem is not None:
        # GPUs on the bus that gpu_driver names already say a missing nvidia-smi matters: not said twice
        found += health.nvidia_smi_findings(host, problem, expected_gpu_count,
                                            [] if driverless else gpu.get("pci_gpus") or [])[0]
    elif expected_gpu_count is not None and (gpu.get("count") or 0) < expected_gpu_count:
        found.append(finding("gpu_count", "critical", host,
                             "%d of %d expected GPUs found" % (gpu.get("count") or 0, expected_gpu_count),
                             "check `nvidia-smi -L` and `dmesg | grep -i xid` for a GPU that fell off the bus; "
                             "reseat or replace it, or correct expected_gpu_count"))
    return found + driverless


def gpudirect_of(record):
    """gpudirect.path of a discovery record, or None for a record made before discovery read the GPUDirect inputs."""
    gpu = record.get("gpu") or {}
    if not gpu.get("present") or not gpu.get("gpudirect"):
        return None
    return gpudirect.path(dict(gpu["gpudirect"], cuda_version=gpu.get("cuda_version")), record.get("kernel"))


def _fabric_findings(host, gpu, domain_size):
    """The node's NVLink fabric as gpu_facts kept it (each GPU's registration, IDs and Health rows) judged by
    judge/nvlink_fabric: a domain expected where the node's trays belong to one (gpufabric_nvlink_domain_size above 0),
    none where it is 0, else where its GPUs name their rack's chassis (a GB200/GB300 tray). A record made before the
    fabric was kept per GPU gives nothing."""
    fabric = gpu.get("fabric")
    gpus = fabric.get("gpus") if isinstance(fabric, dict) else None
    if not gpu.get("present") or not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        return []
    found = nvlink_fabric.nvlink_fabric_findings(fabric, {"domain": rack_domains.expected_domain(domain_size)})
    return [dict(item, target="%s/%s" % (host, item["target"])) for item in found]


def place_of(record):
    """The node's NVLink domain, chassis and tray as its record keeps them (all None where it keeps none)."""
    try:
        place = nvlink.record_place(((record or {}).get("gpu") or {}).get("fabric"))
    except ValueError:
        place = dict.fromkeys(nvlink.PLACE_KEYS)
    return dict((key, place[key]) for key in ("domain", "chassis_serial", "slot_number", "tray_index"))


def node_findings(host, record, expected_gpu_count=None, nvlink_domain_size=None):
    gpu = record.get("gpu") or {}
    found = _gpu_findings(host, gpu, expected_gpu_count) + _fabric_findings(host, gpu, nvlink_domain_size)
    devices = record.get("rdma_devices") or []
    for device in devices:
        for port in device.get("ports") or []:
            if port.get("state") != "ACTIVE":
                found.append(finding(
                    "rdma_port_state", "warning", "%s/%s port %s" % (host, device.get("name"), port.get("port")),
                    "port is %s (physical state %s)" % (port.get("state"), port.get("phys_state")),
                    "check the cable and switch port (`ibstat`, `ip link show %s`); a Disabled physical state "
                    "is often an administratively down switch port" % (port.get("netdev") or "<netdev>")))
            mtu = port.get("active_mtu")
            if port.get("state") == "ACTIVE" and device.get("transport") == "RoCE" and mtu and mtu < 4096:
                found.append(finding(
                    "rdma_active_mtu", "info", "%s/%s port %s" % (host, device.get("name"), port.get("port")),
                    "RoCE active_mtu is %d bytes" % mtu,
                    "set the netdev MTU to 9000 (gpufabric.rdma.rdma_network) so RoCE can use 4096-byte frames"))
    if devices and not any(p.get("state") == "ACTIVE" for d in devices for p in d.get("ports") or []):
        found.append(finding("rdma_active", "critical", host,
                             "%d RDMA device(s) but no ACTIVE port: NCCL falls back to TCP sockets" % len(devices),
                             "bring at least one fabric port up before running multi-node jobs"))
    active_rdma = any(p.get("state") == "ACTIVE" for d in devices for p in d.get("ports") or [])
    virtual = str(record.get("virtualization") or "").endswith("/guest")
    direct = gpudirect_of(record)
    if direct is not None:   # DMA-BUF or nvidia-peermem, by NCCL's own conditions; the IOMMU mode of the GPUs
        found += gpudirect.findings(host, direct, (gpu.get("gpudirect") or {}).get("iommu"),
                                    bool(gpu.get("present") and active_rdma), virtual)
    if (gpu.get("present") and active_rdma and not (gpu.get("peermem") or {}).get("loaded")
            and (direct is None or direct["path"] == "unknown")):
        found.append(finding("peermem", "warning", host,
                             "GPUs and active RDMA ports but no GPUDirect RDMA module loaded",
                             "load nvidia_peermem (`modprobe nvidia_peermem`, gpufabric.rdma.peermem) so NICs "
                             "read GPU memory directly"))
    pcie = gpu.get("pcie") or {}
    if pcie.get("links") is not None:   # lspci -vvv as discovery read it: ACS on the GPUDirect path, links trained down
        found += pcie_path.findings(host, pcie, virtualized=virtual)
    firmware = record.get("nic_firmware")
    if isinstance(firmware, dict):   # discovery compared the NIC firmware with the site's profiles (or could not)
        found += nic_firmware.findings(host, firmware.get("plans") or [], firmware.get("profiles") or [],
                                       [firmware[k] for k in ("error", "not_run") if firmware.get(k)])
    links = record.get("link_health")
    if isinstance(links, dict):   # discovery read each HCA port with mlxlink (the link_health module's findings)
        found += [dict(item) for item in links.get("findings") or [] if isinstance(item, dict)]
        if links.get("error"):
            found.append(finding("link_unread", "warning", host, "the links' physical layer could not be read: %s"
                                 % links["error"], "fix discovery_link_health (its message says what is wrong)"))
    for warning in (record.get("nccl") or {}).get("warnings") or []:
        found.append(finding("nccl_env", "warning", host, warning, "fix the NCCL overrides or profile"))
    # show_gids against sysfs (discovery ran it where installed): a GID index NCCL_IB_GID_INDEX would take wrong
    for item in (record.get("gid_check") or {}).get("findings") or []:
        found.append(dict(item, target="%s/%s" % (host, item.get("target"))))
    return found


def cluster_findings(records, expected_gpu_count=None):
    found = []
    mtus = {}
    for host in sorted(records):
        for iface in fabric_interfaces(records[host] or {}):
            mtus.setdefault(iface.get("mtu"), []).append("%s:%s" % (host, iface.get("name")))
    if len(mtus) > 1:
        detail = "; ".join("MTU %s on %s" % (mtu, ", ".join(names)) for mtu, names in sorted(mtus.items(), key=str))
        found.append(finding("mtu_consistency", "warning", "cluster", detail,
                             "use one MTU (9000 for RoCE) on every fabric interface (gpufabric.rdma.rdma_network)"))
    counts = dict((host, (records[host] or {}).get("gpu", {}).get("count") or 0) for host in records)
    if expected_gpu_count is None and len(set(counts.values())) > 1:
        found.append(finding("gpu_count_consistency", "warning", "cluster",
                             ", ".join("%s has %d" % (h, c) for h, c in sorted(counts.items())) + " GPUs",
                             "set expected_gpu_count to say which is right; a node with fewer GPUs may have lost one"))
    found += rail_findings(records)
    profiles = dict((host, ((records[host] or {}).get("nccl") or {}).get("profile")) for host in records)
    if len(set(p for p in profiles.values() if p)) > 1:
        found.append(finding("nccl_profile_consistency", "warning", "cluster",
                             ", ".join("%s uses %s" % (h, p) for h, p in sorted(profiles.items())),
                             "nodes that train together need the same fabric; check the nodes whose profile differs"))
    return found


def rail_findings(records):
    """Nodes whose GPU -> closest NIC map (nvidia-smi topo -m, kept by discovery) differs from the majority's: NCCL
    pairs GPU k with the NIC of rail k on every node, so a node with two NICs swapped halves a job's bandwidth."""
    maps = {}
    for host in sorted(records):
        gpu_nics = (((records[host] or {}).get("gpu") or {}).get("topology") or {}).get("gpu_nics")
        if gpu_nics and any(gpu_nics.values()):
            maps[host] = {"gpu_nics": gpu_nics}
    if len(maps) < 2:
        return []
    report = rails.rail_report(maps)
    return [finding("rail_mismatch", "warning", entry["host"], entry["text"],
                    "check the NIC enumeration on that node (BIOS, PCIe switch firmware, udev names) against the others; "
                    "until it matches, give it its own NCCL_IB_HCA order or NCCL_CROSS_NIC=1")
            for entry in report["differing"]]


def nccl_check_findings(judged):
    """The readiness NCCL check (a short multi-node nccl-tests run with NCCL_DEBUG=INFO, nccl_tests_judge's result):
    critical when NCCL went another way than the profile promises, or when the run gave no verdict on it (it did
    not run, failed, or printed no NCCL line: unknown is not ready); info with what NCCL used when it passed. A run
    below its share of what its nodes' links carry (validation's hardware expectation) is critical too."""
    found = []
    for run in judged or []:
        label = run.get("label") or "readiness NCCL check"
        below = (run.get("expected") or {}).get("failure")
        if below:
            found.append(finding("nccl_below_hardware", "critical", "cluster", "%s: %s" % (label, below),
                                 "see the run's summary.md (What the hardware carries, What NCCL used): a node whose "
                                 "GPUs talk through SHM, a rail down or a link trained down; fix it, then run the check again"))
        entry = run.get("nccl")
        if entry and entry.get("passed"):
            found.append(finding("nccl_path", "info", "cluster", "%s: %s" % (label, nccl_path.used_text(entry)),
                                 "nothing to do; the full check is gpufabric.rdma.validate"))
            continue
        if entry:
            why = "; ".join(r["reason"] for r in entry.get("reasons") or [] if r.get("ok") is False)
        else:
            why = "; ".join(run.get("failures") or []) or "no NCCL INFO line to judge"
        found.append(finding("nccl_path", "critical", "cluster", "%s: %s" % (label, why),
                             "see the run's summary.md (What NCCL used) and the NCCL lines it quotes; fix the transport, "
                             "NCCL_IB_HCA or GPUDirect RDMA, then run the check again"))
    return found


def _expected_counts(records, expected_gpu_count):
    """{host: GPUs expected or None}: one count for every node, or a count per node (as each host's inventory says:
    a group's group_vars, a host's host_vars). The same for the trays of an NVLink domain."""
    if isinstance(expected_gpu_count, dict):
        return dict((host, None if expected_gpu_count.get(host) is None else int(expected_gpu_count[host]))
                    for host in records)
    return dict.fromkeys(records, None if expected_gpu_count is None else int(expected_gpu_count))


def _one_or_each(expected):
    """What the report keeps of a per-host setting: the one value every node has, else each node's."""
    return set(expected.values()).pop() if len(set(expected.values())) == 1 else expected


def build_report(records, expected_gpu_count=None, nccl_check=None, known_good=None, nvlink_domain_size=None):
    """The whole report: per node facts and findings, cluster findings, and `ready`. ``expected_gpu_count``: one count
    for every node, or {host: count}; ``nccl_check``: the judged runs of the readiness NCCL check, when it was asked
    for; ``known_good``: the site's floors and pins per SKU (versions.check_policy), over the shipped security floors;
    ``nvlink_domain_size``: the trays of one NVLink domain (0: none expected; None: derived from the GPUs), one for
    every node or {host: size}: the nodes are grouped by domain against it (judge/rack_domains.py)."""
    if not isinstance(records, dict):
        raise TypeError("readiness_report expects a mapping of host name to node record")
    expected = _expected_counts(records, expected_gpu_count)
    sizes = _expected_counts(records, nvlink_domain_size)
    if isinstance(expected_gpu_count, dict):   # the report keeps one count where every node has the same, else each's
        expected_gpu_count = _one_or_each(expected)
    elif expected_gpu_count is not None:
        expected_gpu_count = int(expected_gpu_count)
    nodes = {}
    for host in sorted(records):
        record = records[host] or {}
        gpu = record.get("gpu") or {}
        nodes[host] = {
            "gpus": {"count": gpu.get("count") or 0, "model": ((gpu.get("gpus") or [{}])[0]).get("name"),
                     "driver_version": gpu.get("driver_version"), "nvlink": gpu.get("nvlink", False)},
            "rdma": [{"name": d.get("name"), "transport": d.get("transport"),
                      "ports": ["%s %s %s" % (p.get("port"), p.get("state"), p.get("link_layer")) for p in d.get("ports") or []]}
                     for d in record.get("rdma_devices") or []],
            "peermem": (gpu.get("peermem") or {}).get("module") if (gpu.get("peermem") or {}).get("loaded") else None,
            "fabric_mtu": dict((i.get("name"), i.get("mtu")) for i in fabric_interfaces(record)),
            "nccl": record.get("nccl") or {},
            "gpudirect": gpudirect_of(record),
            "nvlink": place_of(record),
            "findings": node_findings(host, record, expected[host], sizes[host]),
        }
    cluster = cluster_findings(records, None if set(expected.values()) <= {None} else expected)
    domains, domain_found = rack_domains.domain_findings(records, sizes)
    cluster += domain_found
    cluster += versions.findings(records, known_good, known_good_floors.DRIVER_FLOORS)
    if nccl_check is not None:
        cluster += nccl_check_findings(nccl_check) or [finding(
            "nccl_path", "critical", "cluster", "the readiness NCCL check was asked for but no run was judged",
            "check that the check's play ran on the nodes (nccl-tests binaries in nccl_tests_bin_dir)")]
    every = [f for n in nodes.values() for f in n["findings"]] + cluster
    counts = count_findings(every)
    return {
        "expected_gpu_count": expected_gpu_count,
        "nvlink_domain_size": _one_or_each(sizes) if sizes else None,
        "nvlink_domains": domains,
        "nodes": nodes,
        "cluster_findings": cluster,
        "counts": counts,
        "ready": counts["critical"] == 0,
        "known_good": versions.majority(records),
    }


def _verdict(report):
    counts = report["counts"]
    word = "READY" if report["ready"] else "NOT READY"
    return "%s: %d critical, %d warning, %d info" % (word, counts["critical"], counts["warning"], counts["info"])


def render_markdown(report):
    lines = ["# gpufabric.rdma readiness report", ""]
    verdict, counts = _verdict(report).split(": ", 1)
    lines.append("**%s**: %s finding(s) on %d node(s)." % (verdict, counts, len(report["nodes"])))
    lines += ["", "## Nodes", ""]
    rows = []
    for host, node in report["nodes"].items():
        gpus = node["gpus"]
        rows.append([host, "%d x %s" % (gpus["count"], gpus["model"]) if gpus["count"] else "0",
                     "yes" if node["gpus"]["nvlink"] else "no",
                     ", ".join("%s %s [%s]" % (r["name"], r["transport"], "; ".join(r["ports"])) for r in node["rdma"]) or "none",
                     node["peermem"] or "not loaded",
                     ", ".join("%s=%s" % kv for kv in sorted(node["fabric_mtu"].items())) or "-",
                     node["nccl"].get("profile") or "-"])
    header = ["node", "GPUs", "NVLink", "RDMA devices [port state link]", "peermem", "fabric MTU", "NCCL profile"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    lines += ["", "## Recommended NCCL environment", ""]
    for host, node in report["nodes"].items():
        nccl = node["nccl"]
        lines.append("### %s: profile `%s` (%s)" % (host, nccl.get("profile"), nccl.get("profile_reason")))
        lines.append("")
        lines += ["- `%s`" % reason for reason in nccl.get("reasons") or []] or ["- (none)"]
        lines.append("")
    lines += _known_good_lines(report)
    lines += _domain_lines(report)
    lines += ["## Findings", ""]
    every = [f for n in report["nodes"].values() for f in n["findings"]] + report["cluster_findings"]
    if not every:
        lines.append("None.")
    else:
        lines.append("| severity | check | target | detail | fix |")
        lines.append("|---|---|---|---|---|")
        for f in sorted(every, key=lambda f: (rank(f["severity"]), f["target"])):
            cells = (f["severity"], f["check"], f["target"], f["detail"].replace("|", "/"), f["fix_hint"].replace("|", "/"))
            lines.append("| %s | %s | %s | %s | %s |" % cells)
    return "\n".join(lines) + "\n"


# Node findings the known-good section repeats under each SKU: the GPUDirect path through PCIe and the NIC firmware.
KNOWN_GOOD_NODE_CHECKS = ("pcie_acs", "pcie_link", "iommu_mode", "gpudirect_path", "nic_firmware_settings")


def _known_good_lines(report):
    """The known-good section: per SKU the majority versions and the nodes off them or below a floor."""
    skus = report.get("known_good") or {}
    if not skus:
        return []
    lines = ["## Known-good state", ""]
    off = [f for f in report["cluster_findings"] if f["check"] in ("version_floor", "version_drift")]
    path = [f for n in report["nodes"].values() for f in n["findings"] if f["check"] in KNOWN_GOOD_NODE_CHECKS]
    for kind, entry in sorted(skus.items()):
        shown = ", ".join("%s %s" % (k, v) for k, v in sorted(entry["versions"].items()) if v) or "no versions recorded"
        lines.append("- **%s** (%d node(s)): %s" % (kind, len(entry["nodes"]), shown))
        mine = [f for f in off + path if f["target"].split("/", 1)[0].split(":", 1)[0] in entry["nodes"]]
        lines += ["  - %s %s %s: %s" % (f["severity"], f["check"], f["target"], f["detail"]) for f in mine]
    direct = [(host, node["gpudirect"]) for host, node in report["nodes"].items() if node.get("gpudirect")]
    if direct:
        lines += ["", "GPUDirect RDMA path, by NCCL's own conditions:", ""]
        lines += ["- %s: **%s** (%s)" % (host, item["path"], item["why"]) for host, item in direct]
    return lines + [""]


def _domain_text(entry):
    """'uuid/clique: 17 of 18 trays (chassis S; expected from ...): hosts'."""
    found = len(entry["hosts"])
    counted = "%d of %d trays" % (found, entry["expected"]) if entry.get("expected") else "%d tray(s)" % found
    notes = (["chassis %s" % ", ".join(entry["chassis"])] if entry.get("chassis") else []) + (
        ["expected from %s" % entry["expected_from"]] if entry.get("expected") else [])
    return "%s: %s%s: %s" % (entry["domain"], counted, " (%s)" % "; ".join(notes) if notes else "", ", ".join(entry["hosts"]))


def _domain_lines(report):
    """The NVLink domains section: each domain, its trays against the expected, its chassis and hosts."""
    domains = report.get("nvlink_domains") or []
    if not domains:
        return []
    return ["## NVLink domains", ""] + ["- %s" % _domain_text(entry) for entry in domains] + [""]


def render_text(report):
    """Console version: the verdict, each node's NCCL environment with reasons, then the findings."""
    every = [f for n in report["nodes"].values() for f in n["findings"]] + report["cluster_findings"]
    lines = [_verdict(report)]
    for host, node in report["nodes"].items():
        nccl = node["nccl"]
        if nccl.get("profile"):
            lines.append("%s: NCCL profile %s (%s)" % (host, nccl["profile"], nccl.get("profile_reason")))
            lines += ["  %s" % reason for reason in nccl.get("reasons") or []]
    lines += ["NVLink domain %s" % _domain_text(entry) for entry in report.get("nvlink_domains") or []]
    if every:
        rows = [[f["severity"], f["check"], f["target"], f["detail"]]
                for f in sorted(every, key=lambda f: (rank(f["severity"]), f["target"]))]
        lines.append(render_table(["severity", "check", "target", "detail"], rows))
    return "\n".join(lines)
