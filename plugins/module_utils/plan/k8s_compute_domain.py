# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""Multi-node NVLink on Kubernetes: the ComputeDomain (resource.nvidia.com/v1beta1, NVIDIA's GPU DRA driver) for a
job across the trays of one NVLink domain, the channel claim its pods take, and the NCCL variables to match.

A ComputeDomain is one IMEX domain: the driver starts an IMEX daemon on each node a pod of the domain lands on and
creates the ResourceClaimTemplate the ComputeDomain names (spec.channel.resourceClaimTemplate.name, in its namespace;
the driver's templates/compute-domain-workload-claim-template.tmpl.yaml); each pod claims one IMEX channel from it.
The domain comes from discovery (gpu_facts' fabric: the GPUs' cluster UUID and clique ID, topology/nvlink.py): the
job's nodes must all be in one, and ``numNodes`` is how many of them the job spans. The NCCL variables are
plan/nccl.py's (nvlink_entries: NCCL_MNNVL_ENABLE, NCCL_CUMEM_ENABLE, and NCCL_NET_GDR_C2C where the NICs sit behind
Grace), each with its reason.

Pure functions, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.rdma.plugins.module_utils.common.hostlist import natural_key
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.topology_names import TopologyError
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import k8s, nccl
from ansible_collections.gpufabric.rdma.plugins.module_utils.topology import nvlink

COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
# The pod's claim on the ComputeDomain's channel template (one more entry beside plan/k8s.POD_CLAIM).
CHANNEL_CLAIM = "imex-channel"
ALLOCATION_MODES = ("Single", "All")
_OPTIONS = ("name", "nodes", "namespace", "allocation_mode", "profile")


def _records(records, nodes):
    """The job's nodes (natural order) and their gpu facts; ManifestError naming a node without a record."""
    if not isinstance(records, dict) or not records:
        raise k8s.ManifestError("compute_domain needs the discovery records by node (a non-empty mapping), got %r"
                                % (records,))
    if nodes is None:
        nodes = list(records)
    if isinstance(nodes, str) or not isinstance(nodes, (list, tuple)) or not nodes:
        raise k8s.ManifestError("nodes must be a list of the job's node names, got %r" % (nodes,))
    missing = [str(n) for n in nodes if n not in records]
    if missing:
        raise k8s.ManifestError("no discovery record for %s (the records hold %s): run gpufabric.rdma.discover there"
                                % (", ".join(missing), ", ".join(sorted((str(n) for n in records), key=natural_key))))
    if len(set(nodes)) != len(nodes):
        raise k8s.ManifestError("nodes names a node twice: %s" % ", ".join(str(n) for n in nodes))
    gpus = {}
    for node in nodes:
        record = records[node]
        gpu = (record or {}).get("gpu") if isinstance(record, dict) else None
        gpus[node] = gpu if isinstance(gpu, dict) else {}
    return sorted(nodes, key=natural_key), gpus


def job_domain(records, nodes=None):
    """The one NVLink domain the job's nodes share: {domain, nodes, chassis}; ManifestError naming each node without
    a domain (and why), or each domain when the nodes span two or more."""
    nodes, gpus = _records(records, nodes)
    try:
        found = nvlink.nvlink_domains(dict((node, gpus[node].get("fabric")) for node in nodes))
    except TopologyError as exc:
        raise k8s.ManifestError(str(exc))
    if found["no_domain"]:
        raise k8s.ManifestError(
            "a ComputeDomain spans the trays of one NVLink domain, and %s: %s; leave %s out of the job, or run it "
            "without a ComputeDomain (over the network)" % (
                "these nodes have none" if len(found["no_domain"]) > 1 else "this node has none",
                "; ".join("%s (%s)" % (n, found["no_domain"][n]) for n in sorted(found["no_domain"], key=natural_key)),
                ", ".join(sorted(found["no_domain"], key=natural_key))))
    if len(found["domains"]) > 1:
        raise k8s.ManifestError(
            "the job's nodes span %d NVLink domains: %s; a ComputeDomain is one IMEX domain (one rack's NVLink): "
            "split the job by domain, or keep to one" % (len(found["domains"]), "; ".join(
                "%s/%d (%s)" % (d["cluster_uuid"], d["clique_id"], ", ".join(d["hosts"])) for d in found["domains"])))
    (domain,) = found["domains"]
    return {"domain": "%s/%d" % (domain["cluster_uuid"], domain["clique_id"]), "nodes": domain["hosts"],
            "chassis": domain["chassis"]}


def compute_domain(records, options=None):
    """The discovery records by node and {name, nodes (default: every record's node), namespace, allocation_mode
    (Single, the driver's default, or All), profile (the NCCL profile: an RDMA one adds NCCL_NET_GDR_C2C on Grace)}
    -> {compute_domain (the object), channel_template (the ResourceClaimTemplate the driver creates), claims ({claim:
    template}, the pods' one more claim), env, reasons ({variable: why}), domain, nodes, chassis, markdown}."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise k8s.ManifestError("compute_domain does not take %s; it takes %s" % (", ".join(unknown), ", ".join(_OPTIONS)))
    name = k8s.dns_label(options.get("name"), "name")
    channel = k8s.dns_label("%s-channel" % name, "the channel template's name (name + '-channel')")
    found = job_domain(records, options.get("nodes"))
    mode = options.get("allocation_mode")
    if mode is not None and mode not in ALLOCATION_MODES:
        raise k8s.ManifestError("allocation_mode must be Single (one IMEX channel per pod) or All, got %r" % (mode,))
    metadata = {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpufabric"}}
    if options.get("namespace") is not None:
        metadata["namespace"] = k8s.dns_label(options["namespace"], "namespace")
    spec = {"numNodes": len(found["nodes"]), "channel": {"resourceClaimTemplate": {"name": channel}}}
    if mode:
        spec["channel"]["allocationMode"] = mode
    gpus = _records(records, found["nodes"])[1]
    try:
        entries = nccl.nvlink_entries(gpus[found["nodes"][0]], options.get("profile"))
    except ValueError as exc:
        raise k8s.ManifestError(str(exc))
    result = dict(found, compute_domain={"apiVersion": COMPUTE_DOMAIN_API, "kind": "ComputeDomain",
                                         "metadata": metadata, "spec": spec},
                  channel_template=channel, claims={CHANNEL_CLAIM: channel},
                  env=dict((entry[0], entry[1]) for entry in entries),
                  reasons=dict((entry[0], entry[2]) for entry in entries))
    result["markdown"] = markdown(result)
    return result


def markdown(result):
    """What the ComputeDomain says and why, for the report."""
    lines = ["## ComputeDomain %s" % result["compute_domain"]["metadata"]["name"], "",
             "- NVLink domain %s (from discovery), %d node(s): %s%s" % (
                 result["domain"], len(result["nodes"]), ", ".join(result["nodes"]),
                 "; chassis %s" % ", ".join(result["chassis"]) if result["chassis"] else ""),
             "- numNodes %d: the job's nodes in the domain" % result["compute_domain"]["spec"]["numNodes"],
             "- each pod claims one IMEX channel as `%s` from the ResourceClaimTemplate `%s` the driver creates"
             % (CHANNEL_CLAIM, result["channel_template"])]
    lines += ["- %s=%s: %s" % (name, result["env"][name], result["reasons"][name]) for name in sorted(result["env"])]
    return "\n".join(lines) + "\n"


def with_compute_domain(manifest, domain):
    """The workload joined to a ComputeDomain (compute_domain's result): every pod that takes GPUs (a DRA claim or
    nvidia.com/gpu) claims the channel too, and every container gets the NCCL variables (an MPI launcher's mpirun
    passes its own to the ranks)."""
    if not isinstance(domain, dict) or not isinstance(domain.get("claims"), dict) or not isinstance(domain.get("env"), dict):
        raise k8s.ManifestError("compute_domain must be rdma_compute_domain's result (claims, env), got %r" % (domain,))
    claims = dict((k8s.dns_label(claim, "the channel claim"), k8s.dns_label(template, "the channel template"))
                  for claim, template in domain["claims"].items())
    for ignored, template in k8s.pod_templates(manifest):
        spec = template.setdefault("spec", {})
        containers = spec.get("containers") or []
        takes_gpus = bool(spec.get("resourceClaims")) or any(
            "nvidia.com/gpu" in ((c.get("resources") or {}).get("limits") or {}) for c in containers)
        for container in containers:
            kept = [item for item in container.get("env") or [] if item.get("name") not in domain["env"]]
            container["env"] = sorted(kept + [{"name": k, "value": str(v)} for k, v in domain["env"].items()],
                                      key=lambda item: item["name"])
            if takes_gpus:
                resources = container.setdefault("resources", {})
                resources["claims"] = [c for c in resources.get("claims") or [] if c.get("name") not in claims] + [
                    {"name": claim} for claim in sorted(claims)]
        if takes_gpus:
            spec["resourceClaims"] = [c for c in spec.get("resourceClaims") or [] if c.get("name") not in claims] + [
                {"name": claim, "resourceClaimTemplateName": claims[claim]} for claim in sorted(claims)]
    return manifest


def workload_manifest(kind, options):
    """plan/k8s.workload_manifest, and with ``compute_domain`` (rdma_compute_domain's result) joined to it."""
    given = dict(options or {})
    domain = given.pop("compute_domain", None)
    manifest = k8s.workload_manifest(kind, given)
    return with_compute_domain(manifest, domain) if domain is not None else manifest
