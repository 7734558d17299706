# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The GPUDirect path through PCIe, judged from ``lspci -vvv`` (parse/lspci.py):

- **pcie_acs** (warning): PCIe bridges with ACS redirection on (``ACSCtl: SrcValid+``, ``ReqRedir+`` or
  ``CmpltRedir+``) on a bare-metal node with GPUs and RDMA NICs: peer-to-peer traffic between a GPU and a NIC below
  them goes up to the root complex and back, which costs GPUDirect RDMA much of its bandwidth without an error
  (NCCL's troubleshooting guide: disable ACS on bare metal). A virtual machine needs ACS for isolation: not judged.
- **pcie_link** (warning): a GPU or NIC link trained down, judged as the health check judges it from sysfs
  (rates.pcie_findings: fewer lanes for either, a lower speed for a NIC; an idle GPU lowers its speed on its own).

Pure, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import finding
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import rates
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import lspci

SHOWN = 8
ACS_FIX = ("disable ACS redirection on those bridges for bare metal (the BIOS's ACS option, or at boot "
           "`setpci -s <bridge> ECAP_ACS+0x6.w=0000` for each; NCCL's troubleshooting guide), then run nccl-tests again")


def links(parsed):
    """The GPUs' and NICs' links as the health check judges them (rates.pcie_findings: one owner of that judgement)."""
    out = []
    for device in parsed.get("devices") or []:
        kind = "gpu" if lspci.is_gpu(device) else ("nic" if lspci.is_nic(device) else None)
        if kind:
            cap, sta = device.get("lnk_cap") or {}, device.get("lnk_sta") or {}
            # a GPU's speed is not kept: idle GPUs lower it on their own (the record would change every run)
            out.append({"address": device["address"], "kind": kind, "name": None, "current_width": sta.get("width"),
                        "max_width": cap.get("width"), "current_speed": sta.get("speed_gts") if kind == "nic" else None,
                        "max_speed": cap.get("speed_gts")})
    return out


def summary(parsed):
    """What the node record keeps of lspci -vvv (gpu_facts' ``pcie``): the GPUs' and NICs' links, the bridges with ACS
    redirection on (address and the controls on), how many GPUs and NICs, and ACSCtl lines outside any device."""
    devices = parsed.get("devices") or []
    return {"links": links(parsed),
            "acs_redirect": [{"address": d["address"], "on": lspci.acs_redirects(d.get("acs_ctl"))} for d in devices
                             if d.get("bridge") and lspci.acs_redirects(d.get("acs_ctl"))],
            "acs_loose": sum(1 for flags in parsed.get("acs_lines") or [] if lspci.acs_redirects(flags)),
            "gpus": sum(1 for d in devices if lspci.is_gpu(d)), "nics": sum(1 for d in devices if lspci.is_nic(d)),
            "devices": len(devices)}


def findings(host, kept, virtualized=False):
    """A node's summary() (or parse_lspci's result) -> findings (pcie_acs, pcie_link)."""
    kept = summary(kept) if "acs_lines" in kept else kept
    redirecting = kept.get("acs_redirect") or []
    out = []
    count = len(redirecting) + (kept.get("acs_loose") or 0)
    on_gpu_node = (kept.get("gpus") and kept.get("nics")) or not kept.get("devices")
    if count and not virtualized and on_gpu_node:
        named = ["%s (%s)" % (r["address"], " ".join(r["on"])) for r in redirecting[:SHOWN]]
        detail = "ACS redirects peer-to-peer traffic on %d PCIe bridge(s)%s: GPUDirect RDMA between a GPU and a NIC " \
                 "below them goes through the root complex" % (count, ": " + ", ".join(named) if named else "")
        if len(redirecting) > SHOWN:
            detail += " and %d more" % (len(redirecting) - SHOWN)
        out.append(finding("pcie_acs", "warning", host, detail, ACS_FIX))
    return out + rates.pcie_findings(host, kept.get("links") or [])
