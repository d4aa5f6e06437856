"""Deterministic generators for benchmark inputs: objects, AdmissionReviews and whole clusters.

Shapes follow the project's examples (``examples/cluster``): GPUs as partitionable devices on
shared counters with compatibility groups, NICs sharing bandwidth through consumable capacity.
Every generated object is meant to be *valid* so the benchmarks time the full, successful path.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
GPUS_PER_NODE = 8
PARTITIONS_PER_GPU = 7
GATES = ("DRADeviceCompatibilityGroups=true,GenericWorkload=true,DRAWorkloadResourceClaims=true")
"""Gates under which every generated object uses only enabled fields."""

_NS = uuid.UUID("6f1c3c36-2f4e-4c55-9a53-0d6b1f8e0b01")


def _uid(*parts: object) -> str:
    return str(uuid.uuid5(_NS, "/".join(map(str, parts))))


# -- ResourceSlices ---------------------------------------------------------------------------

def gpu_counter_slice(node: str, gpus: int = GPUS_PER_NODE) -> dict[str, Any]:
    """The counters half of a node's GPU pool: one counter set per physical GPU (max 8)."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu-counters"},
        "spec": {
            "nodeName": node, "driver": GPU_DRIVER,
            "pool": {"name": f"{node}-gpus", "generation": 1, "resourceSliceCount": 2},
            "sharedCounters": [
                {"name": f"gpu-{g}", "counters": {"memory": {"value": "80Gi"},
                                                  "multiprocessors": {"value": "98"}}}
                for g in range(gpus)],
        },
    }


def gpu_device_slice(node: str, gpus: int = GPUS_PER_NODE,
                     partitions: int = PARTITIONS_PER_GPU) -> dict[str, Any]:
    """The devices half: per GPU one whole device (time-shareable, with a capacity policy) and
    ``partitions`` MIG-like partitions; all consume the GPU's counters and carry compatibility
    groups. 8 × (1 + 7) = 64 devices: exactly the limit for counter-consuming slices."""
    devices: list[dict[str, Any]] = []
    for g in range(gpus):
        parent = _uid(node, "gpu", g)
        common = {
            "index": {"int": g},
            "parentUUID": {"string": parent},
            "productName": {"string": "Example H100 80GB"},
            "driverVersion": {"version": "570.86.15"},
            "cudaComputeCapability": {"version": "9.0.0"},
        }
        devices.append({
            "name": f"gpu-{g}",
            "allowMultipleAllocations": True,
            "attributes": {**common, "type": {"string": "gpu"}, "uuid": {"string": parent}},
            "capacity": {
                "memory": {"value": "80Gi", "requestPolicy": {
                    "default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi", "80Gi"]}},
                "multiprocessors": {"value": "98", "requestPolicy": {
                    "default": "14", "validRange": {"min": "14", "max": "98", "step": "14"}}},
            },
            "consumesCounters": [{"counterSet": f"gpu-{g}", "compatibilityGroups": ["whole"],
                                  "counters": {"memory": {"value": "80Gi"},
                                               "multiprocessors": {"value": "98"}}}],
        })
        for p in range(partitions):
            devices.append({
                "name": f"gpu-{g}-mig-{p}",
                "attributes": {**common, "type": {"string": "partition"},
                               "profile": {"string": "1g.10gb"},
                               "uuid": {"string": _uid(node, "gpu", g, "mig", p)},
                               "partitionIndex": {"int": p}},
                "capacity": {"memory": {"value": "10Gi"}, "multiprocessors": {"value": "14"}},
                "consumesCounters": [{"counterSet": f"gpu-{g}", "compatibilityGroups": ["mig", "shared"],
                                      "counters": {"memory": {"value": "10Gi"},
                                                   "multiprocessors": {"value": "14"}}}],
            })
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu-devices"},
        "spec": {"nodeName": node, "driver": GPU_DRIVER,
                 "pool": {"name": f"{node}-gpus", "generation": 1, "resourceSliceCount": 2},
                 "devices": devices},
    }


def plain_slice(node: str, n: int = 128) -> dict[str, Any]:
    """``n`` plain devices (no counters, taints or list attributes: the limit is 128)."""
    devices = [{
        "name": f"dev-{i}",
        "attributes": {
            "index": {"int": i}, "model": {"string": "Example Accelerator"},
            "uuid": {"string": _uid(node, "plain", i)}, "numa": {"int": i % 2},
            "healthy": {"bool": True}, "firmware": {"version": "1.4.2"},
        },
        "capacity": {"memory": {"value": "16Gi"}, "cores": {"value": "64"}},
    } for i in range(n)]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-accel"},
        "spec": {"nodeName": node, "driver": "accel.example.com",
                 "pool": {"name": f"{node}-accel", "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    }


def nic_slice(node: str, nics: int = 2) -> dict[str, Any]:
    """A bandwidth-sharing NIC pool: each NIC may be allocated many times (consumable capacity)."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-nics"},
        "spec": {"nodeName": node, "driver": NIC_DRIVER,
                 "pool": {"name": f"{node}-nics", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{
                     "name": f"eth{i}",
                     "allowMultipleAllocations": True,
                     "attributes": {"name": {"string": f"eth{i}"}, "rdma": {"bool": True},
                                    "numa": {"int": i}},
                     "capacity": {"bandwidth": {"value": "100G", "requestPolicy": {
                         "default": "1G", "validRange": {"min": "1G", "step": "1G"}}}},
                 } for i in range(nics)]},
    }


# -- classes, claims, PodGroups ---------------------------------------------------------------

def device_classes() -> list[dict[str, Any]]:
    def dc(name: str, expr: str) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expr}}]}}
    return [
        dc("gpu.example.com", f'device.driver == "{GPU_DRIVER}" && '
                              f'device.attributes["{GPU_DRIVER}"].type == "gpu"'),
        dc("mig.gpu.example.com", f'device.driver == "{GPU_DRIVER}" && '
                                  f'device.attributes["{GPU_DRIVER}"].type == "partition"'),
        dc("nic.example.com", f'device.driver == "{NIC_DRIVER}"'),
    ]


def claim(name: str = "train-0", namespace: str = "default") -> dict[str, Any]:
    """A ResourceClaim with CEL selectors: two partitions of one GPU plus a NIC share."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {
            "requests": [
                {"name": "mig", "exactly": {
                    "deviceClassName": "mig.gpu.example.com", "allocationMode": "ExactCount", "count": 2,
                    "selectors": [
                        {"cel": {"expression": f'device.attributes["{GPU_DRIVER}"].profile == "1g.10gb"'}},
                        {"cel": {"expression": f'device.capacity["{GPU_DRIVER}"].memory'
                                               f'.compareTo(quantity("10Gi")) >= 0'}},
                        {"cel": {"expression": f'device.attributes["{GPU_DRIVER}"].driverVersion'
                                               f'.isGreaterThan(semver("550.0.0"))'}},
                    ]}},
                {"name": "nic", "exactly": {
                    "deviceClassName": "nic.example.com", "allocationMode": "ExactCount", "count": 1,
                    "selectors": [{"cel": {"expression": f'device.attributes["{NIC_DRIVER}"].rdma'}}],
                    "capacity": {"requests": {"bandwidth": "10G"}}}},
            ],
            "constraints": [{"requests": ["mig"],
                             "matchAttribute": f"{GPU_DRIVER}/parentUUID"}],
        }},
    }


def grouped_claim(name: str = "pair") -> dict[str, Any]:
    """B3: two partitions on one physical GPU (same compatibility group, shared counters)."""
    c = claim(name)
    c["spec"]["devices"]["requests"] = c["spec"]["devices"]["requests"][:1]
    return c


def infeasible_claim(name: str = "too-big", count: int = 9) -> dict[str, Any]:
    """B3: ``count`` partitions of *one* GPU (each has only 7): every node fails after a search."""
    c = grouped_claim(name)
    c["spec"]["devices"]["requests"][0]["exactly"]["count"] = count
    return c


def unmatchable_claim(name: str = "no-match") -> dict[str, Any]:
    """B3: a partition with more memory than any partition has: rejected by the selector."""
    c = grouped_claim(name)
    c["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("100Gi")) >= 0'}}]
    c["spec"]["devices"]["requests"][0]["exactly"]["count"] = 1
    del c["spec"]["devices"]["constraints"]
    return c


def claim_template(name: str, namespace: str = "default") -> dict[str, Any]:
    c = grouped_claim(name)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"spec": c["spec"]}}


def podgroup(name: str = "gang", claims: int = 4, namespace: str = "default") -> dict[str, Any]:
    """A gang of ``claims`` pods, each with a claim from its own template; ``disruptionMode`` as the
    apiserver defaults it before any webhook sees the object."""
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": claims}}, "disruptionMode": {"single": {}},
                 "resourceClaims": [{"name": f"worker-{i}", "resourceClaimTemplateName": f"{name}-tpl-{i}"}
                                    for i in range(claims)]},
    }


# -- whole clusters ---------------------------------------------------------------------------

NODE_ALLOCATABLE = {"cpu": "64", "memory": "512Gi", "ephemeral-storage": "1Ti", "pods": "110"}


def node(name: str, i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
            "status": {"capacity": NODE_ALLOCATABLE, "allocatable": NODE_ALLOCATABLE}}


def pod_spec(template: str) -> dict[str, Any]:
    """A pod using a claim from ``template`` and one CPU."""
    return {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
            "containers": [{"name": "trainer", "image": "registry.example.com/train:1",
                            "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}]}


def pod(name: str, template: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": pod_spec(template)}


def pod_in_group(name: str, group: str = "gang", index: int = 0, namespace: str = "default") -> dict[str, Any]:
    """A member of ``podgroup(group)``: joins it through ``spec.schedulingGroup`` and uses the
    group's claim of the same name."""
    p = pod(name, f"{group}-tpl-{index}", namespace)
    p["spec"]["resourceClaims"] = [{"name": f"worker-{index}", "resourceClaimTemplateName": f"{group}-tpl-{index}"}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": f"worker-{index}"}]
    p["spec"]["schedulingGroup"] = {"podGroupName": group}
    return p


def deployment(name: str, replicas: int, template: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(template)}}}


def node_name(i: int) -> str:
    return f"node-{i:04d}"


def cluster(nodes: int, gpus: int = GPUS_PER_NODE, partitions: int = PARTITIONS_PER_GPU
            ) -> list[dict[str, Any]]:
    """``nodes`` nodes × ``gpus`` GPUs × (1 whole + ``partitions``) devices, two NICs per node,
    the device classes and the claim templates of ``podgroup()``."""
    objs: list[dict[str, Any]] = [*device_classes()]
    objs += [claim_template(f"gang-tpl-{i}") for i in range(4)]
    for i in range(nodes):
        n = node_name(i)
        objs += [node(n, i), gpu_counter_slice(n, gpus), gpu_device_slice(n, gpus, partitions), nic_slice(n)]
    return objs


# -- the lean shape (issue 30): many small devices --------------------------------------------

LEAN_CLASS = "part.gpu.example.com"
LEAN_PARTITIONS = 8
"""Partitions per GPU in the lean shape: 8 GPUs x 8 = 64 devices a node (a slice's limit)."""


def lean_slices(node: str, gpus: int = GPUS_PER_NODE, partitions: int = LEAN_PARTITIONS) -> list[dict[str, Any]]:
    """A node's lean GPU pool: one counter set of one counter per GPU, and ``gpus`` x
    ``partitions`` devices with two attributes (the GPU's UUID, the partition index), one
    capacity and one counter each (about 230 bytes of compact JSON a device)."""
    pool = {"name": f"{node}-parts", "generation": 1, "resourceSliceCount": 2}
    counters = {"name": f"{node}-part-counters", "node": node, "sets": [
        {"name": f"gpu-{g}", "counters": {"memory": {"value": "80Gi"}}} for g in range(gpus)]}
    devices = [{
        "name": f"gpu-{g}-part-{p}",
        "attributes": {"parentUUID": {"string": _uid(node, "gpu", g)}, "partition": {"int": p}},
        "capacity": {"memory": {"value": "10Gi"}},
        "consumesCounters": [{"counterSet": f"gpu-{g}", "counters": {"memory": {"value": "10Gi"}}}],
    } for g in range(gpus) for p in range(partitions)]

    def sl(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                "spec": {"nodeName": node, "driver": GPU_DRIVER, "pool": pool, **spec}}
    return [sl(counters["name"], {"sharedCounters": counters["sets"]}),
            sl(f"{node}-parts", {"devices": devices})]


def lean_cluster(nodes: int) -> list[dict[str, Any]]:
    """``nodes`` nodes of :func:`lean_slices` and the one class that selects their devices."""
    objs: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": LEAN_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]}}]
    for i in range(nodes):
        objs += [node(node_name(i), i), *lean_slices(node_name(i))]
    return objs


def lean_claim(name: str, count: int = 1, *, same_gpu: bool = False, selector: str = "") -> dict[str, Any]:
    """A claim for ``count`` lean partitions, on one GPU when ``same_gpu`` (a matchAttribute
    constraint on the GPU's UUID), with one CEL ``selector`` when given."""
    exactly: dict[str, Any] = {"deviceClassName": LEAN_CLASS, "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    devices: dict[str, Any] = {"requests": [{"name": "part", "exactly": exactly}]}
    if same_gpu:
        devices["constraints"] = [{"requests": ["part"], "matchAttribute": f"{GPU_DRIVER}/parentUUID"}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"devices": devices}}


def lean_claims() -> dict[str, dict[str, Any]]:
    """B6's lean cases: feasible (one device; four on one GPU) and infeasible (no device
    matches; nine on one GPU, which has eight)."""
    return {
        "lean one-device": lean_claim("lean-one"),
        "lean 4-device matchAttribute": lean_claim("lean-four", 4, same_gpu=True),
        "lean infeasible-no-match": lean_claim(
            "lean-none", selector=f'device.attributes["{GPU_DRIVER}"].partition >= {LEAN_PARTITIONS}'),
        "lean infeasible-too-many": lean_claim("lean-nine", LEAN_PARTITIONS + 1, same_gpu=True),
    }


def device_count(objs: list[dict[str, Any]]) -> int:
    return sum(len(o["spec"].get("devices", ())) for o in objs if o.get("kind") == "ResourceSlice")


# -- AdmissionReviews -------------------------------------------------------------------------

_RESOURCES = {"ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims",
              "ResourceClaimTemplate": "resourceclaimtemplates", "PodGroup": "podgroups",
              "DeviceClass": "deviceclasses"}


def admission_review(obj: dict[str, Any], operation: str = "CREATE", uid: str = "bench") -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    kind = obj["kind"]
    meta = obj.get("metadata", {})
    req: dict[str, Any] = {
        "uid": _uid(uid, kind, meta.get("name")),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": _RESOURCES.get(kind, kind.lower() + "s")},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version,
                            "resource": _RESOURCES.get(kind, kind.lower() + "s")},
        "name": meta.get("name", ""),
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:kube-system:bench", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": None,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    if meta.get("namespace"):
        req["namespace"] = meta["namespace"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def body(obj: dict[str, Any]) -> bytes:
    return json.dumps(admission_review(obj), separators=(",", ":")).encode()


def b1_objects() -> dict[str, dict[str, Any]]:
    """The B1 objects by case name (full size in quick mode too: cheap)."""
    return {
        "slice-partitionable-64": gpu_device_slice("node-0000", gpus=8),
        "slice-plain-128": plain_slice("node-0000", 128),
        "claim-cel": claim(),
        "podgroup-4": podgroup(),
        "pod-claims": pod("train-0", "gang-tpl-0"),
        "pod-in-podgroup": pod_in_group("gang-0"),
    }
