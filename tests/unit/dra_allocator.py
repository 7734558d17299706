"""A small stand-in for the Kubernetes scheduler's DRA allocator, for tests: the CEL that claims and DeviceClasses
write (the device's driver and attributes, has(), ==, in [...], &&, ||, !) evaluated on the devices of real
ResourceSlices, and a claim's requests allocated on one node with its matchAttribute constraints.

Not a CEL implementation: it reads the forms plan/k8s_dra.py and the drivers' published examples write and refuses
anything else. As in Kubernetes, a reference to an attribute a device does not have is an error that aborts the
allocation (CelError), not a mismatch; && and || are read left to right, so an unguarded reference fails here even
where CEL's commutative && might absorb it: stricter than the scheduler, never looser.
"""

import itertools
import re

import yaml

_ATTR = re.compile(r"""device\.attributes\[["']([^"']+)["']\](?:\.([A-Za-z][A-Za-z0-9]*)|\[["']([A-Za-z][A-Za-z0-9]*)["']\])""")
_HAS = re.compile(r'has\(_a\("([^"]+)", "([^"]+)"\)\)')
_DOMAIN_IN = re.compile(r"""["']([^"']+)["'] in device\.attributes""")
_ALLOWED = re.compile(r"^[\sA-Za-z0-9_.\"'(),\[\]=<>:+\-]*$")


class CelError(Exception):
    """What aborts an allocation: an attribute the device does not have, or an expression this reader cannot read."""


def load(text):
    """The devices of ResourceSlices (one, several, or a List): [{name, driver, node, attributes: {domain: {name:
    value}}}], unqualified attribute names in the driver's own domain."""
    devices = []
    for doc in yaml.safe_load_all(text):
        for item in (doc or {}).get("items", [doc] if doc else []):
            spec = item["spec"]
            for device in spec.get("devices") or []:
                attributes = {}
                for key, value in (device.get("attributes") or {}).items():
                    domain, name = key.rpartition("/")[::2]
                    attributes.setdefault(domain or spec["driver"], {})[name] = next(iter(value.values()))
                devices.append({"name": device["name"], "driver": spec["driver"], "node": spec.get("nodeName"),
                                "attributes": attributes})
    return devices


def _python(expression):
    text = _ATTR.sub(lambda m: '_a("%s", "%s")' % (m.group(1), m.group(2) or m.group(3)), expression)
    text = _HAS.sub(r'_h("\1", "\2")', text)
    text = _DOMAIN_IN.sub(r'("\1" in _domains)', text)
    text = text.replace("device.driver", "_driver").replace(".startsWith(", ".startswith(")
    text = text.replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    text = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", text))
    if not _ALLOWED.match(text) or "__" in text or "device" in text:
        raise CelError("cannot read %r" % expression)
    return text


def matches(expression, device):
    def attribute(domain, name):
        try:
            return device["attributes"][domain][name]
        except KeyError:
            raise CelError("no such key: %s in %s/%s of device %s" % (name, domain, name, device["name"]))
    names = {"_a": attribute, "_h": lambda d, n: n in device["attributes"].get(d, {}), "_driver": device["driver"],
             "_domains": set(device["attributes"]), "True": True, "False": False}
    result = eval(_python(expression), {"__builtins__": {}}, names)  # noqa: S307 - our own translated subset
    if not isinstance(result, bool):
        raise CelError("%r is not true or false on %s" % (expression, device["name"]))
    return result


def _selected(selectors, device):
    return all(matches(s["cel"]["expression"], device) for s in selectors or [])


def _value(device, qualified):
    domain, name = qualified.rpartition("/")[::2]
    return device["attributes"].get(domain, {}).get(name)


def _fits(assigned, constraints):
    for constraint in constraints:
        chosen = [d for request in constraint["requests"] for d in assigned.get(request, [])]
        values = [_value(d, constraint["matchAttribute"]) for d in chosen]
        if any(v is None for v in values) or len(set(values)) > 1:
            return False
    return True


def allocate(template, classes, devices):
    """{node: {request: [device names]}} for the first node whose devices satisfy the claim, else None. ``classes``:
    the DeviceClass manifests by name. CelError when an expression reads an attribute a device lacks."""
    spec = template["spec"]["spec"]["devices"]
    requests = spec["requests"]
    constraints = spec.get("constraints") or []
    for node in sorted(set(d["node"] for d in devices)):
        pool = [d for d in devices if d["node"] == node]
        candidates = []
        for request in requests:
            exactly = request["exactly"]
            device_class = classes[exactly["deviceClassName"]]
            candidates.append([d for d in pool if _selected(device_class["spec"]["selectors"], d)
                               and _selected(exactly.get("selectors"), d)])
        found = _search(requests, candidates, constraints, 0, {}, set())
        if found is not None:
            return {node: dict((r, [d["name"] for d in ds]) for r, ds in found.items())}
    return None


def _search(requests, candidates, constraints, index, assigned, used):
    if index == len(requests):
        return dict(assigned)
    request = requests[index]
    free = [d for d in candidates[index] if d["name"] not in used]
    for chosen in itertools.combinations(free, request["exactly"].get("count", 1)):
        assigned[request["name"]] = list(chosen)
        if _fits(assigned, constraints):
            found = _search(requests, candidates, constraints, index + 1, assigned, used | set(d["name"] for d in chosen))
            if found is not None:
                return found
        del assigned[request["name"]]
    return None
