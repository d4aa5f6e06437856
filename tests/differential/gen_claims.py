"""Hypothesis strategies for the claims family: ResourceClaim, ResourceClaimTemplate, DeviceClass.

Aimed at upstream's edges: every list at its limit n-1/n/n+1 (requests, selectors, constraints,
config 32; firstAvailable 8; tolerations 16; derivedAttributes 32), names and references at their
limits and with bad characters or segments, `exactly` against `firstAvailable`, allocation modes
and counts, CEL selectors (valid, library functions, syntax and type errors, unknown fields, the
10 Ki length, the cost limit), tolerations, capacity requests, constraints, opaque config,
adminAccess, derivedAttributes, claim status, templates' `spec.metadata`, DeviceClass
selectors/config/extendedResourceName, null/[]/absent for every optional list, now and then
one JSON value of the wrong type somewhere in the spec (the apiserver's decode step answers that),
and now and then a null, {} or "" as a list item or map value (`gen_zeros`).
Object metadata stays simple and valid: metadata findings belong to the scheduling family.

Values live in `gen_claims_values.py`; this module gives them structure: builders (plain functions
of a `random.Random`) and, at the bottom, the hypothesis strategies made from them.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from tests.differential import gen_claims_values as v
from tests.differential.gen_zeros import zero_item

API = "resource.k8s.io/v1"
NAMESPACES = ["default", "claims-a", "claims-b"]
ABSENT: Any = object()
"""Marker: leave the member out."""

Rnd = random.Random


# -- drawing helpers --------------------------------------------------------------------------------

def one(rnd: Rnd, pool: list[Any]) -> Any:
    """One value of ``pool``."""
    return rnd.choice(pool)


def below(rnd: Rnd, n: int) -> int:
    """An integer in [0, n)."""
    return rnd.randrange(n)


def chance(rnd: Rnd, n: int) -> bool:
    """True one time in ``n``."""
    return below(rnd, n) == 0


def pick(rnd: Rnd, good: list[Any], bad: list[Any], p_bad: float = 0.25) -> Any:
    """A good value, or a bad one with probability ``p_bad``."""
    return one(rnd, bad) if below(rnd, 100) < round(p_bad * 100) else one(rnd, good)


def put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is not ABSENT:
        d[key] = value


def optional(rnd: Rnd, make: Callable[[], Any], null: bool = True, absent: int = 2) -> Any:
    """``make()`` half the time; else absent (``absent`` times as likely as null) or null."""
    if below(rnd, 2):
        return make()
    if not null or below(rnd, absent + 1):
        return ABSENT
    return None


def size(rnd: Rnd, limit: int, small: int = 3) -> int:
    """A list length: usually 0..small, one time in four at the limit (n-1, n, n+1)."""
    if chance(rnd, 4):
        return limit - 1 + below(rnd, 3)
    return below(rnd, small + 1)


LIST_SHAPES = ["absent", "absent", "null", "empty", "items", "items", "items"]


def opt_list(rnd: Rnd, item: Callable[[Rnd, bool], Any], limit: int, rich: bool, small: int = 3) -> Any:
    """An optional list: absent, null, [] or items (plain ones when the list is long or nested)."""
    shape = one(rnd, LIST_SHAPES)
    if shape == "absent":
        return ABSENT
    if shape == "null":
        return None
    if shape == "empty":
        return []
    n = size(rnd, limit, small) if rich else below(rnd, 3)
    return [item(rnd, rich and n <= small) for _ in range(n)]


# -- CEL ---------------------------------------------------------------------------------------

CEL_POOLS = [v.SELECTORS_VALID, v.SELECTORS_VALID, v.SELECTORS_LIBRARY, v.SELECTORS_LITERALS, v.SELECTORS_BAD_SYNTAX,
             v.SELECTORS_BAD_TYPE, v.SELECTORS_UNKNOWN, v.SELECTORS_NOT_BOOL, v.SELECTORS_COST,
             v.SELECTORS_LENGTH, v.SELECTORS_DEEP, [""]]
CEL_PLAIN = v.SELECTORS_VALID[:6] + v.SELECTORS_BAD_SYNTAX[:2]
SELECTOR_SHAPES = ["cel"] * 8 + ["null", "empty", "cel-null", "cel-empty", "extra"]


def cel_expression(rnd: Rnd, rich: bool = True) -> str:
    if not rich:
        return str(one(rnd, CEL_PLAIN))
    return str(one(rnd, CEL_POOLS[below(rnd, len(CEL_POOLS))]))


def selector(rnd: Rnd, rich: bool = True) -> Any:
    shape = one(rnd, SELECTOR_SHAPES)
    if shape == "null":
        return None
    if shape == "empty":
        return {}
    if shape == "cel-null":
        return {"cel": None}
    if shape == "cel-empty":
        return {"cel": {}}
    out = {"cel": {"expression": cel_expression(rnd, rich)}}
    if shape == "extra":
        out["cel"]["bogus"] = 1  # an unknown field: strict decoding refuses it
    return out


# -- one request -------------------------------------------------------------------------------

def request_name(rnd: Rnd) -> Any:
    return pick(rnd, v.DNS_LABELS, v.BAD_DNS_LABELS, 0.15)


def toleration(rnd: Rnd, rich: bool = True) -> dict[str, Any]:
    t: dict[str, Any] = {}
    put(t, "key", optional(rnd, lambda: pick(rnd, v.QUALIFIED, v.BAD_QUALIFIED), absent=1))
    put(t, "operator", optional(rnd, lambda: one(rnd, v.TOLERATION_OPERATORS), absent=3))
    put(t, "value", optional(rnd, lambda: pick(rnd, v.LABEL_VALUES, v.BAD_LABEL_VALUES)))
    put(t, "effect", optional(rnd, lambda: one(rnd, v.TOLERATION_EFFECTS)))
    if chance(rnd, 4):
        t["tolerationSeconds"] = one(rnd, v.TOLERATION_SECONDS)
    return t


CAPACITY_SHAPES = ["requests"] * 5 + ["null-requests", "empty", "empty-requests"]


def capacity(rnd: Rnd) -> Any:
    shape = one(rnd, CAPACITY_SHAPES)
    if shape == "empty":
        return {}
    if shape == "null-requests":
        return {"requests": None}
    if shape == "empty-requests":
        return {"requests": {}}
    keys = {one(rnd, v.CAPACITY_KEYS) for _ in range(1 + below(rnd, 3))}
    return {"requests": {k: pick(rnd, v.QUANTITIES, v.BAD_QUANTITIES, 0.1) for k in sorted(keys)}}


def derived_attribute(rnd: Rnd, rich: bool = True) -> dict[str, Any]:
    d: dict[str, Any] = {}
    put(d, "name", optional(rnd, lambda: pick(rnd, v.ATTRIBUTES, v.BAD_ATTRIBUTES, 0.2), absent=1))
    put(d, "expression", optional(rnd, lambda: one(rnd, v.DERIVED_EXPRESSIONS), absent=1))
    return d


def request_body(rnd: Rnd, rich: bool = True, sub: bool = False) -> dict[str, Any]:
    """The members `exactly` and a `firstAvailable` entry share (plus adminAccess for exactly)."""
    r: dict[str, Any] = {}
    if not chance(rnd, 12):
        r["deviceClassName"] = pick(rnd, v.DNS_SUBDOMAINS, v.BAD_DNS_SUBDOMAINS, 0.15)
    put(r, "selectors", opt_list(rnd, selector, v.SELECTORS_MAX, rich))
    put(r, "allocationMode", optional(rnd, lambda: one(rnd, v.ALLOCATION_MODES), absent=3))
    put(r, "count", optional(rnd, lambda: pick(rnd, v.COUNTS, v.BAD_COUNTS, 0.05), null=False))
    put(r, "tolerations", opt_list(rnd, toleration, v.TOLERATIONS_MAX, rich))
    if chance(rnd, 3):
        put(r, "capacity", optional(rnd, lambda: capacity(rnd), absent=1))
    if chance(rnd, 4):
        put(r, "derivedAttributes", opt_list(rnd, derived_attribute, v.DERIVED_MAX, rich, small=2))
    if not sub and chance(rnd, 4):
        put(r, "adminAccess", optional(rnd, lambda: rnd.random() < 0.5, absent=1))
    return r


def sub_request(rnd: Rnd, rich: bool = True) -> dict[str, Any]:
    s = {} if chance(rnd, 16) else {"name": request_name(rnd)}
    return {**s, **request_body(rnd, rich, sub=True)}


UNIONS = ["exactly"] * 6 + ["firstAvailable"] * 3 + ["both", "neither", "fa-empty", "fa-null", "ex-null",
                                                      "ex-empty"]


def device_request(rnd: Rnd, rich: bool = True) -> dict[str, Any]:
    r: dict[str, Any] = {} if chance(rnd, 16) else {"name": request_name(rnd)}
    union = one(rnd, UNIONS)
    if union in ("exactly", "both", "fa-empty", "fa-null"):
        r["exactly"] = request_body(rnd, rich)
    if union in ("firstAvailable", "both"):
        n = size(rnd, v.FIRST_AVAILABLE_MAX, 2) if rich else 1
        r["firstAvailable"] = [sub_request(rnd, rich and n <= 3) for _ in range(n)]
    if union == "fa-empty":
        r["firstAvailable"] = []
    if union == "fa-null":
        r["firstAvailable"] = None
    if union == "ex-null":
        r["exactly"] = None
    if union == "ex-empty":
        r["exactly"] = {}
    return r


# -- references, constraints, config ------------------------------------------------------------

def request_refs_of(requests: list[Any]) -> list[str]:
    """Every reference the requests make valid: `req` and `req/sub`."""
    out: list[str] = []
    for r in requests:
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            continue
        out.append(r["name"])
        subs = r.get("firstAvailable")
        for s in subs if isinstance(subs, list) else []:
            if isinstance(s, dict) and isinstance(s.get("name"), str):
                out.append(f"{r['name']}/{s['name']}")
    return out


BAD_REFS = ["missing", "gpu/missing", "a/b/c", "REQ", "", "gpu/", "/sub", "a" * 64, "x/" + "a" * 64, "a//b"]
REF_SHAPES = ["absent", "absent", "null", "empty", "items", "items", "many"]


def refs(rnd: Rnd, names: list[str], rich: bool = True) -> Any:
    shape = one(rnd, REF_SHAPES)
    if shape == "absent":
        return ABSENT
    if shape == "null":
        return None
    if shape == "empty":
        return []
    if shape == "many" and rich:
        return [f"r{i}" for i in range(v.REQUESTS_MAX + below(rnd, 2))]
    return [names[below(rnd, len(names))] if names and below(rnd, 3) else one(rnd, BAD_REFS)
            for _ in range(1 + below(rnd, 3))]


CONSTRAINT_KINDS = ["match"] * 4 + ["distinct"] * 3 + ["both", "neither", "null"]


def constraint(rnd: Rnd, names: list[str], attrs: list[str], rich: bool = True) -> Any:
    c: dict[str, Any] = {}
    put(c, "requests", refs(rnd, names, rich))

    def attr() -> str:
        if attrs and below(rnd, 2):
            return attrs[below(rnd, len(attrs))]
        return str(pick(rnd, v.ATTRIBUTES, v.BAD_ATTRIBUTES, 0.2))
    which = one(rnd, CONSTRAINT_KINDS)
    if which in ("match", "both"):
        c["matchAttribute"] = attr()
    if which in ("distinct", "both"):
        c["distinctAttribute"] = attr()
    if which == "null":
        c["matchAttribute"] = None
    return c


OPAQUE_SHAPES = ["ok"] * 6 + ["null", "empty", "no-params", "no-driver"]


def opaque(rnd: Rnd) -> Any:
    shape = one(rnd, OPAQUE_SHAPES)
    if shape == "null":
        return None
    if shape == "empty":
        return {}
    o: dict[str, Any] = {}
    if shape != "no-driver":
        o["driver"] = pick(rnd, v.DRIVERS, v.BAD_DRIVERS, 0.2)
    if shape != "no-params":
        o["parameters"] = copy.deepcopy(one(rnd, v.OPAQUE_PARAMETERS))
    return o


def claim_config(rnd: Rnd, names: list[str], rich: bool = True) -> Any:
    c: dict[str, Any] = {}
    put(c, "requests", refs(rnd, names, rich))
    if not chance(rnd, 6):
        c["opaque"] = opaque(rnd)
    return c


# -- claim spec, status --------------------------------------------------------------------------

def derived_names_of(requests: list[Any]) -> list[str]:
    out = []
    for r in requests:
        subs = r.get("firstAvailable") if isinstance(r, dict) else None
        bodies = [r.get("exactly")] + (subs if isinstance(subs, list) else []) if isinstance(r, dict) else []
        for b in bodies:
            derived = b.get("derivedAttributes") if isinstance(b, dict) else None
            for d in derived if isinstance(derived, list) else []:
                if isinstance(d, dict) and isinstance(d.get("name"), str):
                    out.append(d["name"])
    return out


SPEC_SHAPES = ["full"] * 12 + ["null", "empty", "devices-null", "devices-empty"]


def claim_spec(rnd: Rnd) -> Any:
    shape = one(rnd, SPEC_SHAPES)
    if shape == "null":
        return None
    if shape == "empty":
        return {}
    if shape in ("devices-null", "devices-empty"):
        return {"devices": None if shape == "devices-null" else {}}
    devices: dict[str, Any] = {}
    requests = opt_list(rnd, device_request, v.REQUESTS_MAX, True, small=3)
    put(devices, "requests", requests)
    reqs = requests if isinstance(requests, list) else []
    names, attrs = request_refs_of(reqs), derived_names_of(reqs)
    rich = len(reqs) <= 3
    put(devices, "constraints", opt_list(rnd, lambda x, r: constraint(x, names, attrs, r), v.CONSTRAINTS_MAX, rich))
    put(devices, "config", opt_list(rnd, lambda x, r: claim_config(x, names, r), v.CONFIG_MAX, rich))
    if chance(rnd, 5):
        duplicate_something(rnd, devices)
    return {"devices": devices}


def duplicate_something(rnd: Rnd, devices: dict[str, Any]) -> None:
    """A second copy of a request (or of a sub-request): the duplicate-name rules."""
    reqs = devices.get("requests")
    if not isinstance(reqs, list) or not reqs or not isinstance(reqs[0], dict):
        return
    first = copy.deepcopy(reqs[0])
    subs = first.get("firstAvailable")
    if below(rnd, 2) or not isinstance(subs, list) or not subs:
        reqs.append(first)
    else:
        subs.append(copy.deepcopy(subs[0]))
        reqs[0] = first


UUIDS = ["0b4b5b5e-8f5e-4c6e-9f3e-2b7c1a0d9e8f", "0B4B5B5E-8F5E-4C6E-9F3E-2B7C1A0D9E8F", "not-a-uuid",
         "0b4b5b5e8f5e4c6e9f3e2b7c1a0d9e8f", "", "{0b4b5b5e-8f5e-4c6e-9f3e-2b7c1a0d9e8f}",
         "7d444840-9dc0-11d1-b245-5ffdce74fad2"]
POOLS = ["pool-a", "node-1/pool", "", "Bad_Pool", "a" * 254, "a/b/c", "pool-a/"]
CONFIG_SOURCES = ["FromClaim", "FromClass", "", "X"]
NODE_VALUES = ["node-1", "", "a b"]
SKIP_OPS = ["NodePrepareResources", "NodeUnprepareResources", "*", "Bogus"]


def allocation_result(rnd: Rnd, names: list[str]) -> dict[str, Any]:
    r: dict[str, Any] = {
        "request": names[below(rnd, len(names))] if names and below(rnd, 4) else one(rnd, BAD_REFS),
        "driver": pick(rnd, v.DRIVERS, v.BAD_DRIVERS, 0.15),
        "pool": one(rnd, POOLS) if chance(rnd, 4) else "pool-a",
        "device": pick(rnd, v.DNS_LABELS, v.BAD_DNS_LABELS, 0.15),
    }
    put(r, "shareID", optional(rnd, lambda: one(rnd, UUIDS)))
    if chance(rnd, 4):
        r["adminAccess"] = rnd.random() < 0.5

    def conditions() -> list[Any]:
        return [pick(rnd, v.QUALIFIED, v.BAD_QUALIFIED, 0.2) for _ in range(below(rnd, 6))]
    put(r, "bindingConditions", optional(rnd, conditions, absent=3))
    put(r, "bindingFailureConditions", optional(rnd, conditions, absent=3))
    if chance(rnd, 5):
        r["tolerations"] = [toleration(rnd) for _ in range(below(rnd, 3))]
    if chance(rnd, 6):
        r["consumedCapacity"] = {"memory": one(rnd, v.QUANTITIES)}
    if chance(rnd, 8):
        r["skipNodeOperations"] = [one(rnd, SKIP_OPS) for _ in range(below(rnd, 3))]
    return r


CONSUMER_UIDS = ["uid-1", "uid-2", UUIDS[0]]
CONSUMER_KEYS = ["resource", "name", "uid", "apiGroup"]
CONSUMER_VALUES = ["", "x"]
DEVICE_DATA: list[Any] = [{"a": 1}, {}, [1], "x"]
NO_SPEC: list[Any] = [None, {}]


def reservation(rnd: Rnd) -> dict[str, Any]:
    ref = {"resource": "pods", "name": "pod-1", "uid": one(rnd, CONSUMER_UIDS)}
    for _ in range(below(rnd, 3) // 2):
        ref[one(rnd, CONSUMER_KEYS)] = one(rnd, CONSUMER_VALUES)
    return ref


def claim_status(rnd: Rnd, spec: Any) -> dict[str, Any]:
    """A status as a scheduler or a driver would write it (valid or not)."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    reqs = devices.get("requests") if isinstance(devices, dict) else None
    names = request_refs_of(reqs if isinstance(reqs, list) else [])
    s: dict[str, Any] = {}
    results = [allocation_result(rnd, names) for _ in range(below(rnd, 4))]
    alloc: dict[str, Any] = {"devices": {"results": results}}
    if chance(rnd, 4):
        alloc["devices"]["config"] = [{"source": one(rnd, CONFIG_SOURCES), "requests": names[:1],
                                       "opaque": opaque(rnd)}]
    if chance(rnd, 4):
        alloc["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [one(rnd, NODE_VALUES)]}]}]}
    if not chance(rnd, 4):
        s["allocation"] = alloc
    put(s, "reservedFor", optional(rnd, lambda: [reservation(rnd) for _ in range(below(rnd, 4))]))
    if below(rnd, 2):
        devs = []
        extra = [{"driver": "dra.example.com", "pool": "p", "device": "other"}] if below(rnd, 2) else []
        for r in results[:2] + extra:
            d = {k: r[k] for k in ("driver", "pool", "device") if k in r}
            put(d, "shareID", r.get("shareID", ABSENT))
            if chance(rnd, 3):
                d["data"] = copy.deepcopy(one(rnd, DEVICE_DATA))
            devs.append(d)
        if devs and chance(rnd, 4):
            devs.append(copy.deepcopy(devs[0]))
        s["devices"] = devs
    return s


def clean_status(rnd: Rnd, spec: Any) -> dict[str, Any]:
    """A valid status (the one stored first, so that the next write updates something)."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    reqs = devices.get("requests") if isinstance(devices, dict) else None
    names = request_refs_of(reqs if isinstance(reqs, list) else [])
    if not names or chance(rnd, 5):
        return {}
    results = []
    for i in range(1 + below(rnd, 3)):
        r: dict[str, Any] = {"request": one(rnd, names), "driver": "dra.example.com", "pool": "pool-a",
                             "device": f"dev-{i}"}
        if chance(rnd, 3):
            r["shareID"] = UUIDS[0] if i == 0 else UUIDS[-1]
        if chance(rnd, 4):
            r["bindingConditions"], r["bindingFailureConditions"] = ["example.com/ready"], ["example.com/failed"]
        if chance(rnd, 5):
            r["adminAccess"] = False
        results.append(r)
    s: dict[str, Any] = {"allocation": {"devices": {"results": results}}}
    if below(rnd, 2):
        s["reservedFor"] = [{"resource": "pods", "name": "pod-1", "uid": "uid-1"}]
    if below(rnd, 2):
        s["devices"] = [{k: r[k] for k in ("driver", "pool", "device", "shareID") if k in r} for r in results[:1]]
    return s


# -- the three kinds -----------------------------------------------------------------------------

def _meta(rnd: Rnd, namespaced: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"gen-{below(rnd, 10**6)}"}
    if namespaced and below(rnd, 4):
        meta["namespace"] = one(rnd, NAMESPACES)
    return meta


def build_claim(rnd: Rnd, status: bool = True) -> dict[str, Any]:
    spec = claim_spec(rnd)
    o: dict[str, Any] = {"apiVersion": API, "kind": "ResourceClaim", "metadata": _meta(rnd, True)}
    if not chance(rnd, 30):
        o["spec"] = spec
    if status and chance(rnd, 8):
        o["status"] = claim_status(rnd, spec)  # wiped on create; only decoding applies
    return maybe_zero_item(rnd, maybe_wrong_type(rnd, o))


META_SHAPES = ["absent"] * 3 + ["labels"] * 3 + ["annotations", "both", "other", "null", "empty"]
META_OTHER: list[tuple[str, Any]] = [
    ("name", "x"), ("namespace", "default"), ("generateName", "x-"), ("finalizers", ["example.com/f"]),
    ("uid", "0b4b5b5e-8f5e-4c6e-9f3e-2b7c1a0d9e8f"), ("resourceVersion", "1"),
    ("ownerReferences", [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]),
    ("generation", 3), ("creationTimestamp", "2024-01-01T00:00:00Z"), ("deletionGracePeriodSeconds", 5),
    ("name", ""), ("labels", {}), ("managedFields", [{"manager": "x", "operation": "Apply"}])]
ANNOTATION_VALUES = ["", "x", "a" * 300, "a" * (256 * 1024 - 20), "a" * (256 * 1024)]


def template_metadata(rnd: Rnd) -> Any:
    shape = one(rnd, META_SHAPES)
    if shape == "absent":
        return ABSENT
    if shape == "null":
        return None
    m: dict[str, Any] = {}
    if shape in ("labels", "both"):
        m["labels"] = {pick(rnd, v.QUALIFIED, v.BAD_QUALIFIED, 0.2):
                       pick(rnd, v.LABEL_VALUES, v.BAD_LABEL_VALUES, 0.2) for _ in range(1 + below(rnd, 3))}
    if shape in ("annotations", "both"):
        m["annotations"] = {pick(rnd, v.QUALIFIED, v.BAD_QUALIFIED, 0.2): one(rnd, ANNOTATION_VALUES)
                            for _ in range(1 + below(rnd, 3))}
    if shape == "other":  # only labels and annotations may be set in a template's metadata
        key, val = one(rnd, META_OTHER)
        m[key] = copy.deepcopy(val)
    return m


def build_template(rnd: Rnd) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    put(spec, "metadata", template_metadata(rnd))
    if not chance(rnd, 30):
        spec["spec"] = claim_spec(rnd)
    o: dict[str, Any] = {"apiVersion": API, "kind": "ResourceClaimTemplate", "metadata": _meta(rnd, True)}
    if not chance(rnd, 30):
        o["spec"] = spec
    elif below(rnd, 2):
        o["spec"] = None
    return maybe_zero_item(rnd, maybe_wrong_type(rnd, o))


def class_config(rnd: Rnd, rich: bool = True) -> Any:
    c: dict[str, Any] = {}
    if not chance(rnd, 6):
        c["opaque"] = opaque(rnd)
    if chance(rnd, 10):
        c["requests"] = ["gpu"]  # not a DeviceClass config field: strict decoding refuses it
    return c


def device_class_spec(rnd: Rnd) -> Any:
    if chance(rnd, 20):
        return copy.deepcopy(one(rnd, NO_SPEC))
    s: dict[str, Any] = {}
    put(s, "selectors", opt_list(rnd, selector, v.SELECTORS_MAX, True))
    put(s, "config", opt_list(rnd, class_config, v.CONFIG_MAX, True))
    put(s, "extendedResourceName", optional(rnd, lambda: one(rnd, v.EXTENDED_RESOURCE_NAMES)))
    return s


def build_class(rnd: Rnd) -> dict[str, Any]:
    o: dict[str, Any] = {"apiVersion": API, "kind": "DeviceClass", "metadata": _meta(rnd, False)}
    if not chance(rnd, 30):
        o["spec"] = device_class_spec(rnd)
    return maybe_zero_item(rnd, maybe_wrong_type(rnd, o))


def build_object(rnd: Rnd) -> dict[str, Any]:
    """One object of the family: claims half the time, then templates and classes."""
    return (build_claim, build_claim, build_template, build_class)[below(rnd, 4)](rnd)


# -- strategies ------------------------------------------------------------------------------------
# Hypothesis draws each choice through its engine at some microseconds a choice, and an object takes
# hundreds; so it draws one seeded Random per example (reproducible under `draw_many`'s seed) and the
# builders make every choice from it.

def _built(build: Callable[[Rnd], Any]) -> st.SearchStrategy[Any]:
    return st.randoms(use_true_random=True).map(build)


def resource_claim(status: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    return _built(lambda rnd: build_claim(rnd, status))


def resource_claim_template() -> st.SearchStrategy[dict[str, Any]]:
    return _built(build_template)


def device_class() -> st.SearchStrategy[dict[str, Any]]:
    return _built(build_class)


def objects() -> st.SearchStrategy[dict[str, Any]]:
    return _built(build_object)


# -- wrong JSON types ------------------------------------------------------------------------------

def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, val in doc.items():
            out += _paths(val, (*prefix, k))
    elif isinstance(doc, list):
        for i, val in enumerate(doc[:4]):
            out += _paths(val, (*prefix, i))
    return out


def maybe_wrong_type(rnd: Rnd, obj: dict[str, Any]) -> dict[str, Any]:
    """One time in eight: one value under ``spec`` (or status) replaced by one of another JSON type."""
    if not chance(rnd, 8):
        return obj
    paths = [p for p in _paths(obj) if p[0] in ("spec", "status")]
    if not paths:
        return obj
    path = paths[below(rnd, len(paths))]
    out = copy.deepcopy(obj)
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = copy.deepcopy(one(rnd, v.WRONG_TYPES))
    return out


def maybe_zero_item(rnd: Rnd, obj: dict[str, Any]) -> dict[str, Any]:
    """One time in eight: a null, {} or "" as one list item or map value under ``spec`` (`gen_zeros`)."""
    if not chance(rnd, 8):
        return obj
    out = copy.deepcopy(obj)
    zero_item(lambda options: options[below(rnd, len(options))], out)
    return out


# -- claim status updates --------------------------------------------------------------------------

STATUS_TWEAKS = ["fresh", "fresh", "reserve", "rename-device", "drop-allocation", "add-device-status",
                 "same", "drop-reservations"]


def _tweak(rnd: Rnd, first: dict[str, Any], spec: Any) -> dict[str, Any]:
    """A second status from the first, as the next writer would make it."""
    tweak = one(rnd, STATUS_TWEAKS)
    s = copy.deepcopy(first)
    results = ((s.get("allocation") or {}).get("devices") or {}).get("results") or []
    if tweak == "fresh":
        return claim_status(rnd, spec)
    if tweak == "reserve":
        s["reservedFor"] = [*(s.get("reservedFor") or []), reservation(rnd)]
    elif tweak == "rename-device" and results:
        results[0]["device"] = "renamed"
    elif tweak == "drop-allocation":
        s.pop("allocation", None)
    elif tweak == "add-device-status" and results:
        r = results[-1]
        s["devices"] = [*(s.get("devices") or []), {k: r[k] for k in ("driver", "pool", "device", "shareID") if k in r}]
    elif tweak == "drop-reservations":
        s.pop("reservedFor", None)
    return s


def build_claim_with_statuses(rnd: Rnd) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """(claim, a status written first or None, the status written next) for `/status` updates."""
    claim = build_claim(rnd, status=False)
    spec = claim.get("spec")
    first = clean_status(rnd, spec) if below(rnd, 2) else None
    second = _tweak(rnd, first, spec) if first is not None else claim_status(rnd, spec)
    if chance(rnd, 10):
        second = maybe_wrong_type(rnd, {"status": second}).get("status", second)
    return claim, first, second


def claim_with_statuses() -> st.SearchStrategy[tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]]:
    return _built(build_claim_with_statuses)
