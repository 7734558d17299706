# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""The decider's device taints where they touch the API server (through kubectl's --raw calls, as decider.py's
Kubernetes scheduler runs kubectl): which API serves DeviceTaintRule, our rules, the devices the drivers' ResourceSlices
publish, and the rules created or deleted. What the rules are is k8s_device_taints.py's (pure).

Every failure is a TaintError (a ValueError) naming the call: the decider's read turns it into 'could not act', its
carrying out into a failed action with its backoff.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufabric.rdma.plugins.module_utils.fleet import k8s_device_taints


class TaintError(ValueError):
    """A kubectl call of the device taints failed or answered something else; the message says which."""


class DeviceTaints(object):
    """``setting``: kubernetes.device_taints (None, 'auto' or an API version); ``run``: argv, data -> CommandResult;
    ``kubectl``: args -> argv."""

    def __init__(self, setting, run, kubectl):
        self.setting, self.run, self.kubectl = setting, run, kubectl
        self.api, self.rules, self.devices = None, {}, {}

    def _raw(self, verb, path, what, data=None):
        result = self.run(self.kubectl([verb, "--raw", path] + (["-f", "-"] if data is not None else [])), data)
        if not result.ok:
            raise TaintError("%s: %s" % (what, result.describe()))
        try:
            return json.loads(result.stdout) if result.stdout.strip() else {}
        except ValueError as exc:
            raise TaintError("%s: %s" % (what, str(exc)[:300]))

    def _served(self):
        lists = {}
        for api in k8s_device_taints.API_VERSIONS:
            result = self.run(self.kubectl(["get", "--raw", "/apis/" + api]), None)
            try:
                lists[api.split("/", 1)[1]] = json.loads(result.stdout) if result.ok else None
            except ValueError:
                lists[api.split("/", 1)[1]] = None
        return k8s_device_taints.served_version(lists)

    def read(self):
        """The API serving DeviceTaintRule (``auto``: the newest whose resource list names it; none: the cordon, as
        without the setting), our rules by node, and the devices the drivers publish by node."""
        self.api, self.rules, self.devices = None, {}, {}
        wanted = self._served() if self.setting == "auto" else self.setting
        if not wanted:
            return
        key, value = k8s_device_taints.MANAGED_BY
        selector = "?labelSelector=%s%%3D%s" % (key.replace("/", "%2F"), value)
        listing = self._raw("get", k8s_device_taints.collection_path(wanted) + selector, "kubectl get devicetaintrules")
        try:
            self.rules = k8s_device_taints.ours(listing)
        except ValueError as exc:
            raise TaintError("kubectl get devicetaintrules: %s" % str(exc)[:300])
        for version in k8s_device_taints.SLICE_VERSIONS:
            result = self.run(self.kubectl(["get", "--raw", "/apis/resource.k8s.io/%s/resourceslices" % version]), None)
            if result.ok:
                try:
                    self.devices = k8s_device_taints.slice_devices(json.loads(result.stdout))
                except ValueError as exc:
                    raise TaintError("kubectl get resourceslices: %s" % str(exc)[:300])
                break
        self.api = wanted

    def annotate(self, result):
        """Each drain of one node (not a rack's) gets the DeviceTaintRules that carry it out (``device_taints``; None
        and ``device_taints_why`` where it is cordoned instead), shadow ones too; each resume of a node our rules hold,
        those rules (apply deletes them)."""
        if not self.api:
            return
        for decision in result["decisions"]:
            if decision["action"] == "drain" and not decision.get("rack"):
                rules, why = k8s_device_taints.taint_rules(decision["node"], decision["findings"],
                                                           self.devices.get(decision["node"]), self.api)
                decision["device_taints"] = rules
                if rules is None:
                    decision["device_taints_why"] = "cordoned, not tainted by device: %s" % why
            elif decision["action"] == "resume" and self.rules.get(decision["node"]):
                decision["device_taints"] = self.rules[decision["node"]]

    def carry_out(self, action, rules):
        """A drain creates its rules (one already there is left as it is), a resume deletes them; the decider runs
        this before the Node's ledger patch, so a rule that cannot be made leaves no drain recorded. Returns what ran."""
        done = []
        held = set(r["metadata"].get("name") for rules_of in self.rules.values() for r in rules_of)
        for rule in rules:
            name = rule["metadata"]["name"]
            if action == "drain" and name not in held:
                self._raw("create", k8s_device_taints.collection_path(self.api), "kubectl create devicetaintrule %s" % name,
                          data=json.dumps(rule, sort_keys=True))
                done += ["create", "devicetaintrule", name, ";"]
            elif action == "resume":
                self._raw("delete", k8s_device_taints.collection_path(self.api, name), "kubectl delete devicetaintrule %s" % name)
                done += ["delete", "devicetaintrule", name, ";"]
        return done
