# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Reading a sysfs tree: RDMA devices and their ports, port error counters, netdev attributes.

Host access, standard library only. Every reader takes the tree's root, so a captured copy of /sys
(tests, a node's capture) reads like the live one. What the attributes mean is decided by the pure
builders in rdma.py; this module only reads files and lists directories.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import port_traffic, rates
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu, pcie_sysfs, rdma
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.files import read_attr

# InfiniBand port counters that only rise when a link misbehaves (sysfs ports/N/counters).
ERROR_COUNTERS = ("link_downed", "symbol_error", "link_error_recovery", "port_rcv_errors",
                  "local_link_integrity_errors", "excessive_buffer_overrun_errors")
_DEVICE_ATTRS = ("node_type", "fw_ver", "hca_type", "board_id", "node_guid", "sys_image_guid")
_PORT_ATTRS = ("link_layer", "state", "phys_state", "rate", "lid", "sm_lid")


def checked_root(module):
    """A module's sysfs_root option; a warning naming it when it does not exist (a mistyped capture path)."""
    root = module.params["sysfs_root"]
    if not os.path.isdir(root):
        module.warn("sysfs_root %s does not exist: no RDMA device can be read there" % root)
    return root


def listdir(path):
    """Sorted names in a directory; [] when it does not exist or cannot be read."""
    try:
        return sorted(os.listdir(path))
    except (IOError, OSError):
        return []


def shown(name):
    """A name read from the file system as text that can be written anywhere: bytes that are not UTF-8 (which Python
    keeps as lone surrogates, and which no JSON, hash or webhook takes) escaped as \\xff. Paths keep the real name."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _link_name(path):
    return shown(os.path.basename(os.path.realpath(path))) if os.path.islink(path) else None


def _port_attrs(port_dir):
    attrs = dict((name, read_attr(os.path.join(port_dir, name))) for name in _PORT_ATTRS)
    attrs["gids"] = dict((shown(index), (read_attr(os.path.join(port_dir, "gids", index)),
                                         read_attr(os.path.join(port_dir, "gid_attrs", "types", index)),
                                         read_attr(os.path.join(port_dir, "gid_attrs", "ndevs", index))))
                         for index in listdir(os.path.join(port_dir, "gids")))
    return attrs


def device_attrs(sysfs_root, name):
    """Everything rdma.device_from_sysfs needs about one device, as the texts sysfs holds."""
    device_dir = os.path.join(sysfs_root, "class", "infiniband", name)
    attrs = dict((attr, read_attr(os.path.join(device_dir, attr))) for attr in _DEVICE_ATTRS)
    attrs.update(
        uevent=read_attr(os.path.join(device_dir, "device", "uevent")),
        driver_link=_link_name(os.path.join(device_dir, "device", "driver")),
        pci_link=_link_name(os.path.join(device_dir, "device")),
        has_parent=read_attr(os.path.join(device_dir, "parent")) is not None,
        numa_node=read_attr(os.path.join(device_dir, "device", "numa_node")),
        vendor=read_attr(os.path.join(device_dir, "device", "vendor")),
        ports=dict((shown(port), _port_attrs(os.path.join(device_dir, "ports", port)))
                   for port in listdir(os.path.join(device_dir, "ports"))),
        nets=dict((shown(net), read_attr(os.path.join(device_dir, "device", "net", net, "dev_port")))
                  for net in listdir(os.path.join(device_dir, "device", "net"))),
    )
    netdevs = set(ndev for port in attrs["ports"].values() for dummy, dummy2, ndev in port["gids"].values() if ndev)
    attrs["netdev_operstate"] = dict((netdev, read_attr(os.path.join(sysfs_root, "class", "net", netdev, "operstate")))
                                     for netdev in netdevs)
    return attrs


def read_rdma_devices(sysfs_root="/sys"):
    """Every RDMA device under <sysfs_root>/class/infiniband, sorted by name ([] when none)."""
    base = os.path.join(sysfs_root, "class", "infiniband")
    return [rdma.device_from_sysfs(shown(name), device_attrs(sysfs_root, name)) for name in listdir(base)]


def read_port_counters(sysfs_root="/sys", names=ERROR_COUNTERS):
    """{'mlx5_0/1': {'link_downed': 0, ...}} from class/infiniband/*/ports/*/counters."""
    base = os.path.join(sysfs_root, "class", "infiniband")
    readings = {}
    for device in listdir(base):
        ports = os.path.join(base, device, "ports")
        for port in listdir(ports):
            values = {}
            for name in names:
                value = count(read_attr(os.path.join(ports, port, "counters", name)))
                if value is not None:
                    values[name] = value
            if values:
                readings["%s/%s" % (shown(device), shown(port))] = values
    return readings


def read_data_counters(sysfs_root="/sys"):
    """Every RDMA port's data counters: {'mlx5_0/1': {'port_xmit_data': ..., 'port_rcv_data': ...}, ...}.

    counters/port_xmit_data and port_rcv_data (words of 4 bytes) and, where a driver keeps bytes in
    hw_counters (erdma, efa: tx_bytes, rx_bytes, ...), those; port_traffic.port_counter_deltas reads both.
    """
    readings = read_port_counters(sysfs_root, tuple(port_traffic.WORD_COUNTERS))
    for target, values in read_hw_counters(sysfs_root, port_traffic.BYTE_COUNTERS).items():
        readings.setdefault(target, {}).update(values)
    return readings


def read_hw_counters(sysfs_root, names):
    """{'mlx5_0/1': {name: value}} of the ports' hw_counters among ``names`` that read as numbers."""
    readings = {}
    base = os.path.join(sysfs_root, "class", "infiniband")
    for device in listdir(base):
        for port in listdir(os.path.join(base, device, "ports")):
            for name in names:
                value = count(read_attr(os.path.join(base, device, "ports", port, "hw_counters", name)))
                if value is not None:
                    readings.setdefault("%s/%s" % (shown(device), shown(port)), {})[name] = value
    return readings


def count(value):
    """A sysfs counter or size as an int: ASCII digits only, at most 20 of them (a 64-bit counter); else None.
    ('²'.isdigit() is true and int() of 5,000 digits raises: neither is a reading.)"""
    if value is None or not 0 < len(value) <= 20 or not all("0" <= c <= "9" for c in value):
        return None
    return int(value)


def netdev_mtus(sysfs_root, netdevs):
    """{netdev: MTU} for the netdevs whose class/net/<name>/mtu reads as a number."""
    mtus = {}
    for netdev in netdevs:
        value = count(read_attr(os.path.join(sysfs_root, "class", "net", netdev, "mtu")))
        if value is not None:
            mtus[netdev] = value
    return mtus


def read_grey_counters(sysfs_root="/sys", netdevs=()):
    """One grey-failure sample's counters: {'mlx5_0/1|symbol_error': 3, 'eth2|carrier_changes': 1, ...}.

    Port error counters (ports/N/counters), RoCE hw_counters (ports/N/hw_counters) and each netdev's
    carrier_changes.
    """
    counters = {}
    for target, values in read_port_counters(sysfs_root).items():
        for name, value in values.items():
            counters["%s|%s" % (target, name)] = value
    for target, values in read_hw_counters(sysfs_root, rates.HW_COUNTERS).items():
        for name, value in values.items():
            counters["%s|%s" % (target, name)] = value
    for netdev in netdevs:
        value = count(read_attr(os.path.join(sysfs_root, "class", "net", netdev, "carrier_changes")))
        if value is not None:
            counters["%s|carrier_changes" % netdev] = value
    return counters


def _pci_link(sysfs_root, address, kind, name):
    device = os.path.join(sysfs_root, "bus", "pci", "devices", address)
    return {"address": address, "kind": kind, "name": name,
            "current_width": pcie_sysfs.parse_link_width(read_attr(os.path.join(device, "current_link_width"))),
            "max_width": pcie_sysfs.parse_link_width(read_attr(os.path.join(device, "max_link_width"))),
            "current_speed": pcie_sysfs.parse_link_speed(read_attr(os.path.join(device, "current_link_speed"))),
            "max_speed": pcie_sysfs.parse_link_speed(read_attr(os.path.join(device, "max_link_speed")))}


def read_pci_gpus(sysfs_root="/sys"):
    """The NVIDIA GPUs on the PCI bus (gpu.is_nvidia_gpu), whether or not a driver answers for them: address,
    device id and the bound driver's name (None when no driver has bound it)."""
    pci = os.path.join(sysfs_root, "bus", "pci", "devices")
    return [{"address": address, "device": read_attr(os.path.join(pci, address, "device")),
             "driver": _link_name(os.path.join(pci, address, "driver"))}
            for address in listdir(pci)
            if gpu.is_nvidia_gpu(read_attr(os.path.join(pci, address, "vendor")),
                                 read_attr(os.path.join(pci, address, "class")))]


def read_pcie_links(sysfs_root="/sys"):
    """PCIe links of the NVIDIA GPUs (read_pci_gpus) and the RDMA NICs' functions."""
    links = [_pci_link(sysfs_root, item["address"], "gpu", "GPU@%s" % item["address"]) for item in read_pci_gpus(sysfs_root)]
    pci = os.path.join(sysfs_root, "bus", "pci", "devices")
    base = os.path.join(sysfs_root, "class", "infiniband")
    for device in listdir(base):
        address = _link_name(os.path.join(base, device, "device"))
        if address and os.path.isdir(os.path.join(pci, address)):
            links.append(_pci_link(sysfs_root, address, "nic", device))
    return links
