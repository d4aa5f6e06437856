"""Generated metadata on every kind we validate (differential 2, ObjectMeta).

The spec of each kind is a small valid one; the metadata varies: names and generateName at the
length limits and with bad characters, namespaces (and a namespace on cluster-scoped kinds),
labels (key prefix and name forms and lengths, value edges), annotations (key forms, the
256 KiB total in bytes), finalizers (qualified, standard, the orphan/foreground pair),
ownerReferences (missing fields, banned owners, several controllers, duplicates), the
server-set fields (uid, creationTimestamp, generation, deletion fields, managedFields), wrong
JSON types, and a null, {} or "" as a list item or map value (`gen_zeros`). UPDATE edits change
name, namespace, uid, creationTimestamp, resourceVersion, generation, the deletion fields and
every validated map and list.

Every field function takes ``edge``: False gives a valid value (still at the length limits),
True a value from the edges, valid or not.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.differential.gen_common import (
    ABSENT,
    Chooser,
    Edit,
    Lazy,
    dns_label,
    dns_subdomain,
    how_many_edges,
    label_value,
    mapping,
    pick,
    put,
    qualified_name,
    strategy,
    text,
)
from tests.differential.gen_zeros import uniform, zero_item

ANNOTATIONS_MAX = 256 * 1024  # bytes, keys and values together

#: A small valid object of each kind (the spec is not what this generator varies).
BASES: dict[str, dict[str, Any]] = {
    "ResourceSlice": {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                 "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0"}]}},
    "DeviceClass": {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}},
    "DeviceTaintRule": {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
        "spec": {"deviceSelector": {"driver": "gpu.example.com"},
                 "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}}},
    "ResourceClaim": {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
    "ResourceClaimTemplate": {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu",
                                                    "exactly": {"deviceClassName": "gpu.example.com"}}]}}}},
    "PodGroup": {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}},
    "Workload": {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"basic": {}}}]}},
}
NAMESPACED = {"ResourceSlice": False, "DeviceClass": False, "DeviceTaintRule": False, "ResourceClaim": True,
              "ResourceClaimTemplate": True, "PodGroup": True, "Workload": True}
KINDS = tuple(BASES)

#: Namespaces the oracle creates (prepare() makes every valid one an object names).
NAMESPACES = ("default", "team-a", "n", "a" * 63, "x-" * 31 + "y")
STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")
UUID = "6f1f8a52-3c1e-4b6e-9d1a-3a4b5c6d7e8f"


# --- names ---------------------------------------------------------------------------------


def names(c: Chooser, edge: bool) -> Any:
    """metadata.name: a DNS subdomain for every kind we validate."""
    if not edge:
        return dns_subdomain(c, ok=True)
    return pick(c, [(12, Lazy(lambda: dns_subdomain(c))), (1, ABSENT), (1, ""), (1, None)])


def generate_names(c: Chooser, edge: bool) -> Any:
    """generateName: the prefix is checked with a trailing '-' allowed; the generated name (the
    prefix cut to 58 characters plus 5 random ones) is checked as a name."""
    base = dns_subdomain(c, ok=not edge)
    if not edge:
        return pick(c, [(1, base), (1, base + "-"), (1, "a" * 252 + "-")])
    return pick(c, [(4, base), (4, base + "-"), (1, "-"), (1, "a-"), (1, "a" * 58 + "B"), (1, "a" * 57 + "."),
                    (1, "a" * 300), (1, "A-"), (1, "a--"), (1, "")])


def namespaces(c: Chooser, namespaced: bool, edge: bool) -> Any:
    if not namespaced:  # the apiserver clears it before validation
        if not edge:
            return ABSENT
        return pick(c, [(8, ABSENT), (2, Lazy(lambda: c.choice(NAMESPACES))), (1, ""), (1, "Bad_NS")])
    if not edge:
        return pick(c, [(1, ABSENT), (2, Lazy(lambda: c.choice(NAMESPACES)))])
    return pick(c, [(2, ABSENT), (6, Lazy(lambda: c.choice(NAMESPACES))), (1, ""), (2, Lazy(lambda: dns_label(c)))])


# --- labels, annotations, finalizers, ownerReferences ---------------------------------------


def labels(c: Chooser, edge: bool) -> Any:
    if not edge:
        return pick(c, [(4, ABSENT), (1, {}), (4, Lazy(lambda: mapping(
            c, lambda: qualified_name(c, ok=True), lambda: label_value(c, ok=True), 1, 3)))])
    return pick(c, [(1, None), (1, {}), (1, {"a": None}), (10, Lazy(lambda: mapping(
        c, lambda: qualified_name(c), lambda: label_value(c), 1, 4)))])


def annotations(c: Chooser, edge: bool) -> Any:
    """Keys are qualified names checked lower-cased; values anything; 256 KiB in total (bytes)."""
    if not edge:
        return pick(c, [(4, ABSENT), (1, {}), (4, Lazy(lambda: mapping(
            c, lambda: qualified_name(c, ok=True), lambda: text(c), 1, 3)))])
    return pick(c, [(1, None), (1, {"a": None}), (3, Lazy(lambda: big_annotations(c))), (10, Lazy(lambda: mapping(
        c, lambda: qualified_name(c), lambda: text(c), 1, 4)))])


def big_annotations(c: Chooser) -> dict[str, str]:
    """Annotations whose keys and values add up to the limit, one byte under or one over; in ASCII
    or with two-byte characters (the limit counts bytes)."""
    key = c.choice(("a", "example.com/blob", "Big.Example.COM/Value"))
    room = ANNOTATIONS_MAX - len(key) + c.choice((-1, 0, 1))
    if c.boolean():
        return {key: "x" * room}
    # é is two bytes in UTF-8: the character count stays under the limit while the bytes do not.
    return {key: "é" * (room // 2) + "x" * (room % 2)}


ODD_FINALIZERS = ("foo", "example.com/", "/keep", "", "a/b/c", "Example.COM/Keep", "kubernetes.io/")
GOOD_FINALIZERS = STANDARD_FINALIZERS[:1] + ("example.com/keep", "kubernetes.io/pv-protection", "Example.COM/Keep_1")


def finalizers(c: Chooser, edge: bool) -> Any:
    if not edge:
        return pick(c, [(4, ABSENT), (1, []), (3, Lazy(lambda: c.sample(GOOD_FINALIZERS + STANDARD_FINALIZERS[1:2],
                                                                       c.integer(1, 2))))])

    def one() -> str:
        return str(pick(c, [(2, Lazy(lambda: c.choice(GOOD_FINALIZERS + STANDARD_FINALIZERS))),
                            (2, Lazy(lambda: qualified_name(c))), (2, Lazy(lambda: c.choice(ODD_FINALIZERS)))]))

    return pick(c, [(1, None), (8, Lazy(lambda: [one() for _ in range(c.integer(1, 4))])),
                    (1, ["orphan", "foregroundDeletion"]), (1, ["example.com/a", "example.com/a"])])


def owner_reference(c: Chooser, edge: bool) -> dict[str, Any]:
    ref = {"apiVersion": c.choice(("v1", "apps/v1", "batch/v1", "jobset.x-k8s.io/v1alpha2")),
           "kind": c.choice(("Job", "Deployment", "Pod", "JobSet")),
           "name": c.choice(("owner", "a" * 300, "Weird Name/%")),
           "uid": c.choice((UUID, "not-a-uuid", "u1"))}
    put(ref, "controller", pick(c, [(4, ABSENT), (2, False), (1, None)]))
    put(ref, "blockOwnerDeletion", pick(c, [(6, ABSENT), (1, True), (1, False)]))
    if edge:
        key = c.choice(("apiVersion", "kind", "name", "uid", "controller"))
        ref[key] = {"apiVersion": Lazy(lambda: pick(c, [(3, Lazy(lambda: c.choice(
                        ("", "a/b/c", "apps/", "/v1", "/", "v1/", "Apps/V1")))), (1, ABSENT)])),
                    "kind": Lazy(lambda: c.choice(("Event", "", ABSENT))),
                    "name": Lazy(lambda: c.choice(("", ABSENT))),
                    "uid": Lazy(lambda: c.choice(("", ABSENT))),
                    "controller": Lazy(lambda: True)}[key].make()
        ref = {k: v for k, v in ref.items() if v is not ABSENT}
    return ref


def owner_references(c: Chooser, edge: bool) -> Any:
    if not edge:
        return pick(c, [(4, ABSENT), (1, []), (3, Lazy(lambda: [owner_reference(c, False)
                                                                 for _ in range(c.integer(1, 3))]))])
    if c.index(10) == 0:
        return None
    refs = [owner_reference(c, c.boolean()) for _ in range(c.integer(1, 4))]
    how = c.choice(("plain", "plain", "duplicate", "two-controllers", "event-owner"))
    if how == "duplicate":  # the apiserver drops exact duplicates (same uid, same fields)
        refs.append(copy.deepcopy(refs[0]))
    elif how == "two-controllers":
        refs += [{"apiVersion": "batch/v1", "kind": "Job", "name": n, "uid": u, "controller": True}
                 for n, u in (("one", UUID), ("two", UUID.replace("6f", "7a")))]
    elif how == "event-owner":  # banned: core v1 Event only, not events.k8s.io
        refs.append({"apiVersion": c.choice(("v1", "events.k8s.io/v1", "/v1")), "kind": "Event",
                     "name": "e", "uid": UUID})
    return refs


# --- the server-set fields --------------------------------------------------------------------


SYSTEM_VALUES: dict[str, tuple[Any, ...]] = {
    "uid": (UUID, "garbage"),
    "creationTimestamp": ("2024-05-01T10:00:00Z", None),
    "generation": (0, 7, -1, -1, -(2**63), 2**63 - 1),
    "deletionTimestamp": ("2024-05-01T10:00:00Z",),
    "deletionGracePeriodSeconds": (30, -5),
    "selfLink": ("/apis/x",),
    "managedFields": ([], [{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                            "fieldsV1": {"f:metadata": {}}}], [{"operation": "Bogus", "fieldsType": "Other"}]),
    "resourceVersion": ("12345",),
}


def system_fields(c: Chooser, meta: dict[str, Any]) -> None:
    """What a client does not set but may send: wiped or checked by the apiserver."""
    for key in c.sample(sorted(SYSTEM_VALUES), c.integer(1, 3)):
        meta[key] = c.choice(SYSTEM_VALUES[key])


#: A JSON type the field does not have (the apiserver refuses the body before validation).
WRONG_TYPES: dict[str, tuple[Any, ...]] = {
    "name": (5, True, ["a"]), "generateName": (5,), "namespace": (5, {}),
    "labels": ({"a": 1}, {"a": True}, ["a"], "a=b", {"a": {"b": "c"}}),
    "annotations": ({"a": 1}, ["a"], "a"), "finalizers": ("orphan", [1], {"a": "b"}),
    "ownerReferences": ({"kind": "Job"}, [1], [{"controller": "yes"}], [{"uid": 5}]),
    "generation": ("1", 1.5), "creationTimestamp": ("not-a-time", 5), "uid": (5,),
    "deletionGracePeriodSeconds": ("30",),
}
META_FIELDS = ("name", "generateName", "namespace", "labels", "annotations", "finalizers", "ownerReferences",
               "system", "wrong-type")


def metadata(c: Chooser, kind: str) -> Any:
    edges = how_many_edges(c, META_FIELDS)
    f = c.filler()

    def by(name: str) -> Chooser:
        return c if name in edges else f

    meta: dict[str, Any] = {}
    put(meta, "name", names(by("name"), "name" in edges))
    if "generateName" in edges or not meta.get("name"):
        put(meta, "generateName", generate_names(by("generateName"), "generateName" in edges))
    put(meta, "namespace", namespaces(by("namespace"), NAMESPACED[kind], "namespace" in edges))
    for key, fn in (("labels", labels), ("annotations", annotations), ("finalizers", finalizers),
                    ("ownerReferences", owner_references)):
        put(meta, key, fn(by(key), key in edges))
    if "system" in edges:
        system_fields(c, meta)
    if "wrong-type" in edges:
        key = c.choice(sorted(WRONG_TYPES))
        meta[key] = c.choice(WRONG_TYPES[key])
        if c.index(10) == 0:
            return c.choice((None, "meta", ["a"], 5))
    return meta


def template_metadata(c: Chooser) -> Any:
    """spec.metadata of a ResourceClaimTemplate: labels and annotations only, the rest Forbidden."""
    edges = how_many_edges(c, ("labels", "annotations", "other"))
    f = c.filler()
    meta: dict[str, Any] = {}
    put(meta, "labels", labels(c if "labels" in edges else f, "labels" in edges))
    put(meta, "annotations", annotations(c if "annotations" in edges else f, "annotations" in edges))
    if "other" in edges:
        key = c.choice(("name", "finalizers", "namespace", "generateName", "uid"))
        meta[key] = {"name": "claim", "finalizers": ["example.com/a"], "namespace": "team-a",
                     "generateName": "c-", "uid": UUID}[key]
    return pick(c, [(2, ABSENT), (8, meta), (1, None)])


def meta_object(c: Chooser) -> dict[str, Any]:
    """One object of a kind we validate, with generated metadata."""
    kind = c.choice(KINDS)
    obj = copy.deepcopy(BASES[kind])
    obj["metadata"] = metadata(c, kind)
    if kind == "ResourceClaimTemplate":
        put(obj["spec"], "metadata", template_metadata(c))
    if c.index(8) == 0:  # a null, {} or "" as a list item or map value of the metadata
        zero_item(uniform(c), obj, ("metadata",))
    return dict(sorted(obj.items()))


# --- UPDATE -----------------------------------------------------------------------------------


def stored_metadata(c: Chooser, kind: str) -> dict[str, Any]:
    """Valid metadata for an object to store (the oracle renames it); no finalizers, so that the
    oracle's clean-up delete really deletes."""
    meta: dict[str, Any] = {"name": "old"}
    if NAMESPACED[kind]:
        meta["namespace"] = c.choice(NAMESPACES[:2])
    put(meta, "labels", pick(c, [(1, ABSENT), (2, {"app": "x", "example.com/tier": "gpu"})]))
    put(meta, "annotations", pick(c, [(1, ABSENT), (2, {"note": "kept"})]))
    put(meta, "ownerReferences", pick(c, [(2, ABSENT), (1, [{"apiVersion": "batch/v1", "kind": "Job",
                                                            "name": "j", "uid": UUID, "controller": True}])]))
    return meta


def meta_edit(c: Chooser, kind: str) -> Edit:
    """One to three changes to the stored metadata (each valid or at an edge)."""
    def one() -> tuple[tuple[str, ...], Any]:
        key = pick(c, [(3, "name"), (2, "namespace"), (2, "uid"), (2, "creationTimestamp"), (1, "resourceVersion"),
                       (1, "generation"), (1, "deletionTimestamp"), (1, "deletionGracePeriodSeconds"),
                       (2, "generateName"), (4, "labels"), (4, "annotations"), (4, "finalizers"),
                       (4, "ownerReferences"), (1, "managedFields")])
        edge = c.boolean()
        value = {
            "name": Lazy(lambda: pick(c, [(1, "renamed"), (2, Lazy(lambda: dns_subdomain(c)))])),
            "namespace": Lazy(lambda: c.choice(("team-a", "default", "", "n"))),
            "uid": Lazy(lambda: c.choice((UUID, "garbage", "", ABSENT))),
            "creationTimestamp": Lazy(lambda: c.choice(("2001-01-01T00:00:00Z", None, ABSENT))),
            "resourceVersion": Lazy(lambda: c.choice((ABSENT, "", "1"))),
            "generation": Lazy(lambda: c.choice((0, -1, 1, 99))),
            "deletionTimestamp": Lazy(lambda: "2024-05-01T10:00:00Z"),
            "deletionGracePeriodSeconds": Lazy(lambda: 5),
            "generateName": Lazy(lambda: generate_names(c, edge)),
            "labels": Lazy(lambda: labels(c, edge)),
            "annotations": Lazy(lambda: annotations(c, edge)),
            "finalizers": Lazy(lambda: finalizers(c, edge)),
            "ownerReferences": Lazy(lambda: owner_references(c, edge)),
            "managedFields": Lazy(lambda: c.choice(([], [{"operation": "Bogus"}], ABSENT))),
        }[key].make()
        return ("metadata", key), value

    return Edit(tuple(one() for _ in range(c.integer(1, 3))), name=f"{kind}:")


def meta_update_pair(c: Chooser) -> tuple[dict[str, Any], Edit]:
    kind = c.choice(KINDS)
    old = copy.deepcopy(BASES[kind])
    old["metadata"] = stored_metadata(c.filler(), kind)
    return old, meta_edit(c, kind)


META_OBJECTS = strategy(meta_object)
META_UPDATE_PAIRS = strategy(meta_update_pair)
