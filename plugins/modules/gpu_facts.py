#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Discover NVIDIA GPUs, their topology and GPUDirect peer memory
version_added: 0.1.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Runs C(nvidia-smi -q -x), C(nvidia-smi --query-gpu=index,compute_cap), C(nvidia-smi topo -m) and C(lspci -vvv) and
    reads C(/proc/modules), and returns the GPUs with their compute capability, the GPU/NIC topology
    matrix with the closest NICs of each GPU, whether NVLink connects the GPUs, and whether GPUDirect
    RDMA peer memory (C(nvidia_peermem) or the legacy C(nv_peer_mem)) is loaded.
  - Finds the CUDA toolkit (C(nvcc) on C(PATH), else C(/usr/local/cuda/bin/nvcc)) and its release, so
    the roles that build NCCL and nccl-tests read it from discovery instead of looking again.
  - Also lists the NVIDIA GPUs on the PCI bus (vendor C(0x10de), class C(0x0300xx) or C(0x0302xx) under
    C(<sysfs_root>/bus/pci/devices)) whether or not a driver answers for them, and which of them nvidia-smi does not
    list (C(pci_gpus) and C(not_answering)); readiness makes GPUs present but not answering a critical finding.
  - A host without C(nvidia-smi) gives C(present=false) and no failure, and so does a host
    where C(nvidia-smi) cannot talk to the driver, prints no XML, or does not answer within
    O(command_timeout) (the reason is then in C(error); a hung C(nvidia-smi) is killed).
  - Read-only; supports check mode.
options:
  nvidia_smi_path:
    description:
      - Path of C(nvidia-smi). Default is the one found on C(PATH).
    type: path
  procfs_root:
    description:
      - Root of the procfs tree read for loaded modules (C(<procfs_root>/modules)).
    type: path
    default: /proc
extends_documentation_fragment:
  - gpufabric.rdma.facts_module
  - gpufabric.rdma.command_timeout
  - gpufabric.rdma.sysfs_root
seealso:
  - module: gpufabric.rdma.rdma_devices
  - module: gpufabric.rdma.nccl_env
"""

EXAMPLES = r"""
- name: Discover GPUs
  gpufabric.rdma.gpu_facts:

- name: Check that every node has 8 GPUs
  ansible.builtin.assert:
    that: ansible_facts.gpu.count == 8
    fail_msg: "{{ inventory_hostname }} has {{ ansible_facts.gpu.count }} GPUs, expected 8"

- name: Show which NIC each GPU should use
  ansible.builtin.debug:
    var: ansible_facts.gpu.topology.gpu_nics
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: complex
  contains:
    gpu:
      description: What the node has.
      returned: always
      type: complex
      contains:
        present:
          description: Whether nvidia-smi ran and reported the driver.
          type: bool
          returned: always
        error:
          description: Why C(present) is false although nvidia-smi exists (its error, or that it did not answer in time).
          type: str
          returned: when nvidia-smi failed
          sample: "nvidia-smi did not answer within 30 s"
        nvidia_smi_problem:
          description:
            - How nvidia-smi gave no answer - C(how) (C(missing), C(hung) or C(failed)) and C(detail) - or null when it
              answered. Readiness judges it as the health check does (check C(nvidia_smi)) - critical where it hung or
              failed, and where it is missing on a node that GPUs are expected on (C(gpufabric_expected_gpu_count),
              or NVIDIA GPUs on the PCI bus).
          type: dict
          returned: always
          version_added: 0.9.0
          sample: {"how": "missing", "detail": "nvidia-smi not found"}
        driver_version:
          description: NVIDIA driver version.
          type: str
          returned: always
          sample: "580.159.04"
        cuda_version:
          description: Highest CUDA version the driver supports.
          type: str
          returned: always
          sample: "13.0"
        count:
          description: Number of GPUs attached.
          type: int
          returned: always
          sample: 8
        gpus:
          description:
            - One entry per GPU with C(index), C(name), C(uuid), C(pci_bus_id), C(serial), C(vbios_version),
              C(memory_total_mib), C(persistence_mode), C(mig_mode), C(ecc_enabled),
              C(ecc_uncorrected_volatile), C(power_limit_w), C(temperature_c) and C(compute_capability)
              (C(9.0); null when the driver cannot say).
          type: list
          elements: dict
          returned: always
        compute_capabilities:
          description: The distinct compute capabilities of the GPUs, in order.
          type: list
          elements: str
          returned: always
          sample: ["9.0"]
        nvcc_gencode:
          description: C(NVCC_GENCODE) for those capabilities (empty when unknown).
          type: str
          returned: always
          sample: "-gencode=arch=compute_90,code=sm_90"
        cuda_toolkit:
          description: C(nvcc) (its path or null), C(home) (the toolkit's prefix or null) and C(version) (C(13.0)).
          type: dict
          returned: always
          sample: {"nvcc": "/usr/local/cuda/bin/nvcc", "home": "/usr/local/cuda", "version": "13.0"}
        topology:
          description:
            - C(matrix) (row -> column -> link as printed, e.g. C(NV18), C(PIX), C(SYS)), C(nics)
              (C(NIC0) -> device name from the NIC legend), C(gpu_nics) (GPU -> closest NICs, best
              rank of PIX < PXB < PHB < NODE < SYS only), C(cpu_affinity) and C(numa_affinity) per GPU.
          type: dict
          returned: always
        nvlink:
          description: Whether any two GPUs are connected by NVLink.
          type: bool
          returned: always
        peermem:
          description: C(loaded) (bool) and C(module) (C(nvidia_peermem), C(nv_peer_mem) or null).
          type: dict
          returned: always
          sample: {"loaded": true, "module": "nvidia_peermem"}
        pcie:
          description:
            - The GPUDirect path through PCIe from C(lspci -vvv) (run as root) - C(links) (each GPU's and RDMA NIC's
              C(address), C(kind), C(current_width), C(max_width), C(current_speed) for a NIC, C(max_speed)),
              C(acs_redirect) (the PCIe bridges with ACS redirection on, C(address) and the controls C(on)),
              C(acs_loose), C(gpus), C(nics), C(devices); readiness judges it (C(pcie_acs), C(pcie_link)).
            - Only C(error) when C(lspci) is missing or fails; C(error) beside the rest when it ran without root.
          type: dict
          returned: always
          sample: {"links": [{"address": "0000:19:00.0", "kind": "gpu", "current_width": 16, "max_width": 16}],
                   "acs_redirect": [], "acs_loose": 0, "gpus": 1, "nics": 3, "devices": 13}
        pci_gpus:
          description:
            - The NVIDIA GPUs on the PCI bus, C(address), C(device) (PCI device id) and C(driver) (the bound driver's
              name, null when none), whether or not nvidia-smi answers.
          type: list
          elements: dict
          returned: always
          sample: [{"address": "0000:00:06.0", "device": "0x2330", "driver": null}]
        not_answering:
          description: The entries of C(pci_gpus) that nvidia-smi does not list (all of them when no driver answered).
          type: list
          elements: dict
          returned: always
          sample: [{"address": "0000:00:06.0", "device": "0x2330", "driver": null}]
        gpudirect:
          description:
            - What decides the GPUDirect RDMA path - C(kernel_module) (C(driver), C(open) - the open GPU kernel
              modules, which DMA-BUF needs; from C(/proc/driver/nvidia/version)), C(memory_peers) (the names under
              C(/sys/kernel/mm/memory_peers) - C(nvidia-peermem) is what NCCL looks for), C(iommu) (each GPU's IOMMU
              mode - C(passthrough), C(translated), C(off) - from its C(iommu_group/type)) and C(iommu_cmdline) (the
              boot's C(iommu), C(intel_iommu), C(amd_iommu) arguments). Readiness judges the path from these.
          type: dict
          returned: when GPUs were found
          sample:
            kernel_module: {driver: 590.48.01, open: true}
            memory_peers: []
            iommu: {"0000:19:00.0": passthrough}
            iommu_cmdline: {iommu: pt}
        fabric:
          description:
            - The node's place in the NVLink fabric from the Fabric and Platform Info fields of the same
              C(nvidia-smi -q -x) (GB200/GB300 NVL72 and other multi-node NVLink systems) - C(domain)
              (C(<ClusterUUID>/<CliqueId>) or null), C(cluster_uuid), C(clique_id), C(chassis_serial) (the rack's
              chassis a GB200/GB300 tray names; null on HGX boards and PCIe cards), C(slot_number), C(tray_index),
              C(host_id), and C(reason) when the domain or the chassis is null (HGX H100/H200 report an all-zero
              ClusterUUID, so no multi-node domain).
            - C(gpus) keeps each GPU's C(index), C(bus_id), C(name), registration C(state) and C(status),
              C(clique_id), C(cluster_uuid), C(health) (the Fabric Health rows) and C(platform) (Platform Info) -
              they change when the fabric does, as an RDMA port's state does. Readiness judges them
              (C(nvlink_fabric_*) findings) and groups the nodes by domain; role P(gpufabric.rdma.topology#role)
              makes a C(topology/block) block per domain from it.
          type: dict
          returned: when GPUs were found
          sample: {"domain": "8a6c0d1e-0000-0000-0000-000000000001/32766", "cluster_uuid": "8a6c0d1e-0000-0000-0000-000000000001",
                   "clique_id": 32766, "chassis_serial": "1823825185529", "slot_number": 5, "tray_index": 4,
                   "host_id": 1, "reason": null, "gpus": []}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import pcie_path
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands, files, sysfs
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu, iommu, lspci
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink

DEFAULT_NVCC = "/usr/local/cuda/bin/nvcc"


def _empty(peermem, toolkit, how="missing", error=None):
    """The facts of a node whose nvidia-smi gave no answer: ``how`` it did not (health.NVIDIA_SMI_FIXES' keys)."""
    facts = dict(present=False, driver_version=None, cuda_version=None, count=0, gpus=[],
                 topology=dict(matrix={}, nics={}, gpu_nics={}, cpu_affinity={}, numa_affinity={}),
                 nvlink=False, peermem=peermem, compute_capabilities=[], nvcc_gencode="", cuda_toolkit=toolkit,
                 nvidia_smi_problem={"how": how, "detail": error or "nvidia-smi not found"})
    if error:
        facts["error"] = error
    return facts


def _pcie(runner):
    """lspci -vvv kept for the GPUDirect path (pcie_path.summary), or {'error': why} when it could not be read."""
    tool = runner.which("lspci")
    if not tool:
        return {"error": "lspci is not installed (pciutils)"}
    result = runner.run([tool, "-vvv"])
    if not result.ok:
        return {"error": result.describe()}
    try:
        kept = pcie_path.summary(lspci.parse_lspci(result.stdout))
    except ValueError as exc:
        return {"error": "lspci -vvv: %s" % exc}
    if "<access denied>" in result.stdout:
        kept["error"] = "lspci ran without root: the PCIe capabilities (ACS, links) were not readable"
    return kept


def _gpudirect(procfs_root, sysfs_root, pci_gpus):
    """What decides the GPUDirect RDMA path (judge/gpudirect.py): the GPU kernel module (open or proprietary), the
    memory peers NCCL looks for (nvidia-peermem, nv_mem), each GPU's IOMMU mode and the boot's IOMMU arguments."""
    memory_peers = os.path.join(sysfs_root, "kernel", "mm", "memory_peers")
    pci = os.path.join(sysfs_root, "bus", "pci", "devices")
    groups = dict((item["address"], files.read_attr(os.path.join(pci, item["address"], "iommu_group", "type"))
                   if os.path.exists(os.path.join(pci, item["address"], "iommu_group")) else None) for item in pci_gpus)
    return {"kernel_module": gpu.parse_proc_nvidia_version(files.read_text(os.path.join(procfs_root, "driver", "nvidia", "version"))),
            "memory_peers": sysfs.listdir(memory_peers),
            "iommu": iommu.mode_from_groups(groups),
            "iommu_cmdline": iommu.parse_cmdline(files.read_text(os.path.join(procfs_root, "cmdline")) or "")}


def _cuda_toolkit(runner):
    """The nvcc on PATH (else the usual prefix), its toolkit's prefix and release."""
    nvcc = runner.which("nvcc")
    if not nvcc and os.path.isfile(DEFAULT_NVCC) and os.access(DEFAULT_NVCC, os.X_OK):
        nvcc = DEFAULT_NVCC
    if not nvcc:
        return {"nvcc": None, "home": None, "version": None}
    result = runner.run([nvcc, "--version"])
    home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return {"nvcc": nvcc, "home": home, "version": gpu.parse_nvcc_version(result.stdout) if result.ok else None}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            procfs_root=dict(type="path", default="/proc"),
            sysfs_root=dict(type="path", default="/sys"),
            **commands.ARGUMENT_SPEC
        ),
        supports_check_mode=True,
    )
    runner = commands.module_runner(module)
    peermem = gpu.parse_peermem(files.read_text(os.path.join(module.params["procfs_root"], "modules")) or "")
    toolkit = _cuda_toolkit(runner)
    pci_gpus = sysfs.read_pci_gpus(sysfs.checked_root(module))
    pcie = _pcie(runner)

    def done(facts):
        facts.update(pci_gpus=pci_gpus, not_answering=gpu.pci_gpus_not_answering(pci_gpus, facts), pcie=pcie)
        module.exit_json(changed=False, ansible_facts=dict(gpu=facts))

    smi = module.params["nvidia_smi_path"]
    if smi:
        if not (os.path.isfile(smi) and os.access(smi, os.X_OK)):
            module.fail_json(msg="nvidia_smi_path %s is not an executable file" % smi)
    else:
        smi = runner.which("nvidia-smi")
    if not smi:
        done(_empty(peermem, toolkit))

    result = runner.run([smi, "-q", "-x"])
    facts = None
    if result.ok:
        try:
            facts = gpu.parse_nvidia_smi_xml(result.stdout)
        except ValueError as exc:
            message = "%s -q -x printed no usable XML: %s" % (smi, exc)
    else:
        message = result.describe()
    if facts is None:
        module.warn(message)
        done(_empty(peermem, toolkit, "hung" if result.timed_out else "failed", message))

    try:   # the same XML's Fabric and Platform Info: the node's domain, chassis and tray, each GPU's registration
        fabric = nvlink.fabric_fact(result.stdout)
    except ValueError as exc:
        fabric = dict(dict.fromkeys(nvlink.PLACE_KEYS), gpus=[], reason="the Fabric fields could not be read: %s" % exc)

    topology = dict(matrix={}, nics={}, gpu_nics={}, cpu_affinity={}, numa_affinity={})
    result = runner.run([smi, "topo", "-m"])
    if result.ok:
        try:
            topology = gpu.parse_nvidia_topo(result.stdout)
        except ValueError as exc:
            module.warn("nvidia-smi topo -m: %s; topology left empty" % exc)
    else:
        module.warn("%s; topology left empty" % result.describe())

    result = runner.run([smi, "--query-gpu=index,compute_cap", "--format=csv,noheader"])
    caps = gpu.parse_compute_caps(result.stdout) if result.ok else {}
    for entry in facts["gpus"]:
        entry["compute_capability"] = caps.get(entry["index"])  # nvidia-smi's index: the order -q -x lists them
    distinct = []
    for cap in (entry["compute_capability"] for entry in facts["gpus"]):
        if cap and cap not in distinct:
            distinct.append(cap)
    facts.update(present=True, nvidia_smi_problem=None, topology=topology, nvlink=gpu.has_nvlink(topology), peermem=peermem,
                 compute_capabilities=distinct, nvcc_gencode=gpu.nvcc_gencode(distinct), cuda_toolkit=toolkit,
                 fabric=fabric, gpudirect=_gpudirect(module.params["procfs_root"], module.params["sysfs_root"], pci_gpus))
    done(facts)


if __name__ == "__main__":
    main()
