"""ResourceSlice (``resource.k8s.io/v1``): validation and gate strips at parity with the 1.37 apiserver.

Owns the ResourceSlice rules of docs/rules.md (RS-*, RP-*) and its gate strips. This module
holds the entry points and the slice-level rules (metadata, driver, pool, node selection,
device count, shared counters, partitionTypeAttribute, skipNodeOperations, UPDATE
immutability). Per-device rules live in ``devices`` and ``attributes``, capacity and
requestPolicy in ``capacity``, what upstream checks from its ``+k8s:`` tags in
``declarative`` (merged into the rest here), the gate strips in ``mutate``, name helpers in
``common``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicates_by,
    forbidden,
    immutable,
    invalid,
    required,
    too_many,
)
from webhook.gates import Gate
from webhook.rules import meta
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.declarative import merge
from webhook.rules.kind import KindRules
from webhook.rules.shape import as_bool, as_int, as_list, as_object, as_str, type_error
from webhook.rules.slices import declarative, standard
from webhook.rules.slices.attributes import has_list_attribute
from webhook.rules.slices.common import (
    validate_driver_name,
    validate_fully_qualified_name,
    validate_node_name,
    validate_node_selector,
    validate_pool_name,
    validate_required_label,
    validate_resource_fully_qualified_name,
)
from webhook.rules.slices.declarative import COUNTER_SETS_MAX
from webhook.rules.slices.devices import validate_counters_member, validate_device
from webhook.rules.slices.mutate import mutate_slice
from webhook.rules.slices.plain import PlainDevices

DEVICES_MAX = 128
DEVICES_ADVANCED_MAX = 64  # with taints, counter consumption or list-typed attributes
COUNTERS_PER_SET_MAX = 32
NODE_SELECTION = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"

SPEC = FieldPath.root("spec")


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """ResourceSlice has no defaults that matter before admission: a deep copy."""
    return copy.deepcopy(obj)


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    return mutate_slice(obj, ctx)


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    return _guarded(lambda: _validate(obj, None, ctx))


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    return _guarded(lambda: _validate(obj, old if isinstance(old, dict) else {}, ctx))


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    driver = spec.get("driver") if isinstance(spec, dict) else None
    if isinstance(driver, str) and driver != driver.lower():
        return [
            f"spec.driver: driver names should be lowercase; "
            f"{_go_quote(driver)} contains uppercase characters"
        ]
    return []


def _go_quote(s: str) -> str:
    import json

    return json.dumps(s, ensure_ascii=False)


def _guarded(fn: Callable[[], list[FieldError]]) -> list[FieldError]:
    try:
        return fn()
    except RecursionError:  # absurdly deep JSON: refuse instead of crashing
        return [invalid("", "<object>", "object is nested too deeply")]


def _validate(obj: Any, old: dict[str, Any] | None, ctx: RuleContext) -> list[FieldError]:
    if not isinstance(obj, dict):
        return [type_error("", obj, "object")]
    errs = meta.check(obj, old, ctx, namespaced=False, rules=META)
    spec = as_object(obj.get("spec"), SPEC, errs)
    if spec is None and obj.get("spec") is not None:
        return errs
    old_spec = None
    if old is not None:
        old_spec = old_spec_raw if isinstance(old_spec_raw := old.get("spec"), dict) else {}
    errs.extend(validate_spec(spec or {}, old_spec, ctx))
    return errs


def validate_spec(spec: dict[str, Any], old: dict[str, Any] | None, ctx: RuleContext) -> list[FieldError]:
    errs: list[FieldError] = []
    errs.extend(validate_driver_name(spec.get("driver"), SPEC.child("driver")))
    errs.extend(_validate_pool(spec.get("pool"), SPEC.child("pool")))
    if old is not None:
        errs.extend(_immutables(spec, old))
    errs.extend(_node_selection(spec))
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(invalid(SPEC, "", "only one of `sharedCounters` or `devices` is allowed"))
    plain = _plain_devices(spec, ctx)
    errs.extend(_validate_devices(spec, old, ctx, plain))
    errs.extend(_validate_shared_counters(spec.get("sharedCounters"), SPEC.child("sharedCounters")))
    if spec.get("partitionTypeAttribute") is not None:
        errs.extend(_partition_type_attribute(spec, old, ctx))
    errs.extend(_skip_node_operations(spec))
    return merge(errs, declarative.spec_errors(spec, old, SPEC, skip=plain), dedupe=False)


def _validate_pool(value: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    pool = as_object(value, path, errs)
    if errs:
        return errs
    pool = pool or {}
    errs.extend(validate_pool_name(pool.get("name"), path.child("name")))
    count = as_int(pool.get("resourceSliceCount"), path.child("resourceSliceCount"), errs)
    if (
        "resourceSliceCount" not in pool
        or pool["resourceSliceCount"] is None
        or (count is not None and count <= 0)
    ):
        errs.append(invalid(path.child("resourceSliceCount"), count or 0, "must be greater than zero"))
    gen = as_int(pool.get("generation"), path.child("generation"), errs)
    if gen is not None and gen < 0:
        errs.append(invalid(path.child("generation"), gen, "must be greater than or equal to zero"))
    return errs


def _go_string(container: Any, *keys: str) -> Any:
    for k in keys:
        container = container.get(k) if isinstance(container, dict) else None
    return "" if container is None else container


def _immutables(spec: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if _go_string(spec, "pool", "name") != _go_string(old, "pool", "name"):
        errs.append(immutable(SPEC.child("pool", "name"), _go_string(spec, "pool", "name")))
    if _go_string(spec, "driver") != _go_string(old, "driver"):
        errs.append(immutable(SPEC.child("driver"), _go_string(spec, "driver")))
    if spec.get("nodeName") != old.get("nodeName"):
        errs.append(immutable(SPEC.child("nodeName"), spec.get("nodeName")))
    return errs


def _node_selection(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    set_fields: list[str] = []
    if spec.get("nodeName") is not None:
        name = as_str(spec["nodeName"], SPEC.child("nodeName"), errs)
        if name:
            set_fields.append("`nodeName`")
            errs.extend(validate_node_name(name, SPEC.child("nodeName")))
        elif name is not None:
            errs.append(
                invalid(SPEC.child("nodeName"), "", "must be either unset or set to a non-empty string")
            )
    selector = spec.get("nodeSelector")
    if selector is not None:
        set_fields.append("`nodeSelector`")
        sel_path = SPEC.child("nodeSelector")
        errs.extend(validate_node_selector(selector, sel_path))
        terms = selector.get("nodeSelectorTerms") if isinstance(selector, dict) else None
        if isinstance(selector, dict) and (not isinstance(terms, list) or len(terms) != 1):
            errs.append(
                invalid(
                    sel_path.child("nodeSelectorTerms"),
                    terms if isinstance(terms, list) else None,
                    "must have exactly one node selector term",
                )
            )
    for key in ("allNodes", "perDeviceNodeSelection"):
        flag = as_bool(spec.get(key), SPEC.child(key), errs)
        if flag:
            set_fields.append(f"`{key}`")
        elif flag is False:
            errs.append(invalid(SPEC.child(key), False, "must be either unset or set to true"))
    if not set_fields:
        errs.append(required(SPEC, NODE_SELECTION))
    elif len(set_fields) > 1:
        errs.append(
            invalid(SPEC, "{" + ", ".join(set_fields) + "}", NODE_SELECTION + ", but multiple fields are set")
        )
    return errs


def _plain_devices(spec: dict[str, Any], ctx: RuleContext) -> list[bool]:
    """For each entry of ``spec.devices``: whether it certainly passes every per-device rule
    (``plain``), so neither the handwritten nor the declarative device rules need to run."""
    devices = spec.get("devices")
    if not isinstance(devices, list):
        return []
    shortcut = PlainDevices(spec.get("perDeviceNodeSelection") is True,
                            ctx.gates.enabled(Gate.DRA_FRACTIONAL_CAPACITY_RANGE))
    return [shortcut.ok(d) for d in devices]


def _device_limit(devices: list[Any], plain: list[bool]) -> int:
    for d, ok in zip(devices, plain, strict=True):
        if ok:  # no taints, no list attributes: advanced only when it consumes counters
            if d.get("consumesCounters"):
                return DEVICES_ADVANCED_MAX
            continue
        if not isinstance(d, dict):
            continue
        taints, cc = d.get("taints"), d.get("consumesCounters")
        if (isinstance(taints, list) and taints) or (isinstance(cc, list) and cc) or has_list_attribute(d):
            return DEVICES_ADVANCED_MAX
    return DEVICES_MAX


def _validate_devices(spec: dict[str, Any], old: dict[str, Any] | None, ctx: RuleContext,
                      plain: list[bool]) -> list[FieldError]:
    errs: list[FieldError] = []
    path = SPEC.child("devices")
    devices = as_list(spec.get("devices"), path, errs)
    if not devices:
        return errs
    limit = _device_limit(devices, plain)
    if len(devices) > limit:
        return [too_many(path, len(devices), limit)]
    per_device = spec.get("perDeviceNodeSelection") is True
    fractional = ctx.gates.enabled(Gate.DRA_FRACTIONAL_CAPACITY_RANGE)
    old_devices: dict[str, dict[str, Any]] = {}
    if old is not None and isinstance(old.get("devices"), list):
        for d in old["devices"]:
            if isinstance(d, dict) and isinstance(d.get("name"), str):
                old_devices.setdefault(d["name"], d)
    names: list[Any] = []
    for i, d in enumerate(devices):
        if plain[i]:  # an object with a string name: nothing to report
            names.append(d["name"])
            continue
        dp = path.index(i)
        if as_object(d, dp, errs) is None:
            names.append(None)
            continue
        name = d.get("name")
        names.append(name if isinstance(name, str) else "")
        prev = old_devices.get(name) if isinstance(name, str) else None
        errs.extend(validate_device(d, prev, dp, per_device, fractional))
    if len(set(names)) == len(names):  # the common case: no name repeats
        return errs
    return errs + duplicates_by(names, path, key=lambda n: n)


def _named(items: list[Any], path: FieldPath, errs: list[FieldError],
           names: list[Any]) -> Iterator[tuple[FieldPath, dict[str, Any], Any]]:
    """(path, entry, name) of each object entry of a list keyed by ``name``, in order; a type
    error for an entry that is not an object. ``names`` collects the keys for ``duplicates_by``
    (None: not an object, "": no string name)."""
    for i, item in enumerate(items):
        p = path.index(i)
        d = as_object(item, p, errs)
        if d is None:
            names.append(None)
            continue
        name = d.get("name")
        names.append(name if isinstance(name, str) else "")
        yield p, d, name


def _validate_shared_counters(value: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    sets = as_list(value, path, errs)
    if not sets:
        return errs
    if len(sets) > COUNTER_SETS_MAX:
        return [too_many(path, len(sets), COUNTER_SETS_MAX)]
    names: list[Any] = []
    for sp, c, name in _named(sets, path, errs, names):
        errs.extend(validate_required_label(name, sp.child("name")))
        errs.extend(validate_counters_member(c.get("counters"), sp.child("counters"), COUNTERS_PER_SET_MAX))
    return errs + duplicates_by(names, path, key=lambda n: n)


def _consumes_counters(dev: Any) -> bool:
    return (
        isinstance(dev, dict)
        and isinstance(dev.get("consumesCounters"), list)
        and bool(dev["consumesCounters"])
    )


def _partition_type_attribute(spec: dict[str, Any], old: dict[str, Any] | None,
                              ctx: RuleContext) -> list[FieldError]:
    """RS-PTA-*. The name's format is a declarative rule of DRAPartitionableDevicesType: checked
    when the gate is on, Forbidden when it is off (the strip kept the field because the stored
    slice has it) and the value changed, neither when it is unchanged on UPDATE."""
    path = SPEC.child("partitionTypeAttribute")
    errs: list[FieldError] = []
    name = as_str(spec.get("partitionTypeAttribute"), path, errs)
    if name is None:
        return errs
    format_errs = validate_fully_qualified_name(name, path)  # the handwritten check's own test
    if old is None or old.get("partitionTypeAttribute") != name:
        if ctx.gates.enabled(Gate.DRA_PARTITIONABLE_DEVICES_TYPE):
            errs.extend(validate_resource_fully_qualified_name(name, path))
        else:
            errs.append(forbidden(path, "disabled by feature gate DRAPartitionableDevicesType"))
    devices = devices_raw if isinstance(devices_raw := spec.get("devices"), list) else []
    if not any(_consumes_counters(d) for d in devices):
        return errs + [
            invalid(path, name, "may only be set on a slice which declares devices that consume counters")
        ]
    if format_errs:
        return errs
    driver = driver_raw if isinstance(driver_raw := spec.get("driver"), str) else ""
    bare = name[len(driver) + 1 :] if name.startswith(driver + "/") else ""
    for i, dev in enumerate(devices):
        if not _consumes_counters(dev):
            continue
        attr_path = SPEC.child("devices").index(i).child("attributes").key(name)
        attrs = attrs_raw if isinstance(attrs_raw := dev.get("attributes"), dict) else {}
        attr = attrs.get(name, attrs.get(bare) if bare else None)
        if name not in attrs and not (bare and bare in attrs):
            errs.append(
                required(
                    attr_path,
                    "device consumes counters and `partitionTypeAttribute` names this "
                    "attribute, so it must be set",
                )
            )
        elif not isinstance(attr, dict) or attr.get("string") is None:
            errs.append(
                invalid(
                    attr_path,
                    attr,
                    "must be a string value because `partitionTypeAttribute` names this attribute",
                )
            )
    return errs


def _skip_node_operations(spec: dict[str, Any]) -> list[FieldError]:
    """NodePrepareResources only with NodeUnprepareResources or ``*`` (the values themselves
    are checked declaratively; with DRAOptionalNodeOperations off the field is stripped)."""
    path = SPEC.child("skipNodeOperations")
    errs: list[FieldError] = []
    ops = as_list(spec.get("skipNodeOperations"), path, errs)
    strs = {op for op in ops or [] if isinstance(op, str)}
    if "NodePrepareResources" in strs and not strs & {"NodeUnprepareResources", "*"}:
        errs.append(
            invalid(
                path,
                ops,
                "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped",
            )
        )
    return errs


#: The strategy sets generation on CREATE; updates may be unconditional.
META = meta.MetaRules(generation_set_on_create=True, unconditional_update=True)

RULES = KindRules(
    group="resource.k8s.io", kind="ResourceSlice", versions=("v1", "v1beta2", "v1beta1"), namespaced=False,
    plural="resourceslices", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings, findings=standard.findings, pool_lint=True,
)
