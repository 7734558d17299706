# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Node records and readable summaries.

Pure functions: dictionaries of facts in, plain dictionaries or text out. Standard library only,
so the same code serves modules on managed nodes, filters on the controller and unit tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.text import check_line

NODE_RECORD_SCHEMA = 1

# Interfaces that never carry fabric traffic; listing them only hides the ones that do.
_SKIP_INTERFACE_PREFIXES = ("lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali")


def _interface_record(name, facts):
    """One network interface from ansible_facts, as the node record keeps it."""
    iface = facts.get(name.replace("-", "_").replace(".", "_")) or facts.get(name) or {}
    ipv4 = iface.get("ipv4") or {}
    mtu = iface.get("mtu")
    return {
        "name": name,
        "mtu": int(mtu) if mtu is not None else None,
        "active": bool(iface.get("active", False)),
        "ipv4": ipv4.get("address"),
        "macaddress": iface.get("macaddress"),
        "driver": (iface.get("module") or None),
    }


# Values that change while nothing about the node changes; kept out of the record so that
# facts.json is rewritten only when the node really changes.
_VOLATILE_GPU_KEYS = ("temperature_c", "ecc_uncorrected_volatile")
_VOLATILE_PCIE_KEYS = ("gen_now", "width_now")   # an idle GPU trains its link down: the record keeps the maximum


def _stable_gpu(gpu):
    if not gpu:
        return {"present": False, "count": 0, "gpus": []}
    stable = dict(gpu)
    stable["gpus"] = []
    for entry in gpu.get("gpus") or []:
        entry = dict((k, v) for k, v in entry.items() if k not in _VOLATILE_GPU_KEYS)
        if isinstance(entry.get("pcie"), dict):
            entry["pcie"] = dict((k, v) for k, v in entry["pcie"].items() if k not in _VOLATILE_PCIE_KEYS)
        stable["gpus"].append(entry)
    return stable


CONTAINER_TYPES = ("docker", "container", "podman", "lxc", "containerd", "systemd-nspawn")


def in_container(facts):
    """Whether ansible_facts say the node is a container: its kernel modules and hardware belong to the host."""
    return facts.get("virtualization_role") == "guest" and facts.get("virtualization_type") in CONTAINER_TYPES


def node_record(facts, rdma_devices=None, gpu=None, nccl=None):
    """Build the node record written to /etc/gpufabric/facts.json.

    ``facts`` is the ``ansible_facts`` dictionary of one host (keys without the ``ansible_``
    prefix, as ``ansible_facts`` holds them); ``rdma_devices`` the list returned by the
    rdma_devices module, ``gpu`` the gpu_facts result and ``nccl`` the nccl_env result. Only
    stable values are kept, so the record changes only when the node changes.
    """
    if not isinstance(facts, dict):
        raise TypeError("node_record expects the ansible_facts dictionary, got %s" % type(facts).__name__)
    interfaces = []
    for name in sorted(facts.get("interfaces") or []):
        if name.startswith(_SKIP_INTERFACE_PREFIXES):
            continue
        interfaces.append(_interface_record(name, facts))
    distribution = " ".join(
        str(part) for part in (facts.get("distribution"), facts.get("distribution_version")) if part
    )
    record = {
        "schema": NODE_RECORD_SCHEMA,
        "hostname": facts.get("hostname"),
        "os": distribution or facts.get("system"),
        "kernel": facts.get("kernel"),
        "architecture": facts.get("architecture"),
        "virtualization": "%s/%s" % (
            facts.get("virtualization_type") or "none",
            facts.get("virtualization_role") or "host",
        ),
        "container": in_container(facts),
        "cpus": facts.get("processor_vcpus") or facts.get("processor_count"),
        "memory_mib": facts.get("memtotal_mb"),
        "default_interface": (facts.get("default_ipv4") or {}).get("interface"),
        "interfaces": interfaces,
        "rdma_devices": list(rdma_devices or []),
        "gpu": _stable_gpu(gpu),
    }
    if nccl:
        record["nccl"] = dict((k, nccl.get(k)) for k in ("profile", "profile_reason", "env", "reasons", "warnings"))
    if isinstance(facts.get("rdma_stack"), dict):
        record["rdma_stack"] = facts["rdma_stack"]   # only where ofed_info answered: a record without it is unchanged
    if isinstance(facts.get("rdma_gid_check"), dict) and facts["rdma_gid_check"].get("tool"):
        record["gid_check"] = facts["rdma_gid_check"]   # only where show_gids ran: a record without it is unchanged
    return record


def _cell(value):
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def render_table(header, rows):
    """Render rows (lists of cells) under a header as an aligned plain-text table."""
    cells = [[_cell(c) for c in header]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(header, rows):
    """A Markdown table's lines: the header, its rule, a line per row; a None cell shows as '-'."""
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join("-" if c is None else str(c) for c in row) + " |" for row in rows])


SUMMARY_HEADER = ["node", "os", "kernel", "cpus", "mem GiB", "GPUs", "RDMA (active ports)", "interfaces (mtu)", "NCCL profile"]


def node_summary(records):
    """One line per node from a {host: node record} mapping, sorted by host name."""
    if not isinstance(records, dict):
        raise TypeError("node_summary expects a mapping of host name to node record")
    rows = []
    for host in sorted(records):
        record = records[host] or {}
        memory = record.get("memory_mib")
        interfaces = [
            "%s(%s)" % (i.get("name"), i.get("mtu") if i.get("mtu") is not None else "?")
            for i in record.get("interfaces") or []
        ]
        gpu = record.get("gpu") or {}
        gpus = gpu.get("gpus") or []
        gpu_cell = "%d x %s" % (len(gpus), gpus[0].get("name")) if gpus else "0"
        rdma_cell = [
            "%s(%d/%d)" % (d.get("name"), sum(1 for p in d.get("ports") or [] if p.get("state") == "ACTIVE"),
                           len(d.get("ports") or []))
            for d in record.get("rdma_devices") or []
        ] or "none"
        rows.append([
            host,
            record.get("os"),
            record.get("kernel"),
            record.get("cpus"),
            "%.1f" % (memory / 1024.0) if isinstance(memory, (int, float)) else None,
            gpu_cell,
            rdma_cell,
            interfaces,
            (record.get("nccl") or {}).get("profile"),
        ])
    return render_table(SUMMARY_HEADER, rows)


def replayed_note(sources):
    """'Figures REPLAYED from <source>[; <source>], not measured.' - the one wording every report uses where stand-ins
    printed a capture instead of measuring (the lab) - or None without a source. ``sources``: one text or several."""
    if isinstance(sources, (list, tuple, set)):
        found = sorted(set(check_line("replayed_from", s) for s in sources if s))
    else:
        found = [check_line("replayed_from", sources)] if sources else []
    return "Figures REPLAYED from %s, not measured." % "; ".join(found) if found else None


def with_replayed_note(markdown, sources):
    """The report with the replayed note under its title (first line ``# ...``), or as it is without a source."""
    note = replayed_note(sources)
    if not note:
        return markdown
    title, separator, rest = markdown.partition("\n")
    if not title.startswith("# "):
        return note + "\n\n" + markdown
    return title + "\n\n" + note + "\n" + (rest if rest.startswith("\n") else "\n" + rest)
