# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""NVIDIA GPU discovery: `nvidia-smi -q -x`, `nvidia-smi topo -m` and /proc/modules to dicts.

`nvidia-smi -q -x` is parsed here only (``nvidia_smi_root``, once per reading): its facts, PCIe links and clock event
reasons, each GPU's memory health. Standard library only (xml.etree); shared by the gpu_facts module, the node's health check and the
parse_nvidia_topo filter.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from xml.etree import ElementTree

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.numbers import leading_number as _number

# Closest first: the order NCCL and `topo -m`'s legend use for GPU<->NIC paths.
NIC_PATH_RANK = ("PIX", "PXB", "PHB", "NODE", "SYS")

_DEVICE_COLUMN_RE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|[A-Za-z][\w.-]*_\d+)$")
_LEGEND_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


class GpuParseError(ValueError):
    """The text is not what the tool prints; the message says what was expected."""


def xml_text(element, path):
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in ("", "N/A", "[N/A]", "Not Supported", "[Not Supported]") else value


def _enabled(text):
    if text is None:
        return None
    return text.strip().lower() == "enabled"


def ecc_uncorrected_volatile(gpu):
    """Sum of the volatile uncorrectable ECC counters, where the driver prints them.

    Current drivers print ecc_errors/volatile/*uncorrectable* leaves (R580: sram parity,
    sram secded, dram); old layouts ecc_errors/volatile/double_bit/total. A GPU that prints
    neither (ECC unsupported) gives None (unknown), not 0.
    """
    volatile = gpu.find("ecc_errors/volatile")
    if volatile is None:
        return None
    values = [_number(e.text) for e in volatile.iter() if not len(e) and "uncorrectable" in e.tag.lower()]
    values += [_number(e.text) for e in volatile.findall("double_bit/total")]
    values = [int(v) for v in values if v is not None]
    return sum(values) if values else None


def nvidia_smi_root(text):
    """`nvidia-smi -q -x` text -> its <nvidia_smi_log> element, parsed once for every reader."""
    try:
        root = ElementTree.fromstring(_text.clean(text, "nvidia-smi -q -x output").strip())
    except ElementTree.ParseError as exc:
        raise GpuParseError("nvidia-smi -q -x output is not XML: %s" % exc)
    if root.tag != "nvidia_smi_log":
        raise GpuParseError("expected <nvidia_smi_log>, got <%s>" % root.tag)
    return root


def attached_gpu_count(root):
    """GPUs the driver reports (attached_gpus), else the <gpu> elements."""
    attached = _number(xml_text(root, "attached_gpus"))
    return int(attached) if attached is not None else len(root.findall("gpu"))


NVIDIA_PCI_VENDOR = "0x10de"


def is_nvidia_gpu(vendor, pci_class):
    """A PCI function is an NVIDIA GPU: vendor 0x10de, class 0x0300xx (VGA) or 0x0302xx (3D controller)."""
    pci_class = (pci_class or "").strip().lower()
    return (vendor or "").strip().lower() == NVIDIA_PCI_VENDOR and len(pci_class) == 8 \
        and pci_class[:6] in ("0x0300", "0x0302")


def _bus_address(bus_id):
    """nvidia-smi's 00000000:19:00.0 and sysfs' 0000:19:00.0 as one key: (domain, bus, device, function)."""
    try:
        domain, bus, rest = (bus_id or "").strip().lower().split(":")
        device, function = rest.split(".")
        return (int(domain, 16), int(bus, 16), int(device, 16), int(function, 16))
    except ValueError:
        return None


def pci_gpus_not_answering(pci_gpus, facts):
    """The PCI GPUs (read_pci_gpus: address, device, driver) that nvidia-smi does not list: all of them when no
    driver answered (facts present false), else those whose bus address is missing from its GPUs."""
    if not (facts or {}).get("present"):
        return list(pci_gpus or [])
    listed = set(_bus_address(g.get("pci_bus_id")) for g in facts.get("gpus") or [])
    return [g for g in pci_gpus or [] if _bus_address(g.get("address")) not in listed]


def _whole(text):
    value = _number(text)
    return int(value) if value is not None and value == int(value) else None


def pcie_link(gpu):
    """The GPU's PCIe link: ``gen`` and ``width`` the most it trains to (max_link_gen: what both ends support;
    max_link_width), ``gen_now`` and ``width_now`` what it runs at (an idle GPU drops to a lower generation to
    save power, so only the maximum says what the link can carry). None for a value the driver does not print."""
    info = gpu.find("pci/pci_gpu_link_info")
    return {"gen": _whole(xml_text(info, "pcie_gen/max_link_gen")),
            "width": _whole(xml_text(info, "link_widths/max_link_width")),
            "gen_now": _whole(xml_text(info, "pcie_gen/current_link_gen")),
            "width_now": _whole(xml_text(info, "link_widths/current_link_width"))}


def parse_nvidia_smi_xml(text):
    """`nvidia-smi -q -x` (text, or its root from nvidia_smi_root) -> driver_version, cuda_version,
    count and gpus (see gpu_facts RETURN)."""
    root = text if hasattr(text, "findall") else nvidia_smi_root(text)
    gpus = []
    for index, gpu in enumerate(root.findall("gpu")):
        minor = _number(xml_text(gpu, "minor_number"))
        memory = _number(xml_text(gpu, "fb_memory_usage/total"))
        gpus.append({
            "index": index,
            "minor_number": minor,
            "name": xml_text(gpu, "product_name"),
            "uuid": xml_text(gpu, "uuid"),
            "pci_bus_id": xml_text(gpu, "pci/pci_bus_id") or gpu.get("id"),
            "serial": xml_text(gpu, "serial"),
            "vbios_version": xml_text(gpu, "vbios_version"),
            "memory_total_mib": int(memory) if memory is not None else None,
            "persistence_mode": bool(_enabled(xml_text(gpu, "persistence_mode"))),
            "mig_mode": xml_text(gpu, "mig_mode/current_mig"),
            "ecc_enabled": _enabled(xml_text(gpu, "ecc_mode/current_ecc")),
            "ecc_uncorrected_volatile": ecc_uncorrected_volatile(gpu),
            "power_limit_w": _number(xml_text(gpu, "gpu_power_readings/current_power_limit")
                                     or xml_text(gpu, "power_readings/power_limit")),
            "temperature_c": _number(xml_text(gpu, "temperature/gpu_temp")),
            "pcie": pcie_link(gpu),
        })
    return {
        "driver_version": xml_text(root, "driver_version"),
        "cuda_version": xml_text(root, "cuda_version"),
        "count": attached_gpu_count(root),
        "gpus": gpus,
    }


# The clock event reasons read: the four DCGM's diagnostic treats as failures (its CheckForThrottling mask); power
# capping and idle are normal operation.
THROTTLE_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def parse_clock_events(xml_text):
    """`nvidia-smi -q -x` (text, or its root from nvidia_smi_root) -> [{index, bus_id, active: [reason, ...]}] from
    clocks_event_reasons (R535+) or clocks_throttle_reasons (older drivers); active holds THROTTLE_REASONS only."""
    root = xml_text if hasattr(xml_text, "findall") else nvidia_smi_root(xml_text)
    gpus = []
    for index, gpu in enumerate(root.findall("gpu")):
        block = gpu.find("clocks_event_reasons")
        prefix = "clocks_event_reason_"
        if block is None:
            block, prefix = gpu.find("clocks_throttle_reasons"), "clocks_throttle_reason_"
        active = []
        for reason in THROTTLE_REASONS:
            node = block.find(prefix + reason) if block is not None else None
            if node is not None and (node.text or "").strip().lower() == "active":
                active.append(reason)
        gpus.append({"index": index, "bus_id": gpu.get("id"), "active": active})
    return gpus


def short_pci(address):
    """'0000:3B:00.0' or '0000:3b:00' -> '0000:3b:00' (nvidia-smi and the kernel log disagree)."""
    parts = (address or "").lower().split(".")[0].split(":")
    if len(parts) == 3 and len(parts[0]) == 8:  # nvidia-smi's 00000000:3B:00.0
        parts[0] = parts[0][4:]
    return ":".join(parts)


def _count(text):
    return int(text) if text and text.isdigit() else None


def parse_gpu_memory_health(document):
    """`nvidia-smi -q -x` (text, or its root from nvidia_smi_root) -> per GPU: pci,
    ecc_uncorrectable (volatile), remap pending/failure, uncorrectable remapped rows, retired
    pages (single, double) and retirement pending."""
    root = document if hasattr(document, "findall") else nvidia_smi_root(document)
    gpus = []
    for gpu in root.findall("gpu"):
        gpus.append({
            "pci": short_pci(xml_text(gpu, "pci/pci_bus_id") or gpu.get("id")),
            "ecc_uncorrectable": ecc_uncorrected_volatile(gpu),
            "remap_pending": xml_text(gpu, "remapped_rows/remapped_row_pending") == "Yes",
            "remap_failure": xml_text(gpu, "remapped_rows/remapped_row_failure") == "Yes",
            "remapped_uncorrectable": _count(xml_text(gpu, "remapped_rows/remapped_row_unc")),
            "retired_single": _count(xml_text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")),
            "retired_double": _count(xml_text(gpu, "retired_pages/double_bit_retirement/retired_count")),
            "retirement_pending": xml_text(gpu, "retired_pages/pending_retirement") == "Yes"
            or xml_text(gpu, "retired_pages/pending_blacklist") == "Yes",
        })
    return gpus


def _split_columns(header):
    """Device columns of the matrix header, in order, and whether affinity columns follow."""
    tokens = header.split()
    columns = []
    for token in tokens:
        if token == "CPU" or not _DEVICE_COLUMN_RE.match(token):
            break
        columns.append(token)
    return columns


# A CPU or NUMA list as nvidia-smi and the kernel print it: "0-31,64-95", "0,8,252-255", "3".
_ID_LIST_RE = re.compile(r"^[0-9]{1,7}(?:-[0-9]{1,7})?(?:,[0-9]{1,7}(?:-[0-9]{1,7})?){0,255}$")


def _affinity(cell):
    """A CPU Affinity cell: the list as printed ('0-19,40-59'), None for N/A or text that is no list."""
    return cell if _ID_LIST_RE.match(cell) else None


def _numa_affinity(cell):
    """A NUMA Affinity cell: the node as a number (0), the list as printed where it names several
    ('0-1', '0,8'), like CPU Affinity; None for N/A."""
    if not _ID_LIST_RE.match(cell):
        return None
    return int(cell) if cell.isdigit() else cell


def parse_nvidia_topo(text):
    """`nvidia-smi topo -m` -> matrix, nics, gpu_nics, cpu_affinity, numa_affinity.

    cpu_affinity is the list as printed ('0-19,40-59'); numa_affinity the node as a number, or the list
    as printed where nvidia-smi names several ('0-1'); None where it prints N/A.

    Works with tab- or space-separated output, terminal escape codes in the header, with or
    without NICs and with or without a NIC legend (older drivers name NICs like mlx5_0 in the
    header itself).
    """
    lines = [line.rstrip() for line in _text.clean_lines(text, "nvidia-smi topo -m output")]
    header_index = None
    for i, line in enumerate(lines):
        if re.match(r"^\s+GPU0\b", line) or re.match(r"^\s*GPU0\s+GPU1\b", line):
            header_index = i
            break
    if header_index is None:
        raise GpuParseError("no matrix header (a line starting with GPU0) in nvidia-smi topo -m output")
    columns = _split_columns(lines[header_index])
    matrix, cpu_affinity, numa_affinity, nics = {}, {}, {}, {}
    for line in lines[header_index + 1:]:
        if not line.strip():
            if matrix:
                break
            continue
        tokens = line.split()
        name = tokens[0]
        if name not in columns:
            break
        cells = tokens[1:1 + len(columns)]
        if len(cells) < len(columns):
            raise GpuParseError("row %s has %d links for %d columns" % (name, len(cells), len(columns)))
        matrix[name] = dict(zip(columns, cells))
        rest = tokens[1 + len(columns):]
        if name.startswith("GPU"):
            cpu_affinity[name] = _affinity(rest[0]) if rest else None
            numa_affinity[name] = _numa_affinity(rest[1]) if len(rest) > 1 else None
    in_legend = False
    for line in lines:
        if line.strip().startswith("NIC Legend"):
            in_legend = True
            continue
        if in_legend:
            match = _LEGEND_RE.match(line)
            if match:
                nics[match.group(1)] = match.group(2)
            elif line.strip():
                in_legend = False
    # Older drivers name NIC columns after the device (mlx5_0) and print no legend.
    nic_columns = [c for c in columns if not c.startswith("GPU")]
    gpu_nics = {}
    for gpu in sorted((c for c in columns if c.startswith("GPU")), key=lambda c: int(c[3:])):
        ranked = [(NIC_PATH_RANK.index(matrix[gpu][nic]), nic) for nic in nic_columns
                  if matrix.get(gpu, {}).get(nic) in NIC_PATH_RANK]
        if not ranked:
            gpu_nics[gpu] = []
            continue
        best = min(rank for rank, nic in ranked)
        gpu_nics[gpu] = [nics.get(nic, nic) for rank, nic in ranked if rank == best]
    return {
        "matrix": matrix,
        "nics": dict((k, v) for k, v in nics.items() if k.startswith("NIC")),
        "gpu_nics": gpu_nics,
        "cpu_affinity": cpu_affinity,
        "numa_affinity": numa_affinity,
    }


def has_nvlink(topology):
    """True when any GPU pair is linked by NVLink (NV# in the matrix)."""
    for row, links in (topology or {}).get("matrix", {}).items():
        for column, link in links.items():
            if row.startswith("GPU") and column.startswith("GPU") and re.match(r"^NV\d+$", link):
                return True
    return False


PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")


def loaded_modules(proc_modules):
    """/proc/modules text -> the names of the loaded kernel modules, in its order."""
    return [line.split()[0] for line in _text.clean_lines(proc_modules, "/proc/modules") if line.strip()]


def parse_peermem(proc_modules):
    """/proc/modules text -> {'loaded': bool, 'module': name or None}."""
    loaded = set(loaded_modules(proc_modules))
    for name in PEERMEM_MODULES:
        if name in loaded:
            return {"loaded": True, "module": name}
    return {"loaded": False, "module": None}


_COMPUTE_CAP_RE = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


_QUERY_CAP_RE = re.compile(r"^\s*(\d+)\s*,\s*(\d+\.\d+)\s*$")
_NVCC_RELEASE_RE = re.compile(r"release (\d+\.\d+)")


def parse_compute_caps(text):
    """`nvidia-smi --query-gpu=index,compute_cap --format=csv,noheader` -> {index: '9.0'}.

    Drivers before R510 do not know the field and print an error: that gives {} (unknown), not a failure.
    """
    caps = {}
    for line in _text.clean_lines(text, "nvidia-smi --query-gpu output"):
        match = _QUERY_CAP_RE.match(line)
        if match:
            caps[int(match.group(1))] = match.group(2)
    return caps


_QUERY_PAIR_RE = re.compile(r"^\s*([0-9]{1,10})\s*,\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")


def parse_process_gpus(apps_text, gpus_text):
    """`nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv,noheader` and `--query-gpu=index,pci.bus_id`
    (same format) -> {pid: {index, bus_id}}: the GPU each process computes on, by nvidia-smi's index. A process on
    several GPUs keeps its first; a line that is no pair (an error, "No running processes found") is passed over."""
    index_of = {}
    for line in _text.clean_lines(gpus_text, "nvidia-smi --query-gpu output"):
        match = _QUERY_PAIR_RE.match(line)
        if match:
            index_of[match.group(2).upper()] = int(match.group(1))
    processes = {}
    for line in _text.clean_lines(apps_text, "nvidia-smi --query-compute-apps output"):
        match = _QUERY_PAIR_RE.match(line)
        if match and int(match.group(1)) not in processes:
            bus = match.group(2).upper()
            processes[int(match.group(1))] = {"index": index_of.get(bus), "bus_id": bus}
    return processes


def parse_nvcc_version(text):
    """`nvcc --version` -> the CUDA release ('13.0'), or None."""
    match = _NVCC_RELEASE_RE.search(_text.clean(text, "nvcc --version output"))
    return match.group(1) if match else None


def nvcc_gencode(compute_caps):
    """`nvidia-smi --query-gpu=compute_cap --format=csv,noheader` lines -> NVCC_GENCODE.

    ['9.0', '9.0'] -> '-gencode=arch=compute_90,code=sm_90'; one entry per distinct capability,
    in the order first seen; lines that are not a capability (errors, blanks) are skipped.
    """
    if isinstance(compute_caps, (str, bytes)):
        compute_caps = _text.clean_lines(compute_caps, "compute_cap lines")
    elif isinstance(compute_caps, (list, tuple)):
        compute_caps = [_text.clean(line, "a compute_cap line") for line in compute_caps]
    seen = []
    for line in compute_caps or []:
        match = _COMPUTE_CAP_RE.match(line)
        if match and match.group(1) + match.group(2) not in seen:
            seen.append(match.group(1) + match.group(2))
    return " ".join("-gencode=arch=compute_%s,code=sm_%s" % (cap, cap) for cap in seen)


def peermem_plan(gpu_facts, available, ib_core_loaded, in_container, wanted="auto"):
    """Decide how GPUDirect RDMA peer memory gets loaded on a node, or why it cannot.

    gpu_facts: the gpu_facts module's facts; available: {module name: bool} from `modinfo`;
    ib_core_loaded: whether the RDMA core module is loaded; in_container: the node is a container.
    Returns {"module", "action" ("none" | "load" | "skip" | "fail"), "reason"}."""
    peermem = gpu_facts.get("peermem") or {}
    driver = gpu_facts.get("driver_version") or ""
    major = int(driver.split(".")[0]) if driver.split(".")[0].isdigit() else None
    if wanted == "auto":
        # nvidia_peermem ships with the GPU driver since R470; older drivers need Mellanox's nv_peer_mem.
        module = "nv_peer_mem" if major is not None and major < 470 else "nvidia_peermem"
    else:
        module = wanted
    if peermem.get("loaded"):
        return {"module": peermem.get("module"), "action": "none", "reason": "%s is loaded" % peermem.get("module")}
    if in_container:
        return {"module": module, "action": "skip",
                "reason": "a container: kernel modules belong to the host, load %s there" % module}
    if not gpu_facts.get("present"):
        return {"module": module, "action": "skip",
                "reason": "no NVIDIA GPU driver answers (%s); install the driver first"
                          % (gpu_facts.get("error") or "nvidia-smi not found")}
    if not ib_core_loaded:
        return {"module": module, "action": "fail",
                "reason": "ib_core is not loaded: %s needs the RDMA stack (run gpufabric.rdma.rdma_drivers first)" % module}
    if not available.get(module):
        if module == "nvidia_peermem":
            return {"module": module, "action": "fail",
                    "reason": "driver %s has no nvidia_peermem module: it ships with R470 and later drivers when they "
                              "are installed after MLNX_OFED/DOCA or with inbox rdma-core headers present; "
                              "reinstall the GPU driver after the RDMA stack" % (driver or "?")}
        return {"module": module, "action": "fail",
                "reason": "driver %s needs the legacy nv_peer_mem, which is not built: set peermem_legacy_source "
                          "to Mellanox's nv_peer_memory source" % (driver or "?")}
    return {"module": module, "action": "load", "reason": "driver %s, RDMA stack loaded: modprobe %s" % (driver, module)}


_NVRM_RE = re.compile(r"NVRM version:\s*NVIDIA UNIX\s+(Open\s+)?(?:\S+\s+)?Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)\b")


def parse_proc_nvidia_version(text):
    """/proc/driver/nvidia/version -> {'driver': '590.48.01', 'open': True} (the open GPU kernel modules, which
    DMA-BUF needs, say "Open Kernel Module"), or None when no NVRM line is there (no driver loaded)."""
    for line in _text.launcher_lines(text or "", "/proc/driver/nvidia/version"):
        match = _NVRM_RE.search(line)
        if match:
            return {"driver": match.group(2), "open": bool(match.group(1))}
    return None
