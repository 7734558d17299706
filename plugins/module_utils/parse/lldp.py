# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""LLDP neighbours as lldpd prints them: `lldpcli show neighbors` (or lldpctl) in its text, `-f json`,
`-f json0` and `-f keyvalue` forms (Ethernet / RoCE), one neighbour per local interface.

Pure functions, standard library only, Python 3.8. The parser reads line by line with anchored regular
expressions whose repetitions cannot overlap, so its time is linear in the input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError, short
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key


_LLDP_IFACE_RE = re.compile(r"^Interface:\s+([^,\s]+),\s*via:\s*([A-Za-z0-9-]+)")
_LLDP_FIELD_RE = re.compile(r"^\s+([A-Za-z][A-Za-z0-9 -]{0,30}?):\s*(.*)$")
_ID_TYPES = ("mac", "ifname", "ifalias", "local", "ip", "net", "unhandled")


def _lldp_id(value):
    """'mac 52:84:0d:36:d4:c8' -> ('mac', '52:84:0d:36:d4:c8')."""
    parts = value.split(None, 1)
    if len(parts) == 2 and parts[0] in _ID_TYPES:
        return parts[0], parts[1].strip()
    return None, value.strip() or None


def _neighbour(chassis_name=None, chassis_id=None, chassis_id_type=None, port_id=None, port_id_type=None,
               port_description=None, via=None):
    return {"chassis_name": chassis_name, "chassis_id": chassis_id, "chassis_id_type": chassis_id_type,
            "port_id": port_id, "port_id_type": port_id_type, "port_description": port_description, "via": via}


def _lldp_text(lines):
    interfaces = {}
    current = section = None
    for line in lines:
        match = _LLDP_IFACE_RE.match(line)
        if match:
            current = _neighbour(via=match.group(2))
            interfaces.setdefault(match.group(1), []).append(current)
            section = None
            continue
        if current is None:
            continue
        stripped = line.strip()
        if stripped in ("Chassis:", "Port:"):
            section = stripped[:-1].lower()
            continue
        match = _LLDP_FIELD_RE.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "ChassisID":
            current["chassis_id_type"], current["chassis_id"] = _lldp_id(value)
        elif key == "SysName" and section == "chassis":
            current["chassis_name"] = value or None
        elif key == "PortID":
            current["port_id_type"], current["port_id"] = _lldp_id(value)
        elif key == "PortDescr":
            current["port_description"] = value or None
        elif key in ("LLDP-MED", "VLAN", "PMD autoneg", "Unknown TLVs"):
            section = key
    return interfaces


_KV_KEYS = ("via", "rid", "age", "chassis", "port", "vlan", "ppvid", "pi", "lldp-med", "unknown-tlvs")


def _lldp_keyvalue(lines):
    interfaces = {}
    for line in lines:
        line = line.strip()
        if not line.startswith("lldp.") or "=" not in line:
            continue
        head, value = line.split("=", 1)
        parts = head.split(".")
        # The interface name may hold dots (eth0.100): it ends where a known key begins.
        at = next((i for i in range(2, len(parts)) if parts[i] in _KV_KEYS), None)
        if at is None:
            continue
        ifname, key = ".".join(parts[1:at]), ".".join(parts[at:])
        current = interfaces.setdefault(ifname, [_neighbour()])[0]
        if key == "via":
            current["via"] = current["via"] or value
        elif key == "chassis.name":
            current["chassis_name"] = current["chassis_name"] or value or None
        elif key.startswith("chassis.") and key[8:] in _ID_TYPES and current["chassis_id"] is None:
            current["chassis_id_type"], current["chassis_id"] = key[8:], value
        elif key.startswith("port.") and key[5:] in _ID_TYPES and current["port_id"] is None:
            current["port_id_type"], current["port_id"] = key[5:], value
        elif key == "port.descr":
            current["port_description"] = current["port_description"] or value or None
    return interfaces


def _json_values(node):
    """json0 wraps every value as [{"value": x}]; json gives x."""
    if isinstance(node, list) and node and isinstance(node[0], dict) and "value" in node[0]:
        return node[0]["value"]
    return node


def _json_id(node):
    node = node[0] if isinstance(node, list) and node else node
    if isinstance(node, dict):
        return node.get("type"), node.get("value")
    if isinstance(node, str):
        return None, node
    return None, None


def _lldp_json(document):
    lldp = document.get("lldp") if isinstance(document, dict) else None
    if isinstance(lldp, list):          # json0: "lldp": [{"interface": [...]}]
        lldp = lldp[0] if lldp else {}
    if not isinstance(lldp, dict):
        raise TopologyError("lldpcli JSON has no 'lldp' object (got %s)" % type(document).__name__)
    raw = lldp.get("interface") or []
    entries = []
    if isinstance(raw, dict):           # one interface: {"eth0": {...}}
        entries = list(raw.items())
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and "name" in item and isinstance(item.get("name"), str):
                entries.append((item["name"], item))           # json0
            elif isinstance(item, dict) and len(item) == 1:
                entries.extend(item.items())                    # json with several interfaces
    interfaces = {}
    for ifname, body in entries:
        if not isinstance(body, dict):
            continue
        current = _neighbour(via=_json_values(body.get("via")))
        chassis = body.get("chassis")
        if isinstance(chassis, list):                            # json0
            chassis = chassis[0] if chassis else {}
            current["chassis_name"] = _json_values(chassis.get("name")) if isinstance(chassis, dict) else None
        elif isinstance(chassis, dict) and len(chassis) == 1 and "id" not in chassis:
            current["chassis_name"], chassis = list(chassis.items())[0]   # keyed by SysName
        if isinstance(chassis, dict):
            current["chassis_id_type"], current["chassis_id"] = _json_id(chassis.get("id"))
        port = body.get("port")
        port = port[0] if isinstance(port, list) and port else port
        if isinstance(port, dict):
            current["port_id_type"], current["port_id"] = _json_id(port.get("id"))
            current["port_description"] = _json_values(port.get("descr"))
        interfaces.setdefault(ifname, []).append(current)
    return interfaces


def parse_lldp_neighbors(text):
    """`lldpcli show neighbors` (or lldpctl) in its text, `-f json`, `-f json0` or `-f keyvalue` form ->
    {format, interfaces: {local interface: {chassis_name, chassis_id, chassis_id_type, port_id,
    port_id_type, port_description, via, neighbours}}, warnings}.

    chassis_name is the neighbour's SysName (None when the switch sends none: then chassis_id names it);
    neighbours counts the neighbours seen on that interface (more than one: a hub, or two protocols)."""
    if isinstance(text, dict):
        found, kind = _lldp_json(text), "json"
    else:
        cleaned = _text.clean(text, "lldpcli output")
        stripped = cleaned.strip()
        if stripped.startswith("{"):
            try:
                document = json.loads(stripped)
            except ValueError as exc:
                raise TopologyError("lldpcli -f json output is not JSON (truncated?): %s" % exc)
            found, kind = _lldp_json(document), "json"
        elif re.search(r"^lldp\.[^.=\s]+\.", stripped, re.M):
            found, kind = _lldp_keyvalue(stripped.splitlines()), "keyvalue"
        elif re.search(r"^Interface:", stripped, re.M) or "LLDP neighbors" in stripped:
            found, kind = _lldp_text(stripped.splitlines()), "text"
        elif not stripped:
            found, kind = {}, "empty"
        else:
            raise TopologyError("not lldpcli output (no 'Interface:' block, no 'lldp.' key, no JSON): %r"
                                % short(stripped.splitlines()[0]))
    interfaces, warnings = {}, []
    for ifname in sorted(found, key=natural_key):
        neighbours = found[ifname]
        first = dict(neighbours[0])
        first["neighbours"] = len(neighbours)
        if len(neighbours) > 1:
            warnings.append("%s sees %d LLDP neighbours; the first (%s) is used"
                            % (ifname, len(neighbours), first["chassis_name"] or first["chassis_id"]))
        if not first["chassis_name"]:
            warnings.append("%s: the neighbour sends no system name; its chassis ID %s stands for it"
                            % (ifname, first["chassis_id"]))
        interfaces[ifname] = first
    return {"format": kind, "interfaces": interfaces, "warnings": warnings}
