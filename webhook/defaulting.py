"""Capacity-request defaulting: make the capacity a claim will consume explicit (``/mutate``).

For every ``exactly`` request and ``firstAvailable`` subrequest of a ResourceClaim or template
(on CREATE, with DRAConsumableCapacity on), look at the devices of the current state that the
request's DeviceClass and selectors match (statically, ignoring usage) and, using the
allocator's own capacity code:

- an omitted capacity that every matching shareable device would consume the same amount of
  (its ``requestPolicy.default``, or the full value) is written into ``capacity.requests``;
- a requested amount that every matching device rounds the same way (validRange min/step,
  validValues) is rewritten to the rounded amount, with a warning;
- only when the change is neutral: the same devices stay eligible and each consumes exactly
  what it consumed before. Otherwise nothing changes and one warning lists the outcomes.

Opt out per object with the annotation ``dra-webhook.io/capacity-defaulting: "off"``, or
globally with the ``capacityDefaulting`` setting. Pure: no I/O.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.allocator import consumed_capacity, eligible_devices, model_for
from webhook.allocator.capacity import CapacityError
from webhook.allocator.engine import OUT_OF_TIME
from webhook.allocator.model import CapSpec, Device, Model, Num
from webhook.allocator.reasons import Reason, text
from webhook.fielderrors import FieldPath
from webhook.gates import FeatureGates, Gate
from webhook.patch import op_add, op_replace
from webhook.quantity import Quantity, try_parse
from webhook.rules.context import Mutation
from webhook.state.base import ClusterSnapshot

OPT_OUT_ANNOTATION = "dra-webhook.io/capacity-defaulting"
_LISTED_MAX = 3


def is_opted_out(obj: dict[str, Any]) -> bool:
    meta = obj.get("metadata")
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    return isinstance(ann, dict) and str(ann.get(OPT_OUT_ANNOTATION, "")).lower() == "off"


class _OutOfTime(Exception):
    pass


def plan_capacity_defaults(obj: dict[str, Any], snapshot: ClusterSnapshot, gates: FeatureGates,
                           deadline: float | None = None) -> Mutation:
    """Patch ops and warnings for one claim or claim template (already gate-stripped).

    ``deadline`` (``time.monotonic()``) bounds the work: requests not reached in time are
    left as they are, with one warning; what was planned before stays.
    """
    try:
        return _plan(obj, snapshot, gates, deadline)
    except _OutOfTime as e:
        out: Mutation = e.args[0]
        out.warnings.append("capacity defaulting cut short at the request deadline: some requests left as written")
        return out


def _plan(obj: dict[str, Any], snapshot: ClusterSnapshot, gates: FeatureGates, deadline: float | None) -> Mutation:
    out = Mutation()
    if not gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY) or is_opted_out(obj):
        return out
    kind = obj.get("kind")
    spec = obj.get("spec")
    base = FieldPath.root("spec")
    if kind == "ResourceClaimTemplate":
        spec = spec.get("spec") if isinstance(spec, dict) else None
        base = base.child("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return out
    requests = spec["devices"].get("requests")
    if not isinstance(requests, list):
        return out
    model = model_for(snapshot, gates)
    rpath = base.child("devices", "requests")
    for i, req in enumerate(requests):
        if not isinstance(req, dict):
            continue
        name = str(req.get("name", i))
        if isinstance(req.get("exactly"), dict):
            _plan_one(req["exactly"], rpath.index(i).child("exactly"), name, model, gates, out, deadline)
        elif isinstance(req.get("firstAvailable"), list):
            for j, sub in enumerate(req["firstAvailable"]):
                if isinstance(sub, dict):
                    _plan_one(sub, rpath.index(i).child("firstAvailable").index(j),
                              f"{name}/{sub.get('name', j)}", model, gates, out, deadline)
    return out


def _plan_one(body: dict[str, Any], path: FieldPath, label: str, model: Model, gates: FeatureGates,
              out: Mutation, deadline: float | None) -> None:
    cap = body.get("capacity")
    if cap is not None and not isinstance(cap, dict):
        return
    current = (cap or {}).get("requests") or {}
    if not isinstance(current, dict):
        return
    devices = eligible_devices(body, model, deadline)
    if devices == OUT_OF_TIME:
        raise _OutOfTime(out)
    if isinstance(devices, Reason) or not devices:
        return
    proposed = dict(current)
    notes: list[str] = []
    rounded: list[str] = []
    try:
        _fill_omitted(devices, current, proposed, notes, gates, label)
        _round_requested(devices, current, proposed, notes, rounded, gates, label)
    except CapacityError:
        return
    out.warnings.extend(notes)
    if proposed == current:
        return
    after = copy.deepcopy(body)
    after.setdefault("capacity", {})
    if not isinstance(after["capacity"], dict):
        return
    after["capacity"]["requests"] = proposed
    problem = _non_neutral(body, after, devices, model, gates, deadline)
    if problem == OUT_OF_TIME_TEXT:
        raise _OutOfTime(out)
    if problem:
        out.warnings.append(f"capacity of {label} not defaulted: {problem}")
        return
    out.warnings.extend(rounded)
    if cap is None:
        out.ops.append(op_add(path.child("capacity"), {"requests": proposed}))
    elif "requests" not in cap or not isinstance(cap.get("requests"), dict):
        out.ops.append(op_add(path.child("capacity", "requests"), proposed))
    else:
        for key, value in proposed.items():
            if key not in current:
                out.ops.append(op_add(path.child("capacity", "requests").key(key), value))
            elif current[key] != value:
                out.ops.append(op_replace(path.child("capacity", "requests").key(key), value))


OUT_OF_TIME_TEXT = text(OUT_OF_TIME)


def _requested_full(device: Device, current: dict[str, Any]) -> set[str]:
    return {k if "/" in k else f"{device.driver}/{k}" for k in current if isinstance(k, str)}


def _fill_omitted(devices: list[Device], current: dict[str, Any], proposed: dict[str, Any],
                  notes: list[str], gates: FeatureGates, label: str) -> None:
    shareable = [d for d in devices if d.allow_multi]
    if not shareable:
        return
    common = set.intersection(*(set(d.capnames) for d in shareable))
    common -= set[str]().union(*(_requested_full(d, current) for d in shareable))
    for full in sorted(common):
        outcomes: dict[tuple[Num, str], list[str]] = {}
        spelling: set[str] = set()
        for d in shareable:
            consumed = consumed_capacity(d, {"requests": current}, gates)
            if isinstance(consumed, Reason):
                return
            outcomes.setdefault(consumed[full], []).append(d.name)
            spelling.update(s for f, s, _ in d.caps if f == full)
        key = spelling.pop() if len(spelling) == 1 else full
        if len(outcomes) == 1:
            (value, fmt), = outcomes
            proposed[key] = str(Quantity(value, fmt))
        else:
            notes.append(f"capacity {key} of {label} not defaulted: devices differ: " + _list(outcomes))


def _round_requested(devices: list[Device], current: dict[str, Any], proposed: dict[str, Any],
                     notes: list[str], rounded: list[str], gates: FeatureGates, label: str) -> None:
    for key, raw in current.items():
        q = try_parse(raw)
        if q is None or not isinstance(key, str):
            continue
        outcomes: dict[tuple[Num, str], list[str]] = {}
        specs: list[CapSpec] = []
        for d in devices:
            full = key if "/" in key else f"{d.driver}/{key}"
            consumed = consumed_capacity(d, {"requests": current}, gates)
            if isinstance(consumed, Reason) or full not in consumed:
                return
            outcomes.setdefault(consumed[full], []).append(d.name)
            specs.extend(s for f, _, s in d.caps if f == full)
        if len(outcomes) != 1:
            if any(v != q.value for v, _ in outcomes):
                notes.append(f"capacity {key} {q} of {label} not rounded: devices differ: " + _list(outcomes))
            continue
        (value, fmt), = outcomes
        if value == q.value:
            continue
        amount = str(Quantity(value, fmt if fmt else q.format))
        proposed[key] = amount
        shown = raw if isinstance(raw, str) else q
        rounded.append(f"capacity {key} {shown} rounds up to {amount} ({_why(specs[0], value, q.value)})")


def _why(spec: CapSpec, value: Num, requested: Num) -> str:
    if spec.valid_values:
        return "valid values " + ", ".join(str(Quantity(v)) for v in spec.valid_values[:4])
    if spec.vmin is not None and requested < spec.vmin and value == spec.vmin:
        return f"minimum {Quantity(spec.vmin, _fmt_of(spec.raw_min))}"
    if spec.step is not None:
        return f"step {Quantity(spec.step, _fmt_of(spec.raw_step))}"
    return "request policy"


def _fmt_of(raw: Any) -> str:
    q = try_parse(raw)
    return q.format if q is not None else "DecimalSI"


def _non_neutral(before: dict[str, Any], after: dict[str, Any], devices: list[Device], model: Model,
                 gates: FeatureGates, deadline: float | None) -> str | None:
    """None when ``after`` selects the same devices and each consumes what it did before."""
    devices_after = eligible_devices(after, model, deadline)
    if devices_after == OUT_OF_TIME:
        return OUT_OF_TIME_TEXT
    if isinstance(devices_after, Reason):
        return text(devices_after)
    keys_before = {d.key() for d in devices}
    keys_after = {d.key() for d in devices_after}
    if keys_before != keys_after:
        lost = sorted("/".join(k[1:]) for k in keys_before - keys_after)
        return "would stop matching " + ", ".join(lost[:_LISTED_MAX]) + ("…" if len(lost) > _LISTED_MAX else "")
    for d in devices:
        a = consumed_capacity(d, before.get("capacity") or {}, gates)
        b = consumed_capacity(d, after.get("capacity") or {}, gates)
        if isinstance(a, Reason):
            return f"device {d.name}: {text(a)}"
        if isinstance(b, Reason):
            return f"device {d.name}: {text(b)}"
        if {k: v[0] for k, v in a.items()} != {k: v[0] for k, v in b.items()}:
            return f"device {d.name} would consume a different amount"
    return None


def _list(outcomes: dict[tuple[Num, str], list[str]]) -> str:
    parts = []
    for (value, fmt), names in sorted(outcomes.items(), key=lambda kv: kv[0][0]):
        shown = ", ".join(names[:2]) + ("…" if len(names) > 2 else "")
        parts.append(f"{Quantity(value, fmt)} ({shown})")
    return " or ".join(parts)
