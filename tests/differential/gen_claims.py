"""Hypothesis strategies for the claims family: ResourceClaim, ResourceClaimTemplate, DeviceClass.

Aimed at upstream's edges: every list at its limit n-1/n/n+1 (requests, selectors, constraints,
config 32; firstAvailable 8; tolerations 16; derivedAttributes 32), names and references at their
limits and with bad characters or segments, `exactly` against `firstAvailable`, allocation modes
and counts, CEL selectors (valid, library functions, syntax and type errors, unknown fields, the
10 Ki length, the cost limit), tolerations, capacity requests, constraints, opaque config,
adminAccess, derivedAttributes, claim status, templates' `spec.metadata`, DeviceClass
selectors/config/extendedResourceName, null/[]/absent for every optional list, and now and then
one JSON value of the wrong type somewhere in the spec (the apiserver's decode step answers that).
Object metadata stays simple and valid: metadata findings belong to the scheduling family.

Values live in `gen_claims_values.py`; this module gives them structure. The builders are plain
functions of hypothesis' ``draw`` that only draw from strategies built once (building strategies
per draw is what makes generating slow); the kinds at the bottom are the strategies.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from tests.differential import gen_claims_values as v

API = "resource.k8s.io/v1"
NAMESPACES = ["default", "claims-a", "claims-b"]
ABSENT: Any = object()
"""Marker: leave the member out."""

Draw = Callable[[st.SearchStrategy[Any]], Any]
_CACHE: dict[tuple[Any, ...], st.SearchStrategy[Any]] = {}


# -- drawing helpers --------------------------------------------------------------------------------

def one(draw: Draw, pool: list[Any]) -> Any:
    """One value of ``pool``, which must be a module-level list: its strategy is built once and
    kept under the list's id (a temporary list could share the id of a later one)."""
    key = ("one", id(pool))
    if key not in _CACHE:
        _CACHE[key] = st.sampled_from(pool)
    return draw(_CACHE[key])


def below(draw: Draw, n: int) -> int:
    """An integer in [0, n)."""
    key = ("int", n)
    if key not in _CACHE:
        _CACHE[key] = st.integers(0, n - 1)
    return int(draw(_CACHE[key]))


def chance(draw: Draw, n: int) -> bool:
    """True one time in ``n``."""
    return below(draw, n) == 0


def pick(draw: Draw, good: list[Any], bad: list[Any], p_bad: float = 0.25) -> Any:
    """A good value, or a bad one with probability ``p_bad``."""
    return one(draw, bad) if below(draw, 100) < round(p_bad * 100) else one(draw, good)


def put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is not ABSENT:
        d[key] = value


def optional(draw: Draw, make: Callable[[], Any], null: bool = True, absent: int = 2) -> Any:
    """``make()`` half the time; else absent (``absent`` times as likely as null) or null."""
    if below(draw, 2):
        return make()
    if not null or below(draw, absent + 1):
        return ABSENT
    return None


def size(draw: Draw, limit: int, small: int = 3) -> int:
    """A list length: usually 0..small, one time in four at the limit (n-1, n, n+1)."""
    if chance(draw, 4):
        return limit - 1 + below(draw, 3)
    return below(draw, small + 1)


LIST_SHAPES = ["absent", "absent", "null", "empty", "items", "items", "items"]


def opt_list(draw: Draw, item: Callable[[Draw, bool], Any], limit: int, rich: bool, small: int = 3) -> Any:
    """An optional list: absent, null, [] or items (plain ones when the list is long or nested)."""
    shape = one(draw, LIST_SHAPES)
    if shape == "absent":
        return ABSENT
    if shape == "null":
        return None
    if shape == "empty":
        return []
    n = size(draw, limit, small) if rich else below(draw, 3)
    return [item(draw, rich and n <= small) for _ in range(n)]


# -- CEL ---------------------------------------------------------------------------------------

CEL_POOLS = [v.SELECTORS_VALID, v.SELECTORS_VALID, v.SELECTORS_LIBRARY, v.SELECTORS_BAD_SYNTAX,
             v.SELECTORS_BAD_TYPE, v.SELECTORS_UNKNOWN, v.SELECTORS_NOT_BOOL, v.SELECTORS_COST,
             v.SELECTORS_LENGTH, v.SELECTORS_DEEP, [""]]
CEL_PLAIN = v.SELECTORS_VALID[:6] + v.SELECTORS_BAD_SYNTAX[:2]
SELECTOR_SHAPES = ["cel"] * 8 + ["null", "empty", "cel-null", "cel-empty", "extra"]


def cel_expression(draw: Draw, rich: bool = True) -> str:
    if not rich:
        return str(one(draw, CEL_PLAIN))
    return str(one(draw, CEL_POOLS[below(draw, len(CEL_POOLS))]))


def selector(draw: Draw, rich: bool = True) -> Any:
    shape = one(draw, SELECTOR_SHAPES)
    if shape == "null":
        return None
    if shape == "empty":
        return {}
    if shape == "cel-null":
        return {"cel": None}
    if shape == "cel-empty":
        return {"cel": {}}
    out = {"cel": {"expression": cel_expression(draw, rich)}}
    if shape == "extra":
        out["cel"]["bogus"] = 1  # an unknown field: strict decoding refuses it
    return out


# -- one request -------------------------------------------------------------------------------

def request_name(draw: Draw) -> Any:
    return pick(draw, v.DNS_LABELS, v.BAD_DNS_LABELS, 0.15)


def toleration(draw: Draw, rich: bool = True) -> dict[str, Any]:
    t: dict[str, Any] = {}
    put(t, "key", optional(draw, lambda: pick(draw, v.QUALIFIED, v.BAD_QUALIFIED), absent=1))
    put(t, "operator", optional(draw, lambda: one(draw, v.TOLERATION_OPERATORS), absent=3))
    put(t, "value", optional(draw, lambda: pick(draw, v.LABEL_VALUES, v.BAD_LABEL_VALUES)))
    put(t, "effect", optional(draw, lambda: one(draw, v.TOLERATION_EFFECTS)))
    if chance(draw, 4):
        t["tolerationSeconds"] = one(draw, v.TOLERATION_SECONDS)
    return t


CAPACITY_SHAPES = ["requests"] * 5 + ["null-requests", "empty", "empty-requests"]


def capacity(draw: Draw) -> Any:
    shape = one(draw, CAPACITY_SHAPES)
    if shape == "empty":
        return {}
    if shape == "null-requests":
        return {"requests": None}
    if shape == "empty-requests":
        return {"requests": {}}
    keys = {one(draw, v.CAPACITY_KEYS) for _ in range(1 + below(draw, 3))}
    return {"requests": {k: pick(draw, v.QUANTITIES, v.BAD_QUANTITIES, 0.1) for k in sorted(keys)}}


def derived_attribute(draw: Draw, rich: bool = True) -> dict[str, Any]:
    d: dict[str, Any] = {}
    put(d, "name", optional(draw, lambda: pick(draw, v.ATTRIBUTES, v.BAD_ATTRIBUTES, 0.2), absent=1))
    put(d, "expression", optional(draw, lambda: one(draw, v.DERIVED_EXPRESSIONS), absent=1))
    return d


def request_body(draw: Draw, rich: bool = True, sub: bool = False) -> dict[str, Any]:
    """The members `exactly` and a `firstAvailable` entry share (plus adminAccess for exactly)."""
    r: dict[str, Any] = {}
    if not chance(draw, 12):
        r["deviceClassName"] = pick(draw, v.DNS_SUBDOMAINS, v.BAD_DNS_SUBDOMAINS, 0.15)
    put(r, "selectors", opt_list(draw, selector, v.SELECTORS_MAX, rich))
    put(r, "allocationMode", optional(draw, lambda: one(draw, v.ALLOCATION_MODES), absent=3))
    put(r, "count", optional(draw, lambda: pick(draw, v.COUNTS, v.BAD_COUNTS, 0.05), null=False))
    put(r, "tolerations", opt_list(draw, toleration, v.TOLERATIONS_MAX, rich))
    if chance(draw, 3):
        put(r, "capacity", optional(draw, lambda: capacity(draw), absent=1))
    if chance(draw, 4):
        put(r, "derivedAttributes", opt_list(draw, derived_attribute, v.DERIVED_MAX, rich, small=2))
    if not sub and chance(draw, 4):
        put(r, "adminAccess", optional(draw, lambda: draw(st.booleans()), absent=1))
    return r


def sub_request(draw: Draw, rich: bool = True) -> dict[str, Any]:
    s = {} if chance(draw, 16) else {"name": request_name(draw)}
    return {**s, **request_body(draw, rich, sub=True)}


UNIONS = ["exactly"] * 6 + ["firstAvailable"] * 3 + ["both", "neither", "fa-empty", "fa-null", "ex-null",
                                                      "ex-empty"]


def device_request(draw: Draw, rich: bool = True) -> dict[str, Any]:
    r: dict[str, Any] = {} if chance(draw, 16) else {"name": request_name(draw)}
    union = one(draw, UNIONS)
    if union in ("exactly", "both", "fa-empty", "fa-null"):
        r["exactly"] = request_body(draw, rich)
    if union in ("firstAvailable", "both"):
        n = size(draw, v.FIRST_AVAILABLE_MAX, 2) if rich else 1
        r["firstAvailable"] = [sub_request(draw, rich and n <= 3) for _ in range(n)]
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


def refs(draw: Draw, names: list[str], rich: bool = True) -> Any:
    shape = one(draw, REF_SHAPES)
    if shape == "absent":
        return ABSENT
    if shape == "null":
        return None
    if shape == "empty":
        return []
    if shape == "many" and rich:
        return [f"r{i}" for i in range(v.REQUESTS_MAX + below(draw, 2))]
    return [names[below(draw, len(names))] if names and below(draw, 3) else one(draw, BAD_REFS)
            for _ in range(1 + below(draw, 3))]


CONSTRAINT_KINDS = ["match"] * 4 + ["distinct"] * 3 + ["both", "neither", "null"]


def constraint(draw: Draw, names: list[str], attrs: list[str], rich: bool = True) -> Any:
    c: dict[str, Any] = {}
    put(c, "requests", refs(draw, names, rich))

    def attr() -> str:
        if attrs and below(draw, 2):
            return attrs[below(draw, len(attrs))]
        return str(pick(draw, v.ATTRIBUTES, v.BAD_ATTRIBUTES, 0.2))
    which = one(draw, CONSTRAINT_KINDS)
    if which in ("match", "both"):
        c["matchAttribute"] = attr()
    if which in ("distinct", "both"):
        c["distinctAttribute"] = attr()
    if which == "null":
        c["matchAttribute"] = None
    return c


OPAQUE_SHAPES = ["ok"] * 6 + ["null", "empty", "no-params", "no-driver"]


def opaque(draw: Draw) -> Any:
    shape = one(draw, OPAQUE_SHAPES)
    if shape == "null":
        return None
    if shape == "empty":
        return {}
    o: dict[str, Any] = {}
    if shape != "no-driver":
        o["driver"] = pick(draw, v.DRIVERS, v.BAD_DRIVERS, 0.2)
    if shape != "no-params":
        o["parameters"] = copy.deepcopy(one(draw, v.OPAQUE_PARAMETERS))
    return o


def claim_config(draw: Draw, names: list[str], rich: bool = True) -> Any:
    c: dict[str, Any] = {}
    put(c, "requests", refs(draw, names, rich))
    if not chance(draw, 6):
        c["opaque"] = opaque(draw)
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


def claim_spec(draw: Draw) -> Any:
    shape = one(draw, SPEC_SHAPES)
    if shape == "null":
        return None
    if shape == "empty":
        return {}
    if shape in ("devices-null", "devices-empty"):
        return {"devices": None if shape == "devices-null" else {}}
    devices: dict[str, Any] = {}
    requests = opt_list(draw, device_request, v.REQUESTS_MAX, True, small=3)
    put(devices, "requests", requests)
    reqs = requests if isinstance(requests, list) else []
    names, attrs = request_refs_of(reqs), derived_names_of(reqs)
    rich = len(reqs) <= 3
    put(devices, "constraints", opt_list(draw, lambda d, r: constraint(d, names, attrs, r), v.CONSTRAINTS_MAX, rich))
    put(devices, "config", opt_list(draw, lambda d, r: claim_config(d, names, r), v.CONFIG_MAX, rich))
    if chance(draw, 5):
        duplicate_something(draw, devices)
    return {"devices": devices}


def duplicate_something(draw: Draw, devices: dict[str, Any]) -> None:
    """A second copy of a request (or of a sub-request): the duplicate-name rules."""
    reqs = devices.get("requests")
    if not isinstance(reqs, list) or not reqs or not isinstance(reqs[0], dict):
        return
    first = copy.deepcopy(reqs[0])
    subs = first.get("firstAvailable")
    if below(draw, 2) or not isinstance(subs, list) or not subs:
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


def allocation_result(draw: Draw, names: list[str]) -> dict[str, Any]:
    r: dict[str, Any] = {
        "request": names[below(draw, len(names))] if names and below(draw, 4) else one(draw, BAD_REFS),
        "driver": pick(draw, v.DRIVERS, v.BAD_DRIVERS, 0.15),
        "pool": one(draw, POOLS) if chance(draw, 4) else "pool-a",
        "device": pick(draw, v.DNS_LABELS, v.BAD_DNS_LABELS, 0.15),
    }
    put(r, "shareID", optional(draw, lambda: one(draw, UUIDS)))
    if chance(draw, 4):
        r["adminAccess"] = draw(st.booleans())

    def conditions() -> list[Any]:
        return [pick(draw, v.QUALIFIED, v.BAD_QUALIFIED, 0.2) for _ in range(below(draw, 6))]
    put(r, "bindingConditions", optional(draw, conditions, absent=3))
    put(r, "bindingFailureConditions", optional(draw, conditions, absent=3))
    if chance(draw, 5):
        r["tolerations"] = [toleration(draw) for _ in range(below(draw, 3))]
    if chance(draw, 6):
        r["consumedCapacity"] = {"memory": one(draw, v.QUANTITIES)}
    if chance(draw, 8):
        r["skipNodeOperations"] = [one(draw, SKIP_OPS) for _ in range(below(draw, 3))]
    return r


CONSUMER_UIDS = ["uid-1", "uid-2", UUIDS[0]]
CONSUMER_KEYS = ["resource", "name", "uid", "apiGroup"]
CONSUMER_VALUES = ["", "x"]
DEVICE_DATA: list[Any] = [{"a": 1}, {}, [1], "x"]
NO_SPEC: list[Any] = [None, {}]


def reservation(draw: Draw) -> dict[str, Any]:
    ref = {"resource": "pods", "name": "pod-1", "uid": one(draw, CONSUMER_UIDS)}
    for _ in range(below(draw, 3) // 2):
        ref[one(draw, CONSUMER_KEYS)] = one(draw, CONSUMER_VALUES)
    return ref


def claim_status(draw: Draw, spec: Any) -> dict[str, Any]:
    """A status as a scheduler or a driver would write it (valid or not)."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    reqs = devices.get("requests") if isinstance(devices, dict) else None
    names = request_refs_of(reqs if isinstance(reqs, list) else [])
    s: dict[str, Any] = {}
    results = [allocation_result(draw, names) for _ in range(below(draw, 4))]
    alloc: dict[str, Any] = {"devices": {"results": results}}
    if chance(draw, 4):
        alloc["devices"]["config"] = [{"source": one(draw, CONFIG_SOURCES), "requests": names[:1],
                                       "opaque": opaque(draw)}]
    if chance(draw, 4):
        alloc["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [one(draw, NODE_VALUES)]}]}]}
    if not chance(draw, 4):
        s["allocation"] = alloc
    put(s, "reservedFor", optional(draw, lambda: [reservation(draw) for _ in range(below(draw, 4))]))
    if below(draw, 2):
        devs = []
        extra = [{"driver": "dra.example.com", "pool": "p", "device": "other"}] if below(draw, 2) else []
        for r in results[:2] + extra:
            d = {k: r[k] for k in ("driver", "pool", "device") if k in r}
            put(d, "shareID", r.get("shareID", ABSENT))
            if chance(draw, 3):
                d["data"] = copy.deepcopy(one(draw, DEVICE_DATA))
            devs.append(d)
        if devs and chance(draw, 4):
            devs.append(copy.deepcopy(devs[0]))
        s["devices"] = devs
    return s


# -- the three kinds -----------------------------------------------------------------------------

def _meta(draw: Draw, namespaced: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"gen-{below(draw, 10**6)}"}
    if namespaced and below(draw, 4):
        meta["namespace"] = one(draw, NAMESPACES)
    return meta


@st.composite
def resource_claim(draw: Draw, status: bool = True) -> dict[str, Any]:
    spec = claim_spec(draw)
    o: dict[str, Any] = {"apiVersion": API, "kind": "ResourceClaim", "metadata": _meta(draw, True)}
    if not chance(draw, 30):
        o["spec"] = spec
    if status and chance(draw, 8):
        o["status"] = claim_status(draw, spec)  # wiped on create; only decoding applies
    return maybe_wrong_type(draw, o)


META_SHAPES = ["absent"] * 3 + ["labels"] * 3 + ["annotations", "both", "other", "null", "empty"]
META_OTHER: list[tuple[str, Any]] = [
    ("name", "x"), ("namespace", "default"), ("generateName", "x-"), ("finalizers", ["example.com/f"]),
    ("uid", "0b4b5b5e-8f5e-4c6e-9f3e-2b7c1a0d9e8f"), ("resourceVersion", "1"),
    ("ownerReferences", [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]),
    ("generation", 3), ("creationTimestamp", "2024-01-01T00:00:00Z"), ("deletionGracePeriodSeconds", 5),
    ("name", ""), ("labels", {}), ("managedFields", [{"manager": "x", "operation": "Apply"}])]
ANNOTATION_VALUES = ["", "x", "a" * 300]


def template_metadata(draw: Draw) -> Any:
    shape = one(draw, META_SHAPES)
    if shape == "absent":
        return ABSENT
    if shape == "null":
        return None
    m: dict[str, Any] = {}
    if shape in ("labels", "both"):
        m["labels"] = {pick(draw, v.QUALIFIED, v.BAD_QUALIFIED, 0.2):
                       pick(draw, v.LABEL_VALUES, v.BAD_LABEL_VALUES, 0.2) for _ in range(1 + below(draw, 3))}
    if shape in ("annotations", "both"):
        m["annotations"] = {pick(draw, v.QUALIFIED, v.BAD_QUALIFIED, 0.2): one(draw, ANNOTATION_VALUES)
                            for _ in range(1 + below(draw, 3))}
    if shape == "other":  # only labels and annotations may be set in a template's metadata
        key, val = one(draw, META_OTHER)
        m[key] = copy.deepcopy(val)
    return m


@st.composite
def resource_claim_template(draw: Draw) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    put(spec, "metadata", template_metadata(draw))
    if not chance(draw, 30):
        spec["spec"] = claim_spec(draw)
    o: dict[str, Any] = {"apiVersion": API, "kind": "ResourceClaimTemplate", "metadata": _meta(draw, True)}
    if not chance(draw, 30):
        o["spec"] = spec
    elif below(draw, 2):
        o["spec"] = None
    return maybe_wrong_type(draw, o)


def class_config(draw: Draw, rich: bool = True) -> Any:
    c: dict[str, Any] = {}
    if not chance(draw, 6):
        c["opaque"] = opaque(draw)
    if chance(draw, 10):
        c["requests"] = ["gpu"]  # not a DeviceClass config field: strict decoding refuses it
    return c


def device_class_spec(draw: Draw) -> Any:
    if chance(draw, 20):
        return copy.deepcopy(one(draw, NO_SPEC))
    s: dict[str, Any] = {}
    put(s, "selectors", opt_list(draw, selector, v.SELECTORS_MAX, True))
    put(s, "config", opt_list(draw, class_config, v.CONFIG_MAX, True))
    put(s, "extendedResourceName", optional(draw, lambda: one(draw, v.EXTENDED_RESOURCE_NAMES)))
    return s


@st.composite
def device_class(draw: Draw) -> dict[str, Any]:
    o: dict[str, Any] = {"apiVersion": API, "kind": "DeviceClass", "metadata": _meta(draw, False)}
    if not chance(draw, 30):
        o["spec"] = device_class_spec(draw)
    return maybe_wrong_type(draw, o)


def objects() -> st.SearchStrategy[dict[str, Any]]:
    """One object of the family: claims most, then templates, then classes."""
    return st.one_of(resource_claim(), resource_claim(), resource_claim_template(), device_class())


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


def maybe_wrong_type(draw: Draw, obj: dict[str, Any]) -> dict[str, Any]:
    """One time in eight: one value under ``spec`` (or status) replaced by one of another JSON type."""
    if not chance(draw, 8):
        return obj
    paths = [p for p in _paths(obj) if p[0] in ("spec", "status")]
    if not paths:
        return obj
    path = paths[below(draw, len(paths))]
    out = copy.deepcopy(obj)
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = copy.deepcopy(one(draw, v.WRONG_TYPES))
    return out


# -- claim status updates --------------------------------------------------------------------------

STATUS_TWEAKS = ["fresh", "fresh", "reserve", "rename-device", "drop-allocation", "add-device-status",
                 "same", "drop-reservations"]


def _tweak(draw: Draw, first: dict[str, Any], spec: Any) -> dict[str, Any]:
    """A second status from the first, as the next writer would make it."""
    tweak = one(draw, STATUS_TWEAKS)
    s = copy.deepcopy(first)
    results = ((s.get("allocation") or {}).get("devices") or {}).get("results") or []
    if tweak == "fresh":
        return claim_status(draw, spec)
    if tweak == "reserve":
        s["reservedFor"] = [*(s.get("reservedFor") or []), reservation(draw)]
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


@st.composite
def claim_with_statuses(draw: Draw) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """(claim, a status written first or None, the status written next) for `/status` updates."""
    claim = draw(resource_claim(status=False))
    spec = claim.get("spec")
    first = claim_status(draw, spec) if below(draw, 2) else None
    second = _tweak(draw, first, spec) if first is not None else claim_status(draw, spec)
    if chance(draw, 10):
        second = maybe_wrong_type(draw, {"status": second}).get("status", second)
    return claim, first, second
