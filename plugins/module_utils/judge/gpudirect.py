# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Which GPUDirect RDMA path a node gives NCCL, and why, by NCCL's own conditions (NVIDIA/nccl
``src/transport/net_ib.cc``: ``ncclIbDmaBufSupport`` and ``ncclIbGdrSupport``; ``src/init.cc``: the GPU's dma-buf
check):

- **DMA-BUF** (NCCL tries it first): ``NCCL_DMABUF_ENABLE`` not 0; a CUDA driver of 11.7 or later; the GPU exporting
  dma-buf (CUDA's ``CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED``, 1 only with NVIDIA's open GPU kernel modules: the
  proprietary ones report 0); a kernel that registers dma-buf memory (``ibv_reg_dmabuf_mr``, Linux 5.12 and later).
- **nvidia-peermem** (the fallback): ``/sys/kernel/mm/memory_peers/nvidia-peermem`` (or ``nv_mem`` of the older
  nv_peer_mem) present.
- Neither: NCCL moves GPU buffers through host memory - a finding (``gpudirect_path``).

And the IOMMU: GPUDirect wants it in passthrough or off on bare metal; translated DMA for the GPUs or NICs routes
every peer transfer through the IOMMU (``iommu_mode``). A virtual machine is not judged on it. Pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge.versions import version_key

DMABUF_KERNEL = (5, 12)
DMABUF_CUDA = (11, 7)
PEERMEM_NAMES = ("nvidia-peermem", "nv_mem")


def _version(text, parts=2):
    """'6.8.0-45-generic' -> (6, 8): the first ``parts`` numbers of versions.version_key, None with fewer."""
    key = version_key(text) or ()
    return key[:parts] if len(key) >= parts else None


def path(inputs, kernel):
    """inputs: gpu_facts' ``gpudirect`` ({kernel_module: {driver, open} or None, memory_peers: [names] or None,
    cuda_version, nccl_dmabuf: the NCCL_DMABUF_ENABLE the node exports or None}); kernel: the release ('6.8.0-45').

    -> {path: dmabuf|peermem|none|unknown, why, dmabuf_missing: [what DMA-BUF lacks], dmabuf_unknown: [what is not
    known], peermem: True/False/None}."""
    inputs = inputs or {}
    missing, unknown = [], []
    module = inputs.get("kernel_module")
    if inputs.get("nccl_dmabuf") is not None and str(inputs["nccl_dmabuf"]).strip() == "0":
        missing.append("NCCL_DMABUF_ENABLE=0")
    release = _version(kernel)
    if release is None:
        unknown.append("the kernel release")
    elif release < DMABUF_KERNEL:
        missing.append("kernel %s (dma-buf memory regions need 5.12 or later)" % kernel)
    cuda = _version(inputs.get("cuda_version"))
    if cuda is None:
        unknown.append("the driver's CUDA version")
    elif cuda < DMABUF_CUDA:
        missing.append("CUDA driver %s (11.7 or later)" % inputs.get("cuda_version"))
    if module is None:
        unknown.append("the GPU kernel module (/proc/driver/nvidia/version)")
    elif not module.get("open"):
        missing.append("the proprietary GPU kernel module %s (dma-buf needs the open one)" % module.get("driver"))
    peers = inputs.get("memory_peers")
    peermem = None if peers is None else any(name in PEERMEM_NAMES for name in peers)
    out = {"dmabuf_missing": missing, "dmabuf_unknown": unknown, "peermem": peermem}
    if not missing and not unknown:
        out.update(path="dmabuf", why="DMA-BUF: open GPU kernel module, kernel %s, CUDA driver %s%s" % (
            kernel, inputs.get("cuda_version"), "; nvidia-peermem is loaded too (the fallback)" if peermem else ""))
    elif peermem:
        out.update(path="peermem", why="nvidia-peermem; not DMA-BUF: %s" % "; ".join(missing + ["unknown: %s" % u for u in unknown]))
    elif missing and peermem is False:
        out.update(path="none", why="neither DMA-BUF (%s) nor nvidia-peermem" % "; ".join(missing))
    else:
        out.update(path="unknown", why="unknown: %s" % "; ".join(unknown + (["memory peers (sysfs)"] if peermem is None else [])))
    return out


def findings(host, judged, iommu_modes, has_rdma, virtual):
    """``gpudirect_path`` (warning) when a node with GPUs and RDMA NICs has neither path; ``iommu_mode`` (warning) when
    a bare-metal node's GPUs run translated DMA (iommu_modes: {pci address: mode})."""
    out = []
    if has_rdma and judged.get("path") == "none":
        out.append(finding("gpudirect_path", "warning", host, "no GPUDirect RDMA: %s; NCCL stages every transfer through "
                           "host memory" % judged["why"],
                           "load nvidia-peermem (the peermem role), or move to the open GPU kernel modules on a kernel of "
                           "5.12 or later for DMA-BUF"))
    translated = sorted(a for a, mode in (iommu_modes or {}).items() if mode == "translated")
    if translated and not virtual:
        out.append(finding("iommu_mode", "warning", host, "the IOMMU translates DMA for %d GPU(s) (%s): every GPUDirect "
                           "transfer is remapped, and peer traffic may go through the root complex"
                           % (len(translated), ", ".join(translated[:4])),
                           "boot with iommu=pt (passthrough), or turn the IOMMU off in the BIOS for bare-metal GPU nodes"))
    return out
