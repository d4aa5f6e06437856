"""ResourceSlice drop-disabled-fields (docs/rules.md, "Mutation") as JSON Patch ``remove`` operations.

For each gate that is off, the guarded fields are removed from the incoming object unless
the *old* object (UPDATE only) already uses the feature. "Uses" is Go's test: a non-empty
list/map or a non-null pointer, anywhere in the old slice. The strips run in upstream order
on a working copy, so every op applies to the result of the ops before it and no op ever
targets a field an earlier op removed. Only object members are removed: list indexes never
shift, and no list is replaced wholesale.

Normalisation: ``compatibilityGroups: null`` and ``[]`` mean "no groups"; the key is removed
silently whatever the gate. Every other strip adds one warning naming the gate (only when
something meaningful, i.e. not null or empty, was removed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any

from webhook.gates import Gate
from webhook.patch import op_remove, pointer
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.shape import is_set, strip_warning
from webhook.rules.slices.attributes import LIST_KINDS


def _devices(obj: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if isinstance(devices, list):
        for i, d in enumerate(devices):
            if isinstance(d, dict):
                yield i, d


def _spec(obj: Any) -> dict[str, Any]:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    return spec if isinstance(spec, dict) else {}


def _consumptions(dev: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    cc = dev.get("consumesCounters")
    if isinstance(cc, list):
        for j, e in enumerate(cc):
            if isinstance(e, dict):
                yield j, e


# --- "in use" tests on the old object ----------------------------------------------------


def _taints_in_use(old: Any) -> bool:
    return any(is_set(d.get("taints")) for _, d in _devices(old))


def _partitionable_in_use(old: Any) -> bool:
    spec = _spec(old)
    if is_set(spec.get("sharedCounters")) or spec.get("perDeviceNodeSelection") is not None:
        return True
    return any(
        is_set(d.get("consumesCounters"))
        or any(d.get(k) is not None for k in ("nodeName", "nodeSelector", "allNodes"))
        for _, d in _devices(old)
    )


def _binding_in_use(old: Any) -> bool:
    return any(
        is_set(d.get("bindingConditions"))
        or is_set(d.get("bindingFailureConditions"))
        or d.get("bindsToNode") is not None
        for _, d in _devices(old)
    )


def _consumable_in_use(old: Any) -> bool:
    for _, d in _devices(old):
        if d.get("allowMultipleAllocations") is not None:
            return True
        caps = d.get("capacity")
        if isinstance(caps, dict) and any(
            isinstance(c, dict) and c.get("requestPolicy") is not None for c in caps.values()
        ):
            return True
    return False


def _node_allocatable_in_use(old: Any) -> bool:
    return any(is_set(d.get("nodeAllocatableResources"), map_field=True) for _, d in _devices(old))


def _list_attributes_in_use(old: Any) -> bool:
    for _, d in _devices(old):
        attrs = d.get("attributes")
        if isinstance(attrs, dict) and any(
            isinstance(a, dict) and any(a.get(k) is not None for k in LIST_KINDS) for a in attrs.values()
        ):
            return True
    return False


def _partition_type_in_use(old: Any) -> bool:
    return _spec(old).get("partitionTypeAttribute") is not None


def _skip_operations_in_use(old: Any) -> bool:
    return is_set(_spec(old).get("skipNodeOperations"))


def _groups_in_use(old: Any) -> bool:
    return any(is_set(e.get("compatibilityGroups")) for _, d in _devices(old) for _, e in _consumptions(d))


# --- removal planning ------------------------------------------------------------------------


_LIST_KIND_SET = frozenset(LIST_KINDS)


class _Stripper:
    """Plans removals against the incoming object without copying or changing it.

    The strips touch disjoint keys, with one nesting: a removed ``consumesCounters`` takes its
    ``compatibilityGroups`` with it, so ``gone`` records removed paths and the groups pass
    skips what is already gone.
    """

    def __init__(self, work: dict[str, Any]) -> None:
        self.work = work
        self.ops: list[dict[str, Any]] = []
        self.gone: set[tuple[str | int, ...]] = set()
        self._device_keys: frozenset[str] | None = None

    def device_keys(self) -> frozenset[str]:
        """Every key any device object has (null or not): a strip whose device keys are not
        among them has nothing to visit. Computed once; the working object never changes."""
        if self._device_keys is None:
            self._device_keys = frozenset().union(*(d for _, d in _devices(self.work)))
        return self._device_keys

    def remove(self, container: dict[str, Any], key: str, *tokens: str | int) -> bool:
        """Plan removing ``key`` (if present and not null); answer whether the value was meaningful."""
        path = (*tokens, key)
        if key not in container or container[key] is None or path in self.gone:
            return False
        value = container[key]
        self.gone.add(path)
        self.ops.append(op_remove(pointer(*path)))
        return is_set(value, map_field=True)


def _strip_spec_and_devices(s: _Stripper, spec_keys: tuple[str, ...], dev_keys: tuple[str, ...]) -> list[str]:
    removed: list[str] = []
    spec = _spec(s.work)
    for k in spec_keys:
        if s.remove(spec, k, "spec"):
            removed.append(k)
    if s.device_keys().isdisjoint(dev_keys):
        return removed
    for i, d in _devices(s.work):
        for k in dev_keys:
            if s.remove(d, k, "spec", "devices", i):
                removed.append(k)
    return removed


def _strip_capacity_policies(s: _Stripper) -> list[str]:
    removed: list[str] = []
    for i, d in _devices(s.work):
        if s.remove(d, "allowMultipleAllocations", "spec", "devices", i):
            removed.append("allowMultipleAllocations")
        caps = d.get("capacity")
        if isinstance(caps, dict):
            for name, c in caps.items():
                if isinstance(c, dict) and s.remove(
                    c, "requestPolicy", "spec", "devices", i, "capacity", name
                ):
                    removed.append("requestPolicy")
    return removed


def _strip_list_attributes(s: _Stripper) -> list[str]:
    removed: list[str] = []
    for i, d in _devices(s.work):
        attrs = d.get("attributes")
        if isinstance(attrs, dict) and not _scalars_only(attrs):
            for name, a in attrs.items():
                if isinstance(a, dict) and not _LIST_KIND_SET.isdisjoint(a):
                    for k in LIST_KINDS:
                        if s.remove(a, k, "spec", "devices", i, "attributes", name):
                            removed.append(k)
    return removed


def _scalars_only(attrs: dict[str, Any]) -> bool:
    """A quick sure "no attribute here has a list member": no member name of any attribute is
    a list kind (one pass in C; values that are not objects make it give up, never lie)."""
    try:
        return _LIST_KIND_SET.isdisjoint(chain.from_iterable(attrs.values()))
    except TypeError:  # an attribute that is a number, null, or a list of unhashable items
        return False


def _summary(gate: str, removed: list[str]) -> str:
    n = len(removed)
    return strip_warning(gate, f"{n} field{'s' if n != 1 else ''} ({', '.join(dict.fromkeys(removed))})")


_Strip = tuple[Gate, Callable[[Any], bool], Callable[[_Stripper], list[str]]]

_STRIPS: tuple[_Strip, ...] = (
    (Gate.DRA_DEVICE_TAINTS, _taints_in_use, lambda s: _strip_spec_and_devices(s, (), ("taints",))),
    (
        Gate.DRA_PARTITIONABLE_DEVICES,
        _partitionable_in_use,
        lambda s: _strip_spec_and_devices(
            s,
            ("sharedCounters", "perDeviceNodeSelection"),
            ("consumesCounters", "nodeName", "nodeSelector", "allNodes"),
        ),
    ),
    (
        Gate.DRA_DEVICE_BINDING_CONDITIONS,
        _binding_in_use,
        lambda s: _strip_spec_and_devices(
            s, (), ("bindingConditions", "bindingFailureConditions", "bindsToNode")
        ),
    ),
    (Gate.DRA_CONSUMABLE_CAPACITY, _consumable_in_use, _strip_capacity_policies),
    (
        Gate.DRA_NODE_ALLOCATABLE_RESOURCES,
        _node_allocatable_in_use,
        lambda s: _strip_spec_and_devices(s, (), ("nodeAllocatableResources",)),
    ),
    (Gate.DRA_LIST_TYPE_ATTRIBUTES, _list_attributes_in_use, _strip_list_attributes),
    (
        Gate.DRA_PARTITIONABLE_DEVICES_TYPE,
        _partition_type_in_use,
        lambda s: _strip_spec_and_devices(s, ("partitionTypeAttribute",), ()),
    ),
    (
        Gate.DRA_OPTIONAL_NODE_OPERATIONS,
        _skip_operations_in_use,
        lambda s: _strip_spec_and_devices(s, ("skipNodeOperations",), ()),
    ),
)


def _gate_off(gate: Gate, ctx: RuleContext) -> bool:
    # DRADeviceBindingConditions also needs DRAResourceClaimDeviceStatus, which is locked on in 1.37.
    return not ctx.gates.enabled(gate)


def _off_label(gate: Gate, ctx: RuleContext) -> str:
    if gate == Gate.DRA_DEVICE_BINDING_CONDITIONS:
        off = [g for g in (gate, Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS) if not ctx.gates.enabled(g)]
        return " and ".join(off)
    return gate


def mutate_slice(obj: Any, ctx: RuleContext) -> Mutation:
    out = Mutation()
    if not isinstance(obj, dict) or ctx.operation not in ("CREATE", "UPDATE"):
        return out
    old = ctx.old if ctx.operation == "UPDATE" else None
    s = _Stripper(obj)
    for gate, in_use, strip in _STRIPS:
        if not _gate_off(gate, ctx) or in_use(old):
            continue
        removed = strip(s)
        if removed:
            out.warnings.append(_summary(_off_label(gate, ctx), removed))

    strip_groups = not ctx.gates.enabled(Gate.DRA_DEVICE_COMPATIBILITY_GROUPS) and not _groups_in_use(old)
    stripped = 0
    for i, d in _devices(s.work) if "consumesCounters" in s.device_keys() else ():
        if ("spec", "devices", i, "consumesCounters") in s.gone:
            continue
        for j, e in _consumptions(d):
            if "compatibilityGroups" not in e:
                continue
            groups = e["compatibilityGroups"]
            empty = groups is None or groups == []
            if empty or strip_groups:
                s.ops.append(
                    op_remove(pointer("spec", "devices", i, "consumesCounters", j, "compatibilityGroups"))
                )
                stripped += 0 if empty else 1
    if stripped:
        noun = "entry" if stripped == 1 else "entries"
        out.warnings.append(strip_warning(Gate.DRA_DEVICE_COMPATIBILITY_GROUPS,
                                          f"compatibilityGroups from {stripped} consumesCounters {noun}"))
    out.ops = s.ops
    return out
