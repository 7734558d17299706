"""A stand-in Kubernetes API server for Nodes (tests only; standard library).

No API server can run here, so the remediate playbook and the monitor talk to this one: it speaks
the part of the API that kubernetes.core and kubectl use for Nodes - discovery (/version, /api,
/api/v1, /apis), GET /api/v1/nodes and /api/v1/nodes/NAME, and PATCH with
application/merge-patch+json (RFC 7386), honouring ?dryRun=All (answers the patched object and
keeps the stored one). Every request is appended to the log as one JSON line: method, path, query,
content_type, body - so a test can assert the exact patch bodies.

Dynamic Resource Allocation, where the test serves it: with resource-apis.json beside NODES.json (the resource.k8s.io
versions served and their resources, e.g. {"v1": ["resourceslices"], "v1alpha3": ["devicetaintrules"]} as Kubernetes
1.34 serves them) /apis names the group and /apis/resource.k8s.io/VERSION lists the version's resources;
DeviceTaintRules are listed (?labelSelector=key=value), created (POST, 409 when
the name exists, 422 without name, deviceSelector or taint) and deleted (404 when absent) in devicetaintrules.json,
and ResourceSlices listed from resourceslices.json.

usage: python3 server.py NODES.json LOG.jsonl PORTFILE   (listens on 127.0.0.1, an ephemeral port
       written to PORTFILE; NODES.json is a list of Node objects and is rewritten on each real patch)
"""

import copy
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["no"]}]}

DRA = "resource.k8s.io"
DRA_RESOURCES = [{"name": "devicetaintrules", "singularName": "devicetaintrule", "namespaced": False, "kind": "DeviceTaintRule"},
                 {"name": "resourceslices", "singularName": "resourceslice", "namespaced": False, "kind": "ResourceSlice"}]


def merge_patch(target, patch):
    """RFC 7386: a null deletes, a mapping merges, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class PatchFailed(Exception):
    pass


def _walk(doc, pointer):
    """(parent, last key) of an RFC 6901 pointer; list indexes as ints, '-' kept."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    parent = doc
    for part in parts[:-1]:
        try:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise PatchFailed("the path %s does not exist" % pointer)
    last = parts[-1]
    if isinstance(parent, list) and last != "-":
        try:
            last = int(last)
        except ValueError:
            raise PatchFailed("%s is not a list index" % pointer)
    return parent, last


def json_patch(target, ops):
    """RFC 6902 add, remove, replace and test; PatchFailed on a failed test or a missing path."""
    doc = copy.deepcopy(target)
    for op in ops:
        parent, key = _walk(doc, op["path"])
        kind = op["op"]
        if kind == "test":
            try:
                current = parent[key]
            except (KeyError, IndexError, TypeError):
                raise PatchFailed("the path %s does not exist" % op["path"])
            if current != op["value"]:
                raise PatchFailed("testing value %s failed" % op["path"])
        elif kind == "add":
            if isinstance(parent, list):
                parent.insert(len(parent) if key == "-" else key, copy.deepcopy(op["value"]))
            else:
                parent[key] = copy.deepcopy(op["value"])
        elif kind in ("remove", "replace"):
            try:
                if kind == "remove":
                    del parent[key]
                else:
                    parent[key]  # must exist
                    parent[key] = copy.deepcopy(op["value"])
            except (KeyError, IndexError, TypeError):
                raise PatchFailed("the path %s does not exist" % op["path"])
        else:
            raise PatchFailed("op %s is not supported here" % kind)
    return doc


class Handler(BaseHTTPRequestHandler):
    nodes_file = log_file = None

    def log_message(self, *args):
        pass

    def _log(self, body=None):
        url = urlsplit(self.path)
        entry = {"method": self.command, "path": url.path, "query": parse_qs(url.query),
                 "content_type": self.headers.get("Content-Type"), "body": body}
        with LOCK, open(self.log_file, "a") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")
        return url

    def _send(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _nodes(self):
        with open(self.nodes_file) as handle:
            return json.load(handle)

    def _not_found(self, name):
        self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                         "message": 'nodes "%s" not found' % name, "code": 404})

    def _side(self, name, default):
        path = os.path.join(os.path.dirname(self.nodes_file), name)
        if not os.path.exists(path):
            return default
        with open(path) as handle:
            return json.load(handle)

    def _dra(self, path, query):
        """GET of the resource.k8s.io group: (status, object), or None when the path is not one of it."""
        served = self._side("resource-apis.json", {})
        if path == "/apis":
            versions = sorted(served)
            groups = [{"name": DRA, "versions": [{"groupVersion": "%s/%s" % (DRA, v), "version": v} for v in versions],
                       "preferredVersion": {"groupVersion": "%s/%s" % (DRA, versions[0]), "version": versions[0]}}] if served else []
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        parts = path.split("/")
        if len(parts) < 4 or parts[1:3] != ["apis", DRA]:
            return None
        if parts[3] not in served or parts[4:5] and parts[4] not in served[parts[3]]:
            return 404, {"kind": "Status", "status": "Failure", "code": 404, "message": "no %s here" % path}
        if len(parts) == 4:
            return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "%s/%s" % (DRA, parts[3]),
                         "resources": [dict(r, verbs=["create", "delete", "get", "list", "watch"]) for r in DRA_RESOURCES
                                       if r["name"] in served[parts[3]]]}
        if parts[4:] == ["resourceslices"]:
            return 200, {"kind": "ResourceSliceList", "apiVersion": "%s/%s" % (DRA, parts[3]),
                         "items": self._side("resourceslices.json", [])}
        if parts[4:] == ["devicetaintrules"]:
            rules = self._side("devicetaintrules.json", [])
            wanted = [s.split("=", 1) for s in query.get("labelSelector", [""])[0].split(",") if "=" in s]
            return 200, {"kind": "DeviceTaintRuleList", "apiVersion": "%s/%s" % (DRA, parts[3]), "items": [
                r for r in rules if all((r["metadata"].get("labels") or {}).get(k) == v for k, v in wanted)]}
        return 404, {"kind": "Status", "status": "Failure", "code": 404, "message": "no %s here" % path}

    def _rules_write(self, rules):
        with open(os.path.join(os.path.dirname(self.nodes_file), "devicetaintrules.json"), "w") as handle:
            json.dump(rules, handle)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        url = self._log(body)
        parts = url.path.rstrip("/").split("/")
        if parts[1:3] != ["apis", DRA] or parts[4:] != ["devicetaintrules"] or "devicetaintrules" not in self._side(
                "resource-apis.json", {}).get(parts[3], []):
            return self._send(404, {"kind": "Status", "code": 404, "message": "no %s here" % url.path})
        spec = (body or {}).get("spec") or {}
        name = ((body or {}).get("metadata") or {}).get("name")
        if body.get("kind") != "DeviceTaintRule" or not name or not spec.get("deviceSelector") or not spec.get("taint"):
            return self._send(422, {"kind": "Status", "code": 422, "reason": "Invalid",
                                    "message": "a DeviceTaintRule needs metadata.name, spec.deviceSelector and spec.taint"})
        with LOCK:
            rules = self._side("devicetaintrules.json", [])
            if any(r["metadata"]["name"] == name for r in rules):
                return self._send(409, {"kind": "Status", "code": 409, "reason": "AlreadyExists",
                                        "message": 'devicetaintrules.resource.k8s.io "%s" already exists' % name})
            stored = dict(body, metadata=dict(body["metadata"], resourceVersion="1", uid="uid-%s" % name))
            self._rules_write(rules + [stored])
        self._send(201, stored)

    def do_DELETE(self):
        url = self._log()
        parts = url.path.rstrip("/").split("/")
        if parts[1:3] != ["apis", DRA] or len(parts) != 6 or parts[4] != "devicetaintrules":
            return self._send(404, {"kind": "Status", "code": 404, "message": "no %s here" % url.path})
        with LOCK:
            rules = self._side("devicetaintrules.json", [])
            kept = [r for r in rules if r["metadata"]["name"] != parts[5]]
            if len(kept) == len(rules):
                return self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound",
                                        "message": 'devicetaintrules.resource.k8s.io "%s" not found' % parts[5]})
            self._rules_write(kept)
        self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200})

    def do_GET(self):
        url = self._log()
        path = url.path.rstrip("/")
        dra = self._dra(path, parse_qs(url.query))
        if dra is not None:
            return self._send(*dra)
        if path == "/version":
            return self._send(200, {"major": "1", "minor": "31", "gitVersion": "v1.31.0-standin"})
        if path == "/api":
            return self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        if path == "/api/v1":
            return self._send(200, RESOURCES)
        if path == "/api/v1/nodes":
            return self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                                    "items": self._nodes()})
        if path.startswith("/api/v1/nodes/"):
            name = path.rsplit("/", 1)[1]
            node = next((n for n in self._nodes() if n["metadata"]["name"] == name), None)
            return self._send(200, node) if node else self._not_found(name)
        self._send(404, {"kind": "Status", "status": "Failure", "code": 404, "message": "no %s here" % path})

    def do_PATCH(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        url = self._log(body)
        name = url.path.rstrip("/").rsplit("/", 1)[1]
        kind = self.headers.get("Content-Type", "").split(";")[0]
        if kind not in ("application/merge-patch+json", "application/json-patch+json"):
            return self._send(415, {"kind": "Status", "code": 415, "message": "merge and JSON patches only here"})
        with LOCK:
            nodes = self._nodes()
            index = next((i for i, n in enumerate(nodes) if n["metadata"]["name"] == name), None)
            if index is None:
                return self._not_found(name)
            if kind == "application/json-patch+json":
                try:
                    patched = json_patch(nodes[index], body)
                except PatchFailed as exc:
                    return self._send(422, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422,
                                            "reason": "Invalid", "message": str(exc)})
            else:
                patched = merge_patch(nodes[index], body)
            patched.setdefault("metadata", {})["resourceVersion"] = str(
                int(nodes[index]["metadata"].get("resourceVersion") or 1) + 1)
            if "All" not in parse_qs(url.query).get("dryRun", []):
                nodes[index] = patched
                with open(self.nodes_file, "w") as handle:
                    json.dump(nodes, handle)
        self._send(200, patched)


class Server(ThreadingMixIn, HTTPServer):
    daemon_threads = True


def main(argv):
    Handler.nodes_file, Handler.log_file, portfile = argv
    server = Server(("127.0.0.1", 0), Handler)
    with open(portfile, "w") as handle:
        handle.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
