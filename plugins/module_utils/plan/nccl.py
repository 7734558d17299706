# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""NCCL environment: choose a profile from discovered RDMA devices, explain every variable.

Pure functions (facts in, env dict + reasons + warnings out), standard library only; the
nccl_env module and role call them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.shell import shell_quote
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink

PROFILES = ("auto", "infiniband", "roce", "erdma", "acs_rdma_type1", "acs_rdma_type2", "socket")

# Profiles copied from the vendor documents, in their order; tests pin them to the letter.
_FIXED = {
    # Alibaba Cloud ACS, RDMA NIC type 1 (GU8TF / GU8TEF / GX8SF): seed 000
    "acs_rdma_type1": [
        ("NCCL_SOCKET_IFNAME", "eth0", "ACS type 1 nodes bootstrap over eth0 (ACS RDMA guide)"),
        ("NCCL_IB_HCA", "mlx5", "ACS type 1 nodes carry RDMA on mlx5 devices (ACS RDMA guide)"),
        ("NCCL_DEBUG", "INFO", "the ACS RDMA guide asks for INFO logs to confirm the NET/IB transport"),
    ],
    # Alibaba Cloud ACS, RDMA NIC type 2 (P16EN): seed 000
    "acs_rdma_type2": [
        ("NCCL_IB_DISABLE", "1", "ACS type 2 (P16EN) nodes do not use the IB verbs transport (ACS RDMA guide)"),
        ("NCCL_SOCKET_IFNAME", "eth0", "ACS type 2 nodes bootstrap over eth0 (ACS RDMA guide)"),
        ("NCCL_IB_HCA", "", "must be empty on ACS type 2 nodes (ACS RDMA guide)"),
        ("NCCL_DEBUG", "INFO", "the ACS RDMA guide asks for INFO logs"),
    ],
    # Alibaba Cloud E-HPC eRDMA GPU clusters: seed 004
    "erdma": [
        ("NCCL_SOCKET_IFNAME", "eth0", "E-HPC eRDMA nodes bootstrap over eth0"),
        ("NCCL_IB_DISABLE", "0", "eRDMA is driven through the IB verbs transport"),
        ("NCCL_IB_GID_INDEX", "1", "eRDMA exposes its RoCE v2 IPv4 GID at index 1"),
        ("NCCL_NET_GDR_LEVEL", "5", "allow GPUDirect RDMA at any PCI distance (eRDMA guide)"),
        ("NCCL_IB_QPS_PER_CONNECTION", "4", "spread each connection over 4 QPs (eRDMA guide)"),
        ("NCCL_MIN_NCHANNELS", "16", "at least 16 channels to fill eRDMA bandwidth (eRDMA guide)"),
        ("NCCL_ALGO", "Ring", "the eRDMA guide measures with the Ring algorithm"),
        ("NCCL_P2P_LEVEL", "5", "allow P2P at any PCI distance (eRDMA guide)"),
        ("NCCL_DEBUG", "INFO", "the eRDMA guide asks for INFO logs"),
    ],
}

# NCCL's documented environment variables (NCCL user guide, "Environment Variables"), plus
# ones still read by current releases. Unknown names are most often typos worth a warning.
KNOWN_VARIABLES = frozenset("""
NCCL_ALGO NCCL_ALLOC_P2P_NET_LL_BUFFERS NCCL_BUFFSIZE NCCL_CGA_CLUSTER_SIZE NCCL_CHECKS_DISABLE
NCCL_CHECK_POINTERS NCCL_COLLNET_ENABLE NCCL_COLLNET_NODE_THRESHOLD NCCL_COMM_BLOCKING NCCL_CONF_FILE
NCCL_CROSS_NIC NCCL_CTA_POLICY NCCL_CUMEM_ENABLE NCCL_CUMEM_HOST_ENABLE NCCL_DEBUG NCCL_DEBUG_FILE
NCCL_DEBUG_SUBSYS NCCL_DMABUF_ENABLE NCCL_GRAPH_MIXING_SUPPORT NCCL_GRAPH_REGISTER NCCL_HOSTID
NCCL_IB_ADAPTIVE_ROUTING NCCL_IB_ADDR_FAMILY NCCL_IB_ADDR_RANGE NCCL_IB_AR_THRESHOLD NCCL_IB_CUDA_SUPPORT
NCCL_IB_DISABLE NCCL_IB_ECE_ENABLE NCCL_IB_FIFO_TC NCCL_IB_GID_INDEX NCCL_IB_HCA NCCL_IB_MERGE_NICS
NCCL_IB_MERGE_VFS NCCL_IB_PCI_RELAXED_ORDERING NCCL_IB_QPS_PER_CONNECTION NCCL_IB_RETRY_CNT
NCCL_IB_RETURN_ASYNC_EVENTS NCCL_IB_ROCE_VERSION_NUM NCCL_IB_SL NCCL_IB_SPLIT_DATA_ON_QPS NCCL_IB_TC
NCCL_IB_TIMEOUT NCCL_IB_USE_INLINE NCCL_IGNORE_CPU_AFFINITY NCCL_IGNORE_DISABLED_P2P NCCL_LAUNCH_MODE
NCCL_LEGACY_CUDA_REGISTER NCCL_LL128_BUFFSIZE NCCL_LL_BUFFSIZE NCCL_LOCAL_REGISTER NCCL_MAX_CTAS
NCCL_MAX_NCHANNELS NCCL_MAX_NRINGS NCCL_MEM_SYNC_DOMAIN NCCL_MIN_CTAS NCCL_MIN_NCHANNELS NCCL_MIN_NRINGS
NCCL_MNNVL_ENABLE NCCL_NCHANNELS_PER_NET_PEER NCCL_NET NCCL_NETDEVS_POLICY NCCL_NET_DISABLE_INTRA
NCCL_NET_FORCE_FLUSH NCCL_NET_GDR_C2C NCCL_NET_GDR_LEVEL NCCL_NET_GDR_READ NCCL_NET_OVERHEAD
NCCL_NET_PLUGIN NCCL_NET_SHARED_BUFFERS NCCL_NET_SHARED_COMMS NCCL_NSOCKS_PERTHREAD NCCL_NTHREADS
NCCL_NVB_DISABLE NCCL_NVLSTREE_MAX_CHUNKSIZE NCCL_NVLS_CHUNKSIZE NCCL_NVLS_ENABLE NCCL_NVLS_NCHANNELS
NCCL_OOB_NET_ENABLE NCCL_OOB_NET_IFNAME NCCL_P2P_DIRECT_DISABLE NCCL_P2P_DISABLE NCCL_P2P_LEVEL
NCCL_P2P_LL_THRESHOLD NCCL_P2P_NET_CHUNKSIZE NCCL_P2P_NVL_CHUNKSIZE NCCL_P2P_PCI_CHUNKSIZE
NCCL_P2P_PXN_LEVEL NCCL_P2P_READ_ENABLE NCCL_P2P_USE_CUDA_MEMCPY NCCL_PROFILER_PLUGIN NCCL_PROTO
NCCL_PROXY_APPEND_BATCH_SIZE NCCL_PXN_DISABLE NCCL_RAS_ENABLE NCCL_RUNTIME_CONNECT NCCL_SET_STACK_SIZE
NCCL_SET_THREAD_NAME NCCL_SHARP_DISABLE NCCL_SHM_DISABLE NCCL_SHM_LOCALITY NCCL_SHM_MEMCPY_MODE
NCCL_SHM_USE_CUDA_MEMCPY NCCL_SINGLE_RING_THRESHOLD NCCL_SOCKET_FAMILY NCCL_SOCKET_IFNAME
NCCL_SOCKET_NTHREADS NCCL_TOPO_DUMP_FILE NCCL_TOPO_FILE NCCL_TREE_THRESHOLD NCCL_TUNER_PLUGIN
NCCL_UID_STAGGER_RATE NCCL_UID_STAGGER_THRESHOLD NCCL_WIN_ENABLE NCCL_WORK_FIFO_DEPTH
""".split())

_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")


_DEVICE_KEYS = (("name", str), ("transport", str), ("ports", list))
_PORT_KEYS = (("port", int), ("state", str), ("roce_v2_gid_index", int))


def check_devices(devices):
    """RDMA devices as rdma_devices returns them; ValueError naming the first entry that is not."""
    if devices is None:
        return []
    if not isinstance(devices, list):
        raise ValueError("rdma_devices must be a list of devices (rdma_devices' facts), got %s" % type(devices).__name__)
    for index, device in enumerate(devices):
        where = "rdma_devices[%d]" % index
        if not isinstance(device, dict):
            raise ValueError("%s must be a device (a mapping with name, transport and ports), got %r" % (where, device))
        for key, kind in _DEVICE_KEYS:
            if key not in device or not isinstance(device[key], kind) or isinstance(device[key], bool):
                raise ValueError("%s: %s must be a %s, got %r" % (where, key, kind.__name__, device.get(key)))
        text.check_line("%s.name" % where, device["name"], allow_empty=False)
        for number, port in enumerate(device["ports"]):
            port_where = "%s (%s).ports[%d]" % (where, device["name"], number)
            if not isinstance(port, dict):
                raise ValueError("%s must be a mapping, got %r" % (port_where, port))
            for key, kind in _PORT_KEYS:
                value = port.get(key)
                if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
                    raise ValueError("%s: %s must be a %s, got %r" % (port_where, key, kind.__name__, value))
    return devices


def _active_ports(device):
    return [p for p in device.get("ports") or [] if p.get("state") == "ACTIVE"]


def resolve_profile(requested, rdma_devices):
    """(profile, reason). `auto`: eRDMA -> erdma, active RoCE -> roce, active IB -> infiniband, else socket."""
    if requested not in PROFILES:
        raise ValueError("profile must be one of %s, got %r" % (", ".join(PROFILES), requested))
    if requested != "auto":
        return requested, "profile %s was asked for" % requested
    devices = rdma_devices or []
    erdma = [d["name"] for d in devices if d.get("transport") == "eRDMA"]
    if erdma:
        return "erdma", "eRDMA devices found (%s)" % ", ".join(erdma)
    for transport, profile in (("RoCE", "roce"), ("InfiniBand", "infiniband")):
        names = [d["name"] for d in devices if d.get("transport") == transport and _active_ports(d)]
        if names:
            return profile, "%s devices with an ACTIVE port: %s" % (transport, ", ".join(names))
    if devices:
        return "socket", "RDMA devices found but none has an ACTIVE RoCE/InfiniBand port"
    return "socket", "no RDMA device found"


def _hca_list(devices, transport):
    """'=mlx5_0:1,mlx5_3:1': exact names ('=') so mlx5_1 does not also select mlx5_10..mlx5_17."""
    entries = []
    for device in devices:
        if device.get("transport") != transport:
            continue
        for port in _active_ports(device):
            entries.append("%s:%d" % (device["name"], port["port"]))
    return ("=" + ",".join(entries)) if entries else ""


def _dynamic(profile, devices, socket_ifname):
    env = []
    warnings = []
    if profile == "socket":
        env.append(("NCCL_IB_DISABLE", "1", "no usable RDMA port: inter-node traffic goes over TCP sockets "
                                            "(intra-node NVLink/PCIe paths are unaffected)"))
    else:
        transport = "RoCE" if profile == "roce" else "InfiniBand"
        hca = _hca_list(devices, transport)
        env.append(("NCCL_IB_DISABLE", "0", "use the IB verbs transport over %s" % transport))
        if hca:
            env.append(("NCCL_IB_HCA", hca, "the %s ports that are ACTIVE, named exactly" % transport))
        else:
            warnings.append("profile %s but no ACTIVE %s port was found; NCCL_IB_HCA left unset" % (profile, transport))
        if profile == "roce":
            indexes = sorted(set(
                p["roce_v2_gid_index"] for d in devices if d.get("transport") == "RoCE"
                for p in _active_ports(d) if p.get("roce_v2_gid_index") is not None))
            if indexes:
                env.append(("NCCL_IB_GID_INDEX", str(indexes[0]),
                            "GID %d is RoCE v2 with an IPv4 address on an up netdev" % indexes[0]))
                if len(indexes) > 1:
                    warnings.append("RoCE ports use different RoCE v2 GID indexes %s; NCCL takes one for all, %d chosen"
                                    % (indexes, indexes[0]))
            else:
                warnings.append("no RoCE v2 GID found on the ACTIVE RoCE ports; NCCL_IB_GID_INDEX left unset")
    if socket_ifname:
        env.append(("NCCL_SOCKET_IFNAME", socket_ifname, "bootstrap and socket traffic on %s" % socket_ifname))
    return env, warnings


# Superchips whose GPU reaches its Grace CPU over NVLink-C2C (nvidia-smi's product name contains one of these).
GRACE_SUPERCHIPS = ("GH200", "GB200", "GB300")
_MNNVL_REASON = (
    "the GPUs are in NVLink domain %s: NCCL crosses between the domain's nodes over the NVLink fabric (MNNVL); 1, not "
    "NCCL's default 2 (decide alone): NCCL 2.21 to 2.25 then stop with 'MNNVL is not supported on this system' "
    "instead of going over the network at a fraction of the fabric's bandwidth, 2.26 and later use it within one node "
    "too (src/init.cc, MNNVL_ENABLE)")
_CUMEM_REASON = (
    "MNNVL needs CUDA's cuMem allocations (src/mnnvl.cc: 'MNNVL requires cuMem to be enabled'): with them off NCCL "
    "leaves the fabric unused without a word; 1 where NCCL's default (-2) only turns them on when it detects support "
    "(src/misc/cudawrap.cc)")
_C2C_REASON = (
    "the NICs sit behind the Grace CPU, reached from the GPUs over NVLink-C2C (nvidia-smi topo -m: SYS for every "
    "GPU-NIC pair of this %s): NCCL 2.26 keeps GPUDirect RDMA off on that path unless NCCL_NET_GDR_C2C=1 ('GPU %%d / "
    "HCA %%lx connected to CPU %%d via C2C link'); 2.27 and later default to 1 (src/graph/paths.cc)")


def check_gpu(gpu):
    """gpu_facts' facts (or a node record's gpu) as nvlink_entries reads them; ValueError naming what is not."""
    if gpu is None:
        return {}
    if not isinstance(gpu, dict):
        raise ValueError("gpu must be gpu_facts' facts (a mapping), got %r" % (gpu,))
    for key, kind in (("fabric", dict), ("topology", dict), ("gpus", list)):
        if gpu.get(key) is not None and not isinstance(gpu[key], kind):
            raise ValueError("gpu.%s must be a %s (gpu_facts' facts), got %r" % (key, kind.__name__, gpu[key]))
    return gpu


def nics_behind_c2c(gpu):
    """The superchip's name when the node's GPUs reach every NIC through the Grace CPU over NVLink-C2C: a Grace
    superchip (GRACE_SUPERCHIPS) whose topo -m shows SYS for every GPU-NIC pair; else None."""
    names = [str((entry or {}).get("name") or "") for entry in gpu.get("gpus") or [] if isinstance(entry, dict)]
    chip = next((part for part in GRACE_SUPERCHIPS if names and part in names[0]), None)
    matrix = (gpu.get("topology") or {}).get("matrix") or {}
    cells = [cell for row, links in matrix.items() if str(row).startswith("GPU") and isinstance(links, dict)
             for column, cell in links.items() if not str(column).startswith("GPU")]
    return chip if chip and cells and all(cell == "SYS" for cell in cells) else None


def nvlink_entries(gpu, profile):
    """(name, value, reason) of the NCCL variables a node's NVLink calls for: NCCL_MNNVL_ENABLE and NCCL_CUMEM_ENABLE
    where its GPUs are in a multi-node NVLink domain (gpu_facts' fabric), NCCL_NET_GDR_C2C where its RDMA NICs sit
    behind the Grace CPU (an RDMA profile only: over sockets there is no GPUDirect RDMA)."""
    gpu = check_gpu(gpu)
    entries = []
    try:
        domain = nvlink.record_place(gpu.get("fabric"))["domain"] if gpu.get("fabric") else None
    except ValueError:
        domain = None      # a fabric fact that is not one: no domain, as gpu_facts says of an unreadable one
    if domain:
        entries += [("NCCL_MNNVL_ENABLE", "1", _MNNVL_REASON % domain), ("NCCL_CUMEM_ENABLE", "1", _CUMEM_REASON)]
    chip = nics_behind_c2c(gpu)
    if chip and profile in ("infiniband", "roce", "erdma", "acs_rdma_type1"):
        entries.append(("NCCL_NET_GDR_C2C", "1", _C2C_REASON % chip))
    return entries


def check_variables(names):
    """Warnings for names NCCL does not know, with the closest known name when there is one."""
    warnings = []
    for name in names:
        if not name.startswith("NCCL_") or name in KNOWN_VARIABLES or name in INSPECTOR_VARIABLES:
            continue
        close = difflib.get_close_matches(name, sorted(KNOWN_VARIABLES), n=1, cutoff=0.8)
        hint = "; did you mean %s?" % close[0] if close else ""
        warnings.append("%s is not an NCCL variable NCCL documents%s" % (name, hint))
    return warnings


def compute_env(profile, rdma_devices=None, socket_ifname=None, overrides=None, unset=None, gpu=None, inspector=None):
    """The NCCL environment for one node: {'env', 'profile', 'reasons', 'warnings'}.

    ``profile`` may be `auto`; ``gpu`` (gpu_facts' facts) adds what the node's NVLink calls for (nvlink_entries);
    ``inspector`` ({plugin, dump_dir, prom, interval}) switches the NCCL Inspector on (inspector_env); ``overrides``
    (dict) has the last word, ``unset`` (names) removes variables. Every variable comes with one line saying why it
    is there.
    """
    devices = check_devices(rdma_devices)
    if socket_ifname is not None:
        text.check_line("socket_ifname", socket_ifname)
    resolved, why = resolve_profile(profile, devices)
    if resolved in _FIXED:
        entries = list(_FIXED[resolved])
        warnings = []
    else:
        entries, warnings = _dynamic(resolved, devices, socket_ifname)
    entries = entries + nvlink_entries(gpu, resolved)
    if inspector:
        entries = entries + inspector_env(inspector)
    env = {}
    reasons = {}
    for name, value, reason in entries:
        env[name] = value
        reasons[name] = reason
    if not isinstance(overrides or {}, dict):
        raise ValueError("overrides must be a mapping of NCCL variables, got %r" % (overrides,))
    for name, value in (overrides or {}).items():
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise ValueError("override name %r is not an environment variable name" % (name,))
        if isinstance(value, (dict, list)):
            raise ValueError("overrides.%s must be a string, a number or a boolean, got %r" % (name, value))
        value = "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
        env[name] = text.check_line("overrides.%s" % name, value)
        before = _profile_value(entries, name)
        reasons[name] = "set by overrides" + (" (profile had %r)" % before if before is not None else "")
    for name in unset or []:
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise ValueError("unset entry %r is not an environment variable name" % (name,))
        env.pop(name, None)
        reasons.pop(name, None)
    for name, value in env.items():
        text.check_line(name, value)  # a device name from sysfs or a discovered interface lands here too
    warnings.extend(check_variables(list(env) + list(unset or [])))
    if env.get("NCCL_IB_DISABLE") == "1" and env.get("NCCL_IB_HCA"):
        warnings.append("NCCL_IB_DISABLE=1 turns IB off, so NCCL_IB_HCA=%s has no effect: drop one of them"
                        % env["NCCL_IB_HCA"])
    return {
        "profile": resolved,
        "profile_reason": why,
        "env": env,
        "reasons": ["%s=%s: %s" % (name, env[name], reasons[name]) for name in env],
        "warnings": warnings,
    }


def _profile_value(entries, name):
    for entry_name, value, reason in entries:
        if entry_name == name:
            return value
    return None


def render_conf(result):
    """/etc/nccl.conf content: KEY=VALUE lines NCCL reads at init, with the reasons as comments."""
    lines = ["# Managed by gpufabric.rdma (nccl_env, profile %s: %s)." % (result["profile"], result["profile_reason"])]
    lines += ["# %s" % reason for reason in result["reasons"]]
    lines += ["%s=%s" % (name, value) for name, value in result["env"].items()]
    return "\n".join(lines) + "\n"


def render_profile_script(result):
    """/etc/profile.d script: the same variables exported for login shells and job scripts."""
    lines = ["# Managed by gpufabric.rdma (nccl_env, profile %s)." % result["profile"]]
    lines += ["export %s=%s" % (name, shell_quote(value)) for name, value in result["env"].items()]
    return "\n".join(lines) + "\n"


def default_route_interface(proc_net_route):
    """Interface of the IPv4 default route from /proc/net/route text (None when there is none)."""
    for line in text.clean_lines(proc_net_route, "/proc/net/route")[1:]:
        fields = line.split()
        if len(fields) > 7 and fields[1] == "00000000" and fields[7] == "00000000":
            return fields[0]
    return None


# --- The NCCL Inspector (issue 57): NCCL's profiler plugin that writes each collective's time and bandwidth, per
# communicator and rank, for the straggler judge (judge/stragglers.py). Its own block: the variables it reads
# (NVIDIA/nccl plugins/profiler/inspector/inspector.cc, the table of its parameters) are known to it, not to NCCL.
INSPECTOR_PLUGIN = "libnccl-profiler-inspector.so"
INSPECTOR_VARIABLES = frozenset("""
NCCL_INSPECTOR_ENABLE NCCL_INSPECTOR_ENABLE_P2P NCCL_INSPECTOR_DUMP_THREAD_ENABLE
NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS NCCL_INSPECTOR_DUMP_DIR NCCL_INSPECTOR_DUMP_VERBOSE
NCCL_INSPECTOR_PROM_DUMP NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES NCCL_INSPECTOR_DUMP_COLL_RING_SIZE
NCCL_INSPECTOR_DUMP_P2P_RING_SIZE NCCL_INSPECTOR_COLL_POOL_SIZE NCCL_INSPECTOR_P2P_POOL_SIZE
NCCL_INSPECTOR_COMM_POOL_SIZE NCCL_INSPECTOR_POOL_GROW NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING
""".split())
# The plugin writes its Prometheus textfiles at most this often (inspector_prom.cc, MIN_PROM_INTERVAL, 30 s).
INSPECTOR_PROM_MIN_INTERVAL = 30
_INSPECTOR_KEYS = ("plugin", "dump_dir", "prom", "interval")
_ABSOLUTE = re.compile(r"^/[A-Za-z0-9_./+@:-]{0,4095}$")


def check_inspector(inspector):
    """{plugin, dump_dir, prom, interval} checked -> the same with defaults (prom false; interval 1 s for JSON lines,
    30 s for textfiles); ValueError naming the key, the value and what would be right."""
    if not isinstance(inspector, dict):
        raise ValueError("inspector must be a mapping of plugin, dump_dir, prom, interval, got %r" % (inspector,))
    unknown = sorted(set(inspector) - set(_INSPECTOR_KEYS))
    if unknown:
        raise ValueError("inspector has unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(_INSPECTOR_KEYS)))
    prom = inspector.get("prom", False)
    if not isinstance(prom, bool):
        raise ValueError("inspector.prom must be true or false, got %r" % (prom,))
    least = INSPECTOR_PROM_MIN_INTERVAL if prom else 1
    interval = inspector.get("interval")
    interval = least if interval is None else interval
    if isinstance(interval, bool) or not isinstance(interval, int) or not least <= interval <= 86400:
        raise ValueError("inspector.interval must be whole seconds from %d to 86400%s, got %r" % (
            least, " (the plugin writes its textfiles at most every 30 s)" if prom else "", interval))
    for key in ("plugin", "dump_dir"):
        value = inspector.get(key)
        if not isinstance(value, str) or not _ABSOLUTE.match(value) or "/../" in value + "/":
            raise ValueError("inspector.%s must be an absolute path of letters, digits and _./+@:-, got %r" % (key, value))
    if not inspector["plugin"].endswith(".so"):
        raise ValueError("inspector.plugin must be the plugin's shared library (%s), got %r"
                         % (INSPECTOR_PLUGIN, inspector["plugin"]))
    return {"plugin": inspector["plugin"], "dump_dir": inspector["dump_dir"].rstrip("/") or "/", "prom": prom,
            "interval": interval}


def inspector_env(inspector):
    """The Inspector's variables for a node's NCCL environment: [(name, value, reason)], one reason each."""
    checked = check_inspector(inspector)
    entries = [
        ("NCCL_PROFILER_PLUGIN", checked["plugin"], "NCCL loads the Inspector, its profiler plugin (NCCL 2.28 and "
                                                    "later), built against this NCCL by the nccl role"),
        ("NCCL_INSPECTOR_ENABLE", "1", "the plugin records nothing unless enabled"),
        ("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", str(checked["interval"] * 1000000),
         "written every %d s while the job runs (the plugin's default writes only when a communicator ends, and "
         "slow.yml reads running jobs)" % checked["interval"]),
    ]
    if checked["prom"]:
        entries += [
            ("NCCL_INSPECTOR_PROM_DUMP", "1",
             "Prometheus textfiles, one per GPU labelled with its Slurm job, instead of JSON lines (NCCL 2.30 and later)"),
            ("NCCL_INSPECTOR_DUMP_DIR", checked["dump_dir"],
             "node_exporter's textfile directory: the per-GPU figures are scraped as they are written"),
        ]
    else:
        entries.append(("NCCL_INSPECTOR_DUMP_DIR", checked["dump_dir"],
                        "one JSON-lines file per process; a job that names no folder of its own writes here (the "
                        "collection's Slurm jobs and Kubernetes workloads write into <this>/<job>)"))
    return entries


def inspector_job_env(inspector, job_dir):
    """The Inspector's variables for one job, {name: value}: the node's, its dump folder the job's own (``job_dir``:
    the Slurm templates give '<dump_dir>/$SLURM_JOB_ID' to the shell, Kubernetes '<dump_dir>/<workload>')."""
    env = dict((name, value) for name, value, reason in inspector_env(inspector))
    if not check_inspector(inspector)["prom"]:
        env["NCCL_INSPECTOR_DUMP_DIR"] = job_dir
    return env
