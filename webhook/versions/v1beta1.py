"""resource.k8s.io/v1beta1 <-> v1, as the 1.37 apiserver converts, and v1beta1's own defaults.

v1beta1 differs from v1 in three places; everything else is the same JSON:

- a ResourceSlice device keeps its fields under ``basic`` (v1 has them on the device);
- a claim's request has the ``exactly`` fields flattened onto the request: the apiserver
  builds ``exactly`` when any of them is set (a non-empty class, mode or count, or any of the
  others present, even as ``[]``), so a v1beta1 request with none of them has no ``exactly``;
- a slice's ``nodeName`` and ``allNodes`` are a plain string and bool: ``""`` and ``false``
  mean unset.

The manual conversions follow Go's semantics where JSON would differ (``attributes: {}``,
``consumesCounters: []`` and ``taints: []`` convert to nothing, ``null`` to nothing); the
subtrees Go converts field by field are carried over as they are. Defaults are v1beta1's: a
request's mode and count only when it names a class. Pure; never raises on odd input (the
decode step refuses wrong JSON types before any of this runs).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from webhook.rules.claims.mutate import default_claim_status, default_request, default_tolerations

VERSION = "v1beta1"
V1 = "resource.k8s.io/v1"
#: BasicDevice's fields, in Go's order: in v1 they are the device's own.
BASIC = ("attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector", "allNodes", "taints",
         "bindsToNode", "bindingConditions", "bindingFailureConditions", "allowMultipleAllocations",
         "nodeAllocatableResources")
#: The request fields v1 keeps under ``exactly`` (ExactDeviceRequest's, in Go's order).
EXACTLY = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations",
           "capacity", "derivedAttributes")
#: Go converts these by appending item by item (an empty list becomes nil) or copies a map only
#: when it has entries: empty and null convert to nothing.
_EMPTY_IS_NIL = frozenset({"attributes", "capacity", "consumesCounters", "taints", "tolerations"})

Obj = dict[str, Any]


# --- v1beta1 -> v1 ------------------------------------------------------------------------------

def to_v1(obj: Obj) -> Obj:
    """The v1 object the apiserver makes of a v1beta1 one: new containers where the shape
    differs, the unchanged values shared with ``obj`` (which is left untouched; like every
    object in the pipeline, neither is changed in place)."""
    return _converted(obj, V1, _slice_spec_to_v1, claim_spec_to_v1)


def _converted(obj: Obj, api_version: str, slice_spec: Callable[[Obj], Obj],
               claim_spec: Callable[[Obj], Obj]) -> Obj:
    """``obj`` in ``api_version``, its spec converted by the kind's function (a new top level)."""
    out = dict(obj)
    out["apiVersion"] = api_version
    kind = obj.get("kind")
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    if kind == "ResourceSlice":
        out["spec"] = slice_spec(spec)
    elif kind == "ResourceClaim":
        out["spec"] = claim_spec(spec)
    elif kind == "ResourceClaimTemplate" and isinstance(spec.get("spec"), dict):
        out["spec"] = {**spec, "spec": claim_spec(spec["spec"])}
    return out


def _slice_spec_to_v1(spec: Obj) -> Obj:
    # v1beta1's string and bool: "" and false are unset, and v1's pointers stay nil.
    return _devices_converted(spec, device_to_v1, unset=("", False, None))


def _devices_converted(spec: Obj, convert: Callable[[Any], Any], unset: tuple[Any, ...]) -> Obj:
    """A copy of a slice spec with each device converted, and ``nodeName``/``allNodes`` left
    out when their value is among ``unset``."""
    out = dict(spec)
    for k in ("nodeName", "allNodes"):
        if k in out and any(out[k] is u or (type(out[k]) is type(u) and out[k] == u) for u in unset):
            del out[k]
    if isinstance(out.get("devices"), list):
        out["devices"] = [convert(d) for d in out["devices"]]
    return out


def device_to_v1(device: Any) -> Any:
    """One device: ``basic``'s fields move up to the device."""
    if not isinstance(device, dict):
        return device
    out: Obj = {k: device[k] for k in ("name",) if k in device}
    basic = device.get("basic")
    if isinstance(basic, dict):
        for k in BASIC:
            if _go_set(k, basic.get(k)):
                out[k] = basic[k]
    return out


def claim_spec_to_v1(spec: Obj) -> Obj:
    return _requests_converted(spec, request_to_v1)


def _requests_converted(spec: Obj, convert: Callable[[Any], Any]) -> Obj:
    """A copy of a claim spec with each of its requests converted."""
    out = dict(spec)
    devices = out.get("devices")
    if isinstance(devices, dict) and isinstance(devices.get("requests"), list):
        out["devices"] = {**devices, "requests": [convert(r) for r in devices["requests"]]}
    return out


def request_to_v1(req: Any) -> Any:
    """One request: the flattened fields go under ``exactly`` when any of them is set."""
    if not isinstance(req, dict):
        return req
    out: Obj = {k: req[k] for k in ("name", "firstAvailable") if req.get(k) is not None}
    if has_exactly_fields(req):
        exactly: Obj = {"deviceClassName": req.get("deviceClassName") or ""}
        for k in EXACTLY[1:]:
            if _go_set(k, req.get(k)) and not _omitted_zero(k, req[k]):
                exactly[k] = req[k]
        if not exactly["deviceClassName"]:
            # v1beta1 defaults the mode and count only for a request naming a class: Go's zero
            # values stay (JSON would leave them out), and the apiserver validates them.
            exactly.setdefault("allocationMode", "")
            exactly.setdefault("count", 0)
        out["exactly"] = exactly
    return out


def _omitted_zero(key: str, value: Any) -> bool:
    """An empty mode or a zero count, which Go's JSON leaves out."""
    return (key == "allocationMode" and value == "") or (key == "count" and type(value) is int and value == 0)


def has_exactly_fields(req: Obj) -> bool:
    """Go's ``hasAnyMainRequestFieldsSet``: a non-zero string or count, or any other present."""
    return any(req.get(k) not in (None, "", 0) if k in ("deviceClassName", "allocationMode", "count")
               else req.get(k) is not None for k in EXACTLY)


def _go_set(key: str, value: Any) -> bool:
    """Whether Go's conversion gives ``key`` a value (so its JSON carries the key)."""
    if value is None:
        return False
    if key in _EMPTY_IS_NIL and isinstance(value, list | dict):
        return bool(value)
    return True


# --- v1 -> v1beta1 --------------------------------------------------------------------------------

def from_v1(obj: Obj) -> Obj:
    """The v1beta1 object the apiserver shows for a v1 one (``kubectl get`` at v1beta1)."""
    return _converted(obj, "resource.k8s.io/" + VERSION, slice_spec_from_v1, claim_spec_from_v1)


def slice_spec_from_v1(spec: Obj) -> Obj:
    return _devices_converted(spec, device_from_v1, unset=(None,))


def device_from_v1(device: Any) -> Any:
    """One device: its fields go under ``basic`` (which Go always creates)."""
    if not isinstance(device, dict):
        return device
    out: Obj = {k: device[k] for k in ("name",) if k in device}
    out["basic"] = {k: device[k] for k in BASIC if _go_set(k, device.get(k))}
    return out


def claim_spec_from_v1(spec: Obj) -> Obj:
    return _requests_converted(spec, request_from_v1)


def request_from_v1(req: Any) -> Any:
    """One request: ``exactly``'s fields flattened onto it."""
    if not isinstance(req, dict):
        return req
    out: Obj = {k: req[k] for k in ("name", "firstAvailable") if req.get(k) is not None}
    exactly = req.get("exactly")
    out["deviceClassName"] = ""  # no omitempty in v1beta1: Go always writes it
    if isinstance(exactly, dict):
        for k in EXACTLY:
            if _go_set(k, exactly.get(k)):
                out[k] = exactly[k]
    return out


# --- v1beta1's defaults -------------------------------------------------------------------------

def apply_defaults(obj: Obj) -> Obj:
    """A copy with the defaults v1beta1 applies on decode: a request's ``allocationMode`` and
    ``count`` only when it names a class (a request with ``firstAvailable`` has none), every
    subrequest's, and every toleration's operator."""
    out = copy.deepcopy(obj)
    spec = out.get("spec")
    kind = out.get("kind")
    if kind == "ResourceClaimTemplate" and isinstance(spec, dict):
        _default_claim_spec(spec.get("spec"))
    elif kind == "ResourceClaim":
        _default_claim_spec(spec)
        default_claim_status(out.get("status"))
    return out


def _default_claim_spec(spec: Any) -> None:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for req in requests if isinstance(requests, list) else []:
        if not isinstance(req, dict):
            continue
        if req.get("deviceClassName"):
            default_request(req)
        else:
            default_tolerations(req)
        for sub in req.get("firstAvailable") or [] if isinstance(req.get("firstAvailable"), list) else []:
            if isinstance(sub, dict):
                default_request(sub)
