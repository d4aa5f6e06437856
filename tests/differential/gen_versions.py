"""Objects in resource.k8s.io v1beta1 and v1beta2 for the conversion family.

Two sources:

- every v1 object we have (the manifests, the slices and claims generators), shown in the older
  version as the apiserver shows it there (``v1beta1.from_v1``; v1beta2 only changes
  ``apiVersion``);
- edits only v1beta1 can express, at the places where its shape differs from v1 and Go's
  conversion has a choice to make: a device without ``basic``, or with ``basic: null`` or
  ``{}``; ``nodeName: ""`` and ``allNodes: false`` (unset in v1beta1); empty and null lists and
  maps in ``basic``; requests with some, none or all of the flattened ``exactly`` fields,
  present as ``[]``, ``{}``, ``false`` or ``0``, with and without a class (v1beta1 defaults the
  mode and count only with one), and beside ``firstAvailable``.

Plain functions of a ``random.Random``: the caller fixes the seed.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from typing import Any

from webhook.versions import v1beta1, versions_of

Obj = dict[str, Any]
Rnd = random.Random
V1BETA1 = "resource.k8s.io/v1beta1"
V1BETA2 = "resource.k8s.io/v1beta2"


def as_v1beta1(obj: Obj) -> Obj:
    return v1beta1.from_v1(obj)


def as_v1beta2(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1BETA2
    return out


# -- where the edits go -------------------------------------------------------------------------

def _devices(obj: Obj) -> list[Obj]:
    spec = obj.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _requests(obj: Obj) -> list[Obj]:
    spec = obj.get("spec")
    if obj.get("kind") == "ResourceClaimTemplate" and isinstance(spec, dict):
        spec = spec.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    reqs = devices.get("requests") if isinstance(devices, dict) else None
    return [r for r in reqs if isinstance(r, dict)] if isinstance(reqs, list) else []


# -- slice edits ------------------------------------------------------------------------------------

def _basic_gone(rnd: Rnd, obj: Obj) -> bool:
    devices = _devices(obj)
    if not devices:
        return False
    d = rnd.choice(devices)
    how = rnd.randrange(3)
    if how == 0:
        d.pop("basic", None)
    else:
        d["basic"] = None if how == 1 else {}
    return True


def _spec_node_fields(rnd: Rnd, obj: Obj) -> bool:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return False
    key, value = rnd.choice([("nodeName", ""), ("nodeName", None), ("allNodes", False), ("allNodes", None)])
    spec[key] = value
    if rnd.randrange(2):  # and something that selects nodes, or not
        spec.setdefault("allNodes" if key == "nodeName" else "nodeName", True if key == "nodeName" else "node-1")
    return True


_EMPTY = {"attributes": [{}, None], "capacity": [{}, None], "consumesCounters": [[], None], "taints": [[], None],
          "bindingConditions": [[], None], "bindingFailureConditions": [[], None],
          "nodeAllocatableResources": [{}, None], "nodeSelector": [None], "nodeName": ["", None],
          "allNodes": [False, None], "bindsToNode": [False, None], "allowMultipleAllocations": [False, None]}


def _basic_empty(rnd: Rnd, obj: Obj) -> bool:
    devices = [d for d in _devices(obj) if isinstance(d.get("basic"), dict)]
    if not devices:
        return False
    basic = rnd.choice(devices)["basic"]
    key = rnd.choice(sorted(_EMPTY))
    basic[key] = rnd.choice(_EMPTY[key])
    return True


# -- request edits ---------------------------------------------------------------------------------

_FLAT: dict[str, list[Any]] = {
    "deviceClassName": ["gpu.example.com", "", None],
    "selectors": [[], None, [{"cel": {"expression": "true"}}]],
    "allocationMode": ["", "All", "ExactCount", None, "Some"],
    "count": [0, 2, None, -1],
    "adminAccess": [False, True, None],
    "tolerations": [[], None, [{"key": "k", "effect": "NoSchedule"}], [{"operator": "Exists"}]],
    "capacity": [{}, None, {"requests": {"memory": "1Gi"}}],
    "derivedAttributes": [[], None],
}


def _request_fields(rnd: Rnd, obj: Obj) -> bool:
    """Some flattened fields set, changed or removed, one at a time (any mix can result)."""
    reqs = _requests(obj)
    if not reqs:
        return False
    r = rnd.choice(reqs)
    for _ in range(1 + rnd.randrange(3)):
        key = rnd.choice(sorted(_FLAT))
        value = rnd.choice(_FLAT[key])
        if rnd.randrange(4) == 0:
            r.pop(key, None)
        else:
            r[key] = copy.deepcopy(value)
    return True


def _request_bare(rnd: Rnd, obj: Obj) -> bool:
    """A request with no flattened field at all: no ``exactly`` in v1 (and maybe no firstAvailable)."""
    reqs = _requests(obj)
    if not reqs:
        return False
    r = rnd.choice(reqs)
    for key in v1beta1.EXACTLY:
        r.pop(key, None)
    if rnd.randrange(2):
        r.pop("firstAvailable", None)
    return True


def _class_beside_first_available(rnd: Rnd, obj: Obj) -> bool:
    reqs = [r for r in _requests(obj) if r.get("firstAvailable")]
    if not reqs:
        return False
    rnd.choice(reqs)["deviceClassName"] = "gpu.example.com"
    return True


Edit = Callable[[Rnd, Obj], bool]
EDITS: dict[str, tuple[Edit, ...]] = {
    "ResourceSlice": (_basic_gone, _spec_node_fields, _basic_empty, _basic_empty),
    "ResourceClaim": (_request_fields, _request_fields, _request_bare, _class_beside_first_available),
    "ResourceClaimTemplate": (_request_fields, _request_fields, _request_bare, _class_beside_first_available),
}


def v1beta1_quirks(rnd: Rnd, obj: Obj) -> Obj:
    """A copy of a v1beta1 object with one to three of the edits above (those that apply)."""
    out = copy.deepcopy(obj)
    edits = EDITS.get(str(out.get("kind")), ())
    for _ in range(1 + rnd.randrange(3)) if edits else ():
        rnd.choice(edits)(rnd, out)
    return out


def older_versions(rnd: Rnd, objects: list[Obj], quirky: float = 0.5) -> Iterator[Obj]:
    """Each v1 object in v1beta1 (with v1beta1-only edits, for a share ``quirky`` of them) and,
    every other one, in v1beta2: the versions 1.37 serves its kind in (``versions_of``)."""
    for i, o in enumerate(objects):
        served = versions_of(str(o.get("kind")))
        if "v1beta1" in served:
            old = as_v1beta1(o)
            yield v1beta1_quirks(rnd, old) if rnd.random() < quirky else old
        if i % 2 == 0 and "v1beta2" in served:
            yield as_v1beta2(o)
